"""`properties` end to end: real git repositories, real pytest children, real namespaces."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import (
    RunCli,
    ban_enforcement,
    beside,
    git,
    is_gone,
    simulate_missing_layers,
    sleeper_argv,
    wait_for_process,
)
from helpers.scoring import PYTEST, ledger, live_digest, score

pytestmark = pytest.mark.pytest_child


def assert_no_ledger(repo: Path) -> None:
    assert not (repo.parent / "ledgers/p.json").exists()


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_all_pass_exit_0_and_ledger_fields(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(
        run_cli, orders_repo, "--base", "HEAD", "--flake-pin", orders_repo / "pins/flakes.json"
    )
    assert result.code == 0, result.err
    written = ledger(orders_repo)
    assert written["status_by_id"] == {
        "orders.total.non_negative": "pass",
        "orders.total.matches_lines": "pass",
        "orders.id.stable": "pass",
        "orders.json.round_trip": "pass",
    }
    head = git(orders_repo, "rev-parse", "HEAD")
    assert (written["base_revision"], written["head_revision"]) == (head, head)
    assert written["base_resolution"] == {"given": "HEAD", "used": head, "how": "ancestor"}
    assert (written["oracle_moved"], written["oracle_changes"]) == (False, [])
    assert written["network_enforcement"] == ban_enforcement()
    assert written["command_exit"] == 0
    assert written["flake_results"] == {"orders.boundary.timeout": "pass"}
    assert isinstance(written["duration_ms"], int)
    assert written["fixture_digest"] == live_digest(run_cli, orders_repo)
    assert (orders_repo.parent / "ledgers/p.json.log").read_text().count("passed") == 1


def test_a_property_broken_by_the_patch_exits_1(run_cli: RunCli, orders_repo: Path) -> None:
    code = orders_repo / "orders.py"
    code.write_text(code.read_text().replace('line["quantity"] *', 'min(line["quantity"], 999) *'))
    result = score(run_cli, orders_repo, "--base", "HEAD")
    assert result.code == 1, result.err
    statuses = ledger(orders_repo)["status_by_id"]
    assert statuses["orders.total.matches_lines"] == "fail"
    assert statuses["orders.total.non_negative"] == "pass"
    assert ledger(orders_repo)["command_exit"] == 1


def test_skip_and_missing_selector_are_not_pass(run_cli: RunCli, orders_repo: Path) -> None:
    pin = orders_repo / "pins/properties.json"
    document = json.loads(pin.read_text())
    document["properties"][0]["test"] = "properties/test_orders.py::test_no_such_test"
    pin.write_text(json.dumps(document))
    tests = orders_repo / "properties/test_orders.py"
    tests.write_text(
        tests.read_text().replace(
            "def test_id_stable(orders: list[dict]) -> None:\n",
            "def test_id_stable(orders: list[dict]) -> None:\n    pytest.skip('not today')\n",
        )
    )
    commit_all(orders_repo, "pins and oracle edited in the base")
    result = score(run_cli, orders_repo, "--base", "HEAD")
    assert result.code == 1
    statuses = ledger(orders_repo)["status_by_id"]
    assert statuses["orders.total.non_negative"] == "missing"
    assert statuses["orders.id.stable"] == "skip"
    assert statuses["orders.json.round_trip"] == "pass"  # marker-mapped, parametrised


def test_marker_maps_a_property_without_a_selector(run_cli: RunCli, orders_repo: Path) -> None:
    tests = orders_repo / "properties/test_orders.py"
    tests.write_text(tests.read_text().replace('== {"orders": orders}', '!= {"orders": orders}'))
    commit_all(orders_repo, "round trip broken in the base")
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 1
    assert ledger(orders_repo)["status_by_id"]["orders.json.round_trip"] == "fail"


def test_committed_oracle_edit_exits_5(run_cli: RunCli, orders_repo: Path) -> None:
    base = git(orders_repo, "rev-parse", "HEAD")
    tests = orders_repo / "properties/test_orders.py"
    tests.write_text(tests.read_text().replace("assert order_total(order) >= 0", "assert True"))
    commit_all(orders_repo, "agent: make the test pass")
    result = score(run_cli, orders_repo, "--base", base)
    assert result.code == 5
    written = ledger(orders_repo)
    assert (written["oracle_moved"], written["oracle_changes"]) == (
        True,
        ["properties/test_orders.py"],
    )
    assert "oracles moved" in result.err


def test_untracked_conftest_under_an_oracle_path_exits_5(
    run_cli: RunCli, orders_repo: Path
) -> None:
    (orders_repo / "tests").mkdir()
    (orders_repo / "tests/conftest.py").write_text("collect_ignore_glob = ['*']\n")
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 5
    assert ledger(orders_repo)["oracle_changes"] == ["tests/conftest.py"]


def test_no_base_is_refused(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("THREE_LEDGER_BASE", "GITHUB_BASE_REF", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(name, raising=False)
    result = score(run_cli, orders_repo)
    assert result.code == 2
    assert "cannot tell whether oracles moved" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_base_from_environment(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = git(orders_repo, "rev-parse", "HEAD")
    product = orders_repo / "orders.py"
    product.write_text(product.read_text() + "\n# a change under test that moves no oracle\n")
    commit_all(orders_repo, "the change under test")
    monkeypatch.setenv("THREE_LEDGER_BASE", base[:12])
    assert score(run_cli, orders_repo).code == 0
    written = ledger(orders_repo)
    assert written["base_revision"] == base
    assert written["base_resolution"] == {"given": base[:12], "used": base, "how": "ancestor"}
    assert written["head_revision"] == git(orders_repo, "rev-parse", "HEAD") != base
    assert (written["oracle_moved"], written["oracle_changes"]) == (False, [])


def test_digest_mismatch_refused_before_running(run_cli: RunCli, orders_repo: Path) -> None:
    stale = orders_repo.parent / "ledgers/p.json"
    stale.parent.mkdir()
    stale.write_text("{}\n")
    marker = orders_repo / "ran"
    command = f"{sys.executable} -c \"open('ran', 'w')\""
    result = score(run_cli, orders_repo, "--base", "HEAD", command=command, digest="AB" * 32)
    assert result.code == 2
    assert "not --expect-digest " + "ab" * 32 in result.first_error_line
    assert "removed the stale file" in result.err
    assert_no_ledger(orders_repo)
    assert not marker.exists()


def test_fixture_pin_not_listed_is_refused(run_cli: RunCli, orders_repo: Path) -> None:
    pin = orders_repo / "pins/properties.json"
    document = json.loads(pin.read_text())
    document["fixture_pins"] = ["fixpin-orders-b"]
    pin.write_text(json.dumps(document))
    result = score(run_cli, orders_repo, "--base", "HEAD")
    assert result.code == 2
    assert "$.fixture_pins" in result.first_error_line


@pytest.mark.parametrize(
    "command",
    [
        f"{PYTEST} --snapshot-update properties",
        f"{PYTEST} --inline-snapshot=create,review properties",
        "sh -c 'pytest --force-regen'",
    ],
)
def test_oracle_rewriting_flags_are_refused(
    run_cli: RunCli, orders_repo: Path, command: str
) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD", command=command)
    assert result.code == 2
    assert "rewrites the oracles" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_timeout_kills_the_background_grandchild(
    run_cli: RunCli, orders_repo: Path, tmp_path: Path
) -> None:
    seconds, sleep = sleeper_argv(tmp_path)
    command = f"sh -c '{sleep} & wait'"
    grandchild: list[int] = []
    watcher = threading.Thread(target=lambda: grandchild.append(wait_for_process(seconds)))
    watcher.start()
    started = time.monotonic()
    result = score(run_cli, orders_repo, "--base", "HEAD", "--timeout", "3", command=command)
    watcher.join()
    assert result.code == 4
    assert "timed out" in result.first_error_line
    assert time.monotonic() - started < 30
    assert_no_ledger(orders_repo)
    assert is_gone(grandchild[0])


def test_command_not_found_exits_4(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD", command="no-such-program-3l --x")
    assert result.code == 4
    assert "could not start" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_pytest_collecting_nothing_exits_4(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD", command=f"{PYTEST} -k nothing_matches")
    assert result.code == 4
    assert "exited 5 (no tests collected)" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_command_that_cannot_be_split_is_a_usage_error(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD", command="pytest 'unclosed")
    assert result.code == 64


@pytest.fixture
def host_server() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1 that answers every connection."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.sendall(b"price: 250\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_network_ban_blocks_a_server_the_test_reaches_for(
    run_cli: RunCli, orders_repo: Path, host_server: int
) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    test = orders_repo / "properties/test_orders.py"
    test.write_text(
        test.read_text()
        + "\n\n@pytest.mark.property('orders.json.round_trip')\n"
        + "def test_price_server() -> None:\n"
        + "    import socket\n"
        + f"    socket.create_connection(('127.0.0.1', {host_server}), 2).close()\n"
    )
    commit_all(orders_repo, "a property that reads the network")
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 1
    assert ledger(orders_repo)["status_by_id"]["orders.json.round_trip"] == "fail"
    pin = orders_repo / "pins/properties.json"
    pin.write_text(pin.read_text().replace('"banned"', '"allowed"'))
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 0
    assert ledger(orders_repo)["network_enforcement"] == "none"


JUNIT_CALL_AND_TEARDOWN = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="s" tests="2">
<testcase classname="properties.test_orders" name="test_id_stable" file="properties/test_orders.py">
  <failure message="boom">call failed</failure></testcase>
<testcase classname="properties.test_orders" name="test_id_stable" file="properties/test_orders.py">
  <error message="teardown">teardown failed</error></testcase>
<testcase classname="properties.test_orders" name="test_total_non_negative"
  file="properties/test_orders.py"/>
</testsuite></testsuites>
"""


