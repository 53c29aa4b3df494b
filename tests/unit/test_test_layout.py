"""Where pytest starts collecting, as the gate reads it before anything runs: the paths the
command names, else `testpaths`; a module outside is never a test module."""

from __future__ import annotations

from pathlib import Path

import pytest

from three_ledger.test_changes import TestLayout as Layout
from three_ledger.test_changes import named_paths


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for path in ("properties/test_orders.py", "pricing/line_test.py", "k/test_k.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    return tmp_path


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("python -m pytest -q properties", ("properties",)),
        (
            "/venv/bin/pytest ./properties/test_orders.py::test_total -x",
            ("properties/test_orders.py",),
        ),
        # An option's value is no path, even where a file of that name exists.
        ("python -m pytest -k k -p k properties/", ("properties",)),
        ("python -m pytest -q", ()),
        ("python -m pytest missing_folder", ()),
        # Not pytest's command line: nothing is known of where it collects.
        ("tox -e py311 -- properties", ()),
    ],
)
def test_the_paths_a_pytest_command_names(tree: Path, command: str, paths: tuple[str, ...]) -> None:
    assert named_paths(command.split(), tree) == (paths, ())


def test_a_path_outside_root_is_not_a_start(
    tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    assert named_paths(["pytest", str(elsewhere), "properties"], tree) == (("properties",), ())


@pytest.mark.parametrize(
    ("command", "starts"),
    [
        # `k` is a plugin option's value or a path: both are read, testpaths kept.
        ("pytest --hypothesis-profile k", ("properties", "k")),
        ("pytest -X k", ("properties", "k")),
        # A path named surely stands in for testpaths; a doubtful one joins it.
        ("pytest --hypothesis-profile k pricing", ("pricing", "k")),
        # Written with its value, or after a flag, the word is a path.
        ("pytest --hypothesis-profile=ci k", ("k",)),
        ("pytest -vx k", ("k",)),
        ("pytest --strict-markers k", ("k",)),
    ],
)
def test_a_word_after_an_unknown_option_is_read_as_a_value_and_as_a_path(
    tree: Path, command: str, starts: tuple[str, ...]
) -> None:
    layout = Layout(starts=("properties",))
    assert layout.started_by(command.split(), tree).starts == starts
    # Without testpaths collection starts everywhere, which holds the doubtful path too.
    assert Layout().started_by(["pytest", "--hypothesis-profile", "k"], tree) == Layout()


def test_a_module_named_like_a_test_is_one_only_where_collection_starts(tree: Path) -> None:
    layout = Layout(python_files=("*.py",), starts=("properties",))
    assert layout.collects("properties/test_orders.py")
    assert not layout.collects("pricing/line_test.py")
    assert not layout.collects("orders.py")
    assert layout.would_collect("orders.py")  # by its name alone
    # The command's own paths stand in for testpaths.
    given = layout.started_by(["pytest", "pricing"], tree)
    assert given.collects("pricing/line_test.py")
    assert not given.collects("properties/test_orders.py")
    assert layout.started_by(["pytest", "-q"], tree) == layout
    # Nowhere named: everywhere.
    assert Layout(python_files=("*.py",)).collects("orders.py")


def test_testpaths_may_be_globs(tree: Path) -> None:
    layout = Layout(starts=("pack*/tests",))
    assert layout.collects("package_a/tests/test_a.py")
    assert not layout.collects("package_a/src/test_a.py")


def test_testpaths_are_read_from_the_settings() -> None:
    ini = b"[pytest]\ntestpaths = ./properties other\n"
    layout = Layout.read(lambda name: ini if name == "pytest.ini" else None)
    assert layout.starts == ("properties", "other")
