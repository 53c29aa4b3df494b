"""`three-ledger gate`: the whole workflow, in order, in one command.

digest (each fixture pin), properties (each fixture pin), dual-pin (or `--not-run` with one
pin), flake-observe (each flake entry that did not pass), merge. Each ledger is its own file
in `--out-dir`; a step that refuses leaves its ledger absent and the chain goes on to merge,
so a later step never heals an earlier failure. Gate exits with merge's code. A change that
touches only the pins folder is not scored: `check-pins` runs, and pin owners review it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from three_ledger import jsonio
from three_ledger.commands import merge as merge_command
from three_ledger.errors import GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.gate_plan import Change, FixtureSide, Plan, Unusable, find_change, find_pins
from three_ledger.ledgers import (
    MergeDecision,
    MergeInputs,
    Posture,
    PropertyLedger,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
    recorded_digest,
    write_ledger,
)
from three_ledger.merge_table import Verdict
from three_ledger.outputs import Output, refuse_unwritable, remove_stale
from three_ledger.pins import load_flake_pin
from three_ledger.report.gate_summary import (
    GateOutcome,
    Step,
    console_report,
    describe,
    github_annotations,
    step_line,
    summary_markdown,
)
from three_ledger.report.junit_verdict import DecisionCase, PropertyCase, dotenv, junit_xml

# Row 0: gate decided before the merge table (unusable inputs, or a change to pins only).
GATE_ROW = 0
PIN_CHANGE_REASON = "pin change: the pin owners review it"
# Variables through which merge would report on its own; gate reports for the whole chain.
_REPORTING_VARIABLES = ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS")


@dataclass(frozen=True)
class GateRequest:
    pins_dir: Path
    command: list[str]
    root: Path
    base: str | None
    out_dir: Path
    timeout_s: float
    summary_md: Path | None = None
    verdict_junit: Path | None = None
    verdict_dotenv: Path | None = None
    junit_xml: Path | None = None


# The ledgers and logs gate writes in `--out-dir`, as glob patterns.
_LEFTOVERS = ("fixture-*.json", "property-*.json", "property-*.log", "flake-*.json", "vet-*.*")


@dataclass(frozen=True)
class OutDir:
    """The file names gate writes in `--out-dir`; nothing else there is touched."""

    folder: Path

    def fixture(self, side: FixtureSide) -> Path:
        return self.folder / f"fixture-{side.slug}.json"

    def prop(self, side: FixtureSide) -> Path:
        return self.folder / f"property-{side.slug}.json"

    def prop_log(self, side: FixtureSide) -> Path:
        return self.folder / f"property-{side.slug}.log"

    @property
    def dual_pin(self) -> Path:
        return self.folder / "dual-pin.json"

    def flake(self, number: int) -> Path:
        return self.folder / f"flake-{number}.json"

    def vet(self, side: FixtureSide) -> Path:
        return self.folder / f"vet-{side.slug}.json"

    def vet_log(self, side: FixtureSide) -> Path:
        return self.folder / f"vet-{side.slug}.log"

    @property
    def decision(self) -> Path:
        return self.folder / "decision.json"

    def step_log(self, number: int, name: str) -> Path:
        # A flake step's name holds a test id from the pin: never a path of its own.
        words = " ".join(name.lower().split()[:2])
        slug = re.sub(r"[^a-z0-9]+", "-", words).strip("-")[:48]
        return self.folder / "logs" / f"{number}-{slug}.log"

    def leftovers(self) -> list[Path]:
        """Files an earlier gate run left here, which must not pass for this run's evidence."""
        found = [path for pattern in _LEFTOVERS for path in self.folder.glob(pattern)]
        found += [path for path in (self.dual_pin, self.decision) if path.exists()]
        return sorted(found + sorted((self.folder / "logs").glob("*.log")))


def gate(request: GateRequest, env: Mapping[str, str] = os.environ) -> int:
    out = OutDir(request.out_dir)
    _refuse_out_dir_in_pins(request)
    _clear(out)
    outputs = [request.out_dir, *_report_paths(request)]
    try:
        _refuse_code_from_root(request.root)
        change = find_change(request.pins_dir, request.root, request.base, outputs, env)
        print(f"gate: base {change.base[:12]} (from {change.base_source})", flush=True)
        if change.pin_change_only:
            return _finish(request, out, _pin_change(request, out, change), env)
        plan = find_pins(request.pins_dir)
    except Unusable as exc:
        verdict = Verdict(Posture.REJECT, GATE_ROW, f"gate inputs unusable: {exc}")
        return _finish(request, out, GateOutcome(verdict, None, None, None, []), env)
    chain = Chain(request, out, change, plan, env)
    chain.run()
    return _finish(request, out, chain.outcome(), env)


