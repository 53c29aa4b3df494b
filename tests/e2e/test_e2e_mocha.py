"""End to end with a real mocha from the npm registry: `properties --junit-xml`, then `merge`.

A small JavaScript library with mocha tests, pinned fixtures and properties, in a real git
repository; mocha and mocha-junit-reporter are installed once per test session into a folder
the session creates. Skipped only where node or npm is absent. (An end-to-end test: it moves
to tests/e2e/ with the others of its kind.)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import RunCli, git, make_tree, simulate_missing_layers, write_json
from helpers.junit_gate import ORDERS_JSON, TOTAL_JS, Gate, junit_gate

MOCHA = "mocha@11.8.0"
REPORTER = "mocha-junit-reporter@2.2.1"
NPM_TIMEOUT_S = 600
REPORT_OPTIONS = "mochaFile=test-results/junit.xml,jenkinsMode=true,includePending=true"
TEST_SCRIPT = f"mocha --reporter mocha-junit-reporter --reporter-options {REPORT_OPTIONS}"

TESTS = b"""\
const assert = require('assert');
const fs = require('fs');
const { total } = require('../lib/total');
const orders = JSON.parse(fs.readFileSync('fixtures/orders.json', 'utf8'));

describe('total', function () {
  it('sums quantity times price', function () {
    for (const order of orders) assert.strictEqual(total(order), order.total);
  });
  it('is never negative', function () {
    for (const order of orders) assert.ok(total(order) >= 0);
  });
  it('is zero for an empty order', function () {
    assert.strictEqual(total({ lines: [] }), 0);
  });
});
"""
PROPERTIES = {
    "pin_id": "proppin-js",
    "fixture_pins": ["fixpin-js"],
    "network": "banned",
    "oracle_paths": ["test"],
    "properties": [
        {
            "id": "total.sum",
            "claim": "total() is the sum of quantity times price.",
            "domain": ["orders.json"],
            "test": "total::sums quantity times price",
        },
        {
            "id": "total.non_negative",
            "claim": "total() is never negative.",
            "domain": ["orders.json"],
            "test": "total::is never negative",
        },
        {
            "id": "total.empty",
            "claim": "An order without lines totals zero.",
            "domain": ["orders.json"],
            "test": "total::is zero for an empty order",
        },
    ],
}
# A library edit that breaks two, then three, of the tests (mocha then exits 2, then 3).
TWO_FAILURES = (b", 0);", b", 0) + 1;")
THREE_FAILURES = (b"return order", b"return -1 - order")


@pytest.fixture(scope="session")
def mocha_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """node_modules holding mocha and mocha-junit-reporter, installed from the npm registry."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node and npm are needed to install mocha from the npm registry")
    folder = tmp_path_factory.mktemp("npm-mocha")
    write_json(folder / "package.json", {"name": "mocha-e2e", "private": True})
    command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", MOCHA, REPORTER]
    done = subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"npm install failed:\n{done.stderr[-2000:]}"
    return folder / "node_modules"


@pytest.fixture
def js_repo(tmp_path: Path, mocha_modules: Path) -> Path:
    repo = tmp_path / "lib"
    make_tree(
        repo,
        {
            "lib/total.js": TOTAL_JS,
            "test/total.spec.js": TESTS,
            "fixtures/orders.json": ORDERS_JSON,
            ".gitignore": b"node_modules\ntest-results/\n",
        },
    )
    package = {"name": "lib", "private": True, "scripts": {"test": TEST_SCRIPT}}
    write_json(repo / "package.json", package)
    write_json(
        repo / "pins/fixtures.json",
        {"pin_id": "fixpin-js", "algorithm": "sha256", "files": ["fixtures/orders.json"]},
    )
    write_json(repo / "pins/properties.json", PROPERTIES)
    (repo / "node_modules").symlink_to(mocha_modules)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def gate(run_cli: RunCli, repo: Path, command: str = "npm test") -> Gate:
    """digest, properties --junit-xml, merge: as a CI job runs them."""
    return junit_gate(run_cli, repo, repo / "test-results/junit.xml", command)


def patch(repo: Path, path: str, edit: tuple[bytes, bytes]) -> None:
    target = repo / path
    data = target.read_bytes()
    assert edit[0] in data
    target.write_bytes(data.replace(*edit))


def test_a_clean_patch_passes_and_records_the_report(run_cli: RunCli, js_repo: Path) -> None:
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row, result.posture) == (0, 8, "human_review")
    assert result.ledger is not None
    assert result.ledger["command_exit"] == 0
    report = result.ledger["junit_report"]
    assert isinstance(report, dict)
    assert report["path"] == "test-results/junit.xml"


@pytest.mark.parametrize(("edit", "failures"), [(TWO_FAILURES, 2), (THREE_FAILURES, 3)])
def test_a_library_broken_in_several_tests_reaches_row_7(
    run_cli: RunCli, js_repo: Path, edit: tuple[bytes, bytes], failures: int
) -> None:
    patch(js_repo, "lib/total.js", edit)
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row, result.posture) == (1, 7, "reject")
    assert result.ledger is not None
    assert result.ledger["command_exit"] == failures  # mocha exits with the failure count
    statuses = result.ledger["status_by_id"]
    assert isinstance(statuses, dict)
    assert list(statuses.values()).count("fail") == failures


