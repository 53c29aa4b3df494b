"""PR_SET_NO_NEW_PRIVS for the test child: sudo and setuid programs give it nothing.

The flag is set in the child between fork and exec, so it holds whatever else the run could
or could not set up (no namespace, no mount): the kernel never clears it, and every process
the child starts inherits it. The gate does not take the step's word for it: once the child
has started, it reads the flag back from /proc.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from three_ledger.frozen import frozen
from three_ledger.vocabulary import LAYER_HELD, layer_missing

PR_SET_NO_NEW_PRIVS = 38


@frozen
class Step:
    """What to run in the child before exec; `missing` says why there is none."""

    run: Callable[[], None] | None
    missing: str | None = None


def preexec_step() -> Step:
    """The step that sets the flag, or why it cannot be set on this machine.

    It calls libc's prctl through ctypes, looked up here, in the gate: between fork and exec
    the child only makes the call (no import, no lookup), which is what keeps subprocess's
    preexec step safe in a gate that has threads.
    """
    if not sys.platform.startswith("linux"):
        return Step(None, f"PR_SET_NO_NEW_PRIVS is a Linux prctl; this is {sys.platform}")
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError) as error:
        return Step(None, f"libc's prctl cannot be called from Python here: {error}")
    prctl.restype = ctypes.c_int
    arguments = (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    def set_flag() -> None:
        # A failure is not raised here (that would stop the run): /proc tells afterwards.
        prctl(*arguments)

    return Step(set_flag)


def layer(pid: int, step: Step, proc: Path = Path("/proc")) -> str:
    """`held` when /proc shows the flag set on PID, else `missing: WHY`.

    PID is a child that has exec'd and not been reaped yet (a zombie still shows it).
    """
    if step.missing is not None:
        return layer_missing(step.missing)
    status = proc / str(pid) / "status"
    try:
        lines = status.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError as error:
        return layer_missing(f"the flag could not be read back from {status}: {error.strerror}")
    values = [line.split(":", 1)[1].strip() for line in lines if line.startswith("NoNewPrivs:")]
    if not values:
        return layer_missing(f"{status} has no NoNewPrivs line (a kernel older than 4.10)")
    if values[0] != "1":
        return layer_missing("prctl(PR_SET_NO_NEW_PRIVS) did not take effect in the child")
    return LAYER_HELD
