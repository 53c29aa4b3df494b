"""`vet` end to end (slow): the user's tree after signals and timeouts, with real children,
and the example, every property of which must pass vet.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, is_gone, wait_for_pid
from helpers.vet_suites import PYTEST, slow_suite, snapshot, vet_args

pytestmark = pytest.mark.pytest_child


@pytest.fixture(autouse=True)
def bare_pytest_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """vet's children are plain pytest with only the staged plugin: fast, and predictable."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


# --- the user's tree: signals and timeouts ------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_user_tree_is_unchanged_after_a_signal(tmp_path: Path, signum: int) -> None:
    root = slow_suite(tmp_path / "suite")
    before = snapshot(root)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    pid_file = tmp_path / "pid"
    command = [sys.executable, "-P", "-m", "three_ledger", *map(str, vet_args(root))]
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "VET_TEST_PID_FILE": str(pid_file),
        "TMPDIR": str(scratch_parent),
    }
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as vet:
        test_pid = wait_for_pid(pid_file, timeout_s=120)
        vet.send_signal(signum)
        stdout, stderr = vet.communicate(timeout=60)
    assert vet.returncode == 4, stderr
    assert f"interrupted by {signal.Signals(signum).name}" in stderr
    assert stdout == ""
    assert is_gone(test_pid)
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    assert list(scratch_parent.iterdir()) == []  # the scratch copy is gone too


def test_the_user_tree_is_unchanged_after_a_timeout(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = slow_suite(tmp_path / "suite")
    before = snapshot(root)
    monkeypatch.setenv("VET_TEST_PID_FILE", str(tmp_path / "pid"))
    started = time.monotonic()
    result = run_cli(*vet_args(root, "--timeout", "20"))
    assert result.code == 4
    assert "timed out" in result.first_error_line
    assert "under mutation (json.negate_number" in result.first_error_line
    assert time.monotonic() - started < 120
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    log = (root.parent / "vet.json.log").read_text()
    assert "=== vet run 2: under mutation (json.negate_number on 1 file(s) of slow.n) ===" in log
    assert "=== the command timed out after 20.0 s ===" in log


# --- the example ----------------------------------------------------------------------------------


def test_every_property_of_the_example_passes_vet(run_cli: RunCli, orders_repo: Path) -> None:
    before = snapshot(orders_repo)
    command = f"{PYTEST} properties/test_orders.py"
    result = run_cli(
        "vet", "--pin", orders_repo / "pins/fixtures.json",
        "--properties", orders_repo / "pins/properties.json", "--command", command,
        "--root", orders_repo, "--out", orders_repo.parent / "vet.json",
    )  # fmt: skip
    assert result.code == 0, result.err
    verdicts = {
        pid: found["verdict"]
        for pid, found in json.loads((orders_repo.parent / "vet.json").read_text())[
            "properties"
        ].items()
    }
    assert verdicts == {
        "orders.total.non_negative": "strong",
        "orders.total.matches_lines": "strong",
        "orders.id.stable": "strong",
        "orders.json.round_trip": "weak",
    }
    assert snapshot(orders_repo) == before


# --- a recorded copy of markdown-it-py's spec layout -------------------------------------------

MARKDOWN_IT = Path(__file__).resolve().parents[1] / "data" / "markdown-it-py"


@pytest.fixture(scope="module")
def markdown_it_vet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """vet once on the copy: four properties, two over shared spec entries, two over tables."""
    where = tmp_path_factory.mktemp("markdown-it-py")
    shutil.copytree(MARKDOWN_IT, where / "copy")
    argv = [sys.executable, "-P", "-m", "three_ledger", "vet", "--pin", "pins/fixtures.json"]
    argv += ["--properties", "pins/properties.json", "--root", "project"]
    argv += ["--command", f"{sys.executable} -m pytest -q tests", "--out", str(where / "vet.json")]
    done = subprocess.run(
        argv,
        cwd=where / "copy",
        capture_output=True,
        text=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        check=False,
    )
    found: dict[str, Any] = json.loads((where / "vet.json").read_text(encoding="utf-8"))
    found["exit"], found["stdout"] = done.returncode, done.stdout + done.stderr
    return found


def test_emphasis_is_strong_killed_by_a_mutation_of_its_own_entries(
    markdown_it_vet: dict[str, Any],
) -> None:
    for property_id in ("commonmark.emphasis", "commonmark.links"):
        found = markdown_it_vet["properties"][property_id]
        assert found["verdict"] == "strong", markdown_it_vet["stdout"]
        first = found["trials"][0]
        assert (first["operator"], first["kind"], first["status"]) == (
            "entry.json_element",
            "well_formed",
            "fail",
        )
        assert found["killed_by"] == ["entry.json_element"]


def test_a_property_killed_only_by_a_collection_crash_is_not_strong(
    markdown_it_vet: dict[str, Any],
) -> None:
    found = markdown_it_vet["properties"]["gfm.tables"]
    assert found["verdict"] == "weak", markdown_it_vet["stdout"]
    # Its own entries were mutated first, well-formed, and it passed: it checks nothing.
    assert found["trials"][0]["operator"] == "entry.markdown_block"
    assert found["trials"][0]["status"] == "pass"
    kills = [trial for trial in found["trials"] if trial["status"] in ("fail", "error")]
    assert kills
    assert all(trial["kind"] == "crash" and trial["command_exit"] == 2 for trial in kills)
    assert "killed only by a crash of the whole run" in markdown_it_vet["stdout"]
    # Not "the parser's": the run broke, not a parse of its data (pycodestyle's trial).
    assert "it fails with the run, not its claim" in markdown_it_vet["stdout"]


def test_the_real_tables_test_is_strong_on_its_blocks(markdown_it_vet: dict[str, Any]) -> None:
    found = markdown_it_vet["properties"]["gfm.tables.output"]
    assert found["verdict"] == "strong"
    assert found["killed_by"] == ["entry.markdown_block"]
    assert markdown_it_vet["exit"] == 0
