"""End to end with node's own test runner and its JUnit reporter: `properties --junit-xml`,
then `merge`, against a change whose npm script copies an old passing report into place.

A small JavaScript library with `node --test` tests, pinned fixtures and properties, in a real
git repository; `npm test` runs `node --test --test-reporter=junit`. node writes no
timestamps in its report, so only the file times and the launch chain stand between a copied
report and a pass. Skipped where node 20 or later, or npm, is absent; nothing is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git, make_tree, write_json
from helpers.junit_gate import ORDERS_JSON, TOTAL_JS, Gate, junit_gate
from three_ledger.run.junit_oracles import CHANGED_OUTSIDE_PRODUCT, NAMED_BY_SCRIPT, SCRIPT

REPORT = "reports/junit.xml"
TEST_SCRIPT = f"node --test --test-reporter=junit --test-reporter-destination={REPORT}"

BROKEN = (b", 0);", b", 0) - 1;")
TESTS = b"""\
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { total } = require('../lib/total');
const orders = JSON.parse(fs.readFileSync('fixtures/orders.json', 'utf8'));

test('sums quantity times price', () => {
  for (const order of orders) assert.strictEqual(total(order), order.total);
});
test('is never negative', () => {
  for (const order of orders) assert.ok(total(order) >= 0);
});
"""
PROPERTIES: dict[str, Any] = {
    "pin_id": "proppin-node",
    "fixture_pins": ["fixpin-node"],
    "network": "allowed",
    "oracle_paths": ["test"],
    "properties": [
        {
            "id": "total.sum",
            "claim": "total() is the sum of quantity times price.",
            "domain": ["orders.json"],
            "test": "test::sums quantity times price",
        },
        {
            "id": "total.non_negative",
            "claim": "total() is never negative.",
            "domain": ["orders.json"],
            "test": "test::is never negative",
        },
    ],
}


def node_major() -> int:
    node = shutil.which("node")
    if node is None:
        return 0
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return int(version.stdout.strip().lstrip("v").split(".")[0] or 0)


@pytest.fixture
def node_repo(tmp_path: Path) -> Path:
    if node_major() < 20 or shutil.which("npm") is None:
        pytest.skip("node 20 or later (its junit reporter) and npm are needed")
    repo = tmp_path / "lib"
    make_tree(
        repo,
        {
            "lib/total.js": TOTAL_JS,
            "test/total.test.js": TESTS,
            "fixtures/orders.json": ORDERS_JSON,
            ".gitignore": b"reports/\n",
        },
    )
    write_json(repo / "package.json", package(TEST_SCRIPT))
    write_json(
        repo / "pins/fixtures.json",
        {"pin_id": "fixpin-node", "algorithm": "sha256", "files": ["fixtures/orders.json"]},
    )
    write_json(repo / "pins/properties.json", PROPERTIES)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def package(test_script: str) -> dict[str, Any]:
    return {"name": "lib", "private": True, "scripts": {"test": test_script}}


def gate(run_cli: RunCli, repo: Path) -> Gate:
    """digest, properties --junit-xml, merge: as a CI job runs them."""
    return junit_gate(run_cli, repo, repo / REPORT)


def old_passing_report(run_cli: RunCli, repo: Path) -> bytes:
    """The report of an honest run of the base: the attack's raw material."""
    honest = gate(run_cli, repo)
    assert (honest.properties_exit, honest.row, honest.posture) == (0, 8, "human_review")
    return (repo / REPORT).read_bytes()


