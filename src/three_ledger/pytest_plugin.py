"""The pytest plugin: records one worst-of outcome per test item and enforces the network ban.

Loaded in every pytest run (``pytest11`` entry point and ``PYTEST_PLUGINS``), so it imports only
the standard library and pytest, and does nothing unless ``THREE_LEDGER_*`` variables are set.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import socket
from collections.abc import Callable
from typing import IO, Any

import pytest

RESULTS_ENV = "THREE_LEDGER_RESULTS"
NETWORK_ENV = "THREE_LEDGER_NETWORK"
# The user_properties name that carries a marker's property id from an xdist worker to the
# controller, which never sees the item itself, only its serialised reports.
PROPERTY_KEY = "three_ledger.property"

# Higher is worse (SPEC 6: error > fail > skip > pass); the plugin must not import
# three_ledger.results, which pulls in the rest of the package.
_SEVERITY = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "localhost.localdomain"})


@dataclasses.dataclass
class _ItemRecord:
    """What the controller knows about one item while its reports arrive."""

    outcome: str = "pass"
    property_ids: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Recorder:
    """The open results file and the items whose line is not yet written."""

    stream: IO[str]
    pending: dict[str, _ItemRecord] = dataclasses.field(default_factory=dict)


_recorder_key = pytest.StashKey[_Recorder]()


class NetworkBanned(OSError):
    """An outbound connection attempted while three-ledger bans the network."""


class NetworkBannedLookup(NetworkBanned, socket.gaierror):
    """A host name lookup refused under the ban; a gaierror so clients treat it as DNS failure."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "property(id): the three-ledger property id this test checks (repeatable).",
    )
    install_socket_guard_if_banned()
    # xdist workers only forward reports; the controller alone owns the results file.
    if not hasattr(config, "workerinput"):
        _start_recording(config)


def _start_recording(config: pytest.Config) -> None:
    # Popped, so that pytest runs nested in this one (pytester, a test's subprocess) do not
    # write their own items into the gate's results; workers do not need it either.
    results_path = os.environ.pop(RESULTS_ENV, None)
    if not results_path:
        return
    # Append: a command that runs pytest twice must not erase the first run's evidence.
    stream = open(results_path, "a", encoding="utf-8")  # noqa: SIM115 - closed at unconfigure
    config.stash[_recorder_key] = _Recorder(stream=stream)
    config.pluginmanager.register(_ResultsWriter(config), "three_ledger.results_writer")


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.stash.get(_recorder_key, None)
    if recorder is not None:
        recorder.stream.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    # Before setup, so that even the report of a skip or a setup error carries the ids.
    for marker in item.iter_markers(name="property"):
        for property_id in marker.args:
            entry = (PROPERTY_KEY, property_id)
            if entry not in item.user_properties:
                item.user_properties.append(entry)


