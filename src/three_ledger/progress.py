"""Lines that say what a long command is doing while it does it.

`vet` runs the suite a dozen times, `gate` runs a chain of steps, `properties` and
`shard-plan` run the suite once: each says when a run or step starts and how it ended, and
past a minute without a line of its own it says it is still at work, so that a CI service
that kills a silent job (CircleCI and Travis after ten minutes) never mistakes a long suite
for a hung one. Plain lines, the same on a terminal and in a CI log; `--quiet` turns them off.
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

# Silence longer than this gets a line of its own.
HEARTBEAT_S = 60.0
# A line names a command or a test id: it stays one line, and a short one.
MAX_LINE = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Progress:
    """The progress lines of one command, written to STREAM (taken when it is made, so that
    a step whose output is redirected to a log does not take them along)."""

    def __init__(self, name: str, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.name = name
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.heartbeat_s = HEARTBEAT_S
        self._lock = threading.Lock()
        self._last = time.monotonic()

    def say(self, text: str) -> None:
        if self.quiet:
            return
        line = _CONTROL.sub(lambda match: repr(match.group(0))[1:-1], f"{self.name}: {text}")
        if len(line) > MAX_LINE:
            line = line[: MAX_LINE - 1] + "…"
        with self._lock:
            print(line, file=self.stream, flush=True)
            self._last = time.monotonic()

    @contextlib.contextmanager
    def running(self, what: str) -> Iterator[None]:
        """Say WHAT started; while it runs, a line after each minute of silence."""
        started = time.monotonic()
        self.say(f"{what} ...")
        done = threading.Event()
        beat = threading.Thread(target=self._beat, args=(what, started, done), daemon=True)
        beat.start()
        try:
            yield
        finally:
            done.set()
            beat.join()

    def _beat(self, what: str, started: float, done: threading.Event) -> None:
        while not done.wait(self._until_due()):
            if time.monotonic() - self._last >= self.heartbeat_s:
                self.say(f"still running {what} ({time.monotonic() - started:.0f} s so far)")

    def _until_due(self) -> float:
        return max(0.05, self.heartbeat_s - (time.monotonic() - self._last))


_QUIET = False


def set_quiet(quiet: bool) -> None:
    """The command line's `--quiet`, for every Progress made after it."""
    global _QUIET
    _QUIET = quiet


def progress(name: str, stream: TextIO | None = None) -> Progress:
    return Progress(name, stream, quiet=_QUIET)
