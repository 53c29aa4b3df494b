"""`flake-observe`: the flake ledger is written only when all six preconditions hold (SPEC 4.4).

Every ledger here comes from the real commands run over a copy of examples/orders in a real
git repository; the example's `test_boundary_timeout` is the pre-listed flaky test, made to
fail (or pass) through its `ORDERS_SUMMARY_BUDGET_MS` budget.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from helpers import RunCli, git, write_json
from helpers.example_run import (
    ALWAYS_PASSES,
    FLAKY_ID,
    MISSED_PROPERTY,
    OFF_BY_ONE,
    Run,
    flake_entry,
    move_an_oracle,
    observe_argv,
    utc_today,
)

# Real pytest runs of the example: `clean_run` (conftest.py), shared with test_merge.py on one
# worker through the group, and a few runs of this module's own.
pytestmark = [pytest.mark.xdist_group("clean-run"), pytest.mark.pytest_child]


def assert_refused(run_cli: RunCli, argv: list[str | Path], out: Path, fragment: str) -> str:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("stale flake ledger\n")
    result = run_cli(*argv)
    assert result.code == 3, result.err
    assert fragment in result.first_error_line
    assert not out.exists()
    assert f"removed the stale file at {out}" in result.err
    return result.first_error_line


# --- the ledger that is written ------------------------------------------------------------


def test_writes_the_narrow_observation(clean_run: Run) -> None:
    written = json.loads((clean_run / "fl.json").read_text())
    entry = json.loads(clean_run.flake_pin.read_text())["flakes"][0]
    prop_bytes = (clean_run / "p_a.json").read_bytes()
    assert list(written) == [
        "kind", "ledger_id", "test_id", "flake_pin_id", "accepted_revision", "review_by",
        "observed", "fixture_digest", "property_ledger_sha256", "recorded_at",
    ]  # fmt: skip
    assert written["kind"] == "flake"
    assert (written["test_id"], written["flake_pin_id"]) == (FLAKY_ID, "flakepin-orders")
    assert written["accepted_revision"] == entry["accepted_revision"]
    assert written["review_by"] == entry["review_by"]
    assert written["observed"] == "fail"
    assert written["fixture_digest"] == json.loads((clean_run / "f_a.json").read_text())["digest"]
    assert written["property_ledger_sha256"] == hashlib.sha256(prop_bytes).hexdigest()
    stamps = {
        json.loads((clean_run / name).read_text())["recorded_at"]
        for name in ("f_a.json", "p_a.json")
    }
    assert written["recorded_at"] not in stamps


def test_no_property_id_is_ever_written(work: Run, run_cli: RunCli) -> None:
    """Even when properties fail in the same run, the flake ledger names only its own id."""
    break_a_property(work)
    result = run_cli(*observe_argv(work, "fl_fail.json", "f_a.json", "p_fail.json"))
    assert result.code == 0, result.err
    text = (work / "fl_fail.json").read_text()
    property_ids = json.loads((work / "p_fail.json").read_text())["status_by_id"]
    assert all(prop_id not in text for prop_id in property_ids)
    assert "flake observed" in result.out


def test_review_by_today_still_holds(work: Run, run_cli: RunCli) -> None:
    """An entry is valid through the whole UTC day of its review_by."""
    set_review_by(work.flake_pin, utc_today())
    result = run_cli(*observe_argv(work, "fl_today.json"))
    assert result.code == 0, result.err
    assert json.loads((work / "fl_today.json").read_text())["review_by"] == utc_today().isoformat()


def test_with_base_writes_when_every_precondition_holds(clean_run: Run, run_cli: RunCli) -> None:
    out = clean_run.ledgers.parent / "extra" / "fl_base.json"
    argv = observe_argv(clean_run, "x", root=clean_run.repo, base=clean_run.base)
    argv[argv.index("--out") + 1] = out
    result = run_cli(*argv)
    assert result.code == 0, result.err
    assert json.loads(out.read_text())["test_id"] == FLAKY_ID


# --- each precondition failing alone -------------------------------------------------------


def break_a_property(run: Run) -> None:
    """The patch breaks a property; a second flake pin also lists that property's test."""
    run.patch_product(OFF_BY_ONE)
    pin = json.loads(run.flake_pin.read_text())
    first = pin["flakes"][0]
    test = "properties/test_orders.py::test_total_matches_lines"
    review_by = datetime.date.fromisoformat(first["review_by"])
    pin["flakes"].append(flake_entry(MISSED_PROPERTY, test, first["accepted_revision"], review_by))
    write_json(run.other_pin("flakes_with_property.json"), pin)
    flake_pin = run.other_pin("flakes_with_property.json")
    run.properties("p_fail.json", "f_a.json", flake_pin=flake_pin, expect=1)


def set_review_by(pin_path: Path, day: datetime.date) -> None:
    pin = json.loads(pin_path.read_text())
    pin["flakes"][0]["review_by"] = day.isoformat()
    write_json(pin_path, pin)


def test_1_digests_disagree(clean_run: Run, run_cli: RunCli) -> None:
    argv = observe_argv(clean_run, "refused.json", fixture="f_b.json")
    line = assert_refused(run_cli, argv, clean_run / "refused.json", "precondition 1")
    assert str(clean_run / "p_a.json") in line


def test_1_malformed_ledger(work: Run, run_cli: RunCli) -> None:
    document = json.loads((work / "f_a.json").read_text())
    del document["digest"]
    write_json(work / "f_a.json", document)
    line = assert_refused(run_cli, observe_argv(work, "o.json"), work / "o.json", "precondition 1")
    assert str(work / "f_a.json") in line


