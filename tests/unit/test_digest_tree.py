"""The digest's per-path check as a pure function over a real tree in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import make_tree
from three_ledger.digest import walk_tree
from three_ledger.file_kinds import pinned_file_problem


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


def test_the_walk_sorts_every_entry_by_kind(root: Path) -> None:
    fixtures = os.fsencode(root / "fixtures")
    os.mkdir(os.path.join(fixtures, b"dir\xfe"))
    for name in (b"c.json", b"bad\xff.json", "é.json".encode()):
        with open(os.path.join(fixtures, b"sub", name), "wb"):
            pass
    tree = walk_tree(root / "fixtures", "fixtures")
    assert sorted(tree.files) == [
        "fixtures/a.json",
        "fixtures/sub/b.json",
        "fixtures/sub/c.json",
        "fixtures/sub/é.json",
    ]
    assert tree.others == {
        "fixtures/link.json": "symbolic link",
        "fixtures/pipe": "FIFO",
        "fixtures/b'dir\\xfe'": "entry whose name is not valid UTF-8",
        "fixtures/sub/b'bad\\xff.json'": "entry whose name is not valid UTF-8",
    }
