"""Tests for three_ledger.plugin.hooks, through real pytest subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from three_ledger.results import read_results_file
from three_ledger.vocabulary import Outcome

pytestmark = pytest.mark.pytest_child

INNER_SUITE = """
import unittest

import pytest


@pytest.fixture
def broken_setup():
    raise RuntimeError("setup")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_pass():
    pass


def test_fail():
    assert False


def test_skip():
    pytest.skip("not today")


def test_setup_error(broken_setup):
    pass


def test_passes_then_teardown_error(broken_teardown):
    pass


def test_fails_then_teardown_error(broken_teardown):
    assert False


@pytest.mark.xfail(strict=False)
def test_xfail():
    assert False


def test_imperative_xfail():
    pytest.xfail("known")


@pytest.mark.xfail(strict=False)
def test_xfail_then_teardown_error(broken_teardown):
    assert False


def test_imperative_xfail_then_teardown_error(broken_teardown):
    pytest.xfail("known")


@pytest.mark.xfail(strict=False)
def test_xpass():
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


@pytest.mark.parametrize("n", [1, -1])
def test_param(n):
    assert n > 0


@pytest.mark.property("orders.total")
@pytest.mark.property("orders.id")
def test_marked():
    pass


@pytest.mark.property("orders.skipped")
@pytest.mark.skip(reason="marked skip")
def test_marked_skipped():
    pass


def test_subtests_one_fails(subtests):
    with subtests.test("fine"):
        pass
    with subtests.test("broken"):
        assert False


def test_subtests_all_pass(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i >= 0


class TestUnit(unittest.TestCase):
    def test_subtest_one_fails(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertNotEqual(i, 1)

    def test_subtest_all_pass(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertGreaterEqual(i, 0)


def test_deselected():
    pass
"""

EXPECTED = {
    "test_inner.py::test_pass": "pass",
    "test_inner.py::test_fail": "fail",
    "test_inner.py::test_skip": "skip",
    "test_inner.py::test_setup_error": "error",
    "test_inner.py::test_passes_then_teardown_error": "error",
    "test_inner.py::test_fails_then_teardown_error": "error",
    "test_inner.py::test_xfail": "fail",
    "test_inner.py::test_imperative_xfail": "fail",
    # Under an xfail marker pytest reports the teardown's error as expected too.
    "test_inner.py::test_xfail_then_teardown_error": "fail",
    "test_inner.py::test_imperative_xfail_then_teardown_error": "error",
    "test_inner.py::test_xpass": "error",
    "test_inner.py::test_xpass_strict": "error",
    "test_inner.py::test_param[1]": "pass",
    "test_inner.py::test_param[-1]": "fail",
    "test_inner.py::test_marked": "pass",
    "test_inner.py::test_marked_skipped": "skip",
    "test_inner.py::test_subtests_one_fails": "fail",
    "test_inner.py::test_subtests_all_pass": "pass",
    "test_inner.py::TestUnit::test_subtest_one_fails": "fail",
    "test_inner.py::TestUnit::test_subtest_all_pass": "pass",
}
DESELECTED = "test_inner.py::test_deselected"
# The items whose `fail` is an xfail and nothing worse: their lines say `"xfail": true`.
EXPECTED_FAILURES = {
    "test_inner.py::test_xfail",
    "test_inner.py::test_imperative_xfail",
    "test_inner.py::test_xfail_then_teardown_error",
}


def child_env(**extra: str) -> dict[str, str]:
    """The outer environment without anything that would steer the inner pytest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "THREE_LEDGER_"))}
    env.update(extra)
    return env


def recording_env(results: Path, **extra: str) -> dict[str, str]:
    plugins = {"PYTEST_PLUGINS": "three_ledger.plugin.hooks"}
    return child_env(THREE_LEDGER_RESULTS=str(results), **plugins, **extra)


def write_suite(folder: Path, source: str, name: str = "test_inner.py") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # An ini file of its own, so the inner run never picks up this project's configuration.
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / name).write_text(textwrap.dedent(source))
    return folder


def run_pytest(
    folder: Path, env: dict[str, str], *args: str, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args]
    return subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(text) for text in path.read_text().splitlines()]


