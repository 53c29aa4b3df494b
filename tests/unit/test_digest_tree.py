"""The digest's per-path check as a pure function over a real tree in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import make_tree
from three_ledger.digest import pinned_file_problem


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/sub/b.json": b"[]"})
    (tmp_path / "fixtures/link.json").symlink_to("a.json")
    (tmp_path / "linked").symlink_to("fixtures/sub")
    os.mkfifo(tmp_path / "fixtures/pipe")
    return tmp_path


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("fixtures/a.json", None),
        ("fixtures/sub/b.json", None),
        ("fixtures/gone.json", "pinned file is missing"),
        ("fixtures/a.json/inner.json", "a.json is not a folder"),
        ("fixtures/sub", "is a folder, not a file"),
        ("fixtures/link.json", "is a symbolic link"),
        ("linked/b.json", "linked/ is a symbolic link"),
        ("fixtures/pipe", "is not a regular file (FIFO)"),
    ],
)
def test_each_pinned_path_problem_is_named(root: Path, path: str, problem: str | None) -> None:
    assert pinned_file_problem(root, path) == problem
