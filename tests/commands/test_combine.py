"""`combine` refuses every shard set that does not prove its plan, and the other commands
refuse a shard ledger. One real sharded run (a collection and two shards) per worker feeds
every test a private copy; `tests/e2e/test_shards.py` compares sharded and whole runs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from helpers import RunCli, git, write_json
from helpers.example_run import captured
from helpers.shards import PYTEST, combine, edit, read, refused, run_shard, sharded
from helpers.suites import TEST_FILE, make_suite, prop, properties_pin
from three_ledger.exit_codes import ExitCode

pytestmark = pytest.mark.pytest_child


@pytest.fixture(scope="module")
def sharded_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of two properties, its shard plan and both shard ledgers, in one folder."""
    folder = tmp_path_factory.mktemp("sharded")
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse"),
                          prop("suite.total", f"{TEST_FILE}::test_total")])  # fmt: skip
    repo = make_suite(folder / "suite", pin)
    sharded(captured, repo, 2, f"{PYTEST} {TEST_FILE}", flakes=False)
    return folder


@pytest.fixture
def two_shards(sharded_suite: Path, tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    folder = tmp_path / "sharded"
    shutil.copytree(sharded_suite, folder, symlinks=True)
    ledgers = folder / "ledgers"
    return (
        folder / "suite",
        ledgers / "plan.json",
        [ledgers / f"shard_plan_{i}.json" for i in (0, 1)],
    )


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


def test_combine_refuses_shards_that_resolved_the_base_differently(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    resolution = read(paths[1])["base_resolution"]
    edit(paths[1], {"base_resolution": {**resolution, "given": "refs/remotes/origin/main"}})
    assert "$.base_resolution differs from shard 0" in refused(run_cli, plan, paths)


def test_combine_copies_the_base_resolution_the_shards_agree_on(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    repo, plan, paths = two_shards
    out = plan.parent / "combined.json"
    assert combine(run_cli, plan, paths, out).code in (0, 1)
    head = git(repo, "rev-parse", "HEAD")
    expected = {"given": "HEAD", "used": head, "how": "ancestor"}
    assert [read(path)["base_resolution"] for path in paths] == [expected, expected]
    assert read(out)["base_resolution"] == expected
    keys = list(read(out))
    at = keys.index("base_revision")
    assert keys[at : at + 3] == ["base_revision", "base_resolution", "head_revision"]


def test_combine_records_the_weakest_tripwire_of_its_shards(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    """A shard whose slice is empty runs the basic sentinels: the whole run is no stronger."""
    _, plan, paths = two_shards
    out = plan.parent / "combined.json"
    assert [read(path)["tripwire"] for path in paths] == ["sentinels", "sentinels"]
    edit(paths[1], {"tripwire": "basic"})
    assert combine(run_cli, plan, paths, out).code in (0, 1)
    assert read(out)["tripwire"] == "basic"


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


def test_tests_matched_counts_the_union_of_the_shards_a_test_in_two_once(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    shards = [read(path) for path in paths]
    assert sum(shard["tests_matched"]["suite.parse"] for shard in shards) == 2
    # One result of shard 0 planned and run in shard 1 too: the union still holds it once.
    twice = shards[0]["results"][0]
    slices = read(plan)["slices"]
    edit(plan, {"slices": [slices[0], [*slices[1], twice["id"]]]})
    plan_sha256 = hashlib.sha256(plan.read_bytes()).hexdigest()
    for path, shard in zip(paths, shards, strict=True):
        shard["shard"]["plan_sha256"] = plan_sha256
        edit(path, {"shard": shard["shard"]})
    edit(paths[1], {"ids_run": [*shards[1]["ids_run"], twice["id"]],
                    "results": [*shards[1]["results"], twice]})  # fmt: skip
    out = plan.with_name("combined.json")
    result = run_cli("combine", "--plan", plan, "--out", out, *paths)
    assert result.code == 0, result.err
    assert read(out)["tests_matched"] == {"suite.parse": 2, "suite.total": 1}
    assert "pass     suite.parse (2 tests)" in result.err


def test_combine_keeps_the_weakest_sandbox_layer_and_every_name_a_shard_recorded(
    run_cli: RunCli, two_shards: tuple[Path, Path, list[Path]]
) -> None:
    _, plan, paths = two_shards
    shards = [read(path)["sandbox"] for path in paths]
    layers = shards[0]["layers"]
    assert list(layers) == ["environment", "no_new_privs", "pid", "mount", "file_commands"]
    assert shards[1]["layers"] == layers
    held = dict.fromkeys(layers, "held")
    weaker = "missing: prctl(PR_SET_NO_NEW_PRIVS) did not take effect in the child"
    for path, reads in zip(paths, (["build/a"], ["build/b", "build/a"]), strict=True):
        edit(path, {"sandbox": {**read(path)["sandbox"], "layers": held, "writable_reads": reads}})
    edit(paths[1], {"sandbox": {
        "layers": {**held, "no_new_privs": weaker},
        "env_removed": [*shards[1]["env_removed"], "ONLY_ON_RUNNER_TWO"],
        "env_kept": ["SSL_CERT_FILE"],
        "writable_reads": ["build/b", "build/a"],
    }})  # fmt: skip
    out = plan.with_name("combined.json")
    assert combine(run_cli, plan, paths, out).code in (0, 1)
    combined = read(out)
    assert combined["sandbox"]["layers"] == {**held, "no_new_privs": weaker}
    assert "ONLY_ON_RUNNER_TWO" in combined["sandbox"]["env_removed"]
    assert set(shards[0]["env_removed"]) <= set(combined["sandbox"]["env_removed"])
    assert combined["sandbox"]["env_kept"] == ["SSL_CERT_FILE"]
    assert combined["sandbox"]["writable_reads"] == ["build/a", "build/b"]
    keys = list(combined)
    assert keys[keys.index("network_enforcement") + 1] == "sandbox"
