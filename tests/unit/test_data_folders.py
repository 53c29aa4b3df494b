"""Which folders `init` takes for the project's test data."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import git, make_tree
from three_ledger.data_folders import (
    data_folders,
    data_packages,
    project_files,
    python_data_folders,
)


@pytest.mark.parametrize(
    ("files", "folders"),
    [
        # markdown-it-py: two data folders, the test code beside them.
        (
            [
                "mdit/__init__.py",
                "tests/test_spec.py",
                "tests/test_cmark_spec/commonmark.json",
                "tests/test_cmark_spec/spec.md",
                "tests/test_port/test_fixtures.py",
                "tests/test_port/fixtures/a.md",
                "tests/test_port/fixtures/deep/b.md",
                "tests/README.md",
            ],
            ["tests/test_cmark_spec", "tests/test_port/fixtures"],
        ),
        # The example: a `fixtures` folder at the top; `fixtures_b` is no data by its name.
        (
            [
                "orders.py",
                "properties/test_orders.py",
                "fixtures/orders_min.json",
                "fixtures_b/orders_min.json",
                "README.md",
                "docs/guide.md",
            ],
            ["fixtures"],
        ),
        # Only the outermost folder: tests/data, not tests/data/valid and tests/data/invalid.
        (
            ["tests/test_x.py", "tests/data/valid/a.toml", "tests/data/invalid/b.toml"],
            ["tests/data"],
        ),
        # Python anywhere below makes a folder code: its data-only subfolders are the data.
        (
            ["test/cases/helper.py", "test/cases/inputs/a.txt", "src/pkg/testdata/x.bin"],
            ["src/pkg/testdata", "test/cases/inputs"],
        ),
        # No test folder, no data name: nothing.
        (["pkg/__init__.py", "assets/logo.png", "tests/test_a.py"], []),
    ],
)
def test_the_outermost_python_free_folders_of_test_data(
    files: list[str], folders: list[str]
) -> None:
    assert data_folders(files) == folders


def test_folders_of_python_data_are_named_apart_from_the_data_taken() -> None:
    # black: its formatting cases are Python source in tests/data/cases, beside data folders
    # of other files; test code, a conftest or a package make a folder code, never data.
    files = [
        "src/black/__init__.py",
        "tests/test_format.py",
        "tests/conftest.py",
        "tests/data/cases/comments.py",
        "tests/data/cases/empty_lines.py",
        "tests/data/miscellaneous/force_py36.py",
        "tests/data/jupyter/notebook.ipynb",
        "tests/helpers/__init__.py",
        "tests/helpers/util.py",
        "tests/unit/test_a.py",
        "tests/unit/cases/check.py",
    ]
    chosen = data_folders(files)
    assert chosen == ["tests/data/jupyter"]
    # Named for a person to judge: `cases` beside unit tests may be data or a helper.
    assert python_data_folders(files, chosen) == [
        "tests/data/cases",
        "tests/data/miscellaneous",
        "tests/unit/cases",
    ]
    # A folder the person named is not named again, nor anything in it.
    assert python_data_folders(files, ["tests/data"]) == ["tests/unit/cases"]


def test_a_fixtures_folder_that_is_a_package_is_named_apart() -> None:
    # mistune: tests/fixtures/__init__.py loads the cases beside it; only a folder inside it
    # holds no Python, and was drafted alone, without a word about the rest.
    files = [
        "src/mistune/__init__.py",
        "tests/__init__.py",
        "tests/test_syntax.py",
        "tests/fixtures/__init__.py",
        "tests/fixtures/commonmark.json",
        "tests/fixtures/strikethrough.txt",
        "tests/fixtures/include/hello.txt",
        "tests/helpers/__init__.py",
    ]
    chosen = data_folders(files)
    assert chosen == ["tests/fixtures/include"]
    assert python_data_folders(files, chosen) == []
    assert data_packages(files, chosen) == ["tests/fixtures"]
    # Named by the person: not named again; a package not named like data is code.
    assert data_packages(files, ["tests/fixtures"]) == []
    assert data_packages(["pkg/data/__init__.py"], []) == []


def test_project_files_in_git_are_what_git_tracks_or_would_add(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            ".gitignore": b"build/\n",
            "tests/data/a.json": b"{}",
            "tests/data/new.json": b"{}",
            "build/tests/data/x.json": b"{}",
            ".hidden/tests/data/y.json": b"{}",
        },
    )
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".gitignore", "tests/data/a.json", ".hidden")
    assert project_files(tmp_path) == ["tests/data/a.json", "tests/data/new.json"]


def test_project_files_outside_git_leave_out_hidden_folders_caches_and_venvs(
    tmp_path: Path,
) -> None:
    make_tree(
        tmp_path,
        {
            "tests/data/a.json": b"{}",
            "tests/__pycache__/x.pyc": b"",
            ".tox/tests/data/b.json": b"{}",
            "env/pyvenv.cfg": b"",
            "env/lib/tests/data/c.json": b"{}",
            "node_modules/p/tests/data/d.json": b"{}",
        },
    )
    assert project_files(tmp_path) == ["tests/data/a.json"]
