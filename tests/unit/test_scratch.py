"""Tests for three_ledger.vet.scratch: the copy vet works on, and its command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import make_tree
from three_ledger.errors import InfraFailure
from three_ledger.vet.scratch import command_for_copy, copy_tree, read_files, write_files


def test_the_copy_keeps_files_modes_and_links_and_leaves_out_caches(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, {
        "fixtures/a.json": b"{}", "tests/test_a.py": b"", "run.sh": b"#!/bin/sh\n",
        ".git/HEAD": b"ref", "tests/__pycache__/x.pyc": b"", ".pytest_cache/v": b"",
    })  # fmt: skip
    (root / "run.sh").chmod(0o755)
    (root / "link.json").symlink_to("fixtures/a.json")
    os.mkfifo(root / "pipe")
    copy_tree(root, tmp_path / "private" / "tree")
    tree = tmp_path / "private" / "tree"
    assert (tree / "fixtures/a.json").read_bytes() == b"{}"
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755
    assert os.readlink(tree / "link.json") == "fixtures/a.json"
    for left_out in (".git", "tests/__pycache__", ".pytest_cache", "pipe"):
        assert not (tree / left_out).exists(), left_out


def test_a_virtual_environment_is_linked_not_copied(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, {".venv/pyvenv.cfg": b"home = /usr\n", ".venv/bin/python": b"", "a": b""})
    copy_tree(root, tmp_path / "private" / "tree")
    linked = tmp_path / "private" / "tree" / ".venv"
    assert linked.is_symlink()
    assert linked.resolve() == (root / ".venv").resolve()


def test_a_scratch_folder_inside_root_is_not_copied_into_itself(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, {"a": b"x"})
    private = root / "tmp" / "private"
    private.mkdir(parents=True)
    copy_tree(root, private / "tree")
    assert (private / "tree" / "a").read_bytes() == b"x"
    assert not (private / "tree" / "tmp" / "private").exists()


def test_a_copy_that_cannot_be_made_is_an_infrastructure_failure(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root, {"a": b"x"})
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(InfraFailure, match=f"cannot copy {root}"):
        copy_tree(root, tmp_path / "not-a-folder" / "tree")


def test_write_files_overwrites_in_place(tmp_path: Path) -> None:
    make_tree(tmp_path, {"f": b"before"})
    (tmp_path / "f").chmod(0o640)
    inode = (tmp_path / "f").stat().st_ino
    write_files(tmp_path, {"f": b"after"})
    assert read_files(tmp_path, ["f"]) == {"f": b"after"}
    assert (tmp_path / "f").stat().st_ino == inode
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("python3", "python3"),
        ("/usr/bin/python3", "/usr/bin/python3"),
        (".venv/bin/python", ".venv/bin/python"),
        ("./run-tests", "./run-tests"),
        ("../venv/bin/python", "{parent}/venv/bin/python"),
        ("sub/../../venv/bin/python", "{parent}/venv/bin/python"),
    ],
)
def test_only_a_relative_program_outside_root_is_made_absolute(
    tmp_path: Path, program: str, expected: str
) -> None:
    root = tmp_path / "root"
    command = command_for_copy([program, "-m", "pytest"], root)
    assert command == [expected.format(parent=tmp_path), "-m", "pytest"]
