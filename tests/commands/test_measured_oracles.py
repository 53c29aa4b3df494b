"""Measured oracles: files that steer a run are compared with the base before and after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import RunCli, git, make_tree, simulate_missing_layers
from helpers.scoring import PYTEST, ledger, score
from three_ledger.ledgers import Harness, PluginSource
from three_ledger.results import TestResult
from three_ledger.run.measured_oracles import (
    _pytest_section,
    before_run,
    harness_files,
    is_site_startup_file,
    measured_changes,
    unmatched_oracle_paths,
)
from three_ledger.vocabulary import Outcome


def harness(main: str = "pytest 9.2.0", *plugins: PluginSource) -> Harness:
    return Harness(
        pytest="9.2.0", rootdir=".", config_file=None, main=main, conftests=(),
        plugins=plugins, pythonpath=(), addopts=(), shadowing={}, test_side_modules=(),
    )  # fmt: skip


def test_harness_files_count_whatever_their_suffix(tmp_path: Path) -> None:
    plugins = (
        PluginSource("helper", "tools/helper.pyc"),
        PluginSource("xdist", "pytest-xdist 3.8.0"),
        PluginSource("elsewhere", "<outside ROOT>"),
    )
    assert harness_files(tmp_path, harness("pytest.pyc", *plugins)) == {
        "pytest.pyc": "the run's __main__",
        "tools/helper.pyc": "pytest plugin helper",
        # A distribution names no file: comparing it with the base finds nothing.
        "pytest-xdist 3.8.0": "pytest plugin xdist",
    }


def test_a_virtual_environment_inside_root_is_the_installation(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    site = ".venv/lib/python3.11/site-packages"
    make_tree(tmp_path, {".venv/pyvenv.cfg": b"", ".venv/bin/pytest": b"", f"{site}/p.py": b""})
    plugin = PluginSource("p", f"{site}/p.py")
    assert harness_files(tmp_path, harness(".venv/bin/pytest", plugin)) == {}


def test_a_pyvenv_cfg_git_tracks_makes_no_installation(tmp_path: Path) -> None:
    """A change brings only tracked files: its `pyvenv.cfg` beside its plugin is no venv."""
    git(tmp_path, "init", "-q")
    make_tree(tmp_path, {"tools/pyvenv.cfg": b"", "tools/forcing.py": b""})
    git(tmp_path, "add", "tools/pyvenv.cfg")
    plugin = PluginSource("forcing", "tools/forcing.py")
    assert harness_files(tmp_path, harness("pytest 9.2.0", plugin)) == {
        "tools/forcing.py": "pytest plugin forcing",
        "pytest 9.2.0": "the run's __main__",
    }


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".venv/lib/python3.11/site-packages/orders_tools.pth", True),
        ("usr/lib/python3/dist-packages/x.pth", True),
        ("docs/notes.pth", False),
        (".venv/lib/python3.11/site-packages/pkg/inner.pth", False),
        (".venv/lib/python3.11/site-packages/orders_tools.py", False),
    ],
)
def test_a_pth_file_directly_in_a_site_folder_runs_at_start_up(path: str, expected: bool) -> None:
    assert is_site_startup_file(path) is expected


def test_a_pth_file_in_a_site_folder_that_differs_from_the_base_moves_the_oracles(
    orders_repo: Path,
) -> None:
    base = git(orders_repo, "rev-parse", "HEAD")
    make_tree(
        orders_repo,
        {
            "vendor/lib/python3.11/site-packages/orders_tools.pth": b"import orders_tools\n",
            "docs/notes.pth": b"import nothing\n",
        },
    )
    changes = measured_changes(orders_repo, before_run(orders_repo, base), harness(), [])
    assert changes == {
        "vendor/lib/python3.11/site-packages/orders_tools.pth": (
            "a .pth file in a site folder: Python runs it at start-up"
        ),
    }


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


@pytest.mark.pytest_child
def test_a_guard_on_a_file_that_steers_pytest_is_no_typo(
    run_cli: RunCli, orders_repo: Path
) -> None:
    """PyYAML's trial: the `conftest.py` and `pytest.ini` writing-pins.md advises listing were
    warned about in every run where the project has none. They are still recorded."""
    pin = orders_repo / "pins/properties.json"
    document = json.loads(pin.read_text())
    document["oracle_paths"] = ["properties", "conftest.py", "tox.ini", "tset"]
    pin.write_text(json.dumps(document))
    git(orders_repo, "commit", "-qam", "guards")
    result = score(run_cli, orders_repo, "--base", "HEAD")
    assert result.code == 0, result.err
    assert ledger(orders_repo)["oracle_paths_unmatched"] == ["conftest.py", "tox.ini", "tset"]
    warned = [line for line in result.err.splitlines() if "matches nothing" in line]
    assert warned == [
        (
            "three-ledger: warning: oracle_paths entry 'tset' matches nothing at the base or in "
            "the tree: if it is a typo, that protection is gone"
        )
    ]


# Weakened in the patch; at the end of the run it writes back the base's bytes, so that a
# comparison made only after the run would find nothing changed.
SELF_RESTORING = """\
import atexit, pathlib

