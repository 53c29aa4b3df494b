"""A property cannot quietly lose tests: `min_tests` and `tests_sha256` end to end.

The tests build their cases through the product's own reader, so a change to the reader can
drop the very cases that would catch it, and every test left passes. Each change below runs
through real pytest children, `properties` and `merge`. The honest control is
`test_plan_s_proposals_make_a_pin_the_unchanged_suite_passes`: the unchanged suite passes
under the keys `plan` proposes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import CliResult, RunCli, git, write_json

pytestmark = pytest.mark.pytest_child

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
PROPERTY = "orders.total.non_negative"
TEST = "tests/test_orders.py::test_total_non_negative"
# Six orders; two carry a refund line, and still total zero or more.
ORDERS = {
    "orders": [
        {"id": "o1", "lines": [5, 7]},
        {"id": "o2", "lines": [20, -5]},
        {"id": "o3", "lines": [1]},
        {"id": "o4", "lines": [3, 3, 3]},
        {"id": "o5", "lines": [10, -10]},
        {"id": "o6", "lines": [0]},
    ]
}
CASE_IDS = [f"{TEST}[o{n}]" for n in range(1, 7)]
READER = """
import json


def read_orders(path):
    orders = json.loads(path.read_text())["orders"]
    return [dict(order, total=sum(order["lines"])) for order in orders]
"""
# The product change: refunds count twice (a negative total), and the orders that carry one
# are no longer read: the cases that would fail are gone, and every case left passes.
DROPPING_READER = """
import json


def read_orders(path):
    orders = json.loads(path.read_text())["orders"]
    kept = [order for order in orders if min(order["lines"]) >= 0]
    return [dict(order, total=sum(2 * n if n < 0 else n for n in order["lines"])) for order in kept]
"""
# The same change, with as many cases as before: each refunded order stands in as its sales.
SUBSTITUTING_READER = """
import json


def read_orders(path):
    orders = json.loads(path.read_text())["orders"]
    read = []
    for order in orders:
        if min(order["lines"]) < 0:
            order = {"id": order["id"] + "-sales", "lines": [n for n in order["lines"] if n > 0]}
        read.append(dict(order, total=sum(order["lines"])))
    return read
"""
TESTS = """
import os
from pathlib import Path

import pytest

from reader import read_orders

ORDERS = read_orders(Path(os.environ.get("THREE_LEDGER_FIXTURES", "fixtures")) / "orders.json")


@pytest.mark.parametrize("order", ORDERS, ids=[order["id"] for order in ORDERS])
def test_total_non_negative(order):
    assert order["total"] >= 0
