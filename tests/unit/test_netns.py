"""Tests of the network ban in real user+network namespaces; no traffic leaves loopback."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import is_gone, wait_for_pid
from three_ledger.run import network_namespace, trampoline
from three_ledger.runner import run_command


def _raw_unshare_problem() -> str | None:
    """Why `unshare -Urn` itself fails here, checked without the code under test."""
    try:
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--net", "--", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unshare cannot run: {error}"
    if done.returncode != 0:
        return f"unshare -Urn fails: {done.stderr.decode(errors='replace').strip()}"
    return None


# Skips where the gate's own probe finds no namespace; the probe is checked against a bare
# `unshare` in test_namespace_is_available_here, so a broken probe fails rather than skips.
needs_unshare = pytest.mark.usefixtures("needs_network_namespace")


def host_netns_inode() -> int:
    return os.stat("/proc/self/ns/net").st_ino


def run_inside(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = network_namespace.namespace_argv([sys.executable, "-c", textwrap.dedent(code), *args])
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


@pytest.fixture
def host_server() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.3)
    yield server
    server.close()


def test_namespace_argv_wraps_the_command_in_unshare_and_the_trampoline() -> None:
    argv = network_namespace.namespace_argv(["pytest", "-q"])
    assert argv[:5] == ["unshare", "--user", "--map-root-user", "--net", "--"]
    assert argv[5:9] == [sys.executable, "-I", "-S", "-c"]
    assert "import trampoline" in argv[9]
    assert Path(argv[10]) == Path(trampoline.__file__).resolve().parent
    assert argv[11:] == ["--outer-netns", str(host_netns_inode()), "--", "pytest", "-q"]


@pytest.mark.skipif(_raw_unshare_problem() is not None, reason="`unshare -Urn` fails here")
def test_namespace_is_available_here() -> None:
    assert network_namespace.namespace_available() is None


def test_missing_unshare_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = network_namespace.namespace_available()
    assert reason is not None
    assert "`unshare`" in reason


def test_disabled_user_namespaces_are_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "unshare"
    fake.write_text(
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    reason = network_namespace.namespace_available()
    assert reason is not None
    assert "Operation not permitted" in reason
    assert "kernel.unprivileged_userns_clone=1" in reason
    assert "user.max_user_namespaces" in reason


@needs_unshare
def test_command_sees_only_lo_in_its_own_namespace_and_keeps_its_pid() -> None:
    code = """
        import json, os, socket
        print(json.dumps({
            "names": [name for _, name in socket.if_nameindex()],
            "inode": os.stat("/proc/self/ns/net").st_ino,
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
        }))
    """
    argv = network_namespace.namespace_argv([sys.executable, "-c", textwrap.dedent(code)])
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
    out, _ = child.communicate(timeout=30)
    seen = json.loads(out)
    assert seen["names"] == ["lo"]
    assert seen["inode"] != host_netns_inode()
    # exec all the way down: the command is the process the runner started, leading its group.
    assert seen["pid"] == seen["pgid"] == child.pid


LOOPBACK_ROUND_TRIP = """
    import socket
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname(), timeout=5)
    peer, _ = server.accept()
    client.sendall(b"ping")
    print(peer.recv(4).decode())
