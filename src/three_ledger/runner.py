"""The one place that starts a child: its own process group, streamed output, bounded memory.

Every child of the gate goes through `run_command`, so that timeouts, signals and
output capture behave the same wherever a command is run.
"""

from __future__ import annotations

import dataclasses
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from types import FrameType
from typing import IO, Any, BinaryIO

from three_ledger.frozen import frozen
from three_ledger.no_new_privs import layer as no_new_privs_layer
from three_ledger.no_new_privs import preexec_step as no_new_privs_step

# What signal.signal() returns and accepts back.
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

CHUNK_SIZE = 64 * 1024
# How often the leader is polled: at first often (a short child returns at once), then every
# _POLL_MAX_S, which is also the worst delay before a received signal is forwarded.
_POLL_S = 0.001
_POLL_MAX_S = 0.05
# After a read of less than _TRICKLE bytes, how long the pump lets the child's next writes
# gather: pytest flushes each progress character, and one wake-up per character cost the
# gate a wake-up per test. Meanwhile the pipe holds 64 KiB; a child that writes more than a
# trickle is read at once, as it writes.
_GATHER_S = 0.1
_TRICKLE = 4096
# So that a burst (pytest --collect-only -q prints every node id at once) does not stall the
# child on a full pipe for each gathering pause, the pipe holds this much where Linux lets
# it grow (F_SETPIPE_SZ, up to /proc/sys/fs/pipe-max-size: 1 MiB by default).
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@frozen
class RunResult:
    """How a child ended. `exit_code` is None after a signal death, a timeout or no start."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    interrupted_by: int | None
    start_error: str | None
    duration_ms: int
    # The log could not be written in full (disk full, ...): the run left no complete record.
    log_error: str | None = None
    # Asked with `no_new_privs`: `held`, or `missing: WHY` (no_new_privs.py); else None.
    no_new_privs: str | None = None
    # The limit a timed-out run hit: the message names it, not the measured time, which
    # overshoots it by the poll interval and the grace period.
    timeout_s: float | None = None
    # Under the sandbox's trampoline: whether it made every layer and started the command
    # (run/child.py); None where the command starts without it.
    started_inside: bool | None = None

    def failure(self) -> str | None:
        """One sentence when the run is an infrastructure failure, else None."""
        if self.interrupted_by is not None:
            return f"interrupted by {signal.Signals(self.interrupted_by).name}"
        if self.timed_out:
            limit_s = self.duration_ms / 1000 if self.timeout_s is None else self.timeout_s
            return f"the command timed out after {limit_s:.1f} s"
        if self.start_error is not None:
            return f"the command could not start: {self.start_error}"
        if self.signal is not None:
            return f"the command was killed by {_signal_name(self.signal)}"
        if self.log_error is not None:
            return f"the command's output could not be logged: {self.log_error}"
        return None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _Interrupts:
    """The first SIGINT/SIGTERM the gate receives while a child runs."""

    def __init__(self) -> None:
        self.signum: int | None = None
        # Whether the run's result reported it: one that came after cannot be lost.
        self.taken = False

    def record(self, signum: int, _frame: FrameType | None) -> None:
        # Only record: the polling loop forwards it, so no syscall runs inside the handler.
        if self.signum is None:
            self.signum = signum

    def take(self) -> int | None:
        """The signal for the run's result, which its caller then answers."""
        self.taken = self.signum is not None
        return self.signum


# The runs under way in threads other than the main one (vet's parallel mutants): only the
# main thread receives signals, so it hands them on with `interrupt_threads`.
_THREAD_RUNS: set[_Interrupts] = set()
_THREAD_RUNS_LOCK = threading.Lock()


def interrupt_threads(signum: int) -> None:
    """Stop every run under way in another thread as if it had received SIGNUM itself."""
    with _THREAD_RUNS_LOCK:
        for interrupts in _THREAD_RUNS:
            interrupts.record(signum, None)


@contextmanager
def _catching_interrupts(interrupts: _Interrupts) -> Iterator[None]:
    """Route SIGINT/SIGTERM to `interrupts`, restoring the old handlers; in a thread other
    than the main one, where no handler can be set, through `interrupt_threads`."""
    if threading.current_thread() is not threading.main_thread():
        with _THREAD_RUNS_LOCK:
            _THREAD_RUNS.add(interrupts)
        try:
            yield
        finally:
            with _THREAD_RUNS_LOCK:
                _THREAD_RUNS.discard(interrupts)
        return
    previous: dict[signal.Signals, _Handler] = {}
    for signum in _FORWARDED_SIGNALS:
        # A signal the gate was started with ignored (nohup, `&` in a script) stays ignored.
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, interrupts.record)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # None means a handler set outside Python: the default is the closest we can restore.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        # One that arrived after the result was made (the child had exited) reached only the
        # record: delivered again now, to the handlers it was meant for. A SIGTERM lost there
        # let `flake-evidence` run its remaining reruns to the end and exit 0.
        if interrupts.signum is not None and not interrupts.taken:
            signal.raise_signal(interrupts.signum)