def _refuse_code_from_root(root: Path) -> None:
    """The gate must not be running code from the checkout it judges (each step checks too)."""
    from three_ledger.isolation import refuse_code_from_root

    try:
        refuse_code_from_root(root)
    except Refused as exc:
        raise Unusable("; ".join([exc.message, *exc.details])) from None


def _refuse_out_dir_in_pins(request: GateRequest) -> None:
    outputs = [Output("--out-dir", request.out_dir)]
    for flag, path in (
        ("--summary-md", request.summary_md),
        ("--verdict-junit", request.verdict_junit),
        ("--verdict-dotenv", request.verdict_dotenv),
    ):
        if path is not None:
            outputs.append(Output(flag, path))
    refuse_unwritable(outputs, pins_dir=request.pins_dir)
    target, pins = request.out_dir.resolve(), request.pins_dir.resolve()
    if pins.is_relative_to(target):
        raise Refused(f"--out-dir {request.out_dir} holds --pins-dir: pins are never written")


def _clear(out: OutDir) -> None:
    notes = [note for path in out.leftovers() if (note := remove_stale(path)) is not None]
    if notes:
        print(
            f"gate: removed {len(notes)} file(s) an earlier run left in {out.folder}",
            file=sys.stderr,
        )


def _report_paths(request: GateRequest) -> list[Path]:
    reports = (request.summary_md, request.verdict_junit, request.verdict_dotenv)
    return [path for path in reports if path is not None]


# --- the chain ---------------------------------------------------------------------------


