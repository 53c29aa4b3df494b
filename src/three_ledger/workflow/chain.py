"""The workflow's chain of steps and the rules between them, in one function: `run_chain`.

digest and properties on each fixture pin, dual-pin (or `--not-run` with one pin),
flake-observe for each flake entry that did not pass, flake-evidence and vet where asked,
then merge. `gate`
runs each step in-process; the demo runs each as a child process, as a CI job would. Which
step runs, on which ledgers, and what a missing ledger means is decided here alone, so the
two cannot drift. Each ledger is loaded once, right after its step, and kept in its `Step`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol, assert_never

from three_ledger import run_order
from three_ledger.errors import Refused
from three_ledger.flake.candidates import candidate_reasons
from three_ledger.frozen import frozen
from three_ledger.gate_plan import FixtureSide
from three_ledger.ledgers import FixtureLedger, PropertyLedger, read_ledger
from three_ledger.merge_table import FlakePinView
from three_ledger.other_ledgers import (
    DualPinLedger,
    FlakeEvidenceLedger,
    FlakeLedger,
    MergeDecision,
    VetLedger,
)
from three_ledger.report.gate_summary import Step, StepKind, StepRecord, describe
from three_ledger.vocabulary import Outcome

# --- the steps, as calls a runner makes -----------------------------------------------------


@frozen
class Digest:
    KIND: ClassVar[StepKind] = StepKind.DIGEST
    side: FixtureSide
    out: Path


@frozen
class Properties:
    KIND: ClassVar[StepKind] = StepKind.PROPERTIES
    side: FixtureSide
    expect_digest: str
    properties_pin: Path
    flake_pin: Path | None
    out: Path
    # None: the command's default, beside OUT.
    log: Path | None


@frozen
class DualPin:
    KIND: ClassVar[StepKind] = StepKind.DUAL_PIN
    # Two property ledgers to compare; one alone is `--not-run`: one fixture pin was scored.
    scored: tuple[Path, ...]
    out: Path


@frozen
class FlakeObserve:
    KIND: ClassVar[StepKind] = StepKind.FLAKE_OBSERVE
    test_id: str
    fixture: Path
    prop: Path
    flake_pin: Path
    out: Path


@frozen
class FlakeEvidenceAsk:
    """`gate --flake-evidence`: where its ledger and log go, and its reruns and budget."""

    out: Path
    log: Path
    reruns: int
    budget_s: float


@frozen
class FlakeEvidence:
    KIND: ClassVar[StepKind] = StepKind.FLAKE_EVIDENCE
    side: FixtureSide
    fixture: Path
    prop: Path
    properties_pin: Path
    flake_pin: Path | None
    out: Path
    log: Path
    reruns: int
    budget_s: float


@frozen
class Vet:
    KIND: ClassVar[StepKind] = StepKind.VET
    side: FixtureSide
    properties_pin: Path
    out: Path
    log: Path


@frozen
class CheckPins:
    KIND: ClassVar[StepKind] = StepKind.CHECK_PINS
    pins_dir: Path
    # check-pins writes no ledger.
    out: None = None


@frozen
class Merge:
    KIND: ClassVar[StepKind] = StepKind.MERGE
    fixture: Path
    prop: Path
    dual_pin: Path
    flakes: tuple[Path, ...]
    # The flake pin as loaded once for the run (its path, and its record or why none).
    flake_pin: FlakePinView | None
    pin: Path
    pins_dir: Path
    properties_pin: Path
    out: Path
    # Why a ledger of the chain is absent: the step that should have written it, and its
    # first line. merge says so instead of "No such file".
    why_missing: Mapping[Path, str] = field(default_factory=dict)
    # The flake evidence ledger, where flake-evidence ran and wrote one.
    flake_evidence: Path | None = None


Call = Digest | Properties | DualPin | FlakeObserve | FlakeEvidence | Vet | CheckPins | Merge


@frozen
class Ran:
    """How a step that ran ended: its exit code, its log, a refusal's message, details and
    hints (what to do about it)."""

    exit_code: int
    log: Path | None
    message: str = ""
    details: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()


class StepRunner(Protocol):
    """How each step runs: in-process (`gate`) or as a child process (the demo)."""

    def run(self, name: str, call: Call) -> Ran: ...

    def finished(self, step: Step) -> None: ...


class Layout(Protocol):
    """Where the chain's ledgers go: `gate --out-dir`, or a demo scenario's ledgers folder."""

    def fixture(self, side: FixtureSide) -> Path: ...

    def prop(self, side: FixtureSide) -> Path: ...

    def prop_log(self, side: FixtureSide) -> Path | None: ...

    @property
    def dual_pin(self) -> Path: ...

    def flake(self, number: int) -> Path: ...

    @property
    def decision(self) -> Path: ...


@frozen
class Pins:
    """The pins one run scores with."""

    # The fixture pins to score on: what the properties pin names (gate), or pin A alone.
    sides: tuple[FixtureSide, ...]
    properties_pin: Path
    # Loaded once for the run: the fired flakes, merge and the reports read this record.
    flake_pin: FlakePinView | None
    pins_dir: Path


@dataclass
class Chain:
    """The steps run so far, each with its ledger's record, in order."""

    runner: StepRunner
    steps: list[Step] = field(default_factory=list)
    # Each ledger a step should have written and did not, with why.
    why_missing: dict[Path, str] = field(default_factory=dict)

    def step(self, name: str, call: Call) -> Step:
        ran = self.runner.run(name, call)
        ledger, record, problem = _load(call)
        out = getattr(call, "out", None)
        if ledger is None and out is not None and ran.exit_code != 0:
            said = ran.message or "wrote no ledger"
            self.why_missing[out] = f"{name} exited {ran.exit_code}: {said}"
        unreadable = f"ledger unreadable: {problem}" if problem is not None else ""
        note = ran.message or unreadable or describe(call.KIND, record)
        return self._add(
            Step(
                call.KIND,
                name,
                ran.exit_code,
                ledger,
                record,
                note,
                ran.log,
                ran.details,
                ran.hints,
            )
        )

    def skip(self, kind: StepKind, name: str, why: str) -> None:
        self._add(Step(kind, name, None, None, None, why, None))

    def _add(self, step: Step) -> Step:
        self.steps.append(step)
        self.runner.finished(step)
        return step


