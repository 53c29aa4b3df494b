"""A fresh Linux user+network namespace with only loopback, the network ban's first choice.

`namespace_argv` wraps a command in `unshare` and the trampoline (`trampoline.py`), which
brings `lo` up and checks the isolation before it execs the command; `namespace_available`
probes for it. Runs the sandbox confines (`sandbox.py`) get the network namespace from there,
with the sandbox's other layers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from three_ledger.run import trampoline
from three_ledger.run.trampoline import (
    COMMAND_NOT_FOUND as COMMAND_NOT_FOUND,
)
from three_ledger.run.trampoline import (
    ISOLATION_FAILED as ISOLATION_FAILED,
)

_NET_NS = "/proc/self/ns/net"
_PROBE_TIMEOUT_S = 10.0


def namespace_argv(argv: Sequence[str]) -> list[str]:
    """The argv that runs `argv` in new user and network namespaces through the trampoline.

    The trampoline runs from its own folder under `-I -S`, so neither the child's cwd (which
    may hold its own `three_ledger` folder) nor PYTHONPATH decides which code checks the ban.
    """
    outer = str(netns_inode())
    return [
        *("unshare", "--user", "--map-root-user", "--net", "--"),
        *trampoline.launcher(),
        *("--outer-netns", outer, "--"),
        *argv,
    ]


def namespace_available() -> str | None:
    """None when a probe runs through the namespace trampoline, else a one-line reason."""
    # Imported here: only the commands that run a child need them.
    import shutil

    from three_ledger.runner import ChildHung, run_captured

    if not sys.platform.startswith("linux") or not os.path.exists(_NET_NS):
        return "network namespaces need Linux with /proc mounted"
    if shutil.which("unshare") is None:
        return "the `unshare` program (util-linux) is not installed"
    # What runs inside only proves the exec: `true`, not a second Python start (about 40
    # million instructions, every plan, shard-plan, vet and init).
    true = shutil.which("true")
    probe = namespace_argv([true] if true else [sys.executable, "-c", "pass"])
    try:
        done = run_captured(probe, cwd=None, env=None, timeout_s=_PROBE_TIMEOUT_S)
    except ChildHung:
        return f"the network namespace probe did not finish in {_PROBE_TIMEOUT_S:.0f} s"
    except OSError as error:
        return f"the network namespace probe could not start: {error}"
    if done.returncode == 0:
        return None
    return probe_reason(done.returncode, _last_line(done.stderr))


def probe_reason(returncode: int, stderr_line: str) -> str:
    """Why a probe through `unshare` and the trampoline failed, with what turns it on."""
    if returncode == ISOLATION_FAILED:
        return f"the network namespace failed its isolation check: {stderr_line}"
    if "unshare failed" in stderr_line or "write failed" in stderr_line:
        return (
            f"user namespaces are unavailable ({stderr_line}); enable them with "
            "`sysctl -w kernel.unprivileged_userns_clone=1`, a non-zero "
            "`user.max_user_namespaces`, or on Ubuntu "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; in a container, a "
            "seccomp profile that allows unshare and clone with CLONE_NEWUSER"
        )
    return f"the network namespace probe exited {returncode}: {stderr_line or 'no message'}"


def _last_line(output: bytes) -> str:
    lines = output.decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def netns_inode() -> int:
    """The inode of this process's network namespace: the trampoline's must differ."""
    return os.stat(_NET_NS).st_ino
