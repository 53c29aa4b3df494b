"""The test child's trampoline: it finishes the namespaces `unshare` made, then runs the command.

Started from its own folder under `python -I -S` (`launcher`: no site-packages, nothing from
the child's folder, so it starts fast and nothing installed can stand in for it), so it
imports only the standard library. `network_namespace.py` and `sandbox.py` say what they ask of it:

- `--outer-netns INODE`: the network namespace must not be the gate's and must hold only
  `lo`, which it brings up.
- `--plan JSON`: the mount layer's operations, in order (`sandbox.py` plans them): the tree
  read-only, a private `/tmp`, the folders the run may write.
- `--init`: it is PID 1 of a new PID namespace. It mounts a fresh `/proc`, runs the command in
  a process group of its own, forwards SIGINT and SIGTERM to that group, reaps orphans, and
  exits with the command's status (a death by signal N as 128+N); the kernel then kills
  whatever is left in the namespace.
- `--probe`: it runs nothing, and prints as one JSON line why each layer asked for cannot be
  made here (`null` where it can).
- `--ready-fd FD`: once every layer is made, just before the command starts, it writes one
  byte to FD and closes it, so the command never holds it. A gate that finds the byte knows
  the command ran inside all of them; one that does not, that nothing ran (`sandbox.py`).

With `--plan` or `--init` the command starts without any capability, so it cannot undo a
mount; otherwise it is exec'd in place and keeps the pid and process group the runner gave.
"""

from __future__ import annotations

# The C modules under `signal` and `socket`, and no `json`, `contextlib` or `functools`: each
# of those brings `enum`, `re` or `collections`, about 8 ms a start of the 15 ms the
# trampoline took (`benchmarks/README.md`), paid at each of its starts.
import _signal  # type: ignore[import-not-found]  # no stubs: `signal` without `enum`
import _socket
import fcntl
import os
import struct
import sys

# Not `typing.TYPE_CHECKING`: the trampoline starts once or twice a run (a probe, where one
# runs: before a collection, or after a scored run's first attempt failed), and `typing`
# and `dataclasses` (with `inspect` under it) cost each start about 12 ms of imports that
# nothing at run time needs. mypy reads any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ctypes
    from collections.abc import Callable, Sequence
    from typing import Any

_CDLL: ctypes.CDLL | None = None

# A namespace was not what the gate asked for, or could not be finished: nothing ran.
ISOLATION_FAILED = 125
# As a shell reports them, since `unshare` itself started fine and the runner cannot tell.
CANNOT_EXECUTE = 126
COMMAND_NOT_FOUND = 127
USAGE = 64  # ExitCode.USAGE, not imported: the trampoline must not need the package
# A command killed by signal N exits 128+N, as a shell reports it, after this line.
SIGNAL_BASE = 128
KILLED_BY = "three-ledger sandbox: the command was killed by"

_NET_NS = "/proc/self/ns/net"
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
# struct ifreq: a 16-byte name, then a union whose first member is the short flags (40 bytes).
_IFREQ = struct.Struct("16sH22x")

# <sys/mount.h> and <linux/mount.h>
_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MOUNT_ATTR_RDONLY = 0x1
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
# The same number on every architecture that numbers its system calls from the common table.
_SYS_MOUNT_SETATTR = 442
# <linux/prctl.h>
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAPABILITY_VERSION_3 = 0x20080522


# struct mount_attr: attr_set, attr_clr, propagation, userns_fd.
_MOUNT_ATTR = struct.Struct("=QQQQ")
# struct __user_cap_header_struct (version, pid), then two __user_cap_data_struct
# (effective, permitted, inheritable) for 64 capabilities: all zero.
_CAP_HEADER = struct.Struct("=Ii")
_CAP_DATA_SIZE = 2 * struct.calcsize("=III")


# Imports this module from its folder, put last on sys.path (after the standard library), so
# that Python uses its cached bytecode: a script run by path is compiled again every time.
_BOOT = (
    "import sys; sys.path.append(sys.argv.pop(1)); import trampoline; "
    "raise SystemExit(trampoline.main())"
)