def writes_report(source: Path, report: Path) -> str:
    """A command that writes SOURCE's bytes to REPORT, as a runner writes its report."""
    return f"sh -c 'cat {source} > {report}'"


def test_junit_call_failure_and_teardown_error_is_error(run_cli: RunCli, orders_repo: Path) -> None:
    junit = orders_repo.parent / "report/junit.xml"
    source = beside(orders_repo, "junit.src", JUNIT_CALL_AND_TEARDOWN)
    command = writes_report(source, junit)
    result = score(run_cli, orders_repo, "--base", "HEAD", "--junit-xml", junit, command=command)
    assert result.code == 1
    statuses = ledger(orders_repo)["status_by_id"]
    assert statuses["orders.id.stable"] == "error"
    assert statuses["orders.total.non_negative"] == "pass"
    assert statuses["orders.total.matches_lines"] == "missing"


def test_junit_with_doctype_exits_4(run_cli: RunCli, orders_repo: Path) -> None:
    junit = orders_repo.parent / "report/junit.xml"
    doctype = '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e "boom">]>\n<testsuites/>\n'
    source = beside(orders_repo, "junit.src", doctype)
    command = writes_report(source, junit)
    result = score(run_cli, orders_repo, "--base", "HEAD", "--junit-xml", junit, command=command)
    assert result.code == 4
    assert "DOCTYPE" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_out_inside_a_pin_folder_is_refused(run_cli: RunCli, orders_repo: Path) -> None:
    digest = live_digest(run_cli, orders_repo)
    result = run_cli(
        "properties", "--pin", orders_repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", orders_repo / "pins/properties.json", "--command", "true",
        "--root", orders_repo, "--out", orders_repo / "pins/p.json", "--base", "HEAD",
    )  # fmt: skip
    assert result.code == 2
    assert not (orders_repo / "pins/p.json").exists()


