"""SIGINT and SIGTERM sent to `properties` while its child runs (SPEC 4.2 step 6): the whole
process group dies, no property ledger is left (a stale one is removed), the exit is 4 and
the message says the run was interrupted.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    default_sigint,
    git,
    is_gone,
    sleeper_argv,
    terminated_on_exit,
    wait_for_process,
)

pytestmark = pytest.mark.pytest_child

# A background grandchild that ignores SIGINT, as `&` makes it in a non-interactive shell:
# only the group-wide SIGKILL after the leader's exit (or the end of its PID namespace) can
# stop it. The test finds it on the host by its command line (its sleep argument).
SHELL_CHILD = "sh -c '{sleep} & wait'"
SLEEPING_PROPERTY = """

def test_slow_grandparent() -> None:
    import subprocess, time
    subprocess.Popen(["sleep", "{seconds}"])
    time.sleep(600)
"""
PYTEST_CHILD = f"{sys.executable} -m pytest -q -p no:cacheprovider properties/test_orders.py"


def gate(repo: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "three_ledger", *argv],
        cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,
    )  # fmt: skip


def live_digest(repo: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../f.json"],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("signum", "child"),
    [
        (signal.SIGINT, "shell"),
        (signal.SIGINT, "pytest"),
        (signal.SIGTERM, "pytest"),
    ],
    ids=["SIGINT-shell", "SIGINT-pytest", "SIGTERM-pytest"],
)
def test_an_interrupted_gate_kills_the_group_and_leaves_no_ledger(
    orders_repo: Path, tmp_path: Path, signum: int, child: str
) -> None:
    seconds, sleep = sleeper_argv(tmp_path)
    if child == "pytest":
        tests = orders_repo / "properties/test_orders.py"
        tests.write_text(tests.read_text() + SLEEPING_PROPERTY.format(seconds=seconds))
        git(orders_repo, "commit", "-qam", "a slow test, reviewed")
    stale = orders_repo.parent / "ledgers/p.json"
    stale.parent.mkdir()
    stale.write_text('{"kind": "property", "status_by_id": {"x": "pass"}}\n')
    running = gate(
        orders_repo, "properties", "--pin", "pins/fixtures.json",
        "--expect-digest", live_digest(orders_repo), "--properties", "pins/properties.json",
        "--base", "HEAD",
        "--command", SHELL_CHILD.format(sleep=sleep) if child == "shell" else PYTEST_CHILD,
        "--out", "../ledgers/p.json",
    )  # fmt: skip
    with terminated_on_exit(running):
        grandchild = wait_for_process(seconds)
        running.send_signal(signum)
        _, err = running.communicate(timeout=40)
    assert running.returncode == 4, err
    name = signal.Signals(signum).name
    assert err.splitlines()[-2].startswith(
        f"three-ledger: infrastructure failure: interrupted by {name}; no property ledger written"
    )
    assert err.splitlines()[-1] == (
        "three-ledger: removed the stale file at ../ledgers/p.json: it does not describe this run"
    )
    assert not stale.exists()
    assert is_gone(grandchild), f"process {grandchild} outlived the interrupted gate"
    assert (orders_repo.parent / "ledgers/p.json.log").exists()  # the log is kept in every case