def run_chain(
    chain: Chain,
    pins: Pins,
    layout: Layout,
    vet: Sequence[Vet] = (),
    flake_evidence: FlakeEvidenceAsk | None = None,
) -> None:
    """Run the workflow: a step that refuses leaves its ledger absent and the chain goes on to
    merge, so a later step never heals an earlier failure. VET: pins to vet before merge.
    FLAKE_EVIDENCE: rerun the first side's flake candidates; merge reads the evidence ledger
    for the flake notes it contradicts."""
    scored = [_score(chain, pins, layout, side) for side in pins.sides]
    _dual_pin(chain, layout, scored)
    flakes = _observe_flakes(chain, pins, layout, scored[0])
    evidence = None
    if flake_evidence is not None:
        _gather_flake_evidence(chain, pins, layout, scored[0], flake_evidence)
        # Read by merge where it was written: a flake note its reruns contradict is no flake.
        # Where flake-evidence refused, the posture stands as without it.
        evidence = flake_evidence.out if flake_evidence.out.is_file() else None
    for call in vet:
        chain.step(side_step_name(call), call)
    first = pins.sides[0]
    merge = Merge(
        fixture=layout.fixture(first),
        prop=layout.prop(first),
        # Always given: the chain always means to write a dual-pin ledger (two pins compared,
        # or `--not-run` with one), so one that is missing is a reject (merge row 6), never
        # one pin fewer.
        dual_pin=layout.dual_pin,
        flakes=flakes,
        flake_pin=pins.flake_pin,
        pin=first.path,
        pins_dir=pins.pins_dir,
        properties_pin=pins.properties_pin,
        out=layout.decision,
        why_missing=dict(chain.why_missing),
        flake_evidence=evidence,
    )
    chain.step("merge", merge)


def side_step_name(call: Digest | Properties | Vet) -> str:
    return _on_side(call.KIND, call.side)


def _on_side(kind: StepKind, side: FixtureSide) -> str:
    return f"{kind} {side.label} ({side.pin_id})"


@frozen
class _Scored:
    """One side's property ledger: where it goes, and its step (None: it did not run)."""

    path: Path
    step: Step | None

    @property
    def written(self) -> bool:
        return self.step is not None and self.step.ledger is not None


def _score(chain: Chain, pins: Pins, layout: Layout, side: FixtureSide) -> _Scored:
    fixture = chain.step(_on_side(StepKind.DIGEST, side), Digest(side, layout.fixture(side)))
    prop = layout.prop(side)
    if not isinstance(fixture.record, FixtureLedger):
        # No fixture ledger, no digest to insist on: the score is absent by rule.
        why = f"no fixture ledger for pin {side.pin_id}: nothing to score on"
        chain.skip(StepKind.PROPERTIES, _on_side(StepKind.PROPERTIES, side), why)
        return _Scored(prop, None)
    call = Properties(
        side=side,
        expect_digest=fixture.record.digest,
        properties_pin=pins.properties_pin,
        flake_pin=pins.flake_pin.path if pins.flake_pin is not None else None,
        out=prop,
        log=layout.prop_log(side),
    )
    return _Scored(prop, chain.step(side_step_name(call), call))