def test_sigterm_to_the_gate_kills_the_group_and_writes_nothing(
    orders_repo: Path, tmp_path: Path
) -> None:
    seconds, sleep = sleeper_argv(tmp_path)
    digest = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../f.json"], cwd=orders_repo, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    gate = subprocess.Popen(
        [sys.executable, "-P", "-m", "three_ledger", "properties", "--pin", "pins/fixtures.json",
         "--expect-digest", digest, "--properties", "pins/properties.json", "--base", "HEAD",
         "--command", f"sh -c '{sleep} & wait'",
         "--out", "../ledgers/p.json"],
        cwd=orders_repo, stderr=subprocess.PIPE, text=True, env={**os.environ},
    )  # fmt: skip
    grandchild = wait_for_process(seconds)
    gate.terminate()
    _, err = gate.communicate(timeout=30)
    assert gate.returncode == 4
    assert "interrupted by SIGTERM" in err
    assert_no_ledger(orders_repo)
    assert is_gone(grandchild)


def test_socket_guard_acts_where_no_namespace_can(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disabled = "user namespaces are disabled"
    simulate_missing_layers(monkeypatch, network=disabled, pid=disabled, mount=disabled)
    test = orders_repo / "properties/test_orders.py"
    test.write_text(
        test.read_text()
        + "\n\n@pytest.mark.property('orders.json.round_trip')\n"
        + "def test_guard_is_on() -> None:\n"
        + "    assert os.environ['THREE_LEDGER_NETWORK'] == 'ban'\n"
    )
    commit_all(orders_repo, "a property that checks the guard is asked for")
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 0
    assert ledger(orders_repo)["network_enforcement"] == "socket-guard"


def test_no_namespace_and_not_pytest_exits_4(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disabled = "user namespaces are disabled"
    simulate_missing_layers(monkeypatch, network=disabled, pid=disabled, mount=disabled)
    result = score(run_cli, orders_repo, "--base", "HEAD", command="make check")
    assert result.code == 4
    assert "user namespaces are disabled" in result.first_error_line
    assert "kernel.unprivileged_userns_clone" in result.first_error_line
    assert_no_ledger(orders_repo)


def test_a_command_that_is_not_pytest_leaves_no_results(run_cli: RunCli, orders_repo: Path) -> None:
    result = score(run_cli, orders_repo, "--base", "HEAD", command="true")
    assert result.code == 4
    assert "no results could be read" in result.first_error_line
    assert "--junit-xml" in result.err
    assert_no_ledger(orders_repo)


def test_digest_mismatch_names_the_files_that_moved_since_the_base(
    run_cli: RunCli, orders_repo: Path
) -> None:
    reviewed = live_digest(run_cli, orders_repo)
    pin = orders_repo / "pins/fixtures.json"
    pin.write_text(pin.read_text().replace(f'"digest": "{reviewed}",\n', ""))
    git(orders_repo, "commit", "-qam", "pin A without a reviewed digest")
    (orders_repo / "fixtures/orders_min.json").write_text('{"orders": []}\n')
    result = score(run_cli, orders_repo, "--base", "HEAD", digest=reviewed)
    assert result.code == 2
    assert f"not --expect-digest {reviewed}" in result.first_error_line
    assert "  differs from the base " in result.err
    assert result.err.count("differs from the base") == 1
    assert ": fixtures/orders_min.json" in result.err
    assert_no_ledger(orders_repo)