@dataclass
class Chain:
    """Runs the steps in order, each in-process, its output kept in a log of its own."""

    request: GateRequest
    out: OutDir
    change: Change
    plan: Plan | None
    env: Mapping[str, str]
    steps: list[Step] = field(default_factory=list)
    judgement: merge_command.Judgement | None = None

    @property
    def pins(self) -> Plan:
        assert self.plan is not None, "a pin change runs check-pins only"
        return self.plan

    def run(self) -> None:
        for side in self.pins.sides:
            self._digest(side)
            self._properties(side)
        self._dual_pin()
        self._flake_observations()
        self.vet_changed_pins()
        self._merge()

    def vet_changed_pins(self) -> None:
        """vet each fixture side whose pin, or the properties pin, differs from the base.

        A pin that moves must show its properties can fail on its fixtures; vet's result goes
        into the report for the pin owners and never changes the posture.
        """
        changed = self.change.changed_pin_names()
        if self.pins.properties_pin.source.name in changed:
            sides = self.pins.sides
        else:
            sides = tuple(side for side in self.pins.sides if side.path.name in changed)
        for side in sides:
            self._vet(side)

    def _vet(self, side: FixtureSide) -> None:
        from three_ledger.commands import vet

        request = vet.Request(
            pin_path=side.path,
            properties_path=self.pins.properties_pin.source,
            command=self.request.command,
            root=self.request.root,
            out=self.out.vet(side),
            log_path=self.out.vet_log(side),
            per_file=None,
            timeout_s=self.request.timeout_s,
            strict=False,
        )
        self.step(f"vet {side.label} ({side.pin_id})", request.out, lambda: vet.vet(request))

    def outcome(self) -> GateOutcome:
        judgement = self.judgement
        verdict = judgement.verdict if judgement is not None else None
        evidence = judgement.evidence if judgement is not None else None
        moved = moved_fixtures(self.request.root, self.change.base, self.pins)
        outcome = GateOutcome(verdict, evidence, self.change, self.plan, self.steps)
        return dataclasses.replace(outcome, moved_fixtures=moved)

    def step(self, name: str, ledger: Path | None, action: Callable[[], int]) -> Step:
        log = self.out.step_log(len(self.steps) + 1, name)
        code, message, details = run_captured(log, action)
        written = ledger if ledger is not None and ledger.is_file() else None
        note = message or describe(name, written)
        done = Step(name, code, written, note, log, tuple(details))
        self.steps.append(done)
        print(step_line(done), flush=True)
        return done

    def skip(self, name: str, why: str) -> None:
        self.steps.append(Step(name, None, None, why, None))
        print(step_line(self.steps[-1]), flush=True)

    def _digest(self, side: FixtureSide) -> None:
        from three_ledger.commands.digest import digest

        out = self.out.fixture(side)
        self.step(
            f"digest {side.label} ({side.pin_id})",
            out,
            lambda: digest(
                pin_path=side.path, root=self.request.root, out=out, base=self.change.base
            ),
        )

    def _properties(self, side: FixtureSide) -> None:
        from three_ledger.commands.properties import Request, properties

        name = f"properties {side.label} ({side.pin_id})"
        fixture = recorded_digest(self.out.fixture(side))
        if fixture is None:
            self.skip(name, f"no fixture ledger for pin {side.pin_id}: nothing to score on")
            return
        request = Request(
            pin_path=side.path,
            expect_digest=fixture,
            properties_path=self.pins.properties_pin.source,
            command=self.request.command,
            out=self.out.prop(side),
            root=self.request.root,
            base=self.change.resolution.given,
            timeout_s=self.request.timeout_s,
            junit_xml=self.request.junit_xml,
            log_path=self.out.prop_log(side),
            flake_pin_path=self.pins.flake_pin,
        )
        self.step(name, request.out, lambda: properties(request))

    def _dual_pin(self) -> None:
        from three_ledger.commands import dual_pin

        out = self.out.dual_pin
        scored = [self.out.prop(side) for side in self.pins.sides]
        missing = [path.name for path in scored if not path.is_file()]
        if missing:
            self.skip("dual-pin", f"no property ledger {', '.join(missing)}")
        elif len(scored) == 1:
            self.step("dual-pin --not-run", out, lambda: dual_pin.dual_pin_not_run(out=out))
        else:
            left, right = scored
            self.step(
                "dual-pin",
                out,
                lambda: dual_pin.dual_pin(left_path=left, right_path=right, out=out),
            )

    def _flake_observations(self) -> None:
        from three_ledger.commands.flake_observe import flake_observe

        side = self.pins.sides[0]
        fixture, prop = self.out.fixture(side), self.out.prop(side)
        flake_pin = self.pins.flake_pin
        for number, test_id in enumerate(self._fired_flakes(prop), start=1):
            out = self.out.flake(number)
            observe = functools.partial(
                flake_observe,
                fixture_path=fixture,
                property_path=prop,
                flake_pin_path=flake_pin or Path(),
                test_id=test_id,
                out=out,
                root=self.request.root,
                base=self.change.base,
            )
            self.step(f"flake-observe {test_id}", out, observe)

    def _fired_flakes(self, prop_path: Path) -> list[str]:
        """Each flake entry this run recorded as not passing, in the flake pin's order."""
        if self.pins.flake_pin is None or not prop_path.is_file():
            return []
        try:
            entries = load_flake_pin(self.pins.flake_pin).flakes
            results = read_ledger(prop_path, PropertyLedger).record.flake_results
        except Refused:
            return []  # merge reads both again and rejects what it cannot read
        return [e.test_id for e in entries if results.get(e.test_id, "pass") != "pass"]

    def _merge(self) -> None:
        first = self.pins.sides[0]
        flakes = tuple(step.ledger for step in self.steps if step.is_flake and step.ledger)
        sources = merge_command.Sources(
            fixture=self.out.fixture(first),
            prop=self.out.prop(first),
            # Always given: a dual-pin ledger that is missing is a reject, never one pin fewer.
            dual_pin=self.out.dual_pin,
            flakes=flakes,
            flake_pin=self.pins.flake_pin,
            pin=first.path,
            root=self.request.root,
            pins_dir=self.request.pins_dir,
            base=self.change.base,
            properties_pin=self.pins.properties_pin.source,
        )
        quiet = {k: v for k, v in self.env.items() if k not in _REPORTING_VARIABLES}

        def judge() -> int:
            self.judgement = merge_command.judge(
                sources, self.out.decision, merge_command.Reports(), quiet
            )
            posture = self.judgement.verdict.posture
            return ExitCode.REJECT if posture is Posture.REJECT else ExitCode.OK

        self.step("merge", self.out.decision, judge)


def moved_fixtures(root: Path, base: str, plan: Plan) -> tuple[str, ...]:
    """Paths under each fixture pin's folder that differ from the base (for annotations)."""
    from three_ledger import git
    from three_ledger.pins import load_fixture_pin

    moved: set[str] = set()
    for side in plan.sides:
        try:
            folder = load_fixture_pin(side.path).fixtures_dir
            moved.update(git.changed_paths(root, base, [folder]))
        except Refused:
            continue
    return tuple(sorted(moved))