def outcomes_of(lines: list[dict[str, object]]) -> dict[str, object]:
    return {str(record["id"]): record["outcome"] for record in lines}


@pytest.fixture(scope="module", params=["serial", "xdist"])
def suite_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, object]]:
    """The inner suite, run once serially and once under `-n 2`; its results lines."""
    folder = write_suite(tmp_path_factory.mktemp(request.param), INNER_SUITE)
    results = folder / "results.jsonl"
    workers = ["-n", "2"] if request.param == "xdist" else []
    completed = run_pytest(folder, recording_env(results), "--deselect", DESELECTED, *workers)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    return read_lines(results)


@pytest.mark.parametrize(("nodeid", "expected"), EXPECTED.items())
def test_item_outcome_is_the_worst_of_its_reports(
    suite_run: list[dict[str, object]], nodeid: str, expected: str
) -> None:
    assert outcomes_of(suite_run)[nodeid] == expected


def test_exactly_one_line_per_item_that_ran(suite_run: list[dict[str, object]]) -> None:
    ids = [record["id"] for record in suite_run]
    assert sorted(map(str, ids)) == sorted(EXPECTED)
    assert DESELECTED not in ids


def test_lines_have_exactly_the_documented_keys(suite_run: list[dict[str, object]]) -> None:
    for record in suite_run:
        keys = ["id", "property_ids", "outcome", "worker"]
        if record["outcome"] == "skip":
            keys.append("skip_reason")
        if record["id"] in EXPECTED_FAILURES:
            keys.append("xfail")
        assert list(record) == keys
        assert isinstance(record["property_ids"], list)


def test_a_skip_records_its_reason_also_through_xdist(suite_run: list[dict[str, object]]) -> None:
    reasons = {record["id"]: record.get("skip_reason") for record in suite_run}
    assert reasons["test_inner.py::test_skip"] == "not today"
    assert reasons["test_inner.py::test_marked_skipped"] == "marked skip"
    assert reasons["test_inner.py::test_pass"] is None


def test_only_a_fail_that_is_an_xfail_and_nothing_worse_is_marked_expected(
    suite_run: list[dict[str, object]], tmp_path: Path
) -> None:
    marked = {str(record["id"]) for record in suite_run if "xfail" in record}
    assert marked == EXPECTED_FAILURES
    assert all(record["xfail"] is True for record in suite_run if "xfail" in record)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(record) + "\n" for record in suite_run))
    read = {result.id for result in read_results_file(results) if result.xfail}
    assert read == EXPECTED_FAILURES


def test_marker_ids_are_recorded_even_for_a_skipped_test(
    suite_run: list[dict[str, object]],
) -> None:
    property_ids = {record["id"]: record["property_ids"] for record in suite_run}
    assert property_ids["test_inner.py::test_marked"] == ["orders.id", "orders.total"]
    assert property_ids["test_inner.py::test_marked_skipped"] == ["orders.skipped"]
    assert property_ids["test_inner.py::test_pass"] == []


def test_results_file_reads_back(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, INNER_SUITE)
    results = folder / "results.jsonl"
    run_pytest(folder, recording_env(results), "-k", "test_marked or test_param")
    read = {r.id: (r.outcome, r.property_ids) for r in read_results_file(results)}
    assert read == {
        "test_inner.py::test_marked": (Outcome.PASS, ("orders.id", "orders.total")),
        "test_inner.py::test_marked_skipped": (Outcome.SKIP, ("orders.skipped",)),
        "test_inner.py::test_param[1]": (Outcome.PASS, ()),
        "test_inner.py::test_param[-1]": (Outcome.FAIL, ()),
    }


