"""The merge table as a pure function: precedence between rows, and each check of a row."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

import pytest

from helpers.records import (
    DIGEST,
    FLAKY,
    OTHER_DIGEST,
    TODAY,
    dual_pin,
    evidence,
    flake_evidence,
    flake_pin,
    flake_reading,
    passing_property,
    prop_reading,
    stamp,
)
from three_ledger.ledgers import FailingTest, UnpinnedFailures
from three_ledger.merge_table import (
    FlakePinView,
    LiveTree,
    PinChanges,
    Reading,
    decide,
)
from three_ledger.other_ledgers import DualPinLedger, FlakeEvidenceLedger, StatusDifference
from three_ledger.vocabulary import FlakeVerdict, OracleModel, Outcome, Posture, RerunMode


def test_all_evidence_in_order_is_review() -> None:
    verdict = decide(evidence())
    assert (verdict.posture, verdict.row) == (Posture.REVIEW, 9)
    assert "1 flake note(s) (orders.slow) attached: a flake note is not a pass" in verdict.reason


@pytest.mark.parametrize(
    ("change", "row", "fragment"),
    [
        ({"fixture": Reading(Path("f.json"), None, None, "f.json: missing")}, 1, "f.json: missing"),
        ({"live": LiveTree(Path("pin"), None, None, "unpinned file")}, 1, "unpinned file"),
        ({"live": LiveTree(Path("pin"), "fixpin-a", OTHER_DIGEST)}, 1, "no longer equals"),
        ({"live": LiveTree(Path("pin"), "fixpin-z", DIGEST)}, 1, "'fixpin-z'"),
        ({"prop": Reading(Path("p.json"), None, None, "p.json: bad")}, 2, "p.json: bad"),
        ({"prop": prop_reading(fixture_digest=OTHER_DIGEST)}, 2, "scored digest"),
        ({"prop": prop_reading(status_by_id={})}, 2, "scores no property"),
        ({"prop": prop_reading(recorded_at=stamp(1))}, 3, f"share recorded_at {stamp(1)}"),
        ({"flakes": flake_reading(recorded_at=stamp(3))}, 3, "d.json and fl.json"),
        ({"pin_changes": PinChanges(Path("pins"), "main", ("pins/flakes.json",))}, 4,
         "against main: pins/flakes.json"),
        ({"pin_changes": PinChanges(Path("pins"), "main", (), "bad base")}, 4, "bad base"),
        ({"flake_pin": FlakePinView(Path("pins/flakes.json"), None, "bad pin")}, 4, "bad pin"),
        ({"flakes": (Reading(Path("fl.json"), None, None, "fl.json: missing"),)}, 4,
         "fl.json: missing"),
        ({"flakes": flake_reading(fixture_digest=OTHER_DIGEST)}, 4, "not about this run"),
        ({"flakes": flake_reading(property_ledger_sha256="ee" * 32)}, 4, "property_ledger_sha256"),
        ({"flakes": flake_reading(test_id="orders.a")}, 4, "is a property id"),
        ({"flakes": flake_reading(observed="error")}, 4, "the property ledger has fail"),
        ({"flakes": flake_reading(flake_pin_id="other")}, 4, "cites flake pin 'other'"),
        ({"flakes": flake_reading(review_by="2027-01-01")}, 4, "does not match the entry"),
        ({"flake_pin": FlakePinView(Path("f"), flake_pin(), None, {FLAKY: "not accepted"})}, 4,
         "not accepted"),
        ({"flake_pin": FlakePinView(Path("f"), flake_pin(TODAY - datetime.timedelta(1)))}, 4,
         "has passed"),
        ({"prop": prop_reading(oracle_moved=True, oracle_changes=("tests/t.py",))}, 5,
         "tests/t.py"),
        ({"dual_pin": Reading(Path("d.json"), None, None, "d.json: bad")}, 6, "d.json: bad"),
        ({"dual_pin": Reading(Path("d.json"), "2" * 64, dual_pin(left_digest="ff" * 32))}, 6,
         "not about this run"),
        ({"prop": prop_reading(status_by_id={"orders.a": "pass", "orders.b": "missing"})}, 7,
         "property miss stands: orders.b is missing"),
        ({"prop": prop_reading(flake_results={}), "flakes": ()}, 8,
         "the command exited 1, but no test of its results failed"),
        ({"dual_pin": None}, 8, "no dual-pin ledger"),
        ({"dual_pin": Reading(Path("d.json"), "2" * 64, DualPinLedger.not_run("2" * 32, stamp(3)))},
         8, "dual-pin not run"),
    ],
)  # fmt: skip
def test_each_check(change: dict[str, Any], row: int, fragment: str) -> None:
    verdict = decide(evidence(**change))
    assert verdict.row == row, verdict.reason
    assert fragment in verdict.reason
    expected = {8: Posture.HUMAN_REVIEW, 9: Posture.REVIEW}.get(row, Posture.REJECT)
    assert verdict.posture is expected


@pytest.mark.parametrize(
    "explained",
    [
        {"command_exit": 0},
        {"unpinned_failures": UnpinnedFailures(1, ("tests/t.py::test_other",))},
    ],
)
def test_a_failing_exit_needs_a_failure_in_the_results_to_account_for_it(
    explained: dict[str, Any],
) -> None:
    """A run that exited 1 with every result passing is something the results do not show
    (a JUnit report that leaves a failure out): row 8. A failure outside every property, or
    an exit of 0, accounts for it."""
    verdict = decide(evidence(prop=prop_reading(flake_results={}, **explained), flakes=()))
    assert (verdict.posture, verdict.row) == (Posture.REVIEW, 9), verdict.reason


def test_review_by_today_still_backs_a_flake_ledger() -> None:
    view = FlakePinView(Path("f"), flake_pin(TODAY))
    assert (
        decide(evidence(flake_pin=view, flakes=flake_reading(review_by=TODAY.isoformat()))).row == 9
    )


def test_drift_names_each_split_property() -> None:
    split = {"orders.b": StatusDifference("pass", "fail")}
    drift = Reading(Path("d.json"), "2" * 64, dual_pin(drift=True, differences=split))
    verdict = decide(evidence(dual_pin=drift))
    assert (verdict.row, verdict.posture) == (6, Posture.REJECT)
    assert verdict.reason == "file fixture drift: orders.b is pass on fixpin-a, fail on fixpin-b"


def test_a_property_miss_names_the_tests_behind_it() -> None:
    """The posture line and the summary headline carry the reason: it says what to fix. A
    ledger names the first three tests behind a miss and counts them all."""
    tests = tuple(
        FailingTest(f"properties/test_orders.py::test_b[case{n}]", Outcome.FAIL) for n in range(3)
    )
    prop = prop_reading(
        status_by_id={"orders.a": "fail", "orders.b": "error"},
        failing_tests={"orders.a": tests[:1], "orders.b": tests},
        failing_counts={"orders.a": 1, "orders.b": 5},
    )
    assert decide(evidence(prop=prop)).reason == (
        "property miss stands: "
        "orders.a is fail (failing: properties/test_orders.py::test_b[case0]), "
        "orders.b is error (failing: properties/test_orders.py::test_b[case0], "
        "properties/test_orders.py::test_b[case1], properties/test_orders.py::test_b[case2] "
        "and 2 more)"
    )
    # Pygments' trial: a property that is skip named its tests as failing.
    skipped = (FailingTest("tests/examplefiles/hylang/language.hy::", Outcome.SKIP),)
    prop = prop_reading(
        status_by_id={"lexers.examplefiles": "skip"},
        failing_tests={"lexers.examplefiles": skipped},
        failing_counts={"lexers.examplefiles": 1},
    )
    assert decide(evidence(prop=prop)).reason == (
        "property miss stands: lexers.examplefiles is skip "
        "(skipped: tests/examplefiles/hylang/language.hy::)"
    )


def test_a_measured_oracle_says_how_it_was_found_and_how_to_declare_it_product() -> None:
    """pycodestyle's trial: a module split out of the product, outside `product_paths`, was
    `oracles moved (_indent.py)`, and the reader was sent to review an oracle edit."""
    moved = {
        "oracle_moved": True,
        "oracle_changes": ("_indent.py", "tests/t.py"),
        "oracle_change_reasons": {"_indent.py": "imported by the run", "tests/t.py": "test module"},
    }
    closed = decide(evidence(prop=prop_reading(**moved, oracle_model=OracleModel.CLOSED)))
    assert closed.row == 5
    assert "oracles moved (_indent.py: imported by the run, tests/t.py)" in closed.reason
    assert "if it is product, add it there in a pin change first" in closed.reason
    inferred = decide(evidence(prop=prop_reading(**moved, oracle_model=OracleModel.INFERRED)))
    assert "product_paths" not in inferred.reason


def test_without_a_flake_pin_the_ledger_is_still_bound_to_the_run() -> None:
    foreign = flake_reading(property_ledger_sha256="ee" * 32)
    assert decide(evidence(flake_pin=None, flakes=foreign)).row == 4
    assert decide(evidence(flake_pin=None)).row == 9


def test_first_matching_row_wins() -> None:
    """Evidence that matches rows 2, 5, 6 and 7 at once is judged by row 2."""
    prop = prop_reading(
        fixture_digest=OTHER_DIGEST,
        oracle_moved=True,
        status_by_id={"orders.a": "fail"},
    )
    drift = Reading(Path("d.json"), "2" * 64, dual_pin(drift=True))
    assert decide(evidence(prop=prop, dual_pin=drift)).row == 2
    # Each earlier row removed in turn exposes the next one.
    prop = dataclasses.replace(
        prop, record=passing_property(oracle_moved=True, status_by_id={"orders.a": "fail"})
    )
    assert decide(evidence(prop=prop, dual_pin=drift)).row == 5
    prop = dataclasses.replace(prop, record=passing_property(status_by_id={"orders.a": "fail"}))
    assert decide(evidence(prop=prop, dual_pin=drift)).row == 6
    assert decide(evidence(prop=prop)).row == 7


def test_a_moved_pin_beats_whatever_is_wrong_with_the_property_ledger() -> None:
    changes = PinChanges(Path("pins"), "main", ("pins/properties.json",))
    shared_clock = evidence(pin_changes=changes, flakes=flake_reading(recorded_at=stamp(1)))
    unreadable = evidence(pin_changes=changes, prop=Reading(Path("p.json"), None, None, "bad"))
    for each in (shared_clock, unreadable):
        verdict = decide(each)
        assert (verdict.row, verdict.reason) == (
            4,
            "pin mutation: pins added, changed or removed against main: pins/properties.json",
        )


def test_shared_clock_beats_a_flake_ledger_the_pins_do_not_back() -> None:
    verdict = decide(evidence(flakes=flake_reading(recorded_at=stamp(1), test_id="unlisted")))
    assert verdict.row == 3


def test_a_flake_note_whose_test_failed_every_rerun_is_human_review() -> None:
    """The red team's `slowflake`: a regression under a test on the flake pin was `review`
    with a flake note, where the gate's own reruns called it a consistent failure."""
    contradicted = decide(evidence(flake_evidence=flake_evidence(FlakeVerdict.CONSISTENT_FAILURE)))
    assert (contradicted.posture, contradicted.row) == (Posture.HUMAN_REVIEW, 8)
    assert contradicted.reason.startswith(
        "a flake note the reruns contradict: orders.slow failed every rerun, in order and alone"
    )
    # A flake the reruns bear out, and a consistent failure of a test no note is about: row 9.
    for reading in (
        flake_evidence(FlakeVerdict.NON_DETERMINISTIC),
        flake_evidence(FlakeVerdict.CONSISTENT_FAILURE, test="properties/test_other.py::test_x"),
    ):
        verdict = decide(evidence(flake_evidence=reading))
        assert (verdict.posture, verdict.row) == (Posture.REVIEW, 9), verdict.reason


