"""Tests of the runner with real processes: exit codes, timeouts, signals, bounded capture."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from helpers import default_sigint, is_gone, terminated_on_exit, wait_for_pid
from three_ledger.runner import RunResult, run_command

GRACE_S = 0.5


def run(argv: list[str], tmp_path: Path, *, timeout_s: float = 20.0) -> RunResult:
    return run_command(
        argv,
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=timeout_s,
        log_path=tmp_path / "logs" / "run.log",
        console=io.BytesIO(),
        grace_s=GRACE_S,
    )


@pytest.mark.parametrize("code", [0, 1, 3])
def test_exit_code_is_passed_through(tmp_path: Path, code: int) -> None:
    result = run(["sh", "-c", f"exit {code}"], tmp_path)
    assert result.exit_code == code
    assert (result.signal, result.timed_out, result.interrupted_by) == (None, False, None)
    assert result.failure() is None
    assert isinstance(result.duration_ms, int)


def test_output_goes_to_console_and_log_merged(tmp_path: Path) -> None:
    console = io.BytesIO()
    log_path = tmp_path / "deep" / "er" / "out.log"
    result = run_command(
        ["sh", "-c", "echo out; echo err >&2; cat"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=20,
        log_path=log_path,
        console=console,
    )
    assert result.exit_code == 0
    # `cat` reads stdin: /dev/null ends it at once instead of blocking until the timeout.
    assert log_path.read_bytes() == b"out\nerr\n"
    assert console.getvalue() == b"out\nerr\n"


def test_child_gets_env_and_cwd(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "PROBE": "seen"}
    result = run_command(
        ["sh", "-c", 'echo "$PROBE $(pwd)"'],
        cwd=tmp_path,
        env=env,
        timeout_s=20,
        log_path=tmp_path / "run.log",
        console=io.BytesIO(),
    )
    assert result.exit_code == 0
    assert (tmp_path / "run.log").read_text() == f"seen {tmp_path}\n"


def test_child_leads_its_own_process_group(tmp_path: Path) -> None:
    result = run([sys.executable, "-c", "import os; print(os.getpgid(0) == os.getpid())"], tmp_path)
    assert result.exit_code == 0
    assert (tmp_path / "logs" / "run.log").read_text() == "True\n"


def test_command_not_found_is_a_start_error(tmp_path: Path) -> None:
    result = run(["no-such-command-3l"], tmp_path)
    assert result.start_error == "command not found: no-such-command-3l"
    assert result.exit_code is None
    assert result.failure() == "the command could not start: command not found: no-such-command-3l"


def test_command_without_exec_permission_is_a_start_error(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    result = run([str(script)], tmp_path)
    assert result.start_error == f"permission denied: {script}"
    assert result.exit_code is None


def test_missing_working_directory_is_a_start_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = run_command(
        ["true"],
        cwd=missing,
        env=dict(os.environ),
        timeout_s=20,
        log_path=tmp_path / "run.log",
        console=io.BytesIO(),
    )
    assert result.start_error is not None
    assert result.start_error.startswith(f"working directory {missing}")


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    script = f"sleep 1000 & echo $! > {tmp_path}/bg; sleep 1000"
    result = run(["sh", "-c", script], tmp_path, timeout_s=0.5)
    assert result.timed_out
    assert result.exit_code is None
    assert result.signal == signal.SIGTERM
    assert result.duration_ms < 5000
    assert is_gone(wait_for_pid(tmp_path / "bg"))
    # The message names the limit, never the measured time that overshoots it.
    assert result.failure() == "the command timed out after 0.5 s"


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run(["sh", "-c", "trap '' TERM; sleep 1000"], tmp_path, timeout_s=0.3)
    assert result.timed_out
    assert result.signal == signal.SIGKILL
    assert time.monotonic() - started >= 0.3 + GRACE_S


def test_leftover_background_grandchild_is_killed_after_a_normal_exit(tmp_path: Path) -> None:
    # The grandchild holds the pipe open: without the group kill, the reader would never end.
    script = f"sleep 1000 & echo $! > {tmp_path}/bg; exit 0"
    result = run(["sh", "-c", script], tmp_path)
    assert result.exit_code == 0
    assert result.duration_ms < 5000
    assert is_gone(wait_for_pid(tmp_path / "bg"))


def test_process_that_left_the_group_does_not_hang_the_run(tmp_path: Path) -> None:
    script = f"setsid sleep 1000 & echo $! > {tmp_path}/escaped; echo done"
    started = time.monotonic()
    result = run(["sh", "-c", script], tmp_path)
    escaped = wait_for_pid(tmp_path / "escaped")
    try:
        assert result.exit_code == 0
        assert time.monotonic() - started < GRACE_S + 5
        assert (tmp_path / "logs" / "run.log").read_text() == "done\n"
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_death_by_signal_is_reported(tmp_path: Path) -> None:
    result = run(["sh", "-c", "kill -9 $$"], tmp_path)
    assert result.signal == signal.SIGKILL
    assert result.exit_code is None
    assert not result.timed_out
    assert result.failure() == "the command was killed by SIGKILL"


def test_signal_handlers_are_restored(tmp_path: Path) -> None:
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    result = run(["true"], tmp_path)
    assert result.exit_code == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_signal_after_the_result_was_made_reaches_the_handler_it_was_meant_for() -> None:
    """Between the run's result and the handlers' restoring, a SIGTERM reached only the
    record, and was lost: flake-evidence ran its remaining reruns and exited 0. Not taken by
    a result, it is delivered again once the handlers are back."""
    from three_ledger.runner import _catching_interrupts, _Interrupts

    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: seen.append(signum))
    try:
        taken = _Interrupts()
        with _catching_interrupts(taken):
            os.kill(os.getpid(), signal.SIGTERM)
            assert taken.take() == signal.SIGTERM  # the result reports it: not again
        assert seen == []
        late = _Interrupts()
        with _catching_interrupts(late):
            assert late.take() is None  # the result was made, then the signal came
            os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_runs_from_a_worker_thread(tmp_path: Path) -> None:
    # signal.signal() raises outside the main thread: the runner must not try.
    results: list[RunResult] = []
    worker = threading.Thread(target=lambda: results.append(run(["sh", "-c", "exit 3"], tmp_path)))
    worker.start()
    worker.join(20)
    assert [r.exit_code for r in results] == [3]


GATE_SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, os, sys
    from pathlib import Path
    from three_ledger.runner import run_command

    work = Path(sys.argv[1])
    result = run_command(
        sys.argv[2:], cwd=work, env=dict(os.environ), timeout_s=60,
        log_path=work / "run.log", grace_s=0.5,
    )
    (work / "result.json").write_text(json.dumps(dataclasses.asdict(result)))
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_gate_stops_the_child_group(tmp_path: Path, signum: int) -> None:
    gate_script = tmp_path / "gate.py"
    gate_script.write_text(GATE_SCRIPT)
    child = f"sleep 1000 & echo $! > {tmp_path}/bg; echo $$ > {tmp_path}/leader; sleep 1000"
    gate = subprocess.Popen(
        [sys.executable, str(gate_script), str(tmp_path), "sh", "-c", child],
        stdout=subprocess.DEVNULL,
        preexec_fn=default_sigint,
    )
    with terminated_on_exit(gate):
        leader = wait_for_pid(tmp_path / "leader")
        background = wait_for_pid(tmp_path / "bg")
        gate.send_signal(signum)
        # The gate itself survives the signal: it exits 0 after writing the result.
        assert gate.wait(20) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["interrupted_by"] == signum
    assert result["timed_out"] is False
    assert is_gone(leader)
    assert is_gone(background)
    assert RunResult(**result).failure() == f"interrupted by {signal.Signals(signum).name}"


def test_unwritable_log_is_a_start_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_command(
        ["true"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=20,
        log_path=blocker / "run.log",
        console=io.BytesIO(),
    )
    assert result.start_error is not None
    assert result.start_error.startswith(f"cannot write log {blocker / 'run.log'}")


def test_an_empty_command_is_a_start_error(tmp_path: Path) -> None:
    result = run([], tmp_path)
    assert result.start_error == "empty command"
    assert result.failure() == "the command could not start: empty command"
    assert not (tmp_path / "logs" / "run.log").exists()


def test_a_file_that_is_not_a_program_is_a_start_error(tmp_path: Path) -> None:
    script = tmp_path / "notes.txt"
    script.write_bytes(b"\x7fELF not really\n")
    script.chmod(0o755)
    result = run([str(script)], tmp_path)
    assert result.start_error == f"cannot start {script}: Exec format error"
    assert result.exit_code is None


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_log_that_fills_up_is_reported_and_the_child_still_drains(tmp_path: Path) -> None:
    console = io.BytesIO()
    result = run_command(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 200_000)"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=20,
        log_path=Path("/dev/full"),
        console=console,
    )
    assert result.exit_code == 0
    assert result.log_error is not None
    assert "No space left on device" in result.log_error
    assert result.failure() == f"the command's output could not be logged: {result.log_error}"
    assert console.getvalue() == b"x" * 200_000


def test_a_console_that_fails_is_dropped_and_the_log_stays_whole(tmp_path: Path) -> None:
    console = io.BytesIO()
    console.close()
    result = run_command(
        [sys.executable, "-c", "import sys; sys.stdout.write('y' * 200_000)"],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=20,
        log_path=tmp_path / "run.log",
        console=console,
    )
    assert (result.exit_code, result.log_error) == (0, None)
    assert result.failure() is None
    assert (tmp_path / "run.log").read_bytes() == b"y" * 200_000


@pytest.mark.skipif(sys.platform != "linux", reason="F_SETPIPE_SZ is Linux's")
def test_the_childs_pipe_holds_a_burst_while_the_pump_gathers() -> None:
    """pytest --collect-only -q prints every node id at once: with a 64 KiB pipe the child
    stalled on it for each of the pump's gathering pauses (a second over 20,000 ids)."""
    import fcntl

    from three_ledger import runner

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "rb", closefd=False) as pipe:
            before = fcntl.fcntl(read_end, 1032)  # F_GETPIPE_SZ
            runner._grow(pipe)
            after = fcntl.fcntl(read_end, 1032)
        limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        assert after == min(runner._PIPE_BYTES, limit) > before
    finally:
        os.close(read_end)
        os.close(write_end)
