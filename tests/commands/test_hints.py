"""Refusals that say how to fix the mistake (a pin given to the wrong flag, a folder, a JSON
typo, the wrong --root, files git does not track, a path given as a digest)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from helpers import RunCli, fixture_pin, git, make_tree, write_json
from helpers.suites import PYTEST, make_suite, prop, properties_pin

TREE = {"fixtures/a.json": b"{}\n"}


def digest(run_cli: RunCli, pin: Path, root: Path, *extra: str | Path) -> tuple[int, str]:
    # Beside ROOT, named after it: ROOT's parent may be every test's (tmp_path's parent).
    out = root.parent / f"{root.name}-f.json"
    result = run_cli("digest", "--pin", pin, "--root", root, "--out", out, *extra)
    return result.code, result.err


def test_a_properties_pin_given_to_digest(run_cli: RunCli, tmp_path: Path) -> None:
    pin = write_json(tmp_path / "pins/properties.json", properties_pin([prop("p.a")]))
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    assert f"{pin}: this is a properties pin; --pin takes a fixture pin" in err


def test_a_fixture_pin_given_as_properties(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    result = run_cli(
        "plan", "--pin", repo / "pins/fixtures.json", "--properties", repo / "pins/fixtures.json",
        "--command", PYTEST, "--root", repo,
    )  # fmt: skip
    assert result.code == 2
    assert "this is a fixture pin; --properties takes a properties pin" in result.err


def test_a_ledger_given_as_a_pin(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    pin = fixture_pin(tmp_path, list(TREE))
    assert digest(run_cli, pin, tmp_path)[0] == 0
    ledger = tmp_path / "ledgers/fixture.json"
    ledger.parent.mkdir()
    ledger.write_bytes((tmp_path.parent / f"{tmp_path.name}-f.json").read_bytes())
    code, err = digest(run_cli, ledger, tmp_path)
    assert code == 2
    assert f"{ledger}: this is a fixture ledger; --pin takes a fixture pin" in err


def test_a_folder_given_as_a_pin(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    fixture_pin(tmp_path, list(TREE))
    code, err = digest(run_cli, tmp_path / "pins", tmp_path)
    assert code == 2
    assert f"{tmp_path / 'pins'}: is a folder; give the fixture pin file itself" in err


def test_a_json_typo_in_a_pin_is_told_in_plain_words(run_cli: RunCli, tmp_path: Path) -> None:
    pin = tmp_path / "pins/fixtures.json"
    pin.parent.mkdir()
    pin.write_text('{\n  "pin_id": "fixpin-a"\n  "algorithm": "sha256"\n}\n')
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    expected = (
        f"three-ledger: refused: {pin}: fixture pin is not valid JSON at line 3, column 3: "
        "a comma is missing between two items (Expecting ',' delimiter)"
    )
    assert err.splitlines() == [expected]


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ('{"files": ["a",]}', "a value is expected here"),
        ('{"files": 1,}', "a key in double quotes is expected here"),
        ("{'files': 1}", "a key in double quotes is expected here"),
        ('{"files": 1}}', "the document goes on after its end"),
        ('{"files": "a\nb"}', "a string holds a line break or a tab"),
        ('{"files" 1}', "a colon is missing after a key"),
    ],
)
def test_json_errors_in_plain_words(run_cli: RunCli, tmp_path: Path, text: str, plain: str) -> None:
    pin = tmp_path / "pin.json"
    pin.write_text(text)
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    assert "is not valid JSON at line " in err
    assert plain in err


def test_a_missing_fixtures_folder_suggests_the_root(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    make_tree(repo, TREE)
    pin = fixture_pin(repo, list(TREE))
    monkeypatch.chdir(repo / "pins")
    result = run_cli("digest", "--pin", "fixtures.json", "--out", tmp_path / "f.json")
    assert result.code == 2
    assert "fixtures: fixtures folder is missing" in result.first_error_line
    assert (
        "three-ledger: fixtures/ exists under ..: pinned paths are relative to --root "
        "(here .), so give --root .. (or run from ..)\n"
    ) in result.err
    monkeypatch.chdir(tmp_path)
    result = run_cli("digest", "--pin", pin, "--root", "elsewhere", "--out", tmp_path / "f.json")
    assert "so give --root repo (or run from repo)" in result.err


def test_unpinned_files_say_what_git_makes_of_them(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # in the repository, as its people run it
    make_tree(tmp_path, {**TREE, ".gitignore": b".DS_Store\n__pycache__/\n"})
    pin = fixture_pin(tmp_path, list(TREE))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "pinned")
    make_tree(
        tmp_path,
        {"fixtures/.DS_Store": b"", "fixtures/__pycache__/x.pyc": b"", "fixtures/b.json": b"{}"},
    )
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    assert "  fixtures/.DS_Store: unpinned file (ignored by git)\n" in err
    assert "  fixtures/__pycache__/x.pyc: unpinned file (ignored by git)\n" in err
    assert "  fixtures/b.json: unpinned file (untracked)\n" in err
    assert "ignored by git: fixtures/.DS_Store; a clean checkout, as in CI, will not have" in err
    assert (
        "bytecode ignored by git: fixtures/__pycache__/x.pyc; three-ledger's test runs keep "
        "their bytecode outside the tree, so a Python run outside them wrote it (a local "
        "pytest, an earlier step of the job) when it imported from this folder; no pin may "
        "list it: remove it with `git clean -fX -- "
    ) in err
    assert (
        "untracked: fixtures/b.json; commit and pin it, or remove it with `git clean -f -- " in err
    )
    # Each command the notes give works as written, typed where the command ran, where git's
    # clean.requireForce holds (mistune's trial: `git clean -X` refused to clean).
    git(tmp_path, "config", "clean.requireForce", "true")
    for command in dict.fromkeys(re.findall(r"`(git clean [^`]*)`", err)):
        assert subprocess.run(shlex.split(command), check=False).returncode == 0
    assert not (tmp_path / "fixtures/.DS_Store").exists()
    assert not (tmp_path / "fixtures/__pycache__/x.pyc").exists()
    assert not (tmp_path / "fixtures/b.json").exists()
    assert digest(run_cli, pin, tmp_path)[0] == 0


def test_untracked_bytecode_is_never_to_be_committed_and_pinned(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, TREE)
    pin = fixture_pin(tmp_path, list(TREE))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "pinned")
    make_tree(tmp_path, {"fixtures/__pycache__/x.cpython-311.pyc": b"", "fixtures/old.pyc": b""})
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    assert "  fixtures/old.pyc: unpinned file (untracked)\n" in err
    assert (
        "untracked bytecode: fixtures/__pycache__/x.cpython-311.pyc, fixtures/old.pyc; "
        "three-ledger's test runs keep their bytecode outside the tree"
    ) in err
    assert "and let git ignore `__pycache__/`" in err
    assert "commit and pin" not in err


def test_outside_git_unpinned_files_get_no_git_words(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {**TREE, "fixtures/b.json": b"{}"})
    pin = fixture_pin(tmp_path, list(TREE))
    code, err = digest(run_cli, pin, tmp_path)
    assert code == 2
    assert "fixtures/b.json: unpinned file\n" in err + "\n"
    assert "git clean" not in err


def test_a_path_given_as_expect_digest(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    assert digest(run_cli, repo / "pins/fixtures.json", repo)[0] == 0
    result = run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", tmp_path / "f.json",
        "--properties", repo / "pins/properties.json", "--command", PYTEST, "--root", repo,
        "--base", "HEAD", "--out", tmp_path / "p.json",
    )  # fmt: skip
    assert result.code == 2
    assert f"--expect-digest '{tmp_path / 'f.json'}' looks like a path, not a digest" in (
        result.first_error_line
    )
    assert "$(three-ledger digest --pin PIN --out LEDGER)" in result.first_error_line
    assert not (tmp_path / "p.json").exists()


def test_a_wrong_hex_digest_is_still_a_plain_mismatch(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    result = run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", "ab" * 32,
        "--properties", repo / "pins/properties.json", "--command", PYTEST, "--root", repo,
        "--base", "HEAD", "--out", tmp_path / "p.json",
    )  # fmt: skip
    assert result.code == 2
    assert "not --expect-digest " + "ab" * 32 in result.first_error_line
    assert "looks like a path" not in result.err


def test_pin_kinds_are_told_apart_by_their_keys(tmp_path: Path) -> None:
    from three_ledger.pins import document_kind

    assert document_kind({"pin_id": "a", "flakes": []}) == "flake pin"
    assert document_kind({"kind": "dual_pin"}) == "dual-pin ledger"
    assert document_kind({"pin_id": "a", "files": []}) == "fixture pin"
    assert document_kind({"fixture_pins": []}) == "properties pin"
    assert document_kind([1]) is None
    assert document_kind({}) is None
