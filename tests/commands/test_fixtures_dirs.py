"""A fixture pin of several closed folders (`fixtures_dirs`): every command that reads a fixture
pin treats each folder as closed, and refuses a pin whose folders are unusable."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE, RunCli, git, make_tree, write_json
from three_ledger.pins import FixturePin
from three_ledger.plugin.wire import FIXTURES_DIRS_ENV, FIXTURES_ENV
from three_ledger.run.child import Child, child_environment
from three_ledger.run.staging import stage_plugin
from three_ledger.vocabulary import Enforcement

# The markdown-it-py layout: two data folders under tests/, test code beside them.
TREE = {
    "tests/test_cmark_spec/commonmark.json": b'[{"markdown": "# a", "html": "<h1>a</h1>"}]',
    "tests/test_cmark_spec/spec.md": b"# spec\n",
    "tests/test_port/fixtures/tables.md": b"| a |\n",
    "tests/test_port/fixtures/nested/lists.md": b"- a\n",
    "tests/test_port/test_fixtures.py": b"def test_x(): pass\n",
    "tests/test_spec.py": b"def test_y(): pass\n",
}
FOLDERS = ["tests/test_cmark_spec", "tests/test_port/fixtures"]
PINNED = sorted(path for path in TREE if not path.endswith(".py"))


def two_folder_pin(root: Path, **change: Any) -> Path:
    document = {"pin_id": "fixpin-md", "algorithm": "sha256", "fixtures_dirs": FOLDERS}
    document["files"] = PINNED
    document.update(change)
    return write_json(root / "pins/fixtures.json", document)


def digest(run_cli: RunCli, root: Path, pin: Path) -> tuple[int, str, list[str]]:
    result = run_cli("digest", "--pin", pin, "--root", root, "--out", root / "out/l.json")
    return result.code, result.out, result.err.splitlines()


# --- digest ---------------------------------------------------------------------------------


def test_a_list_of_one_folder_gives_the_digest_the_example_pin_reviewed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # The example's pin holds the digest the one-folder code computed and people reviewed.
    root = tmp_path / "orders"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    reviewed = json.loads((EXAMPLE / "pins/fixtures.json").read_text(encoding="utf-8"))
    listed = {key: value for key, value in reviewed.items() if key != "fixtures_dir"}
    listed["fixtures_dirs"] = ["fixtures"]
    for document in (reviewed, listed):
        pin = write_json(tmp_path / "pins" / f"{len(document)}.json", document)
        code, out, _ = digest(run_cli, root, pin)
        assert (code, out) == (0, reviewed["digest"] + "\n")
        ledger = json.loads((root / "out/l.json").read_text(encoding="utf-8"))
        folders = {key: ledger[key] for key in ("fixtures_dir", "fixtures_dirs") if key in ledger}
        assert folders == (
            {"fixtures_dirs": ["fixtures"]}
            if "fixtures_dirs" in document
            else {"fixtures_dir": "fixtures"}
        )


def test_two_folders_digest_the_pinned_files_of_both(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    code, out, _ = digest(run_cli, tmp_path, two_folder_pin(tmp_path))
    ledger = json.loads((tmp_path / "out/l.json").read_text(encoding="utf-8"))
    assert code == 0
    assert list(ledger)[4:7] == ["algorithm", "fixtures_dirs", "files"]
    assert ledger["fixtures_dirs"] == FOLDERS
    assert [entry["path"] for entry in ledger["files"]] == PINNED
    assert out.strip() == ledger["digest"]


@pytest.mark.parametrize(
    ("extra", "removed", "line"),
    [
        (
            {"tests/test_port/fixtures/new.md": b"x"},
            None,
            "tests/test_port/fixtures/new.md: unpinned file",
        ),
        (
            {"tests/test_cmark_spec/extra.json": b"x"},
            None,
            "tests/test_cmark_spec/extra.json: unpinned file",
        ),
        (
            {},
            "tests/test_cmark_spec/spec.md",
            "tests/test_cmark_spec/spec.md: pinned file is missing",
        ),
        ({}, "tests/test_port/fixtures/nested/lists.md", "nested/lists.md: pinned file is missing"),
    ],
)
def test_each_folder_is_closed(
    run_cli: RunCli, tmp_path: Path, extra: dict[str, bytes], removed: str | None, line: str
) -> None:
    make_tree(tmp_path, {**TREE, **extra})
    if removed is not None:
        (tmp_path / removed).unlink()
    code, _, err = digest(run_cli, tmp_path, two_folder_pin(tmp_path))
    assert code == 2
    assert err[0].startswith("three-ledger: refused: fixture tree does not match ")
    assert err[0].endswith(line)
    assert not (tmp_path / "out/l.json").exists()


def test_files_beside_the_folders_are_not_fixtures(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {**TREE, "tests/test_port/test_more.py": b"", "tests/data.json": b"{}"})
    code, _, _ = digest(run_cli, tmp_path, two_folder_pin(tmp_path))
    assert code == 0


def test_a_missing_folder_is_named(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    shutil.rmtree(tmp_path / "tests/test_port/fixtures")
    code, _, err = digest(run_cli, tmp_path, two_folder_pin(tmp_path))
    assert code == 2
    # Its own pinned files are counted, not listed one by one.
    assert err[0].endswith(
        "tests/test_port/fixtures: fixtures folder is missing or not a plain folder, with the "
        "2 pinned file(s) under it"
    )


def test_a_folder_that_is_a_link_out_of_root_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, TREE)
    outside = tmp_path / "outside"
    shutil.move(root / "tests/test_port/fixtures", outside)
    (root / "tests/test_port/fixtures").symlink_to(outside)
    code, _, err = digest(run_cli, root, two_folder_pin(root))
    assert code == 2
    assert "tests/test_port/fixtures: fixtures folder is missing or not a plain folder" in err[0]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"fixtures_dirs": []}, "$.fixtures_dirs: [] should be non-empty"),
        ({"fixtures_dir": "tests"}, "$: fixtures_dir and fixtures_dirs are both given"),
        (
            {"fixtures_dirs": ["tests/test_port", "tests/test_port/fixtures"]},
            (
                "$.fixtures_dirs[1]: 'tests/test_port/fixtures' overlaps $.fixtures_dirs[0] "
                "'tests/test_port'"
            ),
        ),
        ({"fixtures_dirs": ["tests/test_cmark_spec", "../data"]}, "$.fixtures_dirs[1]: '../data'"),
        ({"fixtures_dirs": ["/tmp/data"]}, "$.fixtures_dirs[0]: '/tmp/data' is absolute"),
    ],
)
def test_unusable_folders_are_refused_in_one_line(
    run_cli: RunCli, tmp_path: Path, change: dict[str, Any], fragment: str
) -> None:
    make_tree(tmp_path, TREE)
    pin = two_folder_pin(tmp_path, **change)
    code, _, err = digest(run_cli, tmp_path, pin)
    assert code == 2
    assert err == [f"three-ledger: refused: {pin}: {fragment}" + err[0].split(fragment, 1)[1]]
    assert not (tmp_path / "out/l.json").exists()


def test_an_unpinned_file_git_does_not_track_is_annotated_in_either_folder(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, TREE)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    make_tree(tmp_path, {"tests/test_port/fixtures/stray.md": b"x"})
    code, _, err = digest(run_cli, tmp_path, two_folder_pin(tmp_path))
    assert code == 2
    assert err[0].endswith("tests/test_port/fixtures/stray.md: unpinned file (untracked)")
    note = next(line for line in err if "untracked: tests/test_port/fixtures/stray.md" in line)
    cleaned = note.split("`git clean -f -- ", 1)[1].split("`", 1)[0].split(" ")
    assert [Path(folder).resolve() for folder in cleaned] == [
        (tmp_path / folder).resolve() for folder in FOLDERS
    ]


def test_a_moved_fixture_without_a_reviewed_digest_is_named_in_either_folder(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, TREE)
    pin = two_folder_pin(tmp_path)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "tests/test_port/fixtures/tables.md").write_bytes(b"| b |\n")
    result = run_cli(
        "digest", "--pin", pin, "--root", tmp_path, "--out", tmp_path / "out/l.json",
        "--base", "HEAD",
    )  # fmt: skip
    assert result.code == 2
    assert result.first_error_line == (
        f"three-ledger: refused: {pin}: pinned fixture tests/test_port/fixtures/tables.md "
        "differs from HEAD, and the pin has no reviewed digest: a fixture moved without review"
    )


# --- check-pins: domains relative to ROOT -----------------------------------------------------


def properties_pin(root: Path, *domain: str) -> Path:
    prop = {"id": "md.spec", "claim": "Each spec example renders.", "domain": list(domain)}
    document = {"pin_id": "proppin-md", "fixture_pins": ["fixpin-md"], "properties": [prop]}
    return write_json(root / "pins/properties.json", {**document, "properties": [
        {**prop, "test": "tests/test_spec.py"}
    ]})  # fmt: skip


@pytest.mark.parametrize(
    "domain",
    [
        ["tests/test_cmark_spec/"],
        ["tests/test_cmark_spec/spec.md", "tests/test_port/fixtures/nested/"],
        ["tests/"],
    ],
)
def test_check_pins_reads_domains_relative_to_root(
    run_cli: RunCli, tmp_path: Path, domain: list[str]
) -> None:
    make_tree(tmp_path, TREE)
    two_folder_pin(tmp_path)
    properties_pin(tmp_path, *domain)
    result = run_cli("check-pins", "--pins-dir", tmp_path / "pins", "--root", tmp_path)
    assert result.code == 0, result.err


def test_check_pins_refuses_a_domain_written_relative_to_a_folder(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, TREE)
    two_folder_pin(tmp_path)
    pin = properties_pin(tmp_path, "spec.md")
    result = run_cli("check-pins", "--pins-dir", tmp_path / "pins", "--root", tmp_path)
    assert result.code == 2
    assert (
        f"{pin}: $.properties[0].domain[0]: 'spec.md' names no file pinned by "
        f"{tmp_path / 'pins/fixtures.json'} (domains are relative to ROOT with fixtures_dirs)"
    ) in result.err


def test_check_pins_names_an_overlapping_folder(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    two_folder_pin(tmp_path, fixtures_dirs=["tests", *FOLDERS])
    properties_pin(tmp_path, "tests/test_cmark_spec/")
    result = run_cli("check-pins", "--pins-dir", tmp_path / "pins", "--root", tmp_path)
    assert result.code == 2
    assert "$.fixtures_dirs[1]: 'tests/test_cmark_spec' overlaps $.fixtures_dirs[0] 'tests'" in (
        result.err
    )


def test_properties_refuses_an_unpinned_file_in_the_second_folder_before_running(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {**TREE, "tests/test_port/fixtures/new.md": b"x"})
    pin = two_folder_pin(tmp_path)
    props = properties_pin(tmp_path, "tests/test_cmark_spec/")
    result = run_cli(
        "properties", "--pin", pin, "--expect-digest", "0" * 64, "--properties", props,
        "--command", "false", "--out", tmp_path / "out/p.json", "--base", "HEAD",
        "--root", tmp_path,
    )  # fmt: skip
    assert result.code == 2
    assert result.first_error_line.endswith("tests/test_port/fixtures/new.md: unpinned file")


# --- draft-pin --------------------------------------------------------------------------------


def test_draft_pin_with_several_folders_drafts_fixtures_dirs(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, TREE)
    result = run_cli(
        "draft-pin", "--root", tmp_path, "--fixtures-dir", FOLDERS[0],
        "--fixtures-dir", FOLDERS[1] + "/", "--with-digest",
    )  # fmt: skip
    document = json.loads(result.out)
    assert result.code == 0
    assert list(document) == ["pin_id", "algorithm", "fixtures_dirs", "digest", "files"]
    assert (document["fixtures_dirs"], document["files"]) == (FOLDERS, PINNED)
    pin = write_json(tmp_path / "pins/fixtures.json", document)
    code, out, _ = digest(run_cli, tmp_path, pin)
    assert (code, out) == (0, document["digest"] + "\n")


def test_draft_pin_refuses_overlapping_folders(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    result = run_cli(
        "draft-pin", "--root", tmp_path, "--fixtures-dir", "tests/test_port",
        "--fixtures-dir", "tests/test_port/fixtures",
    )  # fmt: skip
    assert result.code == 2
    assert result.out == ""
    assert result.first_error_line == (
        "three-ledger: refused: --fixtures-dir 'tests/test_port/fixtures' overlaps "
        "--fixtures-dir 'tests/test_port': each folder of a pin is closed on its own, so no "
        "folder may hold another"
    )


def test_draft_pin_refuses_an_empty_folder_among_several(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, TREE)
    (tmp_path / "tests/empty").mkdir()
    result = run_cli(
        "draft-pin",
        "--root",
        tmp_path,
        "--fixtures-dir",
        FOLDERS[0],
        "--fixtures-dir",
        "tests/empty",
    )
    assert result.code == 2
    assert "tests/empty: holds no file to pin" in result.first_error_line


# --- the test child's environment ---------------------------------------------------------------


def test_the_child_gets_the_first_folder_and_every_folder(tmp_path: Path) -> None:
    pin = FixturePin.from_json(
        {"pin_id": "fixpin-md", "algorithm": "sha256", "fixtures_dirs": FOLDERS, "files": PINNED},
        tmp_path / "pins/fixtures.json",
    )
    child = Child(
        command=["true"],
        root=tmp_path,
        fixture_pin=pin,
        enforcement=Enforcement.NONE,
        timeout_s=1,
        log_path=tmp_path / "log",
        plugin=stage_plugin(tmp_path / "private"),
        results_path=None,
    )
    job = {FIXTURES_ENV: "/job/value", FIXTURES_DIRS_ENV: "/job/a:/job/b"}
    env = child_environment(child, tmp_path / "home", job)
    top = tmp_path.resolve()
    assert env[FIXTURES_ENV] == str(top / FOLDERS[0])
    assert env[FIXTURES_DIRS_ENV].split(os.pathsep) == [str(top / f) for f in FOLDERS]
