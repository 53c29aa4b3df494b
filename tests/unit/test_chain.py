"""The chain's own rules, with a scripted runner that writes the ledger each step would.

Which steps run on which ledgers, the one rule for a missing dual-pin ledger, the flakes that
fired, and each ledger loaded once into its step. The real commands behind the steps are
tests/commands/test_gate_chain.py (in-process) and tests/e2e/test_demo.py (as children).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from helpers.records import DIGEST, FLAKY, fixture_ledger, flake_ledger, flake_pin, passing_property
from three_ledger.commands.gate import OutDir
from three_ledger.gate_plan import FixtureSide
from three_ledger.ledgers import FixtureLedger, PropertyLedger, Record, write_ledger
from three_ledger.merge_table import FlakePinView
from three_ledger.other_ledgers import DualPinLedger, MergeDecision, MergeInputs
from three_ledger.report.gate_summary import Step, StepKind
from three_ledger.vocabulary import Outcome, Posture
from three_ledger.workflow.chain import (
    Call,
    Chain,
    CheckPins,
    Digest,
    DualPin,
    FlakeObserve,
    Merge,
    Pins,
    Properties,
    Ran,
    run_chain,
)

SIDE_A = FixtureSide("A", "fixpin-a", Path("pins/a.json"))
SIDE_B = FixtureSide("B", "fixpin-b", Path("pins/b.json"))
STAMP = "2026-09-25T12:00:00.000009Z"


@dataclass
class Scripted:
    """Writes the ledger a step would; a step named in `refused` writes none and exits 2, one
    named in `garbled` writes a file no reader accepts."""

    refused: set[str] = field(default_factory=set)
    garbled: set[str] = field(default_factory=set)
    flake_results: dict[str, Outcome] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    finished_steps: list[str] = field(default_factory=list)

    def run(self, name: str, call: Call) -> Ran:
        self.calls.append(call)
        if name in self.refused:
            return Ran(2, None, f"{name} refused")
        if call.out is None:
            return Ran(0, None)
        if name in self.garbled:
            call.out.write_text('{"kind": "fixture"}\n')
        else:
            write_ledger(call.out, self.ledger(call))
        return Ran(0, None)

    def finished(self, step: Step) -> None:
        self.finished_steps.append(step.name)

    def ledger(self, call: Call) -> Record:
        match call:
            case Digest():
                return fixture_ledger(pin_id=call.side.pin_id)
            case Properties():
                flakes = self.flake_results
                scored: PropertyLedger = passing_property(
                    pin_id=call.side.pin_id, flake_results=flakes
                )
                return scored
            case DualPin() if len(call.scored) == 1:
                return DualPinLedger.not_run("4" * 32, STAMP)
            case FlakeObserve():
                return flake_ledger(test_id=call.test_id)
            case Merge():
                inputs = MergeInputs(None, None, None, ())
                return MergeDecision(
                    ledger_id="5" * 32,
                    posture=Posture.REVIEW,
                    row=9,
                    reason="scripted",
                    inputs=inputs,
                    recorded_at=STAMP,
                )
            case _:
                raise AssertionError(f"not scripted: {call}")


def chain_on(
    tmp_path: Path, sides: tuple[FixtureSide, ...], runner: Scripted
) -> tuple[Chain, OutDir]:
    out = OutDir(tmp_path)
    pins = Pins(
        sides=sides,
        properties_pin=Path("pins/properties.json"),
        flake_pin=FlakePinView(Path("pins/flakes.json"), flake_pin()),
        pins_dir=Path("pins"),
    )
    chain = Chain(runner)
    run_chain(chain, pins, out)
    return chain, out


def merge_call(runner: Scripted) -> Merge:
    (merge,) = [call for call in runner.calls if isinstance(call, Merge)]
    return merge


def test_one_pin_records_dual_pin_not_run_and_loads_each_ledger_into_its_step(
    tmp_path: Path,
) -> None:
    runner = Scripted()
    chain, out = chain_on(tmp_path, (SIDE_A,), runner)
    names = [step.name for step in chain.steps]
    assert names == [
        "digest A (fixpin-a)",
        "properties A (fixpin-a)",
        "dual-pin --not-run",
        "merge",
    ]
    assert runner.finished_steps == names
    kinds = [step.kind for step in chain.steps]
    assert kinds == [StepKind.DIGEST, StepKind.PROPERTIES, StepKind.DUAL_PIN, StepKind.MERGE]
    digest, props, dual, merge = chain.steps
    assert isinstance(digest.record, FixtureLedger)
    assert (digest.ledger, digest.note) == (out.fixture(SIDE_A), f"digest {DIGEST[:12]}")
    assert isinstance(props.record, PropertyLedger)
    assert props.note == "2 properties pass"
    (scored,) = [call for call in runner.calls if isinstance(call, Properties)]
    assert scored.expect_digest == DIGEST
    assert isinstance(dual.record, DualPinLedger)
    assert dual.note == "not run: one fixture pin"
    assert merge.note == "review (row 9)"


def test_a_dual_pin_ledger_that_should_exist_and_does_not_still_goes_to_merge(
    tmp_path: Path,
) -> None:
    """Pin B scored nothing: dual-pin cannot run, and merge gets the dual-pin ledger the chain
    meant to write, missing, so merge rejects (row 6) instead of seeing one pin fewer."""
    runner = Scripted(refused={"properties B (fixpin-b)"})
    chain, out = chain_on(tmp_path, (SIDE_A, SIDE_B), runner)
    dual = next(step for step in chain.steps if step.kind is StepKind.DUAL_PIN)
    assert (dual.exit_code, dual.note) == (None, "no property ledger property-b.json")
    assert not any(isinstance(call, DualPin) for call in runner.calls)
    assert merge_call(runner).dual_pin == out.dual_pin
    assert not out.dual_pin.exists()


def test_no_fixture_ledger_means_nothing_is_scored_on_that_pin(tmp_path: Path) -> None:
    runner = Scripted(refused={"digest A (fixpin-a)"})
    chain, out = chain_on(tmp_path, (SIDE_A,), runner)
    digest, props, dual = chain.steps[:3]
    assert (digest.exit_code, digest.ledger, digest.record) == (2, None, None)
    assert digest.note == "digest A (fixpin-a) refused"
    assert (props.exit_code, props.note) == (
        None,
        "no fixture ledger for pin fixpin-a: nothing to score on",
    )
    assert dual.exit_code is None
    assert merge_call(runner).fixture == out.fixture(SIDE_A)


def test_each_flake_entry_that_did_not_pass_is_observed_and_its_ledger_goes_to_merge(
    tmp_path: Path,
) -> None:
    runner = Scripted(flake_results={FLAKY: Outcome.FAIL})
    chain, out = chain_on(tmp_path, (SIDE_A,), runner)
    (observed,) = [step for step in chain.steps if step.kind is StepKind.FLAKE_OBSERVE]
    assert observed.name == f"flake-observe {FLAKY}"
    assert observed.note == f"{FLAKY} observed fail: a flake note, not a pass"
    assert merge_call(runner).flakes == (out.flake(1),)


def test_a_flake_that_passed_is_not_observed(tmp_path: Path) -> None:
    runner = Scripted(flake_results={FLAKY: Outcome.PASS})
    chain, _ = chain_on(tmp_path, (SIDE_A,), runner)
    assert all(step.kind is not StepKind.FLAKE_OBSERVE for step in chain.steps)
    assert merge_call(runner).flakes == ()


def test_a_ledger_that_cannot_be_read_is_noted_and_has_no_record(tmp_path: Path) -> None:
    runner = Scripted(garbled={"digest A (fixpin-a)"})
    chain, out = chain_on(tmp_path, (SIDE_A,), runner)
    digest, props = chain.steps[:2]
    assert (digest.exit_code, digest.ledger, digest.record) == (0, out.fixture(SIDE_A), None)
    assert digest.note.startswith(f"ledger unreadable: {out.fixture(SIDE_A)}: ")
    assert props.exit_code is None


def test_check_pins_writes_no_ledger_and_its_note_says_the_pins_are_valid(tmp_path: Path) -> None:
    chain = Chain(Scripted())
    step = chain.step("check-pins", CheckPins(tmp_path))
    assert (step.kind, step.exit_code, step.ledger, step.record, step.note) == (
        StepKind.CHECK_PINS,
        0,
        None,
        None,
        "pins valid",
    )