def _grow(pipe: IO[bytes]) -> None:
    """Let PIPE hold _PIPE_BYTES where the system allows; its default (64 KiB) otherwise."""
    if sys.platform != "linux":
        return
    import fcntl

    with suppress(OSError):
        fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)


class _Pump:
    """A thread copying the child's pipe to the console and the log, one chunk at a time."""

    def __init__(self, pipe: IO[bytes], log: BinaryIO, console: BinaryIO) -> None:
        self._pipe = pipe
        _grow(pipe)
        self._log: BinaryIO | None = log
        self._console: BinaryIO | None = console
        self._stop = threading.Event()
        # Set once the leader has exited: no more gathering, the rest is read as it comes.
        self._leader_gone = threading.Event()
        self.log_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="three-ledger-output", daemon=True)
        self._thread.start()

    def finish(self, drain_s: float) -> None:
        """Wait for end of output; after `drain_s`, give up on holders that escaped the group."""
        # A gathering pause would otherwise hold the end of every run back by up to
        # _GATHER_S after the child's last words.
        self._leader_gone.set()
        self._thread.join(drain_s)
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._pipe, selectors.EVENT_READ)
            while not self._stop.is_set():
                if not selector.select(_POLL_MAX_S):
                    continue
                chunk = os.read(self._pipe.fileno(), CHUNK_SIZE)
                if not chunk:
                    return
                self._write(chunk)
                if len(chunk) < _TRICKLE:
                    self._leader_gone.wait(_GATHER_S)

    def _write(self, chunk: bytes) -> None:
        # A failing sink is dropped, never fatal: the pipe must keep draining or the child blocks.
        if self._console is not None:
            try:
                self._console.write(chunk)
                self._console.flush()
            except (OSError, ValueError):
                self._console = None
        if self._log is not None:
            try:
                self._log.write(chunk)
            except OSError as error:
                self.log_error = str(error)
                self._log = None


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    log_path: Path,
    console: BinaryIO | None = None,
    grace_s: float = 10.0,
    no_new_privs: bool = False,
    pass_fds: Sequence[int] = (),
) -> RunResult:
    """Run `argv` in its own process group; stream its output to `console` and `log_path`.

    stdin is /dev/null; stdout and stderr share one pipe. On timeout, or when the gate
    receives SIGINT/SIGTERM, the whole group gets that signal (SIGTERM on timeout), then
    SIGKILL after `grace_s`. Once the leader has exited, whatever is left of its group is
    killed with SIGKILL, so a background grandchild neither survives nor holds the pipe
    open; a process that left the group (setsid) is waited for at most `grace_s` more
    before its output is abandoned. A command that cannot start gives `start_error`. With
    `no_new_privs`, the child starts with PR_SET_NO_NEW_PRIVS set, and the result says
    whether the flag held. PASS_FDS stay open in the child, as subprocess keeps them.
    """
    started = time.monotonic_ns()
    if not argv:
        return _not_started("empty command", started)
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("wb")
    except OSError as error:
        return _not_started(f"cannot write log {log_path}: {error.strerror}", started)
    with log:
        interrupts = _Interrupts()
        with _catching_interrupts(interrupts):
            step = no_new_privs_step() if no_new_privs else None
            try:
                process = _start(argv, cwd, env, step.run if step else None, pass_fds)
            except OSError as error:
                return _not_started(_start_error(argv[0], cwd, error), started)
            # Read now: the child has exec'd, and it is not reaped before the run ends.
            privileges = None if step is None else no_new_privs_layer(process.pid, step)
            ran = _supervise(process, log, console, started, interrupts, timeout_s, grace_s)
            return dataclasses.replace(ran, no_new_privs=privileges)


def _start(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    preexec: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        bufsize=0,
        preexec_fn=preexec,
        pass_fds=tuple(pass_fds),
    )


def _start_error(program: str, cwd: Path, error: OSError) -> str:
    if error.filename is not None and str(error.filename) == str(cwd):
        return f"working directory {cwd}: {error.strerror}"
    if isinstance(error, FileNotFoundError):
        return f"command not found: {program}"
    if isinstance(error, PermissionError):
        return f"permission denied: {program}"
    return f"cannot start {program}: {error.strerror}"


def _not_started(reason: str, started: int) -> RunResult:
    return RunResult(None, None, False, None, reason, _elapsed_ms(started))


def _elapsed_ms(started: int) -> int:
    return (time.monotonic_ns() - started) // 1_000_000


def _fenced_if_relayed(console: BinaryIO | None) -> AbstractContextManager[None]:
    """Where the command's output goes to the gate's own stdout, under GitHub Actions, a fence
    that keeps the runner from reading it as workflow commands (`console_guard.fenced`)."""
    if console is not None or os.environ.get("GITHUB_ACTIONS") != "true":
        return nullcontext()
    from three_ledger.console_guard import fenced

    return fenced(sys.stdout.buffer, os.environ)


