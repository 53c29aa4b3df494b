"""A fresh Linux user+network namespace with only loopback, the network ban's first choice.

`namespace_argv` wraps a command in `unshare` and this module's trampoline, which brings
`lo` up and checks the isolation before it execs the command. Stdlib only, because the
trampoline runs as a plain script under `python -I -S` (no site-packages: it starts fast
and nothing installed can stand in for it).
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys
from collections.abc import Sequence

# The trampoline refused: the namespace is not isolated, or `lo` could not be brought up.
ISOLATION_FAILED = 125
# As a shell reports them, since `unshare` itself started fine and the runner cannot tell.
CANNOT_EXECUTE = 126
COMMAND_NOT_FOUND = 127
USAGE = 64  # ExitCode.USAGE, not imported: the trampoline must not need the package

_NET_NS = "/proc/self/ns/net"
_PROBE_TIMEOUT_S = 10.0
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
# struct ifreq: a 16-byte name, then a union whose first member is the short flags (40 bytes).
_IFREQ = struct.Struct("16sH22x")


def namespace_argv(argv: Sequence[str]) -> list[str]:
    """The argv that runs `argv` in new user and network namespaces through the trampoline.

    The trampoline runs by file path under `-I`, so neither the child's cwd (which may
    hold its own `three_ledger` folder) nor PYTHONPATH decides which code checks the ban.
    """
    trampoline = os.path.abspath(__file__)
    outer = str(_netns_inode())
    return [
        *("unshare", "--user", "--map-root-user", "--net", "--"),
        *(sys.executable, "-I", "-S", trampoline, "--outer-netns", outer, "--"),
        *argv,
    ]


def namespace_available() -> str | None:
    """None when a probe runs through the namespace trampoline, else a one-line reason."""
    # Imported here: the trampoline itself must start fast and needs neither.
    import shutil

    from three_ledger.runner import ChildHung, run_captured

    if not sys.platform.startswith("linux") or not os.path.exists(_NET_NS):
        return "network namespaces need Linux with /proc mounted"
    if shutil.which("unshare") is None:
        return "the `unshare` program (util-linux) is not installed"
    probe = namespace_argv([sys.executable, "-c", "pass"])
    try:
        done = run_captured(probe, cwd=None, env=None, timeout_s=_PROBE_TIMEOUT_S)
    except ChildHung:
        return f"the network namespace probe did not finish in {_PROBE_TIMEOUT_S:.0f} s"
    except OSError as error:
        return f"the network namespace probe could not start: {error}"
    if done.returncode == 0:
        return None
    return _probe_reason(done.returncode, _last_line(done.stderr))


def _probe_reason(returncode: int, stderr_line: str) -> str:
    if returncode == ISOLATION_FAILED:
        return f"the network namespace failed its isolation check: {stderr_line}"
    if "unshare failed" in stderr_line or "write failed" in stderr_line:
        return (
            f"user namespaces are unavailable ({stderr_line}); enable them with "
            "`sysctl -w kernel.unprivileged_userns_clone=1`, a non-zero "
            "`user.max_user_namespaces`, or on Ubuntu "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
        )
    return f"the network namespace probe exited {returncode}: {stderr_line or 'no message'}"


def _last_line(output: bytes) -> str:
    lines = output.decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def _netns_inode() -> int:
    return os.stat(_NET_NS).st_ino


def main(argv: Sequence[str] | None = None) -> int:
    """The trampoline: `--outer-netns INODE -- COMMAND...`; execs COMMAND once isolated."""
    args = list(sys.argv[1:] if argv is None else argv)
    parsed = _parse(args)
    if parsed is None:
        print("usage: netns --outer-netns INODE -- COMMAND [ARG...]", file=sys.stderr)
        return USAGE
    outer, command = parsed
    problem = _isolation_problem(outer) or _loopback_problem()
    if problem is not None:
        print(f"three-ledger netns: refusing to run the command: {problem}", file=sys.stderr)
        return ISOLATION_FAILED
    return _exec(command)


def _parse(args: list[str]) -> tuple[int, list[str]] | None:
    if len(args) < 4 or args[0] != "--outer-netns" or args[2] != "--":
        return None
    if not args[1].isdigit():
        return None
    return int(args[1]), args[3:]


def _isolation_problem(outer: int) -> str | None:
    # Checked before touching any interface, so the host's own `lo` is never changed.
    inode = _netns_inode()
    if inode == outer:
        return f"still in the gate's network namespace (inode {inode})"
    names = sorted(name for _index, name in socket.if_nameindex())
    if names != ["lo"]:
        return f"the namespace has interfaces other than lo: {', '.join(names)}"
    return None


def _loopback_problem() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            flags = _interface_flags(sock, b"lo")
            fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))
            flags = _interface_flags(sock, b"lo")
    except OSError as error:
        return f"cannot bring lo up: {error}"
    return None if flags & _IFF_UP else "lo is still down after bringing it up"


def _interface_flags(sock: socket.socket, name: bytes) -> int:
    reply = fcntl.ioctl(sock.fileno(), _SIOCGIFFLAGS, _IFREQ.pack(name, 0))
    flags: int = _IFREQ.unpack(reply)[1]
    return flags


def _exec(command: list[str]) -> int:
    # exec, not a child: the command keeps the pid and process group the runner gave it.
    try:
        os.execvp(command[0], command)
    except FileNotFoundError:
        print(f"three-ledger netns: command not found: {command[0]}", file=sys.stderr)
        return COMMAND_NOT_FOUND
    except OSError as error:
        print(f"three-ledger netns: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return CANNOT_EXECUTE


if __name__ == "__main__":
    raise SystemExit(main())