atexit.register(lambda: pathlib.Path(__file__).write_text("# honest\\n"))
"""


def self_restoring_conftest(orders_repo: Path) -> str:
    """A conftest weakened in the patch that writes back the base's bytes at the run's end."""
    (orders_repo / "properties/conftest.py").write_text("# honest\n")
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "a conftest")
    base = git(orders_repo, "rev-parse", "HEAD")
    (orders_repo / "properties/conftest.py").write_text(SELF_RESTORING)
    return base


@pytest.mark.pytest_child
def test_a_helper_that_changes_its_bytes_during_the_run_is_exit_4(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the tree is writable (no mount layer), a conftest that rewrites itself while the
    run lasts cannot pass for its base bytes."""
    simulate_missing_layers(monkeypatch, mount="mount_setattr: Function not implemented")
    base = self_restoring_conftest(orders_repo)
    result = score(run_cli, orders_repo, "--base", base, command=f"{PYTEST} properties")
    assert result.code == 4, result.err
    assert "oracle files changed while the command ran: properties/conftest.py" in result.err
    assert not (orders_repo.parent / "ledgers/p.json").exists()


@pytest.mark.pytest_child
@pytest.mark.usefixtures("needs_mount_layer")
def test_in_the_read_only_tree_a_helper_cannot_restore_its_bytes(
    run_cli: RunCli, orders_repo: Path
) -> None:
    """The mount layer keeps the tree read-only: the rewrite fails, the edit stays in place,
    and the conftest is the oracle change it is."""
    base = self_restoring_conftest(orders_repo)
    result = score(run_cli, orders_repo, "--base", base, command=f"{PYTEST} properties")
    assert result.code == 5, result.err
    assert "properties/conftest.py (listed in oracle_paths)" in result.err
    assert (orders_repo / "properties/conftest.py").read_text() == SELF_RESTORING
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    assert "Read-only file system" in log


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


def test_a_test_module_that_scored_counts_whatever_its_suffix(orders_repo: Path) -> None:
    """A collector plugin reads its cases from YAML: the file that scored is an oracle."""
    make_tree(orders_repo, {"cases/orders.yaml": b"- total: 1\n"})
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "cases")
    base = git(orders_repo, "rev-parse", "HEAD")
    make_tree(orders_repo, {"cases/orders.yaml": b"[]\n"})
    scored = [TestResult("cases/orders.yaml::total", ("orders.total",), Outcome.PASS)]
    changes = measured_changes(orders_repo, before_run(orders_repo, base), harness(), scored)
    assert changes == {"cases/orders.yaml": "test module cases/orders.yaml (it scored a pinned id)"}
