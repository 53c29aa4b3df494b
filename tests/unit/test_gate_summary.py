"""What `gate` says caused its decision: the summary's headline and each unscored property."""

from __future__ import annotations

from pathlib import Path

import pytest

from three_ledger.merge_table import Verdict
from three_ledger.report.gate_summary import GateOutcome, Step, StepKind
from three_ledger.vocabulary import Posture

DIGEST_OK = Step(
    StepKind.DIGEST, "digest A (a)", 0, Path("fixture-a.json"), None, "digest ab", None
)
REFUSED = Step(StepKind.PROPERTIES, "properties A (a)", 2, None, None, "bytecode: x.pyc", None)
NOT_RUN = Step(StepKind.DUAL_PIN, "dual-pin", None, None, None, "no property ledger", None)
MOVED = ("fixtures/a.json", "fixtures/b.json", "fixtures/c.json", "fixtures/d.json")


def outcome(row: int, steps: tuple[Step, ...] = (), moved: tuple[str, ...] = ()) -> GateOutcome:
    posture = Posture.REJECT if row < 8 else Posture.HUMAN_REVIEW
    verdict = Verdict(posture, row, "the reason")
    return GateOutcome(verdict, None, None, None, steps, moved_fixtures=moved)


@pytest.mark.parametrize(
    ("gate", "cause"),
    [
        (outcome(1, (DIGEST_OK,), MOVED[:1]), "fixture moved: fixtures/a.json"),
        (
            outcome(1, (DIGEST_OK,), MOVED),
            "fixture moved: fixtures/a.json, fixtures/b.json, fixtures/c.json and 1 more",
        ),
        # A step that ran and wrote no ledger refused; one that did not run is not the cause.
        (outcome(2, (DIGEST_OK, REFUSED, NOT_RUN)),
         "properties A (a) refused (exit 2): bytecode: x.pyc"),
        (outcome(2, (DIGEST_OK, NOT_RUN)), "the reason"),
        (outcome(7, (DIGEST_OK, REFUSED), MOVED), "the reason"),
        (outcome(8, (REFUSED,), MOVED), "the reason"),
    ],
)  # fmt: skip
def test_the_cause_names_what_decided(gate: GateOutcome, cause: str) -> None:
    assert gate.cause() == cause
    assert gate.why_unscored() == f"not scored: {cause}"


def test_without_a_decision_the_cause_says_so() -> None:
    gate = GateOutcome(None, None, None, None, ())
    assert gate.cause() == "merge wrote no decision"
