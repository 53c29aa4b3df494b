"""Sharded scoring end to end: shard-plan, shards as real pytest children, combine, merge."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from helpers import RunCli, git
from helpers.shards import PYTEST, combine, read, run_shard, shard_plan, sharded, unsharded
from helpers.suites import TEST_FILE, make_suite, prop, properties_pin

EXAMPLE_CMD = f"{PYTEST} properties/test_orders.py"
# Keys of a property ledger scored from the results: a sharded run must reproduce them.
SCORED = ("status_by_id", "failing_tests", "unpinned_failures", "flake_results")


def posture(run_cli: RunCli, repo: Path, property_ledger: Path) -> str:
    out = property_ledger.with_name(property_ledger.stem + "_merge.json")
    run_cli("merge", "--fixture-ledger", repo.parent / "f.json",
            "--property-ledger", property_ledger, "--out", out)  # fmt: skip
    return str(read(out)["posture"])


@pytest.fixture
def broken_orders(orders_repo: Path) -> Path:
    """The example with one property broken by the patch (committed, so HEAD is the base)."""
    code = orders_repo / "orders.py"
    code.write_text(code.read_text().replace('line["quantity"] *', 'min(line["quantity"], 999) *'))
    git(orders_repo, "commit", "-qam", "the patch")
    return orders_repo


@pytest.mark.parametrize("shards", [3, 4])
def test_sharded_example_equals_the_unsharded_run_and_its_merge_posture(
    run_cli: RunCli, broken_orders: Path, shards: int
) -> None:
    repo = broken_orders
    whole = unsharded(run_cli, repo, EXAMPLE_CMD, flakes=True)
    plan, paths = sharded(run_cli, repo, shards, EXAMPLE_CMD, "--all", flakes=True)
    out = repo.parent / "ledgers/combined.json"
    result = combine(run_cli, plan, paths, out)
    assert result.code == 1, result.err  # one property fails, as unsharded
    combined = read(out)
    assert whole["status_by_id"]["orders.total.matches_lines"] == "fail"
    for key in SCORED:
        assert combined[key] == whole[key], key
    assert combined["kind"] == "property"
    assert whole["shards"] is None
    assert combined["shards"]["total"] == shards
    assert len(combined["shards"]["ledger_ids"]) == shards
    planned = read(plan)["slices"]
    assert sorted(i for s in planned for i in s) == sorted(
        i for p in paths for i in read(p)["ids_run"]
    )
    assert posture(run_cli, repo, out) == posture(run_cli, repo, repo.parent / "ledgers/whole.json")


def test_a_generated_suite_in_three_shards_equals_the_unsharded_run(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = properties_pin([
        prop("suite.parse", f"{TEST_FILE}::test_parse"),
        prop("suite.total", f"{TEST_FILE}::test_total"),
        prop("suite.marked"),
        prop("suite.minimum", [f"{TEST_FILE}::TestDraft::test_minimum_low",
                               f"{TEST_FILE}::TestDraft::test_minimum_high"]),
    ])  # fmt: skip
    repo = make_suite(tmp_path / "suite", pin)
    # test_parse[a.json] fails, test_parse[b.json] passes: a property spanning shards.
    monkeypatch.setenv("SUITE_BROKEN", '{"a": 1}\n')
    command = f"{PYTEST} {TEST_FILE}"
    whole = unsharded(run_cli, repo, command, flakes=False)
    plan, paths = sharded(run_cli, repo, 3, command, "--all", flakes=False)
    slices = read(plan)["slices"]
    owner = {test_id: k for k, chosen in enumerate(slices) for test_id in chosen}
    parse_a, parse_b = f"{TEST_FILE}::test_parse[a.json]", f"{TEST_FILE}::test_parse[b.json]"
    assert owner[parse_a] != owner[parse_b]  # the property's tests span two shards
    out = repo.parent / "ledgers/combined.json"
    assert combine(run_cli, plan, paths, out).code == 1
    combined = read(out)
    assert combined["status_by_id"]["suite.parse"] == "fail"
    assert combined["status_by_id"] == whole["status_by_id"]
    for key in SCORED:
        assert combined[key] == whole[key], key


def suite_with_one_pinned_test(tmp_path: Path) -> Path:
    pin = properties_pin([prop("suite.total", f"{TEST_FILE}::test_total")])
    return make_suite(tmp_path / "suite", pin)


def test_empty_slices_run_nothing_and_still_combine(run_cli: RunCli, tmp_path: Path) -> None:
    repo = suite_with_one_pinned_test(tmp_path)
    command = f"{PYTEST} {TEST_FILE}"  # the path would collect 12 tests: the plan keeps 1
    plan = shard_plan(run_cli, repo, 3, command, flakes=False)
    assert [len(s) for s in read(plan)["slices"]] == [1, 0, 0]
    paths = []
    for index in range(3):
        result, out = run_shard(run_cli, repo, plan, index, command, flakes=False)
        assert result.code == 0, result.err
        paths.append(out)
    assert read(paths[0])["ids_run"] == [f"{TEST_FILE}::test_total"]
    assert read(paths[1])["ids_run"] == []
    assert read(paths[1])["kind"] == "property_shard"
    out = repo.parent / "ledgers/combined.json"
    assert combine(run_cli, plan, paths, out).code == 0
    assert read(out)["status_by_id"] == {"suite.total": "pass"}


def test_tests_matched_and_min_tests_are_judged_over_the_union_of_the_shards(
    run_cli: RunCli, tmp_path: Path
) -> None:
    parse = [f"{TEST_FILE}::test_parse[a.json]", f"{TEST_FILE}::test_parse[b.json]"]
    both = hashlib.sha256("\n".join(parse).encode()).hexdigest()
    pin = properties_pin([
        {**prop("suite.parse", f"{TEST_FILE}::test_parse"), "min_tests": 2, "tests_sha256": both},
        {**prop("suite.total", f"{TEST_FILE}::test_total"), "min_tests": 1},
    ])  # fmt: skip
    repo = make_suite(tmp_path / "suite", pin)
    command = f"{PYTEST} {TEST_FILE}"
    whole = unsharded(run_cli, repo, command, flakes=False)
    assert whole["tests_matched"] == {"suite.parse": 2, "suite.total": 1}
    plan = shard_plan(run_cli, repo, 3, command, flakes=False)
    paths = []
    for index in range(3):
        # No shard holds both parse tests; alone, each is short of min_tests: not a miss.
        result, out = run_shard(run_cli, repo, plan, index, command, flakes=False)
        assert result.code == 0, result.err
        paths.append(out)
    per_shard = [read(path)["tests_matched"]["suite.parse"] for path in paths]
    assert sorted(per_shard) == [0, 1, 1]
    out = repo.parent / "ledgers/combined.json"
    result = combine(run_cli, plan, paths, out)
    assert result.code == 0, result.err
    combined = read(out)
    assert combined["status_by_id"] == {"suite.parse": "pass", "suite.total": "pass"}
    assert combined["tests_matched"] == whole["tests_matched"]
    assert combined["missing_reasons"] == {}


# Product code that hides the boundary orders from a collection run with `--collect-only`, as
# `shard-plan`'s is: its failing tests are then in no slice. (A steering of its own
# collection in every run is the general case, caught by `min_tests` and `tests_sha256`.)
STEERING = """
import os as _os
from pathlib import Path as _Path