"""


@needs_unshare
def test_loopback_is_up_inside_the_namespace() -> None:
    done = run_inside(LOOPBACK_ROUND_TRIP)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ping\n"


@needs_unshare
def test_a_bare_namespace_has_loopback_down() -> None:
    # Shows that the test above can fail: without the trampoline, lo is down.
    code = textwrap.dedent(LOOPBACK_ROUND_TRIP)
    bare = ["unshare", "--user", "--map-root-user", "--net", "--", sys.executable, "-c", code]
    done = subprocess.run(bare, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "Network is unreachable" in done.stderr or "Cannot assign" in done.stderr


@needs_unshare
def test_host_loopback_is_unreachable_from_inside(host_server: socket.socket) -> None:
    code = """
        import socket, sys
        try:
            socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
        except OSError as error:
            print(type(error).__name__)
        else:
            print("connected")
    """
    port = host_server.getsockname()[1]
    done = run_inside(code, str(port))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ConnectionRefusedError\n"
    with pytest.raises(TimeoutError):
        host_server.accept()


def run_trampoline_directly(outer: str, *command: str) -> subprocess.CompletedProcess[str]:
    """The trampoline without `unshare`, as if the namespace had silently not been made."""
    argv = [
        sys.executable,
        "-m",
        "three_ledger.run.trampoline",
        "--outer-netns",
        outer,
        "--",
        *command,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def test_trampoline_refuses_in_the_gates_own_namespace(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = run_trampoline_directly(str(host_netns_inode()), "touch", str(marker))
    assert done.returncode == network_namespace.ISOLATION_FAILED
    assert not marker.exists()
    assert done.stderr.count("\n") == 1
    assert "still in the gate's network namespace" in done.stderr


@pytest.mark.skipif(
    [name for _, name in socket.if_nameindex()] == ["lo"],
    reason="the host has no interface besides lo to detect",
)
def test_trampoline_refuses_a_namespace_with_other_interfaces(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    # An outer inode that is not ours passes the first check; the host's interfaces fail the next.
    done = run_trampoline_directly("1", "touch", str(marker))
    assert done.returncode == network_namespace.ISOLATION_FAILED
    assert not marker.exists()
    assert "interfaces other than lo" in done.stderr


def test_trampoline_rejects_a_malformed_command_line() -> None:
    assert trampoline.main(["--outer-netns", "x", "--", "true"]) == trampoline.USAGE
    assert trampoline.main(["--outer-netns", "1", "--"]) == trampoline.USAGE


@needs_unshare
def test_missing_command_inside_the_namespace_exits_127() -> None:
    argv = network_namespace.namespace_argv(["no-such-command-3l"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == network_namespace.COMMAND_NOT_FOUND
    assert "command not found: no-such-command-3l" in done.stderr


@needs_unshare
@pytest.mark.parametrize("code", [0, 1, 3])
def test_runner_passes_exit_codes_through_the_namespace(tmp_path: Path, code: int) -> None:
    result = run_command(
        network_namespace.namespace_argv(["sh", "-c", f"exit {code}"]),
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=30,
        log_path=tmp_path / "run.log",
        console=io.BytesIO(),
    )
    assert result.exit_code == code


@needs_unshare
def test_runner_timeout_kills_the_group_inside_the_namespace(tmp_path: Path) -> None:
    script = f"sleep 1000 & echo $! > {tmp_path}/bg; sleep 1000"
    result = run_command(
        network_namespace.namespace_argv(["sh", "-c", script]),
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=1.0,
        log_path=tmp_path / "run.log",
        console=io.BytesIO(),
        grace_s=0.5,
    )
    assert result.timed_out
    assert result.signal == signal.SIGTERM
    assert is_gone(wait_for_pid(tmp_path / "bg"))


def fake_unshare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    fake = tmp_path / "unshare"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_a_probe_that_fails_its_isolation_check_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_unshare(tmp_path, monkeypatch, "echo 'refusing: lo is down' >&2\nexit 125")
    assert network_namespace.namespace_available() == (
        "the network namespace failed its isolation check: refusing: lo is down"
    )


def test_a_probe_that_fails_otherwise_gives_its_exit_and_last_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_unshare(tmp_path, monkeypatch, "printf 'first\\n  last words  \\n' >&2\nexit 3")
    assert network_namespace.namespace_available() == (
        "the network namespace probe exited 3: last words"
    )
    fake_unshare(tmp_path, monkeypatch, "exit 9")
    assert network_namespace.namespace_available() == (
        "the network namespace probe exited 9: no message"
    )


def test_the_probe_execs_true_not_a_second_python(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked = tmp_path / "argv"
    fake_unshare(tmp_path, monkeypatch, f'printf "%s\\n" "$@" > {asked}')
    assert network_namespace.namespace_available() is None
    argv = asked.read_text().splitlines()
    assert argv[argv.index("--", 4) + 1 :] == [shutil.which("true")]


def trampoline_in_a_bare_namespace(*command: str) -> subprocess.CompletedProcess[str]:
    """`python -m` the trampoline inside `unshare -Urn`, as namespace_argv starts it but with
    site on, so that a coverage run measures the trampoline where it really runs."""
    argv = ["unshare", "--user", "--map-root-user", "--net", "--", sys.executable, "-m"]
    argv += ["three_ledger.run.trampoline", "--outer-netns", str(host_netns_inode())]
    return subprocess.run([*argv, "--", *command], capture_output=True, text=True, timeout=30)


@needs_unshare
def test_the_trampoline_brings_lo_up_and_becomes_the_command() -> None:
    done = trampoline_in_a_bare_namespace(
        sys.executable, "-c", textwrap.dedent(LOOPBACK_ROUND_TRIP)
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ping\n", "")


@needs_unshare
def test_a_command_that_cannot_be_executed_exits_126(tmp_path: Path) -> None:
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    done = trampoline_in_a_bare_namespace(str(script))
    assert done.returncode == trampoline.CANNOT_EXECUTE
    assert done.stdout == ""
    assert done.stderr == f"three-ledger netns: cannot run {script}: Permission denied\n"