def test_a_syntax_error_never_reuses_the_last_passing_report(
    run_cli: RunCli, js_repo: Path
) -> None:
    assert gate(run_cli, js_repo).properties_exit == 0  # leaves a passing report behind
    assert (js_repo / "test-results/junit.xml").exists()
    (js_repo / "lib/total.js").write_bytes(b"function total(order {\n")
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row, result.posture) == (4, 2, "reject")
    assert "missing after the command (the file an earlier run left there" in result.stderr


def test_a_committed_passing_report_is_refused(run_cli: RunCli, js_repo: Path) -> None:
    assert gate(run_cli, js_repo).properties_exit == 0
    git(js_repo, "add", "-f", "test-results/junit.xml")
    git(js_repo, "commit", "-q", "-m", "a passing report")
    patch(js_repo, "lib/total.js", THREE_FAILURES)
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row, result.posture) == (2, 2, "reject")
    assert "is tracked by git" in result.stderr


def test_a_mocharc_that_neuters_assert_moves_the_oracles(run_cli: RunCli, js_repo: Path) -> None:
    patch(js_repo, "lib/total.js", THREE_FAILURES)
    make_tree(
        js_repo,
        {
            ".mocharc.json": b'{"require": "./support/quiet.js"}\n',
            "support/quiet.js": b"const assert = require('assert');\n"
            b"for (const name of Object.keys(assert)) assert[name] = () => {};\n",
        },
    )
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row, result.posture) == (5, 5, "reject")
    assert result.ledger is not None
    assert result.ledger["oracle_changes"] == [".mocharc.json", "support/quiet.js"]
    # Without the implicit oracles the forged run would have passed:
    assert set(result.ledger["status_by_id"].values()) == {"pass"}


def test_a_failing_after_each_hook_counts_against_its_test(run_cli: RunCli, js_repo: Path) -> None:
    teardown = (
        b"  afterEach(function () {\n"
        b"    if (this.currentTest.title === 'is never negative') throw new Error('td');\n"
        b"  });\n"
    )
    opening = b"describe('total', function () {\n"
    patch(js_repo, "test/total.spec.js", (opening, opening + teardown))
    git(js_repo, "commit", "-q", "-am", "a teardown that fails, in the base")
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row) == (1, 7)
    assert result.ledger is not None
    assert result.ledger["status_by_id"] == {
        "total.sum": "pass",
        "total.non_negative": "fail",
        # mocha skips the rest of the describe after a failing hook: not a pass either
        "total.empty": "missing",
    }


def test_an_anonymous_test_is_a_warning_not_a_failure(run_cli: RunCli, js_repo: Path) -> None:
    patch(js_repo, "test/total.spec.js", (b"});\n", b"  it('', function () {});\n});\n"))
    git(js_repo, "commit", "-q", "-am", "an anonymous test, in the base")
    result = gate(run_cli, js_repo)
    assert (result.properties_exit, result.row) == (0, 8)
    assert "it is scored as 'total::<unnamed 1>'" in result.stderr


def test_a_report_written_under_root_but_looked_for_elsewhere_names_both(
    run_cli: RunCli, js_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the sandbox's read-only tree the runner writes under ROOT; with it, the next test.
    simulate_missing_layers(monkeypatch, mount="mount_setattr: Function not implemented")
    monkeypatch.chdir(tmp_path)
    digest = run_cli(
        "digest", "--pin", js_repo / "pins/fixtures.json", "--root", js_repo,
        "--out", "f.json",
    ).out.strip()  # fmt: skip
    result = run_cli(
        "properties", "--pin", js_repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", js_repo / "pins/properties.json", "--command", "npm test",
        "--root", js_repo, "--base", "main", "--junit-xml", "test-results/junit.xml",
        "--out", "p.json",
    )  # fmt: skip
    assert result.code == 4
    assert f"JUnit XML {tmp_path / 'test-results/junit.xml'} (not " in result.first_error_line
    assert f"{js_repo / 'test-results/junit.xml'}, which exists" in result.first_error_line


@pytest.mark.usefixtures("needs_mount_layer")
def test_in_the_sandbox_a_report_looked_for_elsewhere_says_where_the_runner_may_write(
    run_cli: RunCli, js_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    digest = run_cli(
        "digest", "--pin", js_repo / "pins/fixtures.json", "--root", js_repo,
        "--out", "f.json",
    ).out.strip()  # fmt: skip
    result = run_cli(
        "properties", "--pin", js_repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", js_repo / "pins/properties.json", "--command", "npm test",
        "--root", js_repo, "--base", "main", "--junit-xml", "test-results/junit.xml",
        "--out", "p.json",
    )  # fmt: skip
    assert result.code == 4
    assert "missing after the command" in result.first_error_line
    assert (
        f"the sandbox lets the runner write only the report's folder {tmp_path / 'test-results'}"
    ) in result.err
    assert not (js_repo / "test-results/junit.xml").exists()