ORIGINAL, ISOLATED, REVERSE = RerunMode.ORIGINAL, RerunMode.ISOLATED, RerunMode.REVERSE


def test_a_flake_note_whose_test_failed_every_rerun_in_order_is_human_review() -> None:
    """The seventh red team's leak: a product that slowed down with every earlier batch failed
    the listed timing test every time after the tests before it, and passed it alone."""
    victim = flake_evidence(
        FlakeVerdict.ORDER_DEPENDENT_VICTIM, failed={ORIGINAL: 3, ISOLATED: 0, REVERSE: 3}
    )
    verdict = decide(evidence(flake_evidence=victim))
    assert (verdict.posture, verdict.row) == (Posture.HUMAN_REVIEW, 8)
    assert verdict.reason.startswith(
        "a flake note the reruns contradict: orders.slow failed every rerun in the run's "
        "order, and passed alone (flake-evidence: order_dependent_victim), which no "
        "flakiness explains"
    )
    brittle = flake_evidence(
        FlakeVerdict.ORDER_DEPENDENT_BRITTLE, failed={ORIGINAL: 3, ISOLATED: 3, REVERSE: 0}
    )
    verdict = decide(evidence(flake_evidence=brittle))
    assert (verdict.posture, verdict.row) == (Posture.HUMAN_REVIEW, 8)
    assert "(flake-evidence: order_dependent_brittle)" in verdict.reason


