"""The socket guard: refuses, inside one Python process, every connection beyond loopback.

It is the network ban's fallback where no network namespace can be made (`network_ban.py`
chooses). Standard library only: the pytest plugin installs it in every banned test run.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any

from .wire import NETWORK_BANNED, NETWORK_ENV

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "localhost.localdomain"})


class NetworkBanned(OSError):
    """An outbound connection attempted while three-ledger bans the network."""


class NetworkBannedLookup(NetworkBanned, socket.gaierror):
    """A host name lookup refused under the ban; a gaierror so clients treat it as DNS failure."""


def install_socket_guard_if_banned() -> None:
    """Install the socket guard when the gate asked for the network ban."""
    if os.environ.get(NETWORK_ENV) == NETWORK_BANNED:
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
