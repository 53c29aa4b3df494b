"""The socket guard, installed in a Python child of its own (it is never undone in a process).

The child runs inside a fresh network namespace where one can be made, so that a broken guard
still sends nothing out; the addresses it reaches for are documentation-only (192.0.2.0/24,
2001:db8::/32) either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from helpers import namespace_problem
from three_ledger.run.network_namespace import namespace_argv

CHILD = textwrap.dedent(
    """
    import json, os, socket, sys
    from three_ledger.plugin import socket_guard

    seen = {}

    def attempt(name, action):
        try:
            action()
        except socket_guard.NetworkBanned as error:
            seen[name] = "banned" + (" lookup" if isinstance(error, socket.gaierror) else "")
        except OSError as error:
            seen[name] = type(error).__name__
        else:
            seen[name] = "allowed"

    socket_guard.install_socket_guard_if_banned()
    raw_connect = socket._socket.socket.connect
    seen["installed_without_the_variable"] = socket.socket.connect is not raw_connect
    os.environ[socket_guard.NETWORK_ENV] = "ban"
    socket_guard.install_socket_guard_if_banned()
    first = socket.socket.connect
    socket_guard.install_socket_guard()
    seen["installed_once"] = socket.socket.connect is first

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    tcp = lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp6 = lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    udp = lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attempt("connect_loopback", lambda: tcp().connect(("127.0.0.1", port)))
    attempt("connect_localhost_name", lambda: tcp().connect(("LocalHost.", port)))
    attempt("connect_ex_loopback", lambda: tcp().connect_ex(("127.0.0.1", port)))
    attempt("connect_outside", lambda: tcp().connect(("192.0.2.1", 80)))
    attempt("connect_ex_outside", lambda: tcp().connect_ex(("192.0.2.1", 80)))
    attempt("connect_by_name", lambda: tcp().connect(("example.com", 80)))
    attempt("connect_mapped_loopback", lambda: tcp6().connect(("::ffff:127.0.0.1", port)))
    attempt("connect_mapped_outside", lambda: tcp6().connect(("::ffff:192.0.2.1", 80)))
    attempt("connect_ipv6_outside", lambda: tcp6().connect(("2001:db8::1", 80)))
    attempt("sendto_outside", lambda: udp().sendto(b"x", ("192.0.2.53", 53)))
    attempt("sendto_with_flags_outside", lambda: udp().sendto(b"x", 0, ("192.0.2.53", 53)))
    attempt("sendto_loopback", lambda: udp().sendto(b"x", ("127.0.0.1", port)))
    attempt("sendmsg_outside", lambda: udp().sendmsg([b"x"], [], 0, ("192.0.2.53", 53)))
    connected = udp()
    connected.connect(("127.0.0.1", port))
    attempt("sendmsg_without_address", lambda: connected.sendmsg([b"x"]))
    path = "s"  # in the test's own temporary folder, the child's working directory
    unix_server = socket.socket(socket.AF_UNIX)
    unix_server.bind(path)
    unix_server.listen()
    attempt("connect_unix", lambda: socket.socket(socket.AF_UNIX).connect(path))
    attempt("lookup_none", lambda: socket.getaddrinfo(None, 80))
    attempt("lookup_localhost", lambda: socket.getaddrinfo("localhost", 80))
    attempt("lookup_numeric", lambda: socket.getaddrinfo("192.0.2.1", 80))
    attempt("lookup_numeric_bytes", lambda: socket.getaddrinfo(b"192.0.2.1", 80))
    attempt("lookup_zoned_ipv6", lambda: socket.gethostbyname_ex("fe80::1%lo"))
    attempt("lookup_name", lambda: socket.getaddrinfo("example.com", 443))
    attempt("lookup_bytes_name", lambda: socket.getaddrinfo(b"example.com", 443))
    attempt("gethostbyname_name", lambda: socket.gethostbyname("example.com"))
    attempt("reverse_loopback", lambda: socket.gethostbyaddr("127.0.0.1"))
    attempt("reverse_outside", lambda: socket.gethostbyaddr("192.0.2.1"))
    print(json.dumps(seen))
    """
)


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    argv = [sys.executable, "-c", CHILD]
    if namespace_problem() is None:
        argv = namespace_argv(argv)
    env = {k: v for k, v in os.environ.items() if k != "THREE_LEDGER_NETWORK"}
    cwd = tmp_path_factory.mktemp("guard")
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    assert done.returncode == 0, done.stderr
    observed: dict[str, Any] = json.loads(done.stdout)
    return observed


def test_the_guard_waits_for_the_variable_and_installs_once(seen: dict[str, Any]) -> None:
    assert seen["installed_without_the_variable"] is False
    assert seen["installed_once"] is True


@pytest.mark.parametrize(
    "name",
    [
        "connect_outside",
        "connect_ex_outside",
        "connect_by_name",
        "connect_mapped_outside",
        "connect_ipv6_outside",
        "sendto_outside",
        "sendto_with_flags_outside",
        "sendmsg_outside",
    ],
)
def test_traffic_beyond_loopback_is_banned(seen: dict[str, Any], name: str) -> None:
    assert seen[name] == "banned"


@pytest.mark.parametrize(
    "name",
    [
        "connect_loopback",
        "connect_ex_loopback",
        "connect_mapped_loopback",
        "sendto_loopback",
        "sendmsg_without_address",
        "connect_unix",
        "lookup_none",
        "lookup_localhost",
        "lookup_numeric",
        "lookup_numeric_bytes",
        "reverse_loopback",
    ],
)
def test_loopback_unix_sockets_and_lookups_that_send_nothing_pass(
    seen: dict[str, Any], name: str
) -> None:
    assert seen[name] == "allowed"


@pytest.mark.parametrize("name", ["connect_localhost_name", "lookup_zoned_ipv6"])
def test_loopback_names_and_zoned_addresses_reach_the_real_call(
    seen: dict[str, Any], name: str
) -> None:
    # The real call may fail on its own here (no resolver in a bare namespace), not by the ban.
    assert not seen[name].startswith("banned"), seen[name]


@pytest.mark.parametrize(
    "name", ["lookup_name", "lookup_bytes_name", "gethostbyname_name", "reverse_outside"]
)
def test_lookups_that_would_ask_dns_are_banned_as_lookup_errors(
    seen: dict[str, Any], name: str
) -> None:
    assert seen[name] == "banned lookup"