def test_2_oracles_moved(work: Run, run_cli: RunCli) -> None:
    move_an_oracle(work)
    argv = observe_argv(work, "o.json", "f_a.json", "p_moved.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 2")
    assert "oracle_moved is true" in line


def test_3_id_not_listed(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["test_id"] = "orders.other.timeout"
    write_json(work.other_pin("other_flakes.json"), pin)
    argv = observe_argv(work, "o.json", flake_pin=work.other_pin("other_flakes.json"))
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 3")
    assert f"{FLAKY_ID!r} is not listed" in line


def test_3_review_by_passed(work: Run, run_cli: RunCli) -> None:
    yesterday = utc_today() - datetime.timedelta(days=1)
    set_review_by(work.flake_pin, yesterday)
    line = assert_refused(run_cli, observe_argv(work, "o.json"), work / "o.json", "precondition 3")
    assert f"review_by {yesterday.isoformat()}" in line
    assert "never extends" in line


def test_3_accepted_revision_after_the_base(work: Run, run_cli: RunCli) -> None:
    """The label names a commit the base does not contain (here: one on a side branch)."""
    git(work.repo, "switch", "-q", "-c", "side")
    git(work.repo, "commit", "-q", "--allow-empty", "-m", "a commit the base never saw")
    side = git(work.repo, "rev-parse", "HEAD")
    git(work.repo, "switch", "-q", "main")
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["accepted_revision"] = side
    write_json(work.flake_pin, pin)
    git(work.repo, "commit", "-q", "-am", "flake pin: accepted on the side branch")
    base = git(work.repo, "rev-parse", "HEAD")
    argv = observe_argv(work, "o.json", root=work.repo, base=base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 3")
    assert f"accepted_revision {side!r} is neither the base" in line


def test_4_id_is_a_property_id(work: Run, run_cli: RunCli) -> None:
    break_a_property(work)
    argv = observe_argv(
        work, "o.json", "f_a.json", "p_fail.json",
        flake_pin=work.other_pin("flakes_with_property.json"), test_id=MISSED_PROPERTY,
    )  # fmt: skip
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 4")
    assert f"{MISSED_PROPERTY!r} is a property id" in line


def test_5_the_flaky_test_passed(work: Run, run_cli: RunCli) -> None:
    work.properties("p_passed.json", "f_a.json", budget_ms=ALWAYS_PASSES)
    argv = observe_argv(work, "o.json", prop="p_passed.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 5")
    assert "as pass" in line


def test_5_nothing_observed(work: Run, run_cli: RunCli) -> None:
    """The test ran in no result the property ledger holds: nothing observed, nothing written."""
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["test"] = "properties/test_orders.py::test_that_does_not_exist"
    write_json(work.other_pin("unmatched_flakes.json"), pin)
    work.properties(
        "p_unmatched.json", "f_a.json", flake_pin=work.other_pin("unmatched_flakes.json")
    )
    argv = observe_argv(work, "o.json", prop="p_unmatched.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 5")
    assert "nothing observed" in line


def test_6_flake_pin_changed_against_base(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["note"] = "edited in the change under test"
    write_json(work.flake_pin, pin)
    argv = observe_argv(work, "o.json", root=work.repo, base=work.base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 6")
    assert "pin mutation" in line
    assert str(work.flake_pin) in line


def test_6_flake_pin_outside_the_work_tree(work: Run, run_cli: RunCli) -> None:
    outside = work.other_pin("flakes_outside.json")
    shutil.copyfile(work.flake_pin, outside)
    argv = observe_argv(work, "o.json", flake_pin=outside, root=work.repo, base=work.base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 6")
    assert "outside the git work tree" in line


def test_base_that_does_not_resolve(clean_run: Run, run_cli: RunCli, tmp_path: Path) -> None:
    argv = observe_argv(clean_run, "x", root=clean_run.repo, base="no-such-branch")
    argv[argv.index("--out") + 1] = tmp_path / "o.json"
    assert_refused(run_cli, argv, tmp_path / "o.json", "'no-such-branch'")


# --- where the ledger may not go ------------------------------------------------------------


def test_out_inside_the_pin_folder_is_refused_and_the_pin_kept(
    clean_run: Run, run_cli: RunCli
) -> None:
    before = clean_run.flake_pin.read_bytes()
    argv = observe_argv(clean_run, "x")
    argv[argv.index("--out") + 1] = clean_run.flake_pin
    result = run_cli(*argv)
    assert result.code == 3
    assert "folder of pin" in result.first_error_line
    assert clean_run.flake_pin.read_bytes() == before


def test_out_over_an_input_is_refused_and_the_input_kept(clean_run: Run, run_cli: RunCli) -> None:
    before = (clean_run / "p_a.json").read_bytes()
    result = run_cli(*observe_argv(clean_run, "p_a.json"))
    assert result.code == 3
    assert "also an input ledger" in result.first_error_line
    assert (clean_run / "p_a.json").read_bytes() == before


def test_missing_required_flag_is_usage(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("flake-observe", "--out", tmp_path / "o.json")
    assert result.code == 64


def test_3_a_mistyped_id_lists_the_pin_ids_closest_first(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    entry = pin["flakes"][0]
    others = [{**entry, "test_id": test_id} for test_id in ("payments.retry", "orders.slow")]
    pin["flakes"] = [*others, entry]
    write_json(work.other_pin("three_flakes.json"), pin)
    typo = "orders.boundary.timout"
    argv = observe_argv(work, "o.json", flake_pin=work.other_pin("three_flakes.json"), test_id=typo)
    result = run_cli(*argv)
    assert result.code == 3
    assert f"{typo!r} is not listed" in result.first_error_line
    listed = f"lists, closest first: {FLAKY_ID}, orders.slow, payments.retry"
    assert listed in result.err.splitlines()[1]