def _supervise(
    process: subprocess.Popen[bytes],
    log: BinaryIO,
    console: BinaryIO | None,
    started: int,
    interrupts: _Interrupts,
    timeout_s: float,
    grace_s: float,
) -> RunResult:
    assert process.stdout is not None  # stdout=PIPE
    with process.stdout, _fenced_if_relayed(console):
        pump = _Pump(process.stdout, log, sys.stdout.buffer if console is None else console)
        timed_out = _wait_or_stop(process, started, interrupts, timeout_s, grace_s)
        duration_ms = _elapsed_ms(started)
        pump.finish(grace_s)
    status = process.returncode
    return RunResult(
        exit_code=None if timed_out or status < 0 else status,
        signal=-status if status < 0 else None,
        timed_out=timed_out,
        interrupted_by=interrupts.take(),
        start_error=None,
        duration_ms=duration_ms,
        log_error=pump.log_error,
        timeout_s=timeout_s,
    )


def _wait_or_stop(
    process: subprocess.Popen[bytes],
    started: int,
    interrupts: _Interrupts,
    timeout_s: float,
    grace_s: float,
) -> bool:
    """Wait for the leader, stopping the group on timeout or interrupt; True when it timed out."""
    deadline = started / 1e9 + timeout_s
    timed_out = False
    exit_fd = _exit_fd(process)
    exits = None
    if exit_fd is not None:  # poll, not select: the fd may lie past select's FD_SETSIZE
        exits = select.poll()
        exits.register(exit_fd, select.POLLIN)
    try:
        for pause in _pauses():
            if _leader_exited(process):
                break
            if interrupts.signum is not None:
                _stop_group(process, interrupts.signum, grace_s)
                break
            if time.monotonic() >= deadline:
                timed_out = True
                _stop_group(process, signal.SIGTERM, grace_s)
                break
            if exits is None:
                time.sleep(pause)
            else:  # wakes as the leader exits, not at the end of the pause
                exits.poll(pause * 1000)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    # The leader is a zombie here, so its pid (the group id) cannot be reused yet.
    _signal_group(process, signal.SIGKILL)
    process.wait()
    return timed_out


def _pauses() -> Iterator[float]:
    """The polling loop's pauses: doubling from _POLL_S to _POLL_MAX_S, then that forever."""
    pause = _POLL_S
    while True:
        yield pause
        pause = min(pause * 2, _POLL_MAX_S)


def _exit_fd(process: subprocess.Popen[bytes]) -> int | None:
    """A pidfd of the leader (Linux 5.3+), readable once it exits; None where there is none."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(process.pid)
    except OSError:  # an older kernel, or a seccomp policy that refuses the call
        return None
    return fd


def _leader_exited(process: subprocess.Popen[bytes]) -> bool:
    if not hasattr(os, "waitid"):  # macOS: reaping at once leaves a tiny pid-reuse window
        return process.poll() is not None
    # WNOWAIT leaves the zombie in place: reaping waits until the rest of the group is killed.
    exited = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return exited is not None


def _stop_group(process: subprocess.Popen[bytes], first: int, grace_s: float) -> None:
    """Send `first` to the group, then SIGKILL if the leader outlives `grace_s`."""
    _signal_group(process, first)
    deadline = time.monotonic() + grace_s
    for pause in _pauses():
        if _leader_exited(process):
            return
        if time.monotonic() >= deadline:
            _signal_group(process, signal.SIGKILL)
            return
        time.sleep(pause)


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with suppress(ProcessLookupError):  # the group is already empty
        os.killpg(process.pid, signum)


@frozen
class Captured:
    """A short child's exit code and its whole output (git answers, probes)."""

    returncode: int
    stdout: bytes
    stderr: bytes


class ChildHung(Exception):
    """A short child did not finish within its timeout; its whole group was killed."""

    def __init__(self, argv: Sequence[str], timeout_s: float) -> None:
        self.command = " ".join(argv)
        self.timeout_s = timeout_s
        super().__init__(f"`{self.command}` did not finish in {timeout_s:g} s and was killed")


def run_captured(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    timeout_s: float,
    stdin: bytes | None = None,
) -> Captured:
    """Run a short child to completion and keep its output; ChildHung after `timeout_s`.

    For questions whose answers are small (git, the namespace probe), so the output is held
    in memory. Like `run_command`, the child gets a process group of its own, and a timeout
    kills the whole group: a hung child never hangs the gate. OSError when it cannot start.
    """
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.communicate()
        raise ChildHung(argv, timeout_s) from None
    finally:
        # Whatever the leader left behind in its group goes with it.
        _signal_group(process, signal.SIGKILL)
    return Captured(process.returncode, stdout, stderr)