def launcher() -> list[str]:
    """The argv that starts the trampoline; its options and `-- COMMAND` follow."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return [sys.executable, "-I", "-S", "-c", _BOOT, folder]


class SetupFailed(Exception):
    """A layer the gate asked for could not be made: the command must not run."""


class Request:
    """What the command line asks for (a plain class, see TYPE_CHECKING above)."""

    def __init__(self, command: list[str]) -> None:
        self.outer_netns: int | None = None
        self.init = False
        self.plan: list[list[Any]] | None = None
        self.probe = False
        self.ready_fd: int | None = None
        self.command = command


def main(argv: Sequence[str] | None = None) -> int:
    """`[--outer-netns INODE] [--init] [--plan JSON] [--probe] [--ready-fd FD] -- COMMAND...`."""
    request = _parse(list(sys.argv[1:] if argv is None else argv))
    if request is None:
        print(
            "usage: trampoline [--outer-netns INODE] [--init] [--plan JSON] [--probe] "
            "[--ready-fd FD] -- COMMAND [ARG...]",
            file=sys.stderr,
        )
        return USAGE
    if request.probe:
        print(json_object(probe(request)))
        return 0
    try:
        _set_up(request)
    except SetupFailed as failed:
        print(f"three-ledger sandbox: refusing to run the command: {failed}", file=sys.stderr)
        return ISOLATION_FAILED
    confined = request.init or request.plan is not None
    if request.init:
        code = _init(request.command, request.ready_fd)
        if sys.flags.no_site:
            # At once, as the gate starts it: the namespace ends with PID 1, and the
            # interpreter's teardown is not free. With `site` (a test starting it under
            # coverage), it returns, so that what atexit holds runs.
            sys.stderr.flush()
            os._exit(code)
        return code
    return _exec(request.command, drop_capabilities=confined, ready_fd=request.ready_fd)


def _parse(args: list[str]) -> Request | None:
    if "--" not in args:
        return None
    split = args.index("--")
    options, command = args[:split], args[split + 1 :]
    request = Request(command=command)
    while options:
        option = options.pop(0)
        if option == "--outer-netns" and options and options[0].isdigit():
            request.outer_netns = int(options.pop(0))
        elif option == "--ready-fd" and options and options[0].isdigit():
            request.ready_fd = int(options.pop(0))
        elif option == "--plan" and options:
            request.plan = _plan(options.pop(0))
            if request.plan is None:
                return None
        elif option in ("--init", "--probe"):
            setattr(request, option[2:], True)
        else:
            return None
    if request.probe != (not command):
        return None
    return request


def _plan(text: str) -> list[list[Any]] | None:
    plan = parse_plan(text)
    valid = plan is not None and all(step and isinstance(step[0], str) for step in plan)
    return plan if valid else None


# --- the JSON the trampoline speaks -------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SPACE = " \t\n\r"


def parse_plan(text: str) -> list[list[Any]] | None:
    """A mount plan as `json.dumps` writes it: a list of lists of strings and of lists of
    strings. None for anything else: numbers, objects and deeper nesting are never a plan."""
    try:
        value, end = _value(text, _skip(text, 0), depth=0)
    except (IndexError, ValueError):
        return None
    if _skip(text, end) != len(text) or not isinstance(value, list):
        return None
    if not all(isinstance(step, list) for step in value):
        return None
    return value


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _value(text: str, at: int, depth: int) -> tuple[Any, int]:
    if text[at] == '"':
        return _string(text, at + 1)
    if text[at] != "[" or depth > 2:
        raise ValueError(f"not a plan at {at}")
    items: list[Any] = []
    at = _skip(text, at + 1)
    if text[at] == "]":
        return items, at + 1
    while True:
        item, at = _value(text, at, depth + 1)
        items.append(item)
        at = _skip(text, at)
        if text[at] == "]":
            return items, at + 1
        if text[at] != ",":
            raise ValueError(f"not a plan at {at}")
        at = _skip(text, at + 1)


def _string(text: str, at: int) -> tuple[str, int]:
    """The JSON string whose opening quote is just before AT, and the index after it."""
    parts: list[str] = []
    while True:
        char = text[at]
        if char == '"':
            return "".join(parts), at + 1
        if char < " ":
            raise ValueError(f"a control character in a string at {at}")
        if char != "\\":
            parts.append(char)
            at += 1
            continue
        code = text[at + 1]
        if code == "u":
            number, at = _hex4(text, at + 2)
            if 0xD800 <= number < 0xDC00 and text[at : at + 2] == "\\u":
                low, after = _hex4(text, at + 2)
                if 0xDC00 <= low < 0xE000:
                    number, at = 0x10000 + ((number - 0xD800) << 10) + (low - 0xDC00), after
            parts.append(chr(number))
        elif code in _ESCAPES:
            parts.append(_ESCAPES[code])
            at += 2
        else:
            raise ValueError(f"an unknown escape at {at}")


def _hex4(text: str, at: int) -> tuple[int, int]:
    digits = text[at : at + 4]
    if len(digits) != 4 or not all(char in "0123456789abcdefABCDEF" for char in digits):
        raise ValueError(f"a bad \\u escape at {at}")
    return int(digits, 16), at + 4


def json_object(found: dict[str, str | None]) -> str:
    """FOUND as one line of JSON (ASCII only, as `json.dumps` writes it): the probe's answer."""
    members = (f"{_json_string(key)}: {_json_value(value)}" for key, value in found.items())
    return "{" + ", ".join(members) + "}"