@pytest.mark.parametrize(
    ("verdict", "failed"),
    [
        # Passed every time in order and alone, failed after the tests reversed.
        (FlakeVerdict.ORDER_DEPENDENT_VICTIM, {ORIGINAL: 0, ISOLATED: 0, REVERSE: 3}),
        # Passed every time in order, failed alone.
        (FlakeVerdict.ORDER_DEPENDENT_BRITTLE, {ORIGINAL: 0, ISOLATED: 3}),
    ],
)
def test_an_order_dependent_test_that_passed_in_the_runs_order_keeps_its_flake_note(
    verdict: FlakeVerdict, failed: dict[RerunMode, int]
) -> None:
    decided = decide(evidence(flake_evidence=flake_evidence(verdict, failed=failed)))
    assert (decided.posture, decided.row) == (Posture.REVIEW, 9), decided.reason


def test_flake_evidence_of_another_run_or_unreadable_is_row_2() -> None:
    other = flake_evidence(FlakeVerdict.NON_DETERMINISTIC, property_ledger_sha256="ee" * 32)
    verdict = decide(evidence(flake_evidence=other))
    assert (verdict.posture, verdict.row) == (Posture.REJECT, 2)
    assert "flake evidence ledger fe.json reran the candidates of property ledger eeeeeeeeeeee" in (
        verdict.reason
    )
    broken: Reading[FlakeEvidenceLedger] = Reading(
        Path("fe.json"), None, None, "fe.json: not valid JSON"
    )
    assert decide(evidence(flake_evidence=broken)).row == 2


def test_a_refused_tree_names_its_first_moved_files_and_counts_the_rest() -> None:
    """chardet's trial: 19 moved fixtures made a posture line of 2,500 characters."""
    moved = [f"moved since abc: tests/f{n}.txt" for n in range(19)]
    said = "f.json: not written: digest A exited 2: live digest x differs; 19 file(s) differ"
    live = LiveTree(
        Path("pins/fixtures.json"), None, None, "; ".join(["19 file(s) differ", *moved])
    )
    verdict = decide(evidence(fixture=Reading(Path("f.json"), None, None, said), live=live))
    assert verdict.row == 1
    assert verdict.reason.endswith(
        "; the tree itself is refused, naming: moved since abc: tests/f0.txt; moved since abc: "
        "tests/f1.txt; moved since abc: tests/f2.txt; and 16 more"
    )
