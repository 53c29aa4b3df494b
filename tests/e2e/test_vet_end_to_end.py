"""`vet` end to end (slow): the user's tree after signals and timeouts, with real children,
and the example, every property of which must pass vet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