"""


def orders_repo(folder: Path, **asks: Any) -> Path:
    """The product, its tests and the pins (the property asking ASKS of its tests), committed."""
    (folder / "tests").mkdir(parents=True)
    (folder / "reader.py").write_text(READER.lstrip())
    (folder / "tests/test_orders.py").write_text(TESTS.lstrip())
    (folder / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (folder / ".gitignore").write_text("__pycache__/\n")
    write_json(folder / "fixtures/orders.json", ORDERS)
    pin = {"pin_id": "fixpin-orders", "algorithm": "sha256", "files": ["fixtures/orders.json"]}
    write_json(folder / "pins/fixtures.json", pin)
    write_properties_pin(folder, **asks)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "orders, tests and pins")
    return folder


def write_properties_pin(folder: Path, **asks: Any) -> None:
    claim = "Every order total read from the fixtures is zero or more."
    entry = {"id": PROPERTY, "claim": claim, "domain": ["orders.json"], "test": TEST, **asks}
    pin = {"pin_id": "proppin-orders", "fixture_pins": ["fixpin-orders"], "properties": [entry]}
    write_json(folder / "pins/properties.json", pin)


def change_reader(repo: Path, source: str) -> None:
    (repo / "reader.py").write_text(source.lstrip())
    git(repo, "commit", "-q", "-am", "the change under review")


def pins(repo: Path) -> list[str | Path]:
    return ["--pin", repo / "pins/fixtures.json", "--properties", repo / "pins/properties.json"]


def plan_json(run_cli: RunCli, repo: Path) -> dict[str, Any]:
    """The first property of `plan --json`; `plan` exits 1 where it would be missing."""
    result = run_cli("plan", *pins(repo), "--command", PYTEST, "--root", repo, "--json")
    assert result.code in (0, 1), result.err
    document: dict[str, Any] = json.loads(result.out)["properties"][0]
    return document


@pytest.fixture
def ledgers(tmp_path: Path) -> Path:
    return tmp_path / "ledgers"


def score(run_cli: RunCli, repo: Path, ledgers: Path, base: str = "HEAD") -> CliResult:
    digest = run_cli("digest", "--pin", repo / "pins/fixtures.json", "--root", repo,
                     "--out", ledgers / "fixture.json")  # fmt: skip
    assert digest.code == 0, digest.err
    return run_cli("properties", *pins(repo), "--expect-digest", digest.out.strip(),
                   "--command", PYTEST, "--root", repo, "--base", base,
                   "--out", ledgers / "property.json")  # fmt: skip


def merge(run_cli: RunCli, ledgers: Path) -> CliResult:
    return run_cli("merge", "--fixture-ledger", ledgers / "fixture.json",
                   "--property-ledger", ledgers / "property.json",
                   "--out", ledgers / "decision.json", "--summary-md", ledgers / "summary.md",
                   "--verdict-junit", ledgers / "verdict.xml")  # fmt: skip


def read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_plan_s_proposals_make_a_pin_the_unchanged_suite_passes(
    run_cli: RunCli, tmp_path: Path, ledgers: Path
) -> None:
    repo = orders_repo(tmp_path / "repo")
    proposed = plan_json(run_cli, repo)
    expected = hashlib.sha256("\n".join(sorted(CASE_IDS)).encode("utf-8")).hexdigest()
    assert proposed["counted_ids"] == sorted(CASE_IDS)
    assert (proposed["proposed_min_tests"], proposed["proposed_tests_sha256"]) == (6, expected)
    text = run_cli("plan", *pins(repo), "--command", PYTEST, "--root", repo).out
    assert f'  proposed for the pin: "min_tests": 6, "tests_sha256": "{expected}"\n' in text
    write_properties_pin(
        repo,
        min_tests=proposed["proposed_min_tests"],
        tests_sha256=proposed["proposed_tests_sha256"],
    )
    git(repo, "commit", "-q", "-am", "pin: the property asks for its six cases")
    result = score(run_cli, repo, ledgers)
    assert result.code == 0, result.err
    assert f"pass     {PROPERTY} (6 tests)" in result.err
    ledger = read(ledgers / "property.json")
    assert ledger["status_by_id"] == {PROPERTY: "pass"}
    assert ledger["tests_matched"] == {PROPERTY: 6}
    decided = merge(run_cli, ledgers)
    assert decided.code == 0, decided.out
    assert f"{PROPERTY}: pass (6 tests)" in decided.out


def test_a_change_that_drops_cases_is_missing_under_min_tests_and_merge_rejects(
    run_cli: RunCli, tmp_path: Path, ledgers: Path
) -> None:
    repo = orders_repo(tmp_path / "repo", min_tests=6)
    base = git(repo, "rev-parse", "HEAD")
    change_reader(repo, DROPPING_READER)
    result = score(run_cli, repo, ledgers, base)
    assert result.code == 1, result.err
    reason = "4 tests matched, the pin asks for at least 6"
    assert f"missing  {PROPERTY} (4 tests)" in result.err
    assert f"{PROPERTY} is missing: {reason}" in result.err
    ledger = read(ledgers / "property.json")
    assert (ledger["tests_matched"], ledger["missing_reasons"]) == (
        {PROPERTY: 4},
        {PROPERTY: reason},
    )
    decided = merge(run_cli, ledgers)
    assert decided.code == 1
    decision = read(ledgers / "decision.json")
    assert (decision["row"], decision["posture"]) == (7, "reject")
    assert f"{PROPERTY}: missing (4 tests)" in decided.out
    summary = (ledgers / "summary.md").read_text()
    assert "| **missing**, 4 tests | missing: 4 tests matched, the pin asks for at least 6 |" in (
        summary
    )
    assert (
        f'message="missing: {reason}; missing is not a pass"'
        in (ledgers / "verdict.xml").read_text()
    )
    # Without the key the same change passes: four cases, all green.
    write_properties_pin(repo)
    git(repo, "commit", "-q", "-am", "the pin without min_tests")
    assert score(run_cli, repo, ledgers).code == 0
    assert read(ledgers / "property.json")["status_by_id"] == {PROPERTY: "pass"}


def test_a_substituted_case_set_of_the_same_count_is_missing_by_its_hash(
    run_cli: RunCli, tmp_path: Path, ledgers: Path
) -> None:
    pinned = hashlib.sha256("\n".join(sorted(CASE_IDS)).encode("utf-8")).hexdigest()
    repo = orders_repo(tmp_path / "repo", min_tests=6, tests_sha256=pinned)
    base = git(repo, "rev-parse", "HEAD")
    change_reader(repo, SUBSTITUTING_READER)
    result = score(run_cli, repo, ledgers, base)
    assert result.code == 1, result.err
    ledger = read(ledgers / "property.json")
    assert ledger["status_by_id"] == {PROPERTY: "missing"}
    assert ledger["tests_matched"] == {PROPERTY: 6}
    seen = plan_json(run_cli, repo)
    assert f"{TEST}[o2-sales]" in seen["counted_ids"]
    found = seen["proposed_tests_sha256"]
    assert ledger["missing_reasons"][PROPERTY] == (
        f"the 6 tests it matched hash to {found}, the pin's tests_sha256 is {pinned} "
        "(`three-ledger plan --json` lists the ids: counted_ids)"
    )
    assert merge(run_cli, ledgers).code == 1
    assert read(ledgers / "decision.json")["row"] == 7


def test_vet_does_not_count_a_lost_case_as_a_kill(run_cli: RunCli, tmp_path: Path) -> None:
    repo = orders_repo(tmp_path / "repo", min_tests=6)
    # A test that never looks at a total: only losing a case, or a broken file, changes it.
    tests = repo / "tests/test_orders.py"
    tests.write_text(
        tests.read_text().replace('order["total"] >= 0', 'isinstance(order["id"], str)')
    )
    git(repo, "commit", "-q", "-am", "a test that checks only ids")
    out = tmp_path / "vet.json"
    result = run_cli("vet", *pins(repo), "--command", PYTEST, "--root", repo, "--out", out,
                     "--strict")  # fmt: skip
    found = read(out)["properties"][PROPERTY]
    dropped = [t for t in found["trials"] if t["operator"] == "json.drop_element"]
    assert [trial["status"] for trial in dropped] == ["missing"]
    assert "json.drop_element" not in found["killed_by"]
    # Only the malformed files (a reader that raises) made it fail: weak, not a gate here.
    assert (found["verdict"], found["gate"]) == ("weak", False)
    assert result.code == 1, result.err
    assert "; missing under json.drop_element" in result.out


def test_vet_needs_a_baseline_with_the_tests_the_pin_asks_for(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = orders_repo(tmp_path / "repo", min_tests=7)
    out = tmp_path / "vet.json"
    result = run_cli("vet", *pins(repo), "--command", PYTEST, "--root", repo, "--out", out)
    assert result.code == 2
    assert f"{PROPERTY}: missing (6 tests matched, the pin asks for at least 7)" in result.err
    assert not out.exists()
