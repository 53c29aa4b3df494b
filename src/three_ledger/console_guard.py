"""What the gate prints, kept from reading as a GitHub workflow command.

GitHub's runner takes a line of a step's output for a command when, its leading blanks
dropped, it starts with `::`, or when it holds `##[` anywhere (the older form). File names,
test ids and the test command's output come from the change under review: a file named
`::add-mask::reject` listed on a line of its own would hide every later "reject" in the
job's log, and a `::stop-commands::` one would drop the gate's own annotations (the fifth
red team). So, under GitHub Actions: every line the gate writes to stderr (`guarded`), and
each line of its reports on stdout (`neutral`, through `findings.one_line`), has such a
start or such a mark shown as an escape; the test command's output, which the gate relays
to stdout as it comes, is fenced by `::stop-commands::` with a token the command never sees
(`fenced`). The gate's own commands (`workflow_commands.py`) are written apart from all
three. Machine-read output on stdout (`plan --json`, `draft-pin`) is left as it is: a JSON
line never starts with `::`.

Standard library only, and imported only where GitHub Actions runs the gate, but for
`neutral`, which has no import of its own.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, TextIO

_OLD_COMMAND = "##["


def neutral(line: str) -> str:
    """LINE (one line, no line break) with what would make it a workflow command shown as an
    escape: a leading `:` (after any blanks) as `\\x3a`, each `##[` as `##\\x5b`."""
    if _OLD_COMMAND in line:
        line = line.replace(_OLD_COMMAND, "##\\x5b")
    stripped = line.lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + "\\x3a" + stripped[1:]
    return line


class _Guarded:
    """A text stream that writes what it is given with each line made `neutral`. A line is
    held until it ends (every line the gate writes to stderr does), so that a command split
    across writes is seen whole; what is left at the end is written then."""

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
        self.inner.flush()

    def close_line(self) -> None:
        with self.lock:
            if self.pending:
                self.inner.write(neutral(self.pending))
                self.pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextlib.contextmanager
def guarded(env: Mapping[str, str]) -> Iterator[None]:
    """Under GitHub Actions (ENV's `GITHUB_ACTIONS`), stderr made `_Guarded` for the block."""
    if env.get("GITHUB_ACTIONS") != "true" or isinstance(sys.stderr, _Guarded):
        yield
        return
    inner = sys.stderr
    guard = _Guarded(inner)
    sys.stderr = guard
    try:
        yield
    finally:
        guard.close_line()
        sys.stderr = inner


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
