"""What `gate` says caused its decision: the summary's headline and each unscored property."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from three_ledger.merge_table import Verdict
from three_ledger.other_ledgers import PropertyVet, VetLedger
from three_ledger.report import gate_summary
from three_ledger.report.gate_summary import GateOutcome, Step, StepKind
from three_ledger.vocabulary import Posture, Status, VetVerdict

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


def vetted(verdicts: dict[str, VetVerdict], unread: tuple[str, ...] = ()) -> VetLedger:
    """A vet ledger's findings and unread files alone: the step line reads nothing else."""
    found = {
        prop_id: PropertyVet(
            Status.PASS, verdict, verdict is not VetVerdict.SURVIVED, (), (), (), (), (), 1, ()
        )
        for prop_id, verdict in verdicts.items()
    }
    return cast(VetLedger, SimpleNamespace(properties=found, unread_pinned_files=unread))


@pytest.mark.parametrize(
    ("verdicts", "said"),
    [
        ({"a": VetVerdict.STRONG, "b": VetVerdict.STRONG},
         "each of 2 properties can fail on its fixtures"),
        # vet's own last line counts the weak apart: the step line must not hide them.
        ({"a": VetVerdict.STRONG, "b": VetVerdict.WEAK},
         ("each of 2 properties can fail on its fixtures "
          "(1 weak, killed only by malformed input or a crash: b)")),
        ({"a": VetVerdict.SURVIVED, "b": VetVerdict.WEAK},
         "cannot fail on its fixtures: a (1 weak, killed only by malformed input or a crash: b)"),
    ],
)  # fmt: skip
def test_the_vet_step_line_says_what_vet_found(verdicts: dict[str, VetVerdict], said: str) -> None:
    assert gate_summary._describe_vet(vetted(verdicts)) == said


def test_the_vet_step_line_counts_the_pinned_files_no_property_reads() -> None:
    """chardet's trial: `vet` warned of 49 pinned files no property reads; through `gate`,
    the warning was in the ledger alone."""
    line = gate_summary._describe_vet(vetted({"a": VetVerdict.STRONG}, ("a.txt", "b.txt")))
    assert line == (
        "each of 1 properties can fail on its fixtures; 2 pinned file(s) no property reads "
        "(a.txt, b.txt)"
    )
    # mistune's trial: the step line named no file. The first three, and a count.
    many = tuple(f"{letter}.txt" for letter in "abcde")
    line = gate_summary._describe_vet(vetted({"a": VetVerdict.STRONG}, many))
    assert line.endswith("; 5 pinned file(s) no property reads (a.txt, b.txt, c.txt and 2 more)")


def test_a_refusals_details_reach_the_console_up_to_a_bound() -> None:
    """PyYAML's trial: `check-pins: exit 2: check-pins: 1 problem(s) in pins` said which
    problem only in the summary."""
    problems = tuple(f"pins/p{n}.json: $.pin_id: problem {n}" for n in range(12))
    step = Step(
        StepKind.CHECK_PINS, "check-pins", 2, None, None, "check-pins: 12 problem(s) in pins",
        None, details=problems, hints=("a hint",),
    )  # fmt: skip
    lines = gate_summary.step_line(step).splitlines()
    assert lines[0] == "check-pins: exit 2: check-pins: 12 problem(s) in pins"
    assert lines[1:11] == [f"  {problem}" for problem in problems[:10]]
    assert lines[11:] == ["  ... and 2 more (the summary lists them all)", "  a hint"]
