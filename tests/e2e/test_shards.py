"""Sharded scoring end to end: shard-plan, shards as real pytest children, combine, merge."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import CliResult, RunCli, git, write_json
from helpers.suites import TEST_FILE, make_suite, prop, properties_pin
from three_ledger.exit_codes import ExitCode

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
EXAMPLE_CMD = f"{PYTEST} properties/test_orders.py"
# Keys of a property ledger scored from the results: a sharded run must reproduce them.
SCORED = ("status_by_id", "failing_tests", "unpinned_failures", "flake_results")


def digest(run_cli: RunCli, repo: Path) -> str:
    out = repo.parent / "f.json"
    result = run_cli("digest", "--pin", repo / "pins/fixtures.json", "--root", repo, "--out", out)
    assert result.code == 0, result.err
    return result.out.strip()


def pins(repo: Path, flakes: bool) -> list[str | Path]:
    given: list[str | Path] = ["--pin", repo / "pins/fixtures.json"]
    given += ["--properties", repo / "pins/properties.json"]
    return [*given, "--flake-pin", repo / "pins/flakes.json"] if flakes else given


def shard_plan(
    run_cli: RunCli, repo: Path, shards: int, command: str, *extra: str | Path, flakes: bool
) -> Path:
    out = repo.parent / "ledgers/plan.json"
    result = run_cli("shard-plan", *pins(repo, flakes), "--command", command, "--root", repo,
                     "--shards", str(shards), "--out", out, *extra)  # fmt: skip
    assert result.code == 0, result.err
    return out


def run_shard(
    run_cli: RunCli, repo: Path, plan: Path, index: int, command: str, *, flakes: bool
) -> tuple[CliResult, Path]:
    out = repo.parent / f"ledgers/shard_{plan.stem}_{index}.json"
    result = run_cli("properties", *pins(repo, flakes), "--expect-digest", digest(run_cli, repo),
                     "--command", command, "--root", repo, "--base", "HEAD",
                     "--shard-plan", plan, "--shard", str(index), "--out", out)  # fmt: skip
    return result, out


def unsharded(run_cli: RunCli, repo: Path, command: str, *, flakes: bool) -> dict[str, Any]:
    out = repo.parent / "ledgers/whole.json"
    result = run_cli("properties", *pins(repo, flakes), "--expect-digest", digest(run_cli, repo),
                     "--command", command, "--root", repo, "--base", "HEAD",
                     "--out", out)  # fmt: skip
    assert result.code in (0, 1), result.err
    return read(out)


def combine(run_cli: RunCli, plan: Path, shards: list[Path], out: Path) -> CliResult:
    return run_cli("combine", "--plan", plan, "--out", out, *shards)


def sharded(
    run_cli: RunCli, repo: Path, shards: int, command: str, *extra: str | Path, flakes: bool
) -> tuple[Path, list[Path]]:
    plan = shard_plan(run_cli, repo, shards, command, *extra, flakes=flakes)
    paths = []
    for index in range(shards):
        result, out = run_shard(run_cli, repo, plan, index, command, flakes=flakes)
        assert result.code in (0, 1), result.err
        paths.append(out)
    return plan, paths


def read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


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


@pytest.fixture
def two_shards(run_cli: RunCli, tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse"),
                          prop("suite.total", f"{TEST_FILE}::test_total")])  # fmt: skip
    repo = make_suite(tmp_path / "suite", pin)
    plan, paths = sharded(run_cli, repo, 2, f"{PYTEST} {TEST_FILE}", flakes=False)
    return repo, plan, paths


def edit(path: Path, change: dict[str, Any]) -> None:
    document = read(path)
    document.update(change)
    path.write_text(json.dumps(document, indent=2) + "\n")


def refused(run_cli: RunCli, plan: Path, paths: list[Path]) -> str:
    out = plan.parent / "combined.json"
    result = combine(run_cli, plan, paths, out)
    assert result.code == 2, result.err
    assert not out.exists()
    return result.err


def test_combine_refuses_a_missing_shard(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    assert "shard(s) 1 of 2 missing" in refused(run_cli, plan, paths[:1])


def test_combine_refuses_a_duplicated_shard(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    assert "shard index 0 appears 2 times" in refused(run_cli, plan, [paths[0], *paths])


def test_combine_refuses_a_shard_from_another_commit_or_digest(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    edit(paths[1], {"head_revision": "0" * 40})
    assert "$.head_revision" in refused(run_cli, plan, paths)
    edit(paths[1], {"head_revision": read(paths[0])["head_revision"], "fixture_digest": "1" * 64})
    assert "$.fixture_digest" in refused(run_cli, plan, paths)


def test_a_shard_of_a_moved_tree_is_refused_before_running(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    repo, plan, _ = two_shards
    (repo / "README").write_text("moved\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "another commit")
    result, out = run_shard(run_cli, repo, plan, 0, f"{PYTEST} {TEST_FILE}", flakes=False)
    assert result.code == 2
    assert "$.head_revision" in result.err
    assert not out.exists()


def test_combine_refuses_a_shard_of_another_plan(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    other = plan.with_name("other.json")
    other.write_bytes(plan.read_bytes())
    edit(other, {"ledger_id": "f" * 32})
    assert "a shard of another plan" in refused(run_cli, other, paths)


def test_combine_refuses_an_edited_ledger(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    document = read(paths[0])
    document["results"] = document["results"][:-1]  # a failing result taken out, say
    paths[0].write_text(json.dumps(document))
    assert "do not match $.ids_run" in refused(run_cli, plan, paths)
    document["kind"] = "property"
    paths[0].write_text(json.dumps(document))
    assert "$.kind" in refused(run_cli, plan, paths)


def test_combine_refuses_a_shard_that_ran_fewer_ids_than_planned(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    document = read(paths[1])
    edit(paths[1], {"ids_run": document["ids_run"][1:], "results": document["results"][1:]})
    assert "planned id(s) fewer than its slice" in refused(run_cli, plan, paths)


def test_combine_refuses_oracle_moved_in_one_shard(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    moved = "tests/test_suite.py"
    edit(paths[0], {"oracle_moved": True, "oracle_changes": [moved],
                    "oracle_change_reasons": {moved: "test-side module"}})  # fmt: skip
    assert "$.oracle_moved is true" in refused(run_cli, plan, paths)


def test_combine_refuses_a_replayed_ledger(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    edit(paths[1], {"recorded_at": read(paths[0])["recorded_at"]})
    assert "share recorded_at" in refused(run_cli, plan, paths)


def test_dual_pin_flake_observe_and_merge_refuse_a_shard_ledger(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    repo, _, paths = two_shards
    out = repo.parent / "ledgers/x.json"
    dual = run_cli("dual-pin", "--left", paths[0], "--right", paths[1], "--out", out)
    merged = run_cli("merge", "--fixture-ledger", repo.parent / "f.json",
                     "--property-ledger", paths[0], "--out", out)  # fmt: skip
    write_json(repo / "flakes.json", {"pin_id": "flakepin-suite", "flakes": []})
    flake = run_cli("flake-observe", "--fixture-ledger", repo.parent / "f.json",
                    "--property-ledger", paths[0], "--flake-pin", repo / "flakes.json",
                    "--test-id", "t", "--out", repo.parent / "ledgers/flake.json")  # fmt: skip
    assert dual.code == ExitCode.REFUSED
    assert flake.code == ExitCode.FLAKE_REFUSED
    for result in (dual, flake):
        assert "expected 'property', found 'property_shard'" in result.err
    # merge turns an invalid input into a reject decision (SPEC 4.5), naming the kind.
    assert merged.code == 1
    assert "expected 'property', found 'property_shard'" in merged.out
    assert read(out)["posture"] == "reject"