class _ResultsWriter:
    """Hooks that turn the reports reaching the controller into results lines.

    A plugin object rather than module hooks because `pytest_runtest_logreport` is not given the
    config, and the state must live in `config.stash`, not in a module global.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        recorder = self.config.stash[_recorder_key]
        record = recorder.pending.setdefault(report.nodeid, _ItemRecord())
        outcome = report_outcome(report)
        if _SEVERITY[outcome] > _SEVERITY[record.outcome]:
            record.outcome = outcome
        for name, value in report.user_properties:
            if name == PROPERTY_KEY and isinstance(value, str) and value not in record.property_ids:
                record.property_ids.append(value)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        # logfinish follows the teardown report, in-process and as xdist forwards it.
        recorder = self.config.stash[_recorder_key]
        if nodeid in recorder.pending:
            _write_line(recorder, nodeid)

    def pytest_sessionfinish(self) -> None:
        # Items whose logfinish never came (an xdist worker crashed mid-test) still get a line.
        recorder = self.config.stash[_recorder_key]
        for nodeid in list(recorder.pending):
            _write_line(recorder, nodeid)


def _write_line(recorder: _Recorder, nodeid: str) -> None:
    record = recorder.pending.pop(nodeid)
    # Sorted: marker order depends on decorator stacking and says nothing.
    property_ids = sorted(record.property_ids)
    line = {"id": nodeid, "property_ids": property_ids, "outcome": record.outcome}
    recorder.stream.write(json.dumps(line) + "\n")
    # Flushed per line, so a run killed later still leaves this item's evidence on disk.
    recorder.stream.flush()


def report_outcome(report: pytest.TestReport) -> str:
    """Map one report (setup, call, teardown or sub-test) to pass, fail, error or skip."""
    if hasattr(report, "wasxfail"):
        # An expected failure is still a failure; an unexpected pass means the oracle is wrong.
        return "fail" if report.skipped else "error"
    if report.passed:
        return "pass"
    if report.skipped:
        return "skip"
    # A strict xpass reaches us only as this failed call; pytest gives it no other mark.
    if isinstance(report.longrepr, str) and report.longrepr.startswith("[XPASS(strict)]"):
        return "error"
    return "fail" if report.when == "call" else "error"


def install_socket_guard_if_banned() -> None:
    """Install the socket guard when the gate asked for the network ban."""
    if os.environ.get(NETWORK_ENV) == "ban":
        install_socket_guard()


def install_socket_guard() -> None:
    """Refuse, in this process, connections, datagrams and name lookups beyond loopback.

    Idempotent, because both plugin import and `pytest_configure` call it. Never undone: the
    ban holds for the life of the test process.
    """
    if getattr(socket.socket.connect, _GUARD_MARK, False):
        return
    for name, guard in _GUARDED_METHODS.items():
        setattr(socket.socket, name, guard(getattr(socket.socket, name)))
    for name, allowed in _GUARDED_LOOKUPS.items():
        setattr(socket, name, _guard_lookup(getattr(socket, name), allowed))


_GUARD_MARK = "_three_ledger_network_ban"


def _guard_last_address(original: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(sock: socket.socket, *args: Any) -> Any:
        if args:
            _refuse_unless_local(sock, args[-1])
        return original(sock, *args)

    setattr(guarded, _GUARD_MARK, True)
    return guarded


def _guard_sendmsg(original: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(sock: socket.socket, *args: Any) -> Any:
        # sendmsg(buffers, ancdata, flags, address): only the fourth argument is an address.
        if len(args) >= 4:
            _refuse_unless_local(sock, args[3])
        return original(sock, *args)

    return guarded


def _guard_lookup(
    original: Callable[..., Any], allowed: Callable[[object], bool]
) -> Callable[..., Any]:
    def guarded(host: object, *args: Any, **kwargs: Any) -> Any:
        if not allowed(host):
            raise NetworkBannedLookup(_ban_message(f"lookup of host {host!r}"))
        return original(host, *args, **kwargs)

    return guarded


def _refuse_unless_local(sock: socket.socket, address: object) -> None:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    is_ip = sock.family in (socket.AF_INET, socket.AF_INET6)
    if is_ip and isinstance(address, tuple) and address and _is_loopback_host(address[0]):
        return
    raise NetworkBanned(_ban_message(f"connection to {address!r}"))


def _ban_message(what: str) -> str:
    return (
        f"three-ledger network ban: refused {what}; this run has THREE_LEDGER_NETWORK=ban, "
        "so only loopback (127.0.0.0/8, ::1, localhost) and Unix sockets are reachable"
    )


def _is_lookup_free(host: object) -> bool:
    """True when resolving `host` sends nothing: no host, loopback, or a numeric address."""
    return host is None or _is_loopback_host(host) or _ip_address(host) is not None


def _is_loopback_host(host: object) -> bool:
    if isinstance(host, str) and host.lower() in _LOOPBACK_NAMES:
        return True
    address = _ip_address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address is not None and address.is_loopback


def _ip_address(host: object) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    try:
        # A zone index ("fe80::1%eth0") names an interface, not a different address.
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


_GUARDED_METHODS = {
    # The address is the last positional argument of connect, connect_ex and sendto.
    "connect": _guard_last_address,
    "connect_ex": _guard_last_address,
    "sendto": _guard_last_address,
    "sendmsg": _guard_sendmsg,
}
_GUARDED_LOOKUPS = {
    "getaddrinfo": _is_lookup_free,
    "gethostbyname": _is_lookup_free,
    "gethostbyname_ex": _is_lookup_free,
    # A reverse lookup of any address other than loopback asks DNS.
    "gethostbyaddr": _is_loopback_host,
}

# At import as well as at configure: PYTEST_PLUGINS and entry points are imported before any
# conftest.py, so a conftest that touches the network at import is caught too.
install_socket_guard_if_banned()
