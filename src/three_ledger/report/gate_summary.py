"""How `gate` reports: one console line per step, the step table, the posture, the step
summary, and GitHub annotations for moved fixtures, oracle changes and pin mutation."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import assert_never

from three_ledger.flake.report import lines as flake_evidence_lines
from three_ledger.frozen import frozen
from three_ledger.gate_plan import Change, Plan
from three_ledger.ledgers import FixtureLedger, PropertyLedger
from three_ledger.merge_table import Evidence, Verdict
from three_ledger.other_ledgers import (
    DualPinLedger,
    FlakeEvidenceLedger,
    FlakeLedger,
    MergeDecision,
    VetLedger,
)
from three_ledger.report.findings import findings, one_line, plain_lines
from three_ledger.report.junit_verdict import PropertyCase, StepCase, property_cases
from three_ledger.report.step_summary import (
    FlakeEvidenceNote,
    StepRow,
    SummaryInput,
    VetRow,
    flake_owners,
    render,
)
from three_ledger.report.workflow_commands import Annotation, Level, annotations_of_kind
from three_ledger.test_changes import TestSideChange
from three_ledger.vet.report import finding
from three_ledger.vocabulary import Posture, VetVerdict

_LEVEL: dict[Posture, Level] = {
    Posture.REJECT: "error",
    Posture.HUMAN_REVIEW: "warning",
    Posture.REVIEW: "notice",
}


class StepKind(enum.StrEnum):
    """What a gate step runs: one of the workflow's commands."""

    DIGEST = "digest"
    PROPERTIES = "properties"
    DUAL_PIN = "dual-pin"
    FLAKE_OBSERVE = "flake-observe"
    FLAKE_EVIDENCE = "flake-evidence"
    VET = "vet"
    CHECK_PINS = "check-pins"
    MERGE = "merge"


# The record a step's ledger holds; check-pins writes none.
StepRecord = (
    FixtureLedger
    | PropertyLedger
    | DualPinLedger
    | FlakeLedger
    | FlakeEvidenceLedger
    | VetLedger
    | MergeDecision
)


# Moved fixtures the headline names before "and N more".
FIRST_MOVED = 3


@frozen
class Step:
    kind: StepKind
    name: str
    # None: the step did not run.
    exit_code: int | None
    # The ledger file the step wrote (None: none was written), and its record as loaded once,
    # right after the step (None: no ledger, or one that could not be read).
    ledger: Path | None
    record: StepRecord | None
    # A refusal's message, why the step did not run, or what its ledger says.
    note: str
    log: Path | None
    # A refusal's detail lines (check-pins lists every problem there).
    details: tuple[str, ...] = ()
    # A refusal's hints: what to do about it (a wrong --root, say), shown on the console.
    hints: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def exit_text(self) -> str:
        return "-" if self.exit_code is None else str(self.exit_code)

    def junit_case(self) -> StepCase:
        # flake-evidence gathers evidence beside the gate: its own failure fails no case.
        passed = self.ok or self.kind is StepKind.FLAKE_EVIDENCE
        return StepCase(self.name, self.exit_code, passed, self.note)