def test_plugin_loads_through_pytest_plugins_without_autoload(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, INNER_SUITE)
    results = folder / "results.jsonl"
    env = recording_env(results, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    completed = run_pytest(folder, env, "--strict-markers", "-k", "test_marked")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert outcomes_of(read_lines(results)) == {
        "test_inner.py::test_marked": "pass",
        "test_inner.py::test_marked_skipped": "skip",
    }


KILLED_SUITE = """
import os
import signal


def test_first():
    pass


def test_second():
    assert False


def test_killed():
    os.kill(os.getpid(), signal.SIGKILL)


def test_never_reached():
    pass
"""


def test_a_killed_run_leaves_the_lines_already_written(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, KILLED_SUITE)
    results = folder / "results.jsonl"
    completed = run_pytest(folder, recording_env(results))
    assert completed.returncode == -9
    assert outcomes_of(read_lines(results)) == {
        "test_inner.py::test_first": "pass",
        "test_inner.py::test_second": "fail",
    }


def test_a_crashed_xdist_worker_item_is_an_error(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, KILLED_SUITE)
    results = folder / "results.jsonl"
    run_pytest(folder, recording_env(results), "-n", "2")
    lines = read_lines(results)
    ids = [record["id"] for record in lines]
    assert len(ids) == len(set(ids))
    assert outcomes_of(lines)["test_inner.py::test_killed"] == "error"
    assert outcomes_of(lines)["test_inner.py::test_second"] == "fail"


NESTED_SUITE = """
import subprocess
import sys

pytest_plugins = ["pytester"]


def test_nested_in_process(pytester):
    pytester.makepyfile("def test_deep_in_process():\\n    assert False\\n")
    pytester.runpytest().assert_outcomes(failed=1)


def test_nested_subprocess(tmp_path):
    (tmp_path / "test_deep.py").write_text("def test_deep_subprocess():\\n    assert False\\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(tmp_path)]
    assert subprocess.run(command, cwd=tmp_path, check=False).returncode == 1
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_nested_pytest_runs_do_not_write_into_the_results(
    tmp_path: Path, workers: list[str]
) -> None:
    folder = write_suite(tmp_path, NESTED_SUITE)
    results = folder / "results.jsonl"
    completed = run_pytest(folder, recording_env(results), *workers)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert outcomes_of(read_lines(results)) == {
        "test_inner.py::test_nested_in_process": "pass",
        "test_inner.py::test_nested_subprocess": "pass",
    }


CLASS_NODE_SUITE = """
import _pytest.reports


class _Node:
    workerinput = {"workerid": "gw7"}


_pytest.reports.TestReport.node = _Node()


def test_one():
    pass
"""


def test_a_node_put_on_the_report_class_names_no_worker(tmp_path: Path) -> None:
    """Only xdist's controller names a report's worker, on the report itself."""
    folder = write_suite(tmp_path, CLASS_NODE_SUITE)
    results = folder / "results.jsonl"
    completed = run_pytest(folder, recording_env(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert [line["worker"] for line in read_lines(results)] == ["main"]


INERT_SUITE = """
import _socket
import socket

import pytest


@pytest.mark.property("orders.total")
def test_guard_is_not_installed():
    assert socket.socket.connect is _socket.socket.connect
    assert socket.getaddrinfo.__module__ == "socket"
"""


def test_plugin_is_inert_without_its_variables(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, INERT_SUITE)
    # The entry point still loads the plugin: the marker must be known under --strict-markers.
    completed = run_pytest(folder, child_env(), "--strict-markers")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 passed" in completed.stdout
    # Nothing written but Python's own bytecode cache, where the environment allows one.
    written = sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")
    assert written == ["pytest.ini", "test_inner.py"]


LIGHT_SUITE = """
import sys

import pytest


@pytest.mark.property("orders.total")
def test_hooks_are_not_loaded():
    assert "three_ledger.plugin.hooks" not in sys.modules
"""


def test_without_its_variables_the_entry_point_imports_no_hooks(tmp_path: Path) -> None:
    """A plain pytest run where three-ledger is installed pays for the marker alone; any
    THREE_LEDGER_ variable brings the hooks."""
    folder = write_suite(tmp_path, LIGHT_SUITE)
    plain = run_pytest(folder, child_env(), "--strict-markers")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    asked = run_pytest(folder, child_env(THREE_LEDGER_PIN_ID="fixpin-x"), "--strict-markers")
    assert asked.returncode == 1, asked.stdout + asked.stderr
    assert "assert 'three_ledger.plugin.hooks' not in" in asked.stdout


def test_recording_alone_does_not_install_the_guard(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, INERT_SUITE)
    results = folder / "results.jsonl"
    run_pytest(folder, recording_env(results))
    assert read_lines(results) == [
        {
            "id": "test_inner.py::test_guard_is_not_installed",
            "property_ids": ["orders.total"],
            "outcome": "pass",
            "worker": "main",
        }
    ]


GUARD_SUITE = '''
import _socket
import socket
import threading

import pytest

BANNED = "three-ledger network ban"


@pytest.fixture
def tcp_server():
    """A loopback TCP server that answers one connection with b"pong"."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():
        connection, _ = server.accept()
        connection.sendall(b"pong")
        connection.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    thread.join(timeout=5)
    server.close()


def test_guard_is_installed_in_this_process():
    assert socket.socket.connect is not _socket.socket.connect


def test_loopback_tcp_server_is_reachable(tcp_server):
    with socket.create_connection(("127.0.0.1", tcp_server), timeout=5) as client:
        assert client.recv(4) == b"pong"


def test_localhost_by_name_is_reachable(tcp_server):
    with socket.create_connection(("localhost", tcp_server), timeout=5) as client:
        assert client.recv(4) == b"pong"


def test_loopback_udp_is_usable():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.2", 0))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"ping", receiver.getsockname())
        assert receiver.recv(4) == b"ping"


def test_unix_socket_is_usable(tmp_path):
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
            server.accept()[0].close()


def test_outbound_tcp_is_refused():
    with pytest.raises(OSError, match=BANNED):
        socket.create_connection(("192.0.2.1", 80), timeout=5)


def test_outbound_connect_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
        with pytest.raises(OSError, match=BANNED):
            client.connect(("192.0.2.1", 80))


def test_outbound_connect_ex_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
        with pytest.raises(OSError, match=BANNED):
            client.connect_ex(("192.0.2.1", 80))


def test_outbound_ipv6_and_mapped_ipv4_are_refused():
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as client:
        for address in ("2001:db8::1", "::ffff:192.0.2.1"):
            with pytest.raises(OSError, match=BANNED):
                client.connect((address, 80))


def test_outbound_udp_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        with pytest.raises(OSError, match=BANNED):
            sender.sendto(b"query", ("192.0.2.53", 53))
        with pytest.raises(OSError, match=BANNED):
            sender.sendto(b"query", 0, ("192.0.2.53", 53))


def test_host_name_lookups_are_refused():
    with pytest.raises(socket.gaierror, match=BANNED):
        socket.getaddrinfo("example.com", 443)
    with pytest.raises(OSError, match=BANNED):
        socket.gethostbyname("example.com")
    with pytest.raises(OSError, match=BANNED):
        socket.gethostbyaddr("192.0.2.1")


def test_loopback_lookups_are_allowed():
    assert socket.getaddrinfo("localhost", 80)
    assert socket.getaddrinfo("127.0.0.1", 80)
    assert socket.getaddrinfo(None, 80)
'''


def namespace_prefix() -> list[str]:
    """Run a command in fresh user and network namespaces, with loopback up."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) to isolate the network")
    probe = subprocess.run(["unshare", "-Urn", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"`unshare -Urn true` failed here: {probe.stderr.decode(errors='replace')}")
    return ["unshare", "-Urn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_socket_guard_blocks_outbound_and_keeps_loopback(
    tmp_path: Path, workers: list[str]
) -> None:
    # Inside a network namespace of its own, so that a broken guard still sends nothing out.
    prefix = namespace_prefix()
    folder = write_suite(tmp_path, GUARD_SUITE)
    results = folder / "results.jsonl"
    env = recording_env(results, THREE_LEDGER_NETWORK="ban")
    completed = run_pytest(folder, env, *workers, prefix=prefix)
    outcomes = outcomes_of(read_lines(results))
    assert len(outcomes) == GUARD_SUITE.count("\ndef test_")
    assert set(outcomes.values()) == {"pass"}, completed.stdout + completed.stderr
    assert completed.returncode == 0


REGISTRATIONS_CONFTEST = """
import json
import os


def pytest_sessionstart(session):
    manager = session.config.pluginmanager
    names = sorted(
        name for name, plugin in manager.list_name_plugin()
        if getattr(plugin, "__name__", "").startswith("three_ledger.plugin")
    )
    with open(os.environ["REGISTRATIONS"], "w") as out:
        json.dump(names, out)
"""


@pytest.mark.parametrize(
    ("how", "args", "extra"),
    [
        ("PYTEST_PLUGINS", (), {"PYTEST_PLUGINS": "three_ledger.plugin.hooks"}),
        ("-p", ("-p", "three_ledger.plugin.hooks"), {}),
        ("entry point alone", (), {}),
    ],
)
def test_the_entry_point_and_the_module_named_beside_it_register_the_hooks_once(
    tmp_path: Path, how: str, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    # The entry point's name is older than the module's path: it loads plugin/entry_point.py,
    # which registers the hooks under their module's name, where a second request finds them.
    folder = write_suite(tmp_path, "def test_one():\n    pass\n")
    (folder / "conftest.py").write_text(REGISTRATIONS_CONFTEST)
    results, registrations = folder / "results.jsonl", folder / "registrations.json"
    env = child_env(THREE_LEDGER_RESULTS=str(results), REGISTRATIONS=str(registrations), **extra)
    completed = run_pytest(folder, env, *args)
    assert completed.returncode == 0, f"{how}: {completed.stdout}{completed.stderr}"
    assert json.loads(registrations.read_text()) == [
        "three_ledger.plugin.hooks",
        "three_ledger.pytest_plugin",
    ]
    assert outcomes_of(read_lines(results)) == {"test_inner.py::test_one": "pass"}
    assert len(read_lines(results)) == 1


def test_blocking_the_entry_point_by_its_old_name_keeps_the_hooks_out(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, "def test_one():\n    pass\n")
    (folder / "conftest.py").write_text(REGISTRATIONS_CONFTEST)
    results, registrations = folder / "results.jsonl", folder / "registrations.json"
    env = child_env(THREE_LEDGER_RESULTS=str(results), REGISTRATIONS=str(registrations))
    completed = run_pytest(folder, env, "-p", "no:three_ledger.pytest_plugin")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert json.loads(registrations.read_text()) == []
    assert not results.exists()


VET_SUITE = """
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_reads(n):
    pass

def test_other():
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_vet_deselection_leaves_out_the_named_items_and_runs_every_other(
    tmp_path: Path, workers: list[str]
) -> None:
    # vet's mutant runs: the baseline's items that read none of the mutated files are named;
    # an item the baseline did not have (here `test_reads[2]`, not named) still runs.
    folder = write_suite(tmp_path / "suite", VET_SUITE)
    results = folder / "results.jsonl"
    named = tmp_path / "deselect.json"
    named.write_text(json.dumps(["test_inner.py::test_other", "test_inner.py::gone"]))
    env = recording_env(results, THREE_LEDGER_DESELECT=str(named))
    completed = run_pytest(folder, env, *workers)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert sorted(outcomes_of(read_lines(results))) == [
        "test_inner.py::test_reads[1]",
        "test_inner.py::test_reads[2]",
    ]
    if not workers:  # under xdist the workers deselect, and the controller does not count it
        assert "1 deselected" in completed.stdout


INHERITED_SUITE = """
import pytest

pytestmark = pytest.mark.property("m.module")


@pytest.mark.property("c.class")
class TestMarked:
    @pytest.mark.property("f.method", "c.class")
    def test_method(self):
        pass

    @pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.property("p.param"))])
    def test_param(self, n):
        pass


def test_module_only():
    pass
"""


def test_property_ids_come_from_the_item_and_every_parent(tmp_path: Path) -> None:
    """An item's property ids are its own markers' and its parents' (class, module), once
    each, sorted: what `iter_markers` gives, read by the plugin's own walk up the chain."""
    folder = write_suite(tmp_path, INHERITED_SUITE)
    results = folder / "results.jsonl"
    completed = run_pytest(folder, recording_env(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    ids = {line["id"]: line["property_ids"] for line in read_lines(results)}
    assert ids == {
        "test_inner.py::TestMarked::test_method": ["c.class", "f.method", "m.module"],
        "test_inner.py::TestMarked::test_param[1]": ["c.class", "m.module"],
        "test_inner.py::TestMarked::test_param[2]": ["c.class", "m.module", "p.param"],
        "test_inner.py::test_module_only": ["m.module"],
    }
