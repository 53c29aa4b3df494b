"""Under `--junit-xml`, pytest's presence: the gate refuses a pytest run scored from a report.

With `--junit-xml` the gate reads a report that the code under test could have written, with
no tripwire and no harness; pytest has the plugin, which gives both. So the gate still stages
the plugin in that mode, but only this runs: when pytest imports the plugin, each process
appends one line to the file `THREE_LEDGER_PYTEST_SEEN` names, and the gate refuses the run
once it ends (`run/junit_evidence.py`). That measures pytest instead of guessing it from the
command (`npm test` can run pytest; `python -m pytest` can be a wrapper). Standard library
only; the variable stays set, so nested and xdist runs record themselves too.
"""

from __future__ import annotations

import json
import os
import sys

from .wire import PYTEST_SEEN_ENV


def record_presence(pytest_version: str) -> None:
    """Append this process's line when the gate asked; nothing happens otherwise."""
    seen = os.environ.get(PYTEST_SEEN_ENV)
    if not seen:
        return
    line = json.dumps({"pid": os.getpid(), "pytest": pytest_version, "argv": sys.argv[1:]})
    # One write of one line in append mode: processes writing at once do not interleave.
    descriptor = os.open(seen, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.write(descriptor, (line + "\n").encode("utf-8", "replace"))
    finally:
        os.close(descriptor)
