"""What the gate prints, kept from reading as a GitHub workflow command.

GitHub's runner takes a line of a step's output for a command when, its leading blanks
dropped, it starts with `::`, or when it holds `##[` anywhere (the older form); it ends a
line at a CR as well as an LF. File names, test ids and the test command's output come from
the change under review: a file named `::add-mask::reject` listed on a line of its own would
hide every later "reject" in the job's log, and a `::stop-commands::` one would drop the
gate's own annotations (the fifth red team). So:

- every line of the gate's reports has such a start or such a mark shown as an escape
  (`paths.neutral`, through `findings.one_line` and `paths.printable`), on any machine;
- under GitHub Actions (`GITHUB_ACTIONS=true`), everything a command writes to stdout and
  stderr, refusals and crash reports included, is made `neutral` line by line (`guarded`).
  The escapes are JSON's own, so `plan --json` or `draft-pin` read back the same;
- the test command's output, which `properties` relays to stdout as it comes, is fenced by
  `::stop-commands::TOKEN` and `::TOKEN::`, TOKEN random and printed only once the command
  runs (`fenced`): it is shown as the command wrote it, and the runner acts on none of it;
- the gate's own commands (`workflow_commands.py`) go out through `command`, past the guard.

Standard library only; imported where GitHub Actions runs the gate.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, TextIO

from three_ledger.paths import neutral


class _Guarded:
    """A text stream that writes what it is given with each line made `neutral`. A line is
    held until it ends or the stream is flushed, so that a command split across writes is
    seen whole (every line the gate prints is written whole)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.pending = ""
        self.lock = threading.Lock()  # progress lines come from a heartbeat thread too

    def write(self, text: str) -> int:
        with self.lock:
            lines = (self.pending + text).split("\n")
            self.pending = lines.pop()
            if lines:
                self.inner.write("".join(neutral(line) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        with self.lock:
            if self.pending:
                self.inner.write(neutral(self.pending))
                self.pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def guarded(env: Mapping[str, str]) -> Iterator[None]:
    """Under GitHub Actions (ENV's `GITHUB_ACTIONS`), stdout and stderr made `_Guarded` for
    the block."""
    if env.get("GITHUB_ACTIONS") != "true" or isinstance(sys.stdout, _Guarded):
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Guarded(out), _Guarded(err)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


def command(text: str) -> None:
    """Write TEXT, the gate's own workflow commands (each line one, escaped as the runner
    parses them: `workflow_commands.py`), to stdout past the guard."""
    stream = sys.stdout
    if isinstance(stream, _Guarded):
        stream.flush()
        stream = stream.inner
    stream.write(text)
    stream.flush()


@contextlib.contextmanager
def fenced(stream: BinaryIO, env: Mapping[str, str]) -> Iterator[None]:
    """Under GitHub Actions, what is written to STREAM in the block (the test command's own
    output, relayed) is not read as workflow commands: `::stop-commands::TOKEN` before it and
    `::TOKEN::` after, TOKEN random and written nowhere the command can read."""
    if env.get("GITHUB_ACTIONS") != "true":
        yield
        return
    token = os.urandom(16).hex()
    sys.stdout.flush()
    stream.write(f"::stop-commands::{token}\n".encode())
    stream.flush()
    try:
        yield
    finally:
        # On a line of its own, whatever the command's last line ended with.
        stream.write(f"\n::{token}::\n".encode())
        stream.flush()