@frozen
class GateOutcome:
    verdict: Verdict | None
    evidence: Evidence | None
    change: Change | None
    plan: Plan | None
    steps: Sequence[Step]
    pin_change: bool = False
    # The test-side paths of a change gate sent to the test owners unscored.
    test_change: tuple[TestSideChange, ...] | None = None
    # Paths under each folder of each fixture pin that differ from the base, relative to ROOT.
    moved_fixtures: tuple[str, ...] = field(default=())

    def property_ledger(self) -> PropertyLedger | None:
        return self.evidence.prop.record if self.evidence is not None else None

    def claims(self) -> dict[str, str]:
        """Claims of the properties pin, when it is the pin the property ledger was scored on."""
        if self.plan is None:
            return {}
        pin = self.plan.properties_pin
        prop = self.property_ledger()
        if prop is not None and prop.property_pin_sha256 != pin.sha256:
            return {}
        return {entry.id: entry.claim for entry in pin.properties}

    def pinned_ids(self) -> list[str] | None:
        """The properties pin's ids; None when gate found no pins to score with."""
        plan = self.plan
        return [entry.id for entry in plan.properties_pin.properties] if plan else None

    def why_unscored(self) -> str:
        """Why no property was scored, for each property's JUnit case; "" when one was."""
        if self.property_ledger() is not None:
            return ""
        return f"not scored: {self.cause()}"

    def cause(self) -> str:
        """What decided, in a few words, for the summary's headline and the unscored
        properties: a moved fixture by its path, a step that refused by its name and first
        line, else the decision's reason."""
        verdict = self.verdict
        if verdict is None:
            return "merge wrote no decision"
        if verdict.posture is Posture.REJECT and verdict.row in (1, 2):
            if verdict.row == 1 and self.moved_fixtures:
                shown = ", ".join(self.moved_fixtures[:FIRST_MOVED])
                more = len(self.moved_fixtures) - FIRST_MOVED
                return f"fixture moved: {shown}" + (f" and {more} more" if more > 0 else "")
            for step in self.steps:
                if step.ledger is None and step.exit_code not in (None, 0):
                    return f"{step.name} refused (exit {step.exit_code}): {step.note}"
        return verdict.reason


def describe(kind: StepKind, record: StepRecord | None) -> str:
    """What a step's ledger says, in a few words."""
    match record:
        case None:
            return "pins valid" if kind is StepKind.CHECK_PINS else "no ledger"
        case FixtureLedger():
            return f"digest {record.digest[:12]}"
        case PropertyLedger():
            return _describe_scores(record)
        case DualPinLedger():
            if not record.run:
                return "not run: one fixture pin"
            return f"drift: {', '.join(record.differences)}" if record.drift else "the pins agree"
        case FlakeLedger():
            return f"{record.test_id} observed {record.observed}: a flake note, not a pass"
        case FlakeEvidenceLedger():
            return _describe_flake_evidence(record)
        case VetLedger():
            return _describe_vet(record)
        case MergeDecision():
            return f"{record.posture} (row {record.row})"
        case _:
            assert_never(record)


def _describe_scores(prop: PropertyLedger) -> str:
    if prop.oracle_moved:
        return f"oracles moved: {', '.join(prop.oracle_changes)}"
    failing = prop.failing_ids()
    listed = ", ".join(f"{key} {prop.status_by_id[key]}" for key in failing)
    return f"not pass: {listed}" if failing else f"{len(prop.status_by_id)} properties pass"


# The pinned files no property reads that vet's step line names before it counts the rest.
_UNREAD_NAMED = 3


def _describe_vet(vetted: VetLedger) -> str:
    not_gates = [prop_id for prop_id, found in vetted.properties.items() if not found.gate]
    # Counted as gates without --strict, as vet's own last line counts them apart.
    weak = [id_ for id_, found in vetted.properties.items() if found.verdict is VetVerdict.WEAK]
    said = f" ({len(weak)} weak, killed only by malformed input or a crash: {', '.join(weak)})"
    # vet's own warning, which chardet's trial found only in the ledger through `gate`.
    unread = vetted.unread_pinned_files
    named = ", ".join(unread[:_UNREAD_NAMED]) + (
        f" and {len(unread) - _UNREAD_NAMED} more" if len(unread) > _UNREAD_NAMED else ""
    )
    tail = f"; {len(unread)} pinned file(s) no property reads ({named})" if unread else ""
    if not_gates:
        head = f"cannot fail on its fixtures: {', '.join(not_gates)}"
    else:
        head = f"each of {len(vetted.properties)} properties can fail on its fixtures"
    return head + (said if weak else "") + tail