def run_captured(log: Path, action: Callable[[], int]) -> tuple[int, str, list[str]]:
    """Run one step with its output in LOG; a refusal becomes its code, message and details."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with _redirected(log) as stream:
        try:
            return action(), "", []
        except GateError as exc:
            lines = [exc.message, *(f"  {d}" for d in exc.details), *exc.notes]
            print("\n".join(f"three-ledger: {line}" for line in lines), file=stream)
            return exc.exit_code, exc.message, exc.details


@contextlib.contextmanager
def _redirected(log: Path) -> Iterator[TextIO]:
    stream = log.open("w", encoding="utf-8", errors="backslashreplace", buffering=1)
    with stream, contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        yield stream


# --- pin changes ---------------------------------------------------------------------------


def _pin_change(request: GateRequest, out: OutDir, change: Change) -> GateOutcome:
    """Pins move in reviewed changes of their own: validated, never scored, never `review`."""
    from three_ledger.commands.check_pins import check_pins

    chain = Chain(request, out, change, None, {})
    checked = chain.step(
        "check-pins", None, lambda: check_pins(pins_dir=request.pins_dir, root=request.root)
    )
    changed = ", ".join(change.changed_pins())
    if checked.exit_code != ExitCode.OK:
        reason = f"pin change: check-pins refused the pins ({changed}): {checked.note}"
        verdict = Verdict(Posture.REJECT, GATE_ROW, reason)
        return GateOutcome(verdict, None, change, None, chain.steps, pin_change=True)
    try:
        chain.plan = find_pins(request.pins_dir)
    except Unusable as exc:
        chain.skip("vet", f"the pins are not a plan gate can run: {exc}")
    else:
        chain.vet_changed_pins()
    verdict = Verdict(Posture.HUMAN_REVIEW, GATE_ROW, f"{PIN_CHANGE_REASON} ({changed})")
    # No plan in the outcome: nothing was scored, so no property is reported as missing.
    return GateOutcome(verdict, None, change, None, chain.steps, pin_change=True)


# --- the end: decision, reports --------------------------------------------------------------


def _finish(request: GateRequest, out: OutDir, outcome: GateOutcome, env: Mapping[str, str]) -> int:
    verdict = outcome.verdict
    if verdict is None:
        # merge itself refused (its --out could not be written): no decision exists.
        print(console_report(outcome), end="")
        failed = next((s for s in outcome.steps if s.name == "merge"), None)
        return failed.exit_code if failed and failed.exit_code else ExitCode.REFUSED
    if outcome.evidence is None:
        _write_gate_decision(out.decision, verdict)
    _write_reports(request, out, outcome)
    print(console_report(outcome), end="")
    if env.get("GITHUB_ACTIONS") == "true":
        print(
            "".join(annotation.command() + "\n" for annotation in github_annotations(outcome)),
            end="",
        )
    _append_step_summary(env, summary_markdown(outcome))
    return ExitCode.REJECT if verdict.posture is Posture.REJECT else ExitCode.OK


def _write_gate_decision(path: Path, verdict: Verdict) -> None:
    decision = MergeDecision(
        ledger_id=new_ledger_id(),
        posture=verdict.posture,
        row=verdict.row,
        reason=verdict.reason,
        inputs=MergeInputs(None, None, None, ()),
        recorded_at=fresh_recorded_at(),
    )
    write_ledger(path, decision)


def _write_reports(request: GateRequest, out: OutDir, outcome: GateOutcome) -> None:
    verdict = outcome.verdict
    assert verdict is not None
    if request.summary_md is not None:
        jsonio.write_atomic(request.summary_md, summary_markdown(outcome))
    if request.verdict_junit is not None:
        decision = DecisionCase(verdict.posture.value, verdict.row, verdict.reason)
        steps = [step.junit_case() for step in outcome.steps]
        document = junit_xml(decision, _property_cases(outcome), steps)
        jsonio.write_atomic(request.verdict_junit, document.decode("utf-8"))
    if request.verdict_dotenv is not None:
        text = dotenv(verdict.posture.value, verdict.row, os.fspath(out.decision))
        jsonio.write_atomic(request.verdict_dotenv, text)


def _property_cases(outcome: GateOutcome) -> list[PropertyCase]:
    """One case per pinned property; without a property ledger each is `missing`."""
    statuses = outcome.statuses()
    plan = outcome.plan
    ids = [prop.id for prop in plan.properties_pin.properties] if plan else list(statuses)
    claims = outcome.claims()
    why = outcome.why_unscored()
    return [
        PropertyCase(prop_id, statuses.get(prop_id, "missing"), claims.get(prop_id) or why)
        for prop_id in ids
    ]


def _append_step_summary(env: Mapping[str, str], text: str) -> None:
    from three_ledger.report.posture import append_step_summary

    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        warning = append_step_summary(Path(target), text)
        if warning is not None:
            print(f"three-ledger: {warning}", file=sys.stderr)
