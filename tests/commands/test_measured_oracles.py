"""Measured oracles: files that steer a run are compared with the base before and after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import RunCli, git
from helpers.scoring import PYTEST, ledger, score
from three_ledger.run.measured_oracles import _pytest_section, unmatched_oracle_paths


def test_only_pytests_section_of_a_shared_config_file_counts() -> None:
    before = b'[project]\ndependencies = ["a>=1"]\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    bumped = before.replace(b"a>=1", b"a>=2")
    edited = before.replace(b'"-q"', b'"-q -k x"')
    assert _pytest_section("pyproject.toml", before) == _pytest_section("pyproject.toml", bumped)
    assert _pytest_section("pyproject.toml", before) != _pytest_section("pyproject.toml", edited)
    cfg = b"[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n"
    assert _pytest_section("setup.cfg", cfg) == _pytest_section(
        "setup.cfg", cfg.replace(b"name = a", b"name = b")
    )
    assert _pytest_section("tox.ini", b"[pytest]\nx = 1\n") != _pytest_section(
        "tox.ini", b"[pytest]\nx = 2\n"
    )
    # Unparsable bytes compare as bytes: never silently equal.
    assert _pytest_section("pyproject.toml", b"[[") != _pytest_section("pyproject.toml", b"[[ ")


def test_an_oracle_path_naming_nothing_is_unmatched(orders_repo: Path) -> None:
    base = git(orders_repo, "rev-parse", "HEAD")
    assert unmatched_oracle_paths(orders_repo, base, ["properties", "conftest.py", "tset"]) == [
        "conftest.py",
        "tset",
    ]


# Weakened in the patch; at the end of the run it writes back the base's bytes, so that a
# comparison made only after the run would find nothing changed.
SELF_RESTORING = """\
import atexit, pathlib

atexit.register(lambda: pathlib.Path(__file__).write_text("# honest\\n"))
"""


@pytest.mark.pytest_child
def test_a_helper_that_changes_its_bytes_during_the_run_is_exit_4(
    run_cli: RunCli, orders_repo: Path
) -> None:
    """A conftest that rewrites itself while the run lasts cannot pass for its base bytes."""
    (orders_repo / "properties/conftest.py").write_text("# honest\n")
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "a conftest")
    base = git(orders_repo, "rev-parse", "HEAD")
    (orders_repo / "properties/conftest.py").write_text(SELF_RESTORING)
    result = score(run_cli, orders_repo, "--base", base, command=f"{PYTEST} properties")
    assert result.code == 4, result.err
    assert "oracle files changed while the command ran: properties/conftest.py" in result.err
    assert not (orders_repo.parent / "ledgers/p.json").exists()


@pytest.mark.pytest_child
def test_the_example_records_its_harness(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD")
    assert result.code == 0, result.err
    harness = ledger(orders_repo)["harness"]
    assert harness["config_file"] == "pytest.ini"
    assert harness["rootdir"] == "."
    assert harness["test_side_modules"] == ["properties/test_orders.py"]
    assert not any(name.startswith("_three_ledger_") for name in json.dumps(harness).split('"'))
    assert "/" not in harness["main"]  # a distribution, never an absolute path
