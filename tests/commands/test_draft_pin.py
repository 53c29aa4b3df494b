"""`draft-pin`: a loadable draft that `digest` accepts, and the refusals `digest` would make."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import CliResult, RunCli, fixture_pin, git, make_tree, seed_digest
from three_ledger.pins import load_fixture_pin

REMINDER = "becomes a pin only after a person has read every path"


def conformance_tree() -> dict[str, bytes]:
    """About 1,000 files: inputs with expected outputs under valid/, inputs under invalid/."""
    files = {"fixtures/LICENSE": b"Permission is hereby granted, free of charge...\n"}
    for group in range(10):
        for case in range(35):
            stem = f"fixtures/valid/group_{group:02d}/case_{case:03d}"
            files[f"{stem}.json"] = json.dumps({"group": group, "case": case}).encode()
            files[f"{stem}.expected"] = f"{group * case}\n".encode()
        for case in range(30):
            files[f"fixtures/invalid/group_{group:02d}/case_{case:03d}.json"] = b"{" * (case + 1)
    return files


def draft(run_cli: RunCli, root: Path, *extra: str) -> CliResult:
    return run_cli("draft-pin", "--fixtures-dir", "fixtures", "--root", root, *extra)


def every_path(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs
    }


def test_draft_then_digest_on_a_thousand_file_tree(run_cli: RunCli, tmp_path: Path) -> None:
    files = conformance_tree()
    assert len(files) == 1001
    make_tree(tmp_path, files)
    drafted = draft(run_cli, tmp_path, "--with-digest", "--pin-id", "fixpin-conformance")
    assert drafted.code == 0, drafted.err
    document = json.loads(drafted.out)
    assert list(document) == ["pin_id", "algorithm", "fixtures_dir", "digest", "files"]
    assert document["pin_id"] == "fixpin-conformance"
    assert document["fixtures_dir"] == "fixtures"
    assert document["files"] == sorted(files)
    assert document["digest"] == seed_digest(tmp_path, list(files))
    assert drafted.out == json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    pin = tmp_path / "pins/fixtures.json"
    pin.parent.mkdir()
    pin.write_text(drafted.out, encoding="utf-8")
    assert load_fixture_pin(pin).files == tuple(sorted(files))
    ledger = tmp_path / "ledgers/fixture.json"
    digested = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", ledger)
    assert (digested.code, digested.out) == (0, document["digest"] + "\n")


def test_without_with_digest_the_draft_has_no_digest(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/b.json": b"2", "fixtures/a/z.json": b"1"})
    drafted = draft(run_cli, tmp_path)
    assert drafted.code == 0
    document = json.loads(drafted.out)
    assert document == {
        "pin_id": "fixpin-draft",
        "algorithm": "sha256",
        "fixtures_dir": "fixtures",
        "files": ["fixtures/a/z.json", "fixtures/b.json"],
    }


def test_unicode_names_in_code_point_order(run_cli: RunCli, tmp_path: Path) -> None:
    files = {"fixtures/\u00e9t\u00e9.json": b"1", "fixtures/Zed.json": b"2", "fixtures/b c": b""}
    make_tree(tmp_path, files)
    drafted = draft(run_cli, tmp_path, "--with-digest")
    assert drafted.code == 0, drafted.err
    document = json.loads(drafted.out)
    assert document["files"] == ["fixtures/Zed.json", "fixtures/b c", "fixtures/\u00e9t\u00e9.json"]
    assert document["digest"] == seed_digest(tmp_path, list(files))


def test_nested_fixtures_dir_with_trailing_slash(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"tests/data/suite/a.txt": b"a", "tests/other.txt": b"not pinned"})
    drafted = run_cli("draft-pin", "--fixtures-dir", "tests/data/suite/", "--root", tmp_path)
    assert drafted.code == 0, drafted.err
    document = json.loads(drafted.out)
    assert (document["fixtures_dir"], document["files"]) == (
        "tests/data/suite",
        ["tests/data/suite/a.txt"],
    )


def test_never_writes_a_file_and_reminds_of_review(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    before = every_path(tmp_path)
    drafted = draft(run_cli, tmp_path, "--with-digest")
    assert drafted.code == 0
    assert every_path(tmp_path) == before
    assert REMINDER in drafted.err
    assert "in a commit of its own" in drafted.err


def assert_draft_refused(result: CliResult, *offenders: str) -> list[str]:
    assert result.code == 2, result.err
    assert result.out == ""
    lines = result.err.splitlines()
    assert lines[0].startswith("three-ledger: refused: ")
    for offender in offenders:
        assert f"  {offender}" in lines
    assert REMINDER in result.err
    return lines


def test_link_and_non_utf8_name_are_each_listed(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/valid/b.json": b"[]"})
    (tmp_path / "fixtures/valid/link.json").symlink_to("b.json")
    with open(os.path.join(os.fsencode(tmp_path / "fixtures"), b"bad\xff.json"), "wb"):
        pass
    lines = assert_draft_refused(
        draft(run_cli, tmp_path),
        "fixtures/valid/link.json: symbolic link",
        "fixtures/b'bad\\xff.json': entry whose name is not valid UTF-8",
    )
    assert "2 entries cannot be pinned" in lines[0]


def test_fifo_is_listed(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    os.mkfifo(tmp_path / "fixtures/pipe")
    assert_draft_refused(draft(run_cli, tmp_path), "fixtures/pipe: FIFO")


def test_names_that_break_the_path_rules_are_listed(run_cli: RunCli, tmp_path: Path) -> None:
    decomposed = "e\u0301.json"
    make_tree(
        tmp_path,
        {
            "fixtures/ok.json": b"",
            f"fixtures/{decomposed}": b"",
            "fixtures/back\\slash": b"",
            "fixtures/new\nline": b"",
        },
    )
    assert_draft_refused(
        draft(run_cli, tmp_path),
        f"fixtures/{decomposed}: is not in Unicode NFC",
        "fixtures/back\\slash: contains a backslash; pinned paths use '/'",
        "'fixtures/new\\nline': contains a control character",
    )


def test_casefold_twins_are_listed(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/Case.json": b"1"})
    try:
        (tmp_path / "fixtures/case.json").write_bytes(b"2")
    except FileExistsError:  # pragma: no cover - a case-insensitive filesystem
        pytest.skip("the filesystem folds case")
    if len(os.listdir(tmp_path / "fixtures")) != 2:
        pytest.skip("the filesystem folds case")
    assert_draft_refused(
        draft(run_cli, tmp_path),
        "fixtures/Case.json and fixtures/case.json: differ only in case "
        "(one file on a case-insensitive filesystem)",
    )


@pytest.mark.parametrize(
    "setup",
    ["link", "fifo", "non_nfc", "control"],
)
def test_what_draft_refuses_digest_refuses(run_cli: RunCli, tmp_path: Path, setup: str) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    odd = tmp_path / "fixtures" / {"non_nfc": "e\u0301", "control": "x\ty"}.get(setup, "odd")
    if setup == "link":
        odd.symlink_to("a.json")
    elif setup == "fifo":
        os.mkfifo(odd)
    else:
        odd.write_bytes(b"")
    assert draft(run_cli, tmp_path).code == 2
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    refused = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", tmp_path / "l.json")
    assert refused.code == 2


def test_empty_fixtures_folder_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "fixtures/only/folders").mkdir(parents=True)
    lines = assert_draft_refused(draft(run_cli, tmp_path))
    assert "fixtures: holds no file" in lines[0]


@pytest.mark.parametrize("kind", ["missing", "file", "link"])
def test_fixtures_folder_must_be_a_plain_folder(run_cli: RunCli, tmp_path: Path, kind: str) -> None:
    make_tree(tmp_path, {"elsewhere/a.json": b"{}"})
    if kind == "file":
        (tmp_path / "fixtures").write_bytes(b"")
    elif kind == "link":
        (tmp_path / "fixtures").symlink_to(tmp_path / "elsewhere")
    lines = assert_draft_refused(draft(run_cli, tmp_path))
    assert "fixtures: fixtures folder is missing or not a plain folder" in lines[0]


@pytest.mark.parametrize("fixtures_dir", ["/abs", "../up", "a/./b", "back\\slash"])
def test_fixtures_dir_must_follow_the_path_rules(
    run_cli: RunCli, tmp_path: Path, fixtures_dir: str
) -> None:
    result = run_cli("draft-pin", "--fixtures-dir", fixtures_dir, "--root", tmp_path)
    lines = assert_draft_refused(result)
    assert f"--fixtures-dir {fixtures_dir!r}" in lines[0]


@pytest.mark.parametrize(
    "pin_id", ["a b", "-leading-dash", ".dot", "x" * 129, "fix/pin", "caf\u00e9", "ok\n"]
)
def test_invalid_pin_id_is_refused(run_cli: RunCli, tmp_path: Path, pin_id: str) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    lines = assert_draft_refused(draft(run_cli, tmp_path, f"--pin-id={pin_id}"))
    assert "--pin-id" in lines[0]


@pytest.mark.parametrize("pin_id", ["x" * 128, "A", "9.a_b-c"])
def test_valid_pin_ids_are_used(run_cli: RunCli, tmp_path: Path, pin_id: str) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    drafted = draft(run_cli, tmp_path, "--pin-id", pin_id)
    assert drafted.code == 0
    assert json.loads(drafted.out)["pin_id"] == pin_id


def test_missing_fixtures_dir_flag_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("draft-pin", "--root", tmp_path).code == 64


def git_tree(root: Path) -> None:
    """A committed fixtures folder, then a git-ignored and an untracked file beside it."""
    make_tree(root, {"fixtures/a.json": b"{}", ".gitignore": b".DS_Store\n__pycache__/\n"})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "fixtures")
    make_tree(
        root,
        {
            "fixtures/.DS_Store": b"",
            "fixtures/__pycache__/a.cpython-311.pyc": b"",
            "fixtures/b.json": b"{}",
        },
    )


def test_files_git_does_not_track_are_warned_about(run_cli: RunCli, tmp_path: Path) -> None:
    git_tree(tmp_path)
    drafted = draft(run_cli, tmp_path)
    assert drafted.code == 0, drafted.err
    assert len(json.loads(drafted.out)["files"]) == 4
    assert (
        "warning: 2 drafted files are ignored by git (fixtures/.DS_Store, "
        "fixtures/__pycache__/a.cpython-311.pyc): a clean checkout, as in CI, will not have them"
    ) in drafted.err
    assert "draft with --tracked-only" in drafted.err
    assert "warning: 1 drafted file is untracked (fixtures/b.json)" in drafted.err


def test_tracked_only_drafts_what_a_clean_checkout_has(run_cli: RunCli, tmp_path: Path) -> None:
    git_tree(tmp_path)
    drafted = draft(run_cli, tmp_path, "--tracked-only", "--with-digest")
    assert drafted.code == 0, drafted.err
    assert json.loads(drafted.out)["files"] == ["fixtures/a.json"]
    assert "left out 3 files git does not track (--tracked-only)" in drafted.err
    assert "warning" not in drafted.err
    clean = tmp_path.parent / "clean"
    git(tmp_path.parent, "clone", "-q", str(tmp_path), str(clean))
    (clean / "pins").mkdir()
    (clean / "pins/fixtures.json").write_text(drafted.out)
    checked = run_cli(
        "digest", "--pin", clean / "pins/fixtures.json", "--root", clean,
        "--out", tmp_path.parent / "f.json",
    )  # fmt: skip
    assert checked.code == 0, checked.err


def test_tracked_only_needs_git(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    drafted = draft(run_cli, tmp_path, "--tracked-only")
    assert drafted.code == 2
    assert drafted.first_error_line.startswith("three-ledger: refused: --tracked-only needs git")
    assert drafted.out == ""


def test_outside_git_there_is_no_git_warning(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/.DS_Store": b""})
    drafted = draft(run_cli, tmp_path)
    assert drafted.code == 0
    assert "git" not in drafted.err


def test_test_code_in_the_drafted_folder_is_warned_about(run_cli: RunCli, tmp_path: Path) -> None:
    # Data beside the test code that reads it: pinned whole, an edit to the tests would move
    # the digest. What pytest collects follows ROOT's settings, as the gate reads them.
    make_tree(tmp_path, {
        "pytest.ini": b"[pytest]\npython_files = check_*.py\n",
        "fixtures/spec.json": b"{}\n",
        "fixtures/check_spec.py": b"def test_spec(): pass\n",
        "fixtures/conftest.py": b"",
        "fixtures/test_not_collected_here.py": b"",
        "fixtures/get_spec.py": b"",
    })  # fmt: skip
    drafted = draft(run_cli, tmp_path)
    assert drafted.code == 0, drafted.err
    assert len(json.loads(drafted.out)["files"]) == 5
    warned = [line for line in drafted.err.splitlines() if "test code" in line]
    expected = (
        "three-ledger: warning: 2 drafted files are test code by pytest's settings, a "
        "conftest.py or a module its python_files match (fixtures/check_spec.py, "
        "fixtures/conftest.py): pinned, an edit to one moves the fixture digest and the gate "
        "rejects the change (row 1), where a change to tests outside the pin goes to their "
        "owners; draft folders that hold data only (a sample named like a test that your "
        "conftest keeps pytest from collecting is data: then ignore this)"
    )
    assert warned == [expected]


def test_a_folder_of_data_gets_no_test_code_warning(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/cases/test_case.json": b"{}\n", "fixtures/expected.py": b""})
    drafted = draft(run_cli, tmp_path)
    assert drafted.code == 0, drafted.err
    assert "test code" not in drafted.err