if "--collect-only" in _os.environ.get("PYTEST_ADDOPTS", ""):
    _glob = _Path.glob
    _Path.glob = lambda self, *a, **k: [p for p in _glob(self, *a, **k) if "boundary" not in p.name]
"""


def plan_without_boundary_orders(run_cli: RunCli, repo: Path, command: str) -> Path:
    """A plan of two slices for COMMAND, which holds tests and none of the boundary orders."""
    plan = shard_plan(run_cli, repo, 2, command, flakes=False)
    planned = [test_id for chosen in read(plan)["slices"] for test_id in chosen]
    assert planned
    assert not any("boundary" in test_id for test_id in planned)
    return plan


@pytest.mark.parametrize("workers", ["", " -n 2"])
def test_a_plan_whose_collection_the_change_steered_is_refused_by_every_shard(
    run_cli: RunCli, broken_orders: Path, workers: str
) -> None:
    repo = broken_orders
    with (repo / "orders.py").open("a") as code:
        code.write(STEERING)
    git(repo, "commit", "-qam", "the patch hides its failures from the plan")
    command = EXAMPLE_CMD + workers
    plan = plan_without_boundary_orders(run_cli, repo, command)
    for index in range(2):
        result, out = run_shard(run_cli, repo, plan, index, command, flakes=False)
        assert result.code == 4, result.err
        refusal = next(line for line in result.err.splitlines() if "no slice" in line)
        assert "this run collected properties/test_orders.py::" in refusal
        assert "[orders_boundary.json], and the plan holds it in no slice" in refusal
        assert not out.exists()


def test_tests_the_command_deselects_are_no_gap_in_the_plan(
    run_cli: RunCli, orders_repo: Path
) -> None:
    # `-k` leaves the boundary orders out of the plan's collection and of each shard's alike.
    command = f'{EXAMPLE_CMD} -k "not boundary"'
    plan = plan_without_boundary_orders(run_cli, orders_repo, command)
    for index in range(2):
        result, out = run_shard(run_cli, orders_repo, plan, index, command, flakes=False)
        assert result.code == 0, result.err
        assert sorted(read(out)["ids_run"]) == sorted(read(plan)["slices"][index])