def _dual_pin(chain: Chain, layout: Layout, scored: Sequence[_Scored]) -> None:
    missing = [side for side in scored if not side.written]
    if missing:
        why = f"no property ledger {', '.join(side.path.name for side in missing)}"
        chain.skip(StepKind.DUAL_PIN, "dual-pin", why)
        # Merge names what was refused, not a dual-pin file that was never to be written.
        refused = chain.why_missing.get(missing[0].path)
        chain.why_missing[layout.dual_pin] = f"{why}: {refused}" if refused else why
        return
    name = "dual-pin --not-run" if len(scored) == 1 else "dual-pin"
    chain.step(name, DualPin(tuple(side.path for side in scored), layout.dual_pin))


def _observe_flakes(chain: Chain, pins: Pins, layout: Layout, first: _Scored) -> tuple[Path, ...]:
    """flake-observe each flake entry this run recorded as not passing; their ledgers."""
    view = pins.flake_pin
    prop = first.step.record if first.step is not None else None
    if view is None or view.pin is None or not isinstance(prop, PropertyLedger):
        return ()  # merge rejects a flake pin it cannot read
    side = pins.sides[0]
    fired = [
        entry.test_id
        for entry in view.pin.flakes
        if prop.flake_results.get(entry.test_id, Outcome.PASS) != Outcome.PASS
    ]
    written = []
    for number, test_id in enumerate(fired, start=1):
        call = FlakeObserve(
            test_id, layout.fixture(side), first.path, view.path, layout.flake(number)
        )
        step = chain.step(f"flake-observe {test_id}", call)
        if step.ledger is not None:
            written.append(step.ledger)
    return tuple(written)


def _gather_flake_evidence(
    chain: Chain, pins: Pins, layout: Layout, first: _Scored, ask: FlakeEvidenceAsk
) -> None:
    """flake-evidence on the first side's ledgers when its candidate rule finds any; else
    the step is not run, and says why."""
    side = pins.sides[0]
    name = "flake-evidence"
    prop = first.step.record if first.step is not None else None
    if not isinstance(prop, PropertyLedger):
        chain.skip(StepKind.FLAKE_EVIDENCE, name, f"no property ledger {first.path.name}")
        return
    if prop.run_order is None:
        why = "the property ledger records no run_order (a JUnit run): nothing to replay"
        chain.skip(StepKind.FLAKE_EVIDENCE, name, why)
        return
    try:
        orders = run_order.workers(first.path, prop.run_order)
    except Refused as exc:
        chain.skip(StepKind.FLAKE_EVIDENCE, name, exc.message)
        return
    view = pins.flake_pin
    flaky = view.pin.selectors() if view is not None and view.pin is not None else {}
    if not candidate_reasons(prop, orders, flaky):
        why = (
            "no candidates: no flake entry failed, no property failed, no unpinned failure; "
            "no flake evidence ledger written"
        )
        chain.skip(StepKind.FLAKE_EVIDENCE, name, why)
        return
    call = FlakeEvidence(
        side=side,
        fixture=layout.fixture(side),
        prop=first.path,
        properties_pin=pins.properties_pin,
        flake_pin=view.path if view is not None else None,
        out=ask.out,
        log=ask.log,
        reruns=ask.reruns,
        budget_s=ask.budget_s,
    )
    chain.step(name, call)


def _load(call: Call) -> tuple[Path | None, StepRecord | None, str | None]:
    """The ledger the step wrote, its record, and why it could not be read (or None)."""
    out = call.out
    if out is None or not out.is_file():
        return None, None, None
    try:
        return out, _record(call, out), None
    except Refused as exc:
        return out, None, exc.message


def _record(call: Call, path: Path) -> StepRecord:
    match call:
        case Digest():
            return read_ledger(path, FixtureLedger).record
        case Properties():
            return read_ledger(path, PropertyLedger).record
        case DualPin():
            return read_ledger(path, DualPinLedger).record
        case FlakeObserve():
            return read_ledger(path, FlakeLedger).record
        case FlakeEvidence():
            return read_ledger(path, FlakeEvidenceLedger).record
        case Vet():
            return read_ledger(path, VetLedger).record
        case Merge():
            return read_ledger(path, MergeDecision).record
        case CheckPins():
            raise AssertionError("check-pins writes no ledger")
        case _:
            assert_never(call)