def _json_value(value: str | None) -> str:
    return "null" if value is None else _json_string(value)


def _json_string(text: str) -> str:
    out = []
    for char in text:
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif " " <= char < "\x7f":
            out.append(char)
        elif ord(char) > 0xFFFF:
            high, low = divmod(ord(char) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return '"' + "".join(out) + '"'


def _set_up(request: Request) -> None:
    if request.outer_netns is not None:
        problem = _isolation_problem(request.outer_netns) or _loopback_problem()
        if problem is not None:
            raise SetupFailed(problem)
    if request.plan is not None:
        where = os.getcwd()
        _apply_all(request.plan)
        # Looked up again: the folder it stood in may now lie under a new mount.
        try:
            os.chdir(where)
        except OSError as error:
            raise SetupFailed(f"cannot enter {where} again: {error.strerror}") from None
    if request.init:
        _become_init()


def probe(request: Request) -> dict[str, str | None]:
    """Why each layer REQUEST names cannot be made here: None for each that can."""
    found: dict[str, str | None] = {}
    if request.outer_netns is not None:
        found["network"] = _isolation_problem(request.outer_netns) or _loopback_problem()
    if request.plan is not None:
        found["mount"] = _attempt(lambda: _apply_all(request.plan or []))
    if request.init:
        found["pid"] = _attempt(_become_init)
    if request.init or request.plan is not None:
        # Without this the command could undo every mount: neither layer holds.
        dropped = _attempt(_drop_capabilities)
        for layer in ("mount", "pid"):
            if layer in found and found[layer] is None:
                found[layer] = dropped
    return found


def _attempt(action: Callable[[], object]) -> str | None:
    try:
        action()
    except (SetupFailed, OSError) as error:
        return str(error)
    return None


# --- the network namespace ----------------------------------------------------------------


def _isolation_problem(outer: int) -> str | None:
    # Checked before touching any interface, so the host's own `lo` is never changed.
    inode = os.stat(_NET_NS).st_ino
    if inode == outer:
        return f"still in the gate's network namespace (inode {inode})"
    names = sorted(name for _index, name in _socket.if_nameindex())
    if names != ["lo"]:
        return f"the namespace has interfaces other than lo: {', '.join(names)}"
    return None


def _loopback_problem() -> str | None:
    try:
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        try:
            flags = _interface_flags(sock.fileno(), b"lo")
            fcntl.ioctl(sock.fileno(), _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))
            flags = _interface_flags(sock.fileno(), b"lo")
        finally:
            sock.close()
    except OSError as error:
        return f"cannot bring lo up: {error}"
    return None if flags & _IFF_UP else "lo is still down after bringing it up"


def _interface_flags(fd: int, name: bytes) -> int:
    reply = fcntl.ioctl(fd, _SIOCGIFFLAGS, _IFREQ.pack(name, 0))
    flags: int = _IFREQ.unpack(reply)[1]
    return flags


