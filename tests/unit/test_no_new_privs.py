"""PR_SET_NO_NEW_PRIVS: set in the child before exec, inherited by what it starts, read back."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from three_ledger.no_new_privs import Step, layer, preexec_step
from three_ledger.runner import RunResult, run_command

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_NO_NEW_PRIVS is Linux's"
)
# What the child and a grandchild of its own say of the flag, one line each.
REPORT = (
    "import subprocess, sys\n"
    "def flag(text): return [l for l in text.splitlines() if l.startswith('NoNewPrivs:')][0]\n"
    "print(flag(open('/proc/self/status').read()))\n"
    "grandchild = [sys.executable, '-c', 'print(open(\"/proc/self/status\").read())']\n"
    "print(flag(subprocess.run(grandchild, capture_output=True, text=True).stdout))\n"
)


def run(tmp_path: Path, *, no_new_privs: bool) -> tuple[RunResult, str]:
    log = tmp_path / "run.log"
    ran = run_command(
        [sys.executable, "-c", REPORT],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=30,
        log_path=log,
        console=io.BytesIO(),
        no_new_privs=no_new_privs,
    )
    return ran, log.read_text()


def flag_of_this_process() -> str:
    lines = Path("/proc/self/status").read_text().splitlines()
    return next(line for line in lines if line.startswith("NoNewPrivs:")).split()[1]


@linux_only
def test_the_child_and_what_it_starts_run_with_the_flag_and_the_result_says_so(
    tmp_path: Path,
) -> None:
    ran, output = run(tmp_path, no_new_privs=True)
    assert ran.exit_code == 0, output
    assert output.split() == ["NoNewPrivs:", "1", "NoNewPrivs:", "1"]
    assert ran.no_new_privs == "held"


@linux_only
def test_without_the_step_the_child_keeps_the_gates_own_flag(tmp_path: Path) -> None:
    if flag_of_this_process() == "1":
        pytest.skip("this test process already runs with NoNewPrivs set")
    ran, output = run(tmp_path, no_new_privs=False)
    assert output.split() == ["NoNewPrivs:", "0", "NoNewPrivs:", "0"]
    assert ran.no_new_privs is None


def test_a_step_that_cannot_be_made_is_missing_with_its_reason(tmp_path: Path) -> None:
    assert layer(os.getpid(), Step(None, "not here")) == "missing: not here"


def test_the_flag_is_read_back_from_proc_not_taken_on_trust(tmp_path: Path) -> None:
    step = Step(lambda: None)
    (tmp_path / "7").mkdir()
    (tmp_path / "7/status").write_text("Name:\tpytest\nNoNewPrivs:\t0\nSeccomp:\t0\n")
    assert layer(7, step, tmp_path) == (
        "missing: prctl(PR_SET_NO_NEW_PRIVS) did not take effect in the child"
    )
    (tmp_path / "7/status").write_text("Name:\tpytest\nSeccomp:\t0\n")
    assert layer(7, step, tmp_path).startswith("missing: ")
    assert "no NoNewPrivs line" in layer(7, step, tmp_path)
    assert layer(8, step, tmp_path).startswith("missing: the flag could not be read back")
    (tmp_path / "7/status").write_text("Name:\tpytest\nNoNewPrivs:\t1\n")
    assert layer(7, step, tmp_path) == "held"


def test_the_step_is_offered_only_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    step = preexec_step()
    assert (step.run, step.missing) == (
        None,
        "PR_SET_NO_NEW_PRIVS is a Linux prctl; this is darwin",
    )