def _describe_flake_evidence(found: FlakeEvidenceLedger) -> str:
    verdicts = Counter(str(candidate.verdict) for candidate in found.candidates)
    counted = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
    return (
        f"{len(found.candidates)} candidate(s), {found.runs} reruns: {counted or 'none'} "
        "(evidence for people: only a flake note it contradicts moves the posture)"
    )


# How many of a refusal's details (check-pins' problems, say) the console shows; the
# summary holds them all.
CONSOLE_DETAILS = 10


def step_line(step: Step) -> str:
    """The step's console line, then one indented line per detail of a refusal (the first
    CONSOLE_DETAILS: `check-pins: 1 problem(s) in pins` said nothing of which, PyYAML's
    trial) and per hint."""
    if step.exit_code is None:
        return one_line(f"{step.name}: not run: {step.note}")
    shown = [f"  {detail}" for detail in step.details[:CONSOLE_DETAILS]]
    if (more := len(step.details) - CONSOLE_DETAILS) > 0:
        shown.append(f"  ... and {more} more (the summary lists them all)")
    lines = [f"{step.name}: exit {step.exit_code}: {step.note}", *shown]
    lines += [f"  {hint}" for hint in step.hints]
    return "\n".join(map(one_line, lines))


def render_steps(steps: Sequence[Step]) -> str:
    rows = [("step", "exit", "ledger")]
    rows += [
        (one_line(s.name), s.exit_text, one_line(str(s.ledger)) if s.ledger else "-") for s in steps
    ]
    width = max(len(name) for name, _, _ in rows)
    return "\n".join(f"{name:<{width}}  {code:>4}  {ledger}" for name, code, ledger in rows)


def console_report(outcome: GateOutcome) -> str:
    lines = ["", render_steps(outcome.steps), ""] if outcome.steps else [""]
    found = flake_evidence_note(outcome.steps)
    if found is not None and found.ledger is not None:
        shown = [one_line(line) for line in flake_evidence_lines(found.ledger)]
        lines += [
            *shown,
            "(flake evidence is for people: only a flake note it contradicts moves the posture)",
            "",
        ]
    # As `merge` prints them: each property miss with its first failing tests, then the
    # failures outside every property, which change no posture and must not go unseen.
    prop = outcome.property_ledger()
    if prop is not None:
        lines += [one_line(line) for line in plain_lines(findings(prop))]
    verdict = outcome.verdict
    if verdict is None:
        lines.append("posture: none: merge wrote no decision (see its step above)")
    else:
        lines.append(
            one_line(f"posture: {verdict.posture.value} (row {verdict.row}): {verdict.reason}")
        )
    lines += [one_line(f"warning: {line}") for line in sandbox_warnings(outcome)]
    return "\n".join(lines) + "\n"


def sandbox_warnings(outcome: GateOutcome) -> list[str]:
    """One line per layer of the test child's sandbox that did not hold in the scored run."""
    prop = outcome.property_ledger()
    missing = prop.sandbox.missing() if prop is not None else {}
    return [f"the test run's sandbox layer {name} is {state}" for name, state in missing.items()]


def summary_markdown(outcome: GateOutcome) -> str:
    assert outcome.verdict is not None
    evidence = outcome.evidence
    summary = SummaryInput(
        verdict=outcome.verdict,
        evidence=evidence,
        title="three-ledger gate",
        cause=outcome.cause(),
        claims=outcome.claims(),
        flake_owners=flake_owners(evidence.flake_pin if evidence is not None else None),
        steps=[_step_row(step) for step in outcome.steps],
        pinned_ids=outcome.pinned_ids() or [],
        pin_change=_changed_pins(outcome) if outcome.pin_change else None,
        test_change=(
            [test.describe() for test in outcome.test_change]
            if outcome.test_change is not None
            else None
        ),
        problems=[detail for step in outcome.steps for detail in step.details],
        vet=[row for step in outcome.steps for row in _vet_rows(step.record)],
        flake_evidence=flake_evidence_note(outcome.steps),
    )
    return render(summary)