# --- the mount layer ------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    global _CDLL  # loaded once, on first use
    if _CDLL is not None:
        return _CDLL
    # Imported here: the gate imports this module for its names, and needs no ctypes.
    import ctypes

    libc = _CDLL = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    libc.syscall.restype = ctypes.c_long
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _check(result: int, what: str) -> None:
    import ctypes

    if result != 0:
        number = ctypes.get_errno()
        raise SetupFailed(f"{what}: {os.strerror(number)}")


def _mount(source: str, target: str, kind: str | None, flags: int, data: str = "") -> None:
    libc = _libc()
    done = libc.mount(
        os.fsencode(source),
        os.fsencode(target),
        kind.encode() if kind else None,
        flags,
        data.encode() if data else None,
    )
    _check(done, f"cannot mount {kind or 'a bind of ' + source} on {target}")


def _set_read_only(path: str, *, read_only: bool, recursive: bool) -> None:
    import ctypes

    changed = (_MOUNT_ATTR_RDONLY, 0) if read_only else (0, _MOUNT_ATTR_RDONLY)
    attr = ctypes.create_string_buffer(_MOUNT_ATTR.pack(*changed, 0, 0), _MOUNT_ATTR.size)
    flags = _AT_RECURSIVE if recursive else 0
    done = _libc().syscall(
        _SYS_MOUNT_SETATTR, _AT_FDCWD, os.fsencode(path), flags, attr, _MOUNT_ATTR.size
    )
    state = "read-only" if read_only else "writable"
    _check(done, f"cannot make {path} {state} (mount_setattr, Linux 5.12 or later)")


def _apply(step: list[Any]) -> None:
    """One operation of the mount plan; SetupFailed when it cannot be done."""
    match step:
        case ["read_only", str(path)]:
            _set_read_only(path, read_only=True, recursive=True)
        case ["private_tmp", str(path), list(kept)]:
            _private_tmp(path, [str(relative) for relative in kept])
        case ["tmpfs", str(path)]:
            _require_folder(path)
            _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
        case ["writable", str(path)]:
            _require_folder(path)
            _mount(path, path, None, _MS_BIND)
            _set_read_only(path, read_only=False, recursive=False)
        case ["hide", str(path)]:
            if os.path.isdir(path):  # already out of sight where it is gone (a private /tmp)
                flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY
                _mount("tmpfs", path, "tmpfs", flags, "mode=0555")
        case ["mkdir", str(path)]:
            _make_folder(path)
        case _:
            raise SetupFailed(f"unknown mount step {step!r}")


def _apply_all(steps: list[list[Any]]) -> None:
    for step in steps:
        _apply(step)


def _require_folder(path: str) -> None:
    if not os.path.isdir(path) or os.path.islink(path):
        raise SetupFailed(f"{path} is not a folder")


def _make_folder(path: str) -> None:
    try:
        os.mkdir(path, 0o700)
    except OSError as error:
        raise SetupFailed(f"cannot make {path}: {error.strerror}") from None


def _private_tmp(path: str, kept: list[str]) -> None:
    """An empty tmpfs over PATH; each of KEPT (relative to PATH) visible again, read-only."""
    try:
        real = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise SetupFailed(f"cannot open {path}: {error.strerror}") from None
    try:
        _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
        for relative in kept:
            _keep(real, path, relative)
    finally:
        os.close(real)


def _keep(real: int, path: str, relative: str) -> None:
    """RELATIVE of the real folder (open as REAL) bound again at PATH/RELATIVE."""
    source = f"/proc/self/fd/{real}/{relative}"
    target = os.path.join(path, relative)
    try:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if os.path.isdir(source):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    except OSError as error:
        raise SetupFailed(f"cannot keep {target} visible: {error.strerror}") from None
    _mount(source, target, None, _MS_BIND | _MS_REC)


# --- the PID namespace ----------------------------------------------------------------------


def _become_init() -> None:
    if os.getpid() != 1:
        raise SetupFailed(f"not PID 1 of a new PID namespace (pid {os.getpid()})")
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    libc = _libc()
    # Neither the command nor its children may trace or read PID 1, which keeps capabilities.
    _check(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0), "cannot make PID 1 undumpable")
    # If `unshare` dies, so does the namespace.
    _check(libc.prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0), "cannot set PID 1's death signal")