def copy_an_old_report(run_cli: RunCli, repo: Path, copy: str) -> None:
    """The attack: break the library, commit an old passing report, and make `npm test` copy
    it into place instead of running the tests."""
    make_tree(repo, {"ci/old-pass.xml": old_passing_report(run_cli, repo)})
    git(repo, "checkout", "-q", "-b", "change")
    library = repo / "lib/total.js"
    library.write_bytes(library.read_bytes().replace(*BROKEN))
    write_json(repo / "package.json", package(f"{copy} ci/old-pass.xml {REPORT}"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "faster tests")


def test_the_honest_run_passes_and_a_broken_library_is_row_7(
    run_cli: RunCli, node_repo: Path
) -> None:
    honest = gate(run_cli, node_repo)
    assert (honest.properties_exit, honest.row, honest.posture) == (0, 8, "human_review")
    assert honest.ledger is not None
    assert honest.ledger["status_by_id"] == {"total.sum": "pass", "total.non_negative": "pass"}
    assert honest.ledger["oracle_model"] == "inferred"
    library = node_repo / "lib/total.js"
    library.write_bytes(library.read_bytes().replace(*BROKEN))
    broken = gate(run_cli, node_repo)
    assert (broken.properties_exit, broken.row, broken.posture) == (1, 7, "reject")


def test_an_npm_script_that_copies_an_old_report_keeping_its_times_is_refused(
    run_cli: RunCli, node_repo: Path
) -> None:
    copy_an_old_report(run_cli, node_repo, "cp -p")
    result = gate(run_cli, node_repo)
    assert (result.properties_exit, result.row, result.posture) == (4, 2, "reject")
    assert f"JUnit XML {node_repo / REPORT}: dated " in result.stderr
    assert "before the command started (a copy that kept an older file's times?)" in result.stderr


def test_an_npm_script_that_copies_an_old_report_moves_the_launch_chain(
    run_cli: RunCli, node_repo: Path
) -> None:
    # A plain `cp` gives the copy fresh times, and node writes no timestamps: the launch
    # chain (the rewritten script, and the file it names) is what catches it.
    copy_an_old_report(run_cli, node_repo, "cp")
    result = gate(run_cli, node_repo)
    assert (result.properties_exit, result.row, result.posture) == (5, 5, "reject")
    assert result.ledger is not None
    assert result.ledger["oracle_change_reasons"] == {
        "ci/old-pass.xml": NAMED_BY_SCRIPT,
        "package.json:scripts.test": SCRIPT,
    }
    # Without the launch chain the forged run would have passed:
    assert set(result.ledger["status_by_id"].values()) == {"pass"}


def test_with_product_paths_the_copy_is_a_change_outside_the_product(
    run_cli: RunCli, node_repo: Path
) -> None:
    write_json(node_repo / "pins/properties.json", {**PROPERTIES, "product_paths": ["lib/**"]})
    git(node_repo, "commit", "-q", "-am", "the product is lib/")
    copy_an_old_report(run_cli, node_repo, "cp")
    result = gate(run_cli, node_repo)
    assert (result.properties_exit, result.row, result.posture) == (5, 5, "reject")
    assert result.ledger is not None
    assert result.ledger["oracle_model"] == "closed"
    assert result.ledger["oracle_change_reasons"] == {
        "ci/old-pass.xml": CHANGED_OUTSIDE_PRODUCT,
        "package.json": CHANGED_OUTSIDE_PRODUCT,
    }


# The fixtures checked in the body of a test with a subtest, and a test no property names.
PARENT_TESTS = b"""\
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { total } = require('../lib/total');
const orders = JSON.parse(fs.readFileSync('fixtures/orders.json', 'utf8'));

test('total', async (t) => {
  await t.test('empty order is zero', () => {
    assert.strictEqual(total({ lines: [] }), 0);
  });
  for (const order of orders) assert.strictEqual(total(order), order.total);
});
test('is never negative', () => {
  for (const order of orders) assert.ok(total(order) >= 0);
});
test('one line', () => {
  assert.strictEqual(total({ lines: [{ quantity: 1, price: 1 }] }), 1);
});
"""
# One more for any order that has lines: the empty order still totals 0.
OFF_BY_ONE = (b"line.price, 0);", b"line.price, order.lines.length ? 1 : 0);")


def test_a_parent_tests_own_failure_node_does_not_write_refuses_the_report(
    run_cli: RunCli, node_repo: Path
) -> None:
    # The property names the subtest; the broken library fails the parent's body, which
    # node's report leaves out, and the test no property names, which switches off row 8 (an
    # exit 1 with no failing test). Read as written, every property passed.
    properties = dict(PROPERTIES)
    properties["properties"] = [
        {**PROPERTIES["properties"][0], "test": "test::empty order is zero"},
        PROPERTIES["properties"][1],
    ]
    make_tree(node_repo, {"test/total.test.js": PARENT_TESTS})
    write_json(node_repo / "pins/properties.json", properties)
    git(node_repo, "commit", "-q", "-am", "a test with a subtest")
    honest = gate(run_cli, node_repo)
    assert (honest.properties_exit, honest.row, honest.posture) == (0, 8, "human_review")
    library = node_repo / "lib/total.js"
    library.write_bytes(library.read_bytes().replace(*OFF_BY_ONE))
    result = gate(run_cli, node_repo)
    assert (result.properties_exit, result.posture) == (4, "reject")
    assert "node's tally counts 2 failed test(s) and the report shows at most 1" in result.stderr
    assert result.ledger is None