def flake_evidence_note(steps: Sequence[Step]) -> FlakeEvidenceNote | None:
    """What the flake-evidence step found, or why it found nothing; None when not asked."""
    step = next((s for s in steps if s.kind is StepKind.FLAKE_EVIDENCE), None)
    if step is None:
        return None
    if isinstance(step.record, FlakeEvidenceLedger):
        return FlakeEvidenceNote(step.record, step.note)
    if step.exit_code is None:
        return FlakeEvidenceNote(None, f"not run: {step.note}")
    return FlakeEvidenceNote(
        None, f"flake-evidence exited {step.exit_code}: {step.note} (the posture stands)"
    )


def gate_property_cases(outcome: GateOutcome) -> list[PropertyCase]:
    """One case per pinned property; without a property ledger each is `missing`."""
    return property_cases(
        outcome.property_ledger(), outcome.pinned_ids(), outcome.claims(), outcome.why_unscored()
    )


def _vet_rows(record: StepRecord | None) -> list[VetRow]:
    if not isinstance(record, VetLedger):
        return []
    return [
        VetRow(
            record.pin_id, prop_id, found.verdict, found.gate, finding(found, strict=record.strict)
        )
        for prop_id, found in record.properties.items()
    ]


def _changed_pins(outcome: GateOutcome) -> list[str]:
    return outcome.change.changed_pins() if outcome.change is not None else []


def _step_row(step: Step) -> StepRow:
    ledger = step.ledger.name if step.ledger is not None else ""
    return StepRow(step.name, step.exit_text, ledger, step.ok)


# --- GitHub annotations -----------------------------------------------------------------


def github_annotations(outcome: GateOutcome) -> list[Annotation]:
    verdict = outcome.verdict
    if verdict is None:
        return []
    level = _LEVEL[verdict.posture]
    headline = Annotation(
        level, f"three-ledger {verdict.posture.value} (row {verdict.row})", verdict.reason
    )
    sandbox = [
        Annotation("warning", "three-ledger: sandbox layer missing", line)
        for line in sandbox_warnings(outcome)
    ]
    return [
        headline,
        *_moved_fixtures(outcome),
        *_oracle_changes(outcome),
        *_pin_edits(outcome),
        *sandbox,
    ]


def _level(outcome: GateOutcome, row: int) -> Level:
    verdict = outcome.verdict
    return "error" if verdict is not None and verdict.row == row else "warning"


def _moved_fixtures(outcome: GateOutcome) -> list[Annotation]:
    change = outcome.change
    if change is None or not outcome.moved_fixtures:
        return []
    items = [
        (change.in_top(path), f"{path} differs from the base {change.base[:12]}: a fixture moved")
        for path in outcome.moved_fixtures
    ]
    return annotations_of_kind(_level(outcome, 1), "three-ledger: fixture moved", items)


def _oracle_changes(outcome: GateOutcome) -> list[Annotation]:
    prop = outcome.property_ledger()
    change = outcome.change
    if change is None or prop is None or not prop.oracle_moved:
        return []
    items = [
        (change.in_top(path), f"{path} is an oracle and differs from the base: review it alone")
        for path in prop.oracle_changes
    ]
    return annotations_of_kind(_level(outcome, 5), "three-ledger: oracle changed", items)


def _pin_edits(outcome: GateOutcome) -> list[Annotation]:
    pins = _changed_pins(outcome)
    if not pins:
        return []
    if outcome.pin_change:
        posture = outcome.verdict.posture if outcome.verdict else Posture.REJECT
        refused = posture is Posture.REJECT
        level: Level = "error" if refused else "notice"
        what = "pin change refused by check-pins" if refused else "pin change: pin owners review it"
    else:
        level, what = _level(outcome, 4), "pin mutation: a pin edit mixed into a scored change"
    items = [(path, f"{path}: {what}") for path in pins]
    return annotations_of_kind(level, "three-ledger: pin changed", items)