class _Forwarder:
    """PID 1's SIGINT and SIGTERM handler: each goes to the command's process group."""

    def __init__(self) -> None:
        self.group: int | None = None

    def __call__(self, signum: int, _frame: object) -> None:
        if self.group is not None:
            try:  # noqa: SIM105 - contextlib would cost every start its import
                os.killpg(self.group, signum)
            except ProcessLookupError:  # the group is gone: nothing to stop
                pass


def _init(command: list[str], ready_fd: int | None = None) -> int:
    """Run COMMAND as PID 1's child until it ends; reap every other process meanwhile."""
    # A signal the trampoline was started with ignored stays ignored, in the command too.
    forwarded = [
        signum
        for signum in (_signal.SIGINT, _signal.SIGTERM)
        if _signal.getsignal(signum) != _signal.SIG_IGN
    ]
    forwarder = _Forwarder()
    # Blocked until the command's group exists, so that no signal is lost in between.
    _signal.pthread_sigmask(_signal.SIG_BLOCK, forwarded)
    for signum in forwarded:
        _signal.signal(signum, forwarder)
    leader = os.fork()
    if leader == 0:
        os.setpgid(0, 0)
        for signum in forwarded:
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, forwarded)
        os._exit(_exec(command, drop_capabilities=True, ready_fd=ready_fd))
    if ready_fd is not None:
        os.close(ready_fd)  # the command's process says it, as it starts
    try:  # noqa: SIM105 - as above
        os.setpgid(leader, leader)
    except OSError:  # the command already set it, or already exec'd
        pass
    forwarder.group = leader
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, forwarded)
    return _wait_for(leader)


def _wait_for(leader: int) -> int:
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid != leader:
            continue  # an orphan, reaped
        code = os.waitstatus_to_exitcode(status)
        if code >= 0:
            return code
        # Said in so many words: a runner may exit 128+N on its own (mocha counts failures).
        print(f"{KILLED_BY} {signal_name(-code)}", file=sys.stderr, flush=True)
        return SIGNAL_BASE - code


def signal_name(signum: int) -> str:
    """SIGTERM for 15; `signal 34` for a number Python has no name for (a real-time one)."""
    import signal  # only here: its `enum` costs every start of the trampoline

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# --- the command ----------------------------------------------------------------------------


def _drop_capabilities() -> None:
    """Every capability gone, for good: the command cannot undo a mount, nor mount again."""
    libc = _libc()
    for capability in range(_last_capability() + 1):
        _check(libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0), "cannot drop a capability")
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0)  # EINVAL before Linux 4.3
    import ctypes

    header = ctypes.create_string_buffer(_CAP_HEADER.pack(_CAPABILITY_VERSION_3, 0))
    data = ctypes.create_string_buffer(_CAP_DATA_SIZE)
    _check(libc.capset(header, data), "cannot clear the capabilities")


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as stream:
            return int(stream.read())
    except (OSError, ValueError):
        return 63


def _exec(command: list[str], *, drop_capabilities: bool, ready_fd: int | None = None) -> int:
    # exec, not a child: without --init the command keeps the pid and process group the
    # runner gave.
    try:
        if drop_capabilities:
            _drop_capabilities()
        if ready_fd is not None:
            _say_ready(ready_fd)
        os.execvp(command[0], command)
    except SetupFailed as failed:
        print(f"three-ledger sandbox: refusing to run the command: {failed}", file=sys.stderr)
        return ISOLATION_FAILED
    except FileNotFoundError:
        print(f"three-ledger netns: command not found: {command[0]}", file=sys.stderr)
        return COMMAND_NOT_FOUND
    except OSError as error:
        print(f"three-ledger netns: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return CANNOT_EXECUTE


def _say_ready(fd: int) -> None:
    """Every layer is made: one byte to the gate, and FD closed before the command starts."""
    try:
        os.write(fd, b"1")
    finally:
        os.close(fd)


if __name__ == "__main__":
    raise SystemExit(main())
