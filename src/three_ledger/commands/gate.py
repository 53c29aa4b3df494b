"""`three-ledger gate`: the whole workflow, in order, in one command.

digest (each fixture pin), properties (each fixture pin), dual-pin (or `--not-run` with one
pin), flake-observe (each flake entry that did not pass), with `--flake-evidence`
flake-evidence (evidence for people; merge reads it only for the flake notes it
contradicts), merge. Each ledger is its own file in `--out-dir`; a step that refuses leaves
its ledger absent and the chain goes on to merge, so a later step never heals an earlier
failure. Gate exits with merge's code. A change that touches only the pins folder is not
scored: `check-pins` runs, and pin owners review it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, assert_never

from three_ledger import git
from three_ledger.bytecode import is_compiled

# Every step of the chain, imported before the first test run starts: a run without the
# sandbox's read-only tree must not be able to plant code that a later step imports.
from three_ledger.commands import (
    check_pins as check_pins_command,
)
from three_ledger.commands import (
    dual_pin as dual_pin_command,
)
from three_ledger.commands import (
    flake_evidence as flake_evidence_command,
)
from three_ledger.commands import (
    flake_observe as flake_observe_command,
)
from three_ledger.commands import (
    merge as merge_command,
)
from three_ledger.commands import (
    properties as properties_command,
)
from three_ledger.commands import (
    vet as vet_command,
)
from three_ledger.env_policy import refuse_keep_env
from three_ledger.errors import GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.gate_plan import Change, FixtureSide, Plan, Unusable, find_change, find_pins
from three_ledger.merge_table import Verdict
from three_ledger.outputs import Output, refuse_unwritable, remove_stale
from three_ledger.pin_folder import fixture_folders
from three_ledger.pins import PropertiesPin, load_fixture_pin
from three_ledger.plugin.wire import in_the_tests_own_folder
from three_ledger.progress import progress
from three_ledger.report.findings import one_line
from three_ledger.report.gate_summary import (
    GateOutcome,
    Step,
    StepKind,
    console_report,
    gate_property_cases,
    github_annotations,
    step_line,
    summary_markdown,
)
from three_ledger.test_changes import SideKind, TestSideChange, test_side_changes
from three_ledger.vocabulary import Posture
from three_ledger.workflow.chain import (
    Call,
    Chain,
    CheckPins,
    Digest,
    DualPin,
    FlakeEvidence,
    FlakeEvidenceAsk,
    FlakeObserve,
    Merge,
    Pins,
    Properties,
    Ran,
    Vet,
    run_chain,
    side_step_name,
)
from three_ledger.workflow.decision_files import (
    DecisionReport,
    ReportFiles,
    append_step_summary,
    write_decision,
    write_reports,
)

# Row 0: gate decided before the merge table (unusable inputs, or a change to pins only).
GATE_ROW = 0
PIN_CHANGE_REASON = "pin change: the pin owners review it"
TEST_CHANGE_REASON = "oracle change: the test owners review it"
# Variables through which merge would report on its own; gate reports for the whole chain.
_REPORTING_VARIABLES = ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS")


@frozen
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
    # --keep-env: names of the job's environment the test child keeps for this run.
    keep_env: tuple[str, ...] = ()
    # --flake-evidence: rerun the flake candidates after the chain's steps, as evidence only.
    flake_evidence: bool = False
    flake_reruns: int = flake_evidence_command.DEFAULT_RERUNS
    flake_budget_s: float = flake_evidence_command.DEFAULT_BUDGET_S

    @property
    def report_files(self) -> ReportFiles:
        return ReportFiles(self.summary_md, self.verdict_junit, self.verdict_dotenv)


# The ledgers and logs gate writes in `--out-dir`, as glob patterns.
_LEFTOVERS = (
    "fixture-*.json",
    "property-*.json",
    "property-*.log",
    "flake-*.json",
    "flake_evidence.*",
    "vet-*.*",
)


@frozen
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

    @property
    def flake_evidence(self) -> Path:
        return self.folder / "flake_evidence.json"

    @property
    def flake_evidence_log(self) -> Path:
        return self.folder / "flake_evidence.log"

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
    # A flaw of the command line, not of the change: refused before anything is cleared.
    refuse_keep_env(request.keep_env)
    _clear(out)
    outputs = [request.out_dir, *(output.path for output in request.report_files.outputs())]
    try:
        _refuse_code_from_root(request.root)
        change = find_change(request.pins_dir, request.root, request.base, outputs, env)
        print(f"gate: base {change.base[:12]} (from {change.base_source})", flush=True)
        _note_untracked(change)
        _note_uncollected_tests(request, change)
        if change.pin_change_only:
            return _finish(request, out, _pin_change(request, out, change), env)
        plan = find_pins(request.pins_dir)
        sides = _fixture_sides(change, plan, _base_folders(request.root, change, plan))
        if sides.update is not None:
            update = _fixture_update(request, out, change, sides.update)
            return _finish(request, out, update, env)
        tests = None if sides.scored else _test_side(request, change, plan, sides.others)
    except Unusable as exc:
        verdict = Verdict(Posture.REJECT, GATE_ROW, f"gate inputs unusable: {exc}")
        return _finish(request, out, GateOutcome(verdict, None, None, None, []), env)
    if tests is not None:
        return _finish(request, out, _test_change(request, out, change, plan, tests), env)
    scored = _oracles_alone(out, change, plan, _scored(request, out, change, plan, env))
    return _finish(request, out, scored, env)


# The untracked files a note names, at most.
_UNTRACKED_NAMED = 5


def _note_untracked(change: Change) -> None:
    """Files git does not track are part of the change as the gate sees it, and decide its
    route: a test edit beside an untracked `shards/` folder a CI recipe wrote is scored, not
    sent to the test owners. Said, since nothing else would say why."""
    untracked = change.untracked
    if not untracked:
        return
    named = ", ".join(untracked[:_UNTRACKED_NAMED])
    more = (
        f" and {len(untracked) - _UNTRACKED_NAMED} more"
        if len(untracked) > _UNTRACKED_NAMED
        else ""
    )
    print(
        one_line(
            f"gate: note: {len(untracked)} file(s) git does not track are part of this change "
            f"and decide its route: {named}{more}; commit them, or list them in .gitignore"
        ),
        file=sys.stderr,
    )


def _note_uncollected_tests(request: GateRequest, change: Change) -> None:
    """A new file named like a test (`test_*.py`, `*_test.py`) that the tree's pytest
    settings never collect did not run: said, since a reviewer reads it as a test that
    passed (chardet collects `test.py` alone, and a new `test_memoryview.py` ran nowhere)."""
    from three_ledger.test_changes import DEFAULT_PYTHON_FILES, layout_in_tree

    prefix = f"{change.root_in_top}/" if change.root_in_top else ""
    named = [
        path.removeprefix(prefix)
        for path in change.changed
        if path.startswith(prefix)
        and any(fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], p) for p in DEFAULT_PYTHON_FILES)
    ]
    present = [path for path in named if (request.root / path).is_file()]
    if not present:
        return
    layout = layout_in_tree(request.root).started_by(request.command, request.root)
    uncollected = [path for path in present if not layout.collects(path)]
    if not uncollected:
        return
    try:
        at_base = git.blob_ids_at(request.root, change.base, uncollected)
    except (Refused, git.GitHung):
        return
    new = [path for path in uncollected if path not in at_base]
    if new:
        print(
            one_line(
                f"gate: note: {', '.join(new[:_UNTRACKED_NAMED])} new, named like a test, but "
                "pytest's settings here never collect it: it ran nowhere in this gate "
                "(`python_files`, `testpaths` and the command decide what pytest collects)"
            ),
            file=sys.stderr,
        )


def _refuse_code_from_root(root: Path) -> None:
    """The gate must not be running code from the checkout it judges (each step checks too)."""
    from three_ledger.isolation import refuse_code_from_root

    try:
        refuse_code_from_root(root)
    except Refused as exc:
        raise Unusable("; ".join([exc.message, *exc.details])) from None


def _refuse_out_dir_in_pins(request: GateRequest) -> None:
    outputs = [Output("--out-dir", request.out_dir), *request.report_files.outputs()]
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


# --- the chain ---------------------------------------------------------------------------


def _scored(
    request: GateRequest, out: OutDir, change: Change, plan: Plan, env: Mapping[str, str]
) -> GateOutcome:
    """The whole chain on the pins the properties pin names; the flake pin read once."""
    runner = InProcess(request, out, change.base, change.resolution.given, env)
    chain = Chain(runner)
    pins = Pins(
        sides=plan.sides,
        properties_pin=plan.properties_pin.source,
        flake_pin=merge_command.read_flake_pin(plan.flake_pin),
        pins_dir=request.pins_dir,
    )
    flake_evidence = None
    if request.flake_evidence:
        flake_evidence = FlakeEvidenceAsk(
            out.flake_evidence,
            out.flake_evidence_log,
            request.flake_reruns,
            request.flake_budget_s,
        )
    vet = vet_calls_or_skip(chain, request, change, plan, out)
    run_chain(chain, pins, out, vet=vet, flake_evidence=flake_evidence)
    judgement = runner.judgement
    verdict = judgement.verdict if judgement is not None else None
    evidence = judgement.evidence if judgement is not None else None
    moved = moved_fixtures(request.root, change.base, plan)
    return GateOutcome(verdict, evidence, change, plan, chain.steps, moved_fixtures=moved)


def _oracles_alone(out: OutDir, change: Change, plan: Plan, outcome: GateOutcome) -> GateOutcome:
    """OUTCOME, or, where it is row 5 and every file the change touches is an oracle the run
    measured moving, the test owners' route: an edit of the oracles alone, which nothing
    before the run could tell (a helper module outside `oracle_paths` and `product_paths`:
    pycodestyle's `testing/support.py`). "Review the oracle edit on its own" asked for what
    the change already was. A change that also touches any other file, or a pin, stays row 5;
    so does one under which a pinned property did not pass, or that touches a file outside a
    folder named like tests at the top of ROOT that neither is a conftest nor is under the
    pin's `oracle_paths`: a module outside `product_paths` that the product runs through (a
    root `json.py` in place of the standard library's: the red team's fourth round), or data
    it reads (a root `rates.json` beside a conftest that masks what it does: the fifth; the
    same in a package's own `orderlib/testing/`: the sixth), is the product's as much as the
    tests'. The tests' own helpers and data, and what the pin calls an oracle, remain.
    """
    verdict, evidence = outcome.verdict, outcome.evidence
    if verdict is None or verdict.row != 5 or evidence is None or change.changed_pins():
        return outcome
    prop = evidence.prop.record
    prefix = f"{change.root_in_top}/" if change.root_in_top else ""
    paths = [path.removeprefix(prefix) for path in change.changed]
    if prop is None or not paths or any(not path.startswith(prefix) for path in change.changed):
        return outcome
    if prop.failing_ids():
        return outcome
    declared = set(git.under_pathspecs(paths, plan.properties_pin.oracle_paths))
    oracles = [path for path in paths if path in prop.oracle_changes]
    if not oracles or not all(
        path in declared or in_the_tests_own_folder(path) for path in oracles
    ):
        return outcome
    others = sorted(set(paths) - set(oracles))
    if others:
        said = _besides_the_oracles(verdict, others)
        write_decision(out.decision, said, evidence)
        return dataclasses.replace(outcome, verdict=said)
    reasons = prop.oracle_change_reasons
    described = ", ".join(f"{path} ({reasons.get(path, 'oracle')})" for path in sorted(paths))
    routed = Verdict(
        Posture.HUMAN_REVIEW,
        GATE_ROW,
        f"{TEST_CHANGE_REASON}: {described}: every file the change touches is an oracle the "
        "run measured, so the change edits oracles alone, the change of its own that merge's "
        "row 5 asks for",
    )
    write_decision(out.decision, routed, evidence)
    tests = tuple(TestSideChange(path, SideKind.MEASURED) for path in sorted(paths))
    return dataclasses.replace(outcome, verdict=routed, test_change=tests)


def _besides_the_oracles(verdict: Verdict, others: list[str]) -> Verdict:
    """Row 5 for an oracle edit that would have gone to the test owners alone, its reason
    naming the files beside it that kept it at row 5: the merge table names the oracles
    alone, and a reader looked for the oracle edit in them (idna's trial: a new data file
    with its `.gitattributes` line, as the docs suggest, read as an oracle edit beside
    nothing)."""
    named = ", ".join(others[:_UNTRACKED_NAMED])
    more = f" and {len(others) - _UNTRACKED_NAMED} more" if len(others) > _UNTRACKED_NAMED else ""
    return dataclasses.replace(
        verdict,
        reason=f"{verdict.reason}; the change also touches {named}{more}, which moved no "
        "oracle: without it, the oracle edit would go to the test owners on its own",
    )


# Why a JUnit run's pins are not vetted: vet mutates fixtures and reads what the plugin saw.
JUNIT_NOT_VETTED = (
    "vet runs the tests through three-ledger's pytest plugin, which a --junit-xml runner "
    "does not load: check by hand that the moved pin's properties can fail (docs/runners.md)"
)


def vet_calls_or_skip(
    chain: Chain, request: GateRequest, change: Change, plan: Plan, out: OutDir
) -> list[Vet]:
    """`vet_calls`, or none with a skipped step saying why when the runner is not pytest."""
    calls = vet_calls(change, plan, out)
    if calls and request.junit_xml is not None:
        chain.skip(StepKind.VET, "vet", JUNIT_NOT_VETTED)
        return []
    return calls


def vet_calls(change: Change, plan: Plan, out: OutDir) -> list[Vet]:
    """vet each fixture side whose pin, or the properties pin, differs from the base.

    A pin that moves must show its properties can fail on its fixtures; vet's result goes
    into the report for the pin owners and never changes the posture.
    """
    changed = change.changed_pin_names()
    properties_pin = plan.properties_pin.source
    if properties_pin.name in changed:
        sides = plan.sides
    else:
        sides = tuple(side for side in plan.sides if side.path.name in changed)
    return [Vet(side, properties_pin, out.vet(side), out.vet_log(side)) for side in sides]


@dataclass
class InProcess:
    """Runs each step of the chain in-process, its output kept in a log of its own."""

    request: GateRequest
    out: OutDir
    # The base commit, and the revision the gate was asked for (properties records both).
    base: str
    base_given: str
    env: Mapping[str, str]
    steps_done: int = 0
    judgement: merge_command.Judgement | None = None

    def run(self, name: str, call: Call) -> Ran:
        log = self.out.step_log(self.steps_done + 1, name)
        # Taken before the step's output goes to its log: the lines reach the console.
        reporter = progress("gate", sys.stdout)
        with reporter.running(name):
            code, message, details, hints = run_step_logged(log, lambda: self._run(call))
        return Ran(code, log, message, tuple(details), tuple(hints))

    def finished(self, step: Step) -> None:
        self.steps_done += 1
        print(step_line(step), flush=True)

    def _run(self, call: Call) -> int:
        match call:
            case Digest():
                from three_ledger.commands.digest import digest

                root = self.request.root
                return digest(pin_path=call.side.path, root=root, out=call.out, base=self.base)
            case Properties():
                return self._properties(call)
            case DualPin():
                return _dual_pin(call)
            case FlakeObserve():
                return self._flake_observe(call)
            case FlakeEvidence():
                return self._flake_evidence(call)
            case Vet():
                return self._vet(call)
            case CheckPins():
                return check_pins_command.check_pins(pins_dir=call.pins_dir, root=self.request.root)
            case Merge():
                return self._merge(call)
            case _:
                assert_never(call)

    def _properties(self, call: Properties) -> int:
        request = properties_command.Request(
            pin_path=call.side.path,
            expect_digest=call.expect_digest,
            properties_path=call.properties_pin,
            command=self.request.command,
            out=call.out,
            root=self.request.root,
            base=self.base_given,
            timeout_s=self.request.timeout_s,
            junit_xml=self.request.junit_xml,
            log_path=call.log,
            flake_pin_path=call.flake_pin,
            keep_env=self.request.keep_env,
        )
        return properties_command.properties(request)

    def _flake_observe(self, call: FlakeObserve) -> int:
        return flake_observe_command.flake_observe(
            fixture_path=call.fixture,
            property_path=call.prop,
            flake_pin_path=call.flake_pin,
            test_id=call.test_id,
            out=call.out,
            root=self.request.root,
            base=self.base,
        )

    def _flake_evidence(self, call: FlakeEvidence) -> int:
        request = flake_evidence_command.Request(
            fixture_ledger=call.fixture,
            property_ledger=call.prop,
            pin_path=call.side.path,
            properties_path=call.properties_pin,
            command=self.request.command,
            out=call.out,
            root=self.request.root,
            flake_pin_path=call.flake_pin,
            reruns=call.reruns,
            budget_s=call.budget_s,
            log_path=call.log,
            keep_env=self.request.keep_env,
        )
        return flake_evidence_command.flake_evidence(request)

    def _vet(self, call: Vet) -> int:
        request = vet_command.Request(
            pin_path=call.side.path,
            properties_path=call.properties_pin,
            command=self.request.command,
            root=self.request.root,
            out=call.out,
            log_path=call.log,
            per_file=None,
            timeout_s=self.request.timeout_s,
            strict=False,
            base=self.base,
            keep_env=self.request.keep_env,
        )
        return vet_command.vet(request)

    def _merge(self, call: Merge) -> int:
        sources = merge_command.Sources(
            fixture=call.fixture,
            prop=call.prop,
            dual_pin=call.dual_pin,
            flakes=call.flakes,
            flake_pin=call.flake_pin.path if call.flake_pin is not None else None,
            pin=call.pin,
            root=self.request.root,
            pins_dir=call.pins_dir,
            base=self.base,
            properties_pin=call.properties_pin,
            why_missing=call.why_missing,
            flake_evidence=call.flake_evidence,
        )
        # gate writes the reports for the whole chain: merge gets none, and no CI variable.
        files = ReportFiles()
        quiet = {k: v for k, v in self.env.items() if k not in _REPORTING_VARIABLES}
        merge_command.refuse_unwritable_outputs(sources, call.out, files)
        self.judgement = merge_command.judge(sources, call.flake_pin, call.out, files, quiet)
        return merge_command.exit_code(self.judgement.verdict.posture)


def _dual_pin(call: DualPin) -> int:
    if len(call.scored) == 1:
        return dual_pin_command.dual_pin_not_run(out=call.out)
    left, right = call.scored
    return dual_pin_command.dual_pin(left_path=left, right_path=right, out=call.out)


def moved_fixtures(root: Path, base: str, plan: Plan) -> tuple[str, ...]:
    """Paths under each fixture pin's folder that differ from the base (for annotations)."""

    moved: set[str] = set()
    for side in plan.sides:
        try:
            folders = load_fixture_pin(side.path).fixtures_dirs
            moved.update(git.changed_paths(root, base, list(folders)))
        except Refused:
            continue
    return tuple(sorted(moved))


def run_step_logged(log: Path, action: Callable[[], int]) -> tuple[int, str, list[str], list[str]]:
    """Run one step with its output in LOG; a refusal becomes its code, message, details and
    notes (its hints, which the console shows too)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with _redirected(log) as stream:
        try:
            return action(), "", [], []
        except GateError as exc:
            lines = [exc.message, *(f"  {d}" for d in exc.details), *exc.notes]
            print("\n".join(f"three-ledger: {line}" for line in lines), file=stream)
            return exc.exit_code, exc.message, exc.details, exc.notes


@contextlib.contextmanager
def _redirected(log: Path) -> Iterator[TextIO]:
    stream = log.open("w", encoding="utf-8", errors="backslashreplace", buffering=1)
    with stream, contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        yield stream


# --- pin changes ---------------------------------------------------------------------------


def _pin_change(request: GateRequest, out: OutDir, change: Change) -> GateOutcome:
    """Pins move in reviewed changes of their own: validated, never scored, never `review`."""
    chain = Chain(InProcess(request, out, change.base, change.resolution.given, {}))
    refused = _checked_and_vetted(request, out, change, chain)
    if refused is not None:
        return refused
    changed = ", ".join(change.changed_pins())
    reason = f"{PIN_CHANGE_REASON} ({changed}){vet_said(chain.steps)}"
    verdict = Verdict(Posture.HUMAN_REVIEW, GATE_ROW, reason)
    # No plan in the outcome: nothing was scored, so no property is reported as missing.
    return GateOutcome(verdict, None, change, None, chain.steps, pin_change=True)


def vet_said(steps: Sequence[Step]) -> str:
    """Each vet that did not exit 0, for the reason of a pin change: the posture stays the pin
    owners', but what vet found must not be left to the step table. A failing baseline (exit
    2) means the pinned properties do not pass on the tree the pins come with, and every
    change after them would be rejected at row 7."""
    return "".join(
        f"; {step.name} exited {step.exit_code}: {step.note}"
        for step in steps
        if step.kind is StepKind.VET and step.exit_code not in (None, 0)
    )


def _checked_and_vetted(
    request: GateRequest, out: OutDir, change: Change, chain: Chain
) -> GateOutcome | None:
    """check-pins, then `digest` on each side whose fixture pin moved, then vet each side whose
    pin moved; the reject when check-pins refuses or a moved fixture pin does not hold."""
    checked = chain.step("check-pins", CheckPins(request.pins_dir))
    if checked.exit_code != ExitCode.OK:
        changed = ", ".join(change.changed_pins())
        reason = f"pin change: check-pins refused the pins ({changed}): {checked.note}"
        verdict = Verdict(Posture.REJECT, GATE_ROW, reason)
        return GateOutcome(verdict, None, change, None, chain.steps, pin_change=True)
    try:
        plan = find_pins(request.pins_dir)
    except Unusable as exc:
        chain.skip(StepKind.VET, "vet", f"the pins are not a plan gate can run: {exc}")
        return None
    moved = change.changed_pin_names()
    for side in plan.sides:
        if side.path.name not in moved:
            continue
        # A fixture pin that moves must hold the tree it comes with: else every change
        # after it would stop at row 1.
        digest = Digest(side, out.fixture(side))
        step = chain.step(side_step_name(digest), digest)
        if step.exit_code != ExitCode.OK:
            reason = f"pin change: {side.path.name} does not hold the tree: {step.note}"
            verdict = Verdict(Posture.REJECT, GATE_ROW, reason)
            return GateOutcome(verdict, None, change, None, chain.steps, pin_change=True)
    for call in vet_calls_or_skip(chain, request, change, plan, out):
        chain.step(side_step_name(call), call)
    return None


# --- fixture files changed with their pin ---------------------------------------------------


@frozen
class _FixtureSides:
    """What a change does to the pinned fixture folders.

    `update`: the changed files, all inside folders that the base's version of a fixture
    pin the change edits already named, none of them product code, when the change holds
    nothing else but pins (a reviewed fixture update); `scored`: a file in a folder whose
    pin the change leaves alone (the fixture ledger judges it, row 1, wherever the folder
    lies, `oracle_paths` included); `others`: the paths left to classify.
    """

    update: tuple[str, ...] | None
    scored: bool
    others: tuple[str, ...]


def _base_folders(root: Path, change: Change, plan: Plan) -> dict[str, tuple[str, ...]]:
    """The folders each fixture pin the change edits named at the base (none: a new pin).

    A fixture update is routed by the reviewed pin, never by the edited one: else a change
    could point its pin at product code and ship code as fixtures."""
    moved = change.changed_pin_names()
    names = [side.path.name for side in plan.sides if side.path.name in moved]
    if not names:
        return {}
    folders = {}
    try:
        top = git.work_tree_top(root)
        for name in names:
            relative = f"{change.pins_dir_in_top.rstrip('/')}/{name}"
            data = git.file_at(top, change.base, relative)
            folders[name] = () if data is None else fixture_folders(data, top / relative)
    except Refused as exc:
        raise Unusable(exc.message) from None
    return folders


def _fixture_sides(
    change: Change, plan: Plan, base_folders: Mapping[str, tuple[str, ...]]
) -> _FixtureSides:
    pins = set(change.changed_pins())
    others = tuple(path for path in change.changed if path not in pins)
    prefix = f"{change.root_in_top}/" if change.root_in_top else ""
    moved: list[str] = []
    kept: list[str] = []
    for side in plan.sides:
        if side.path.name in base_folders:
            at_base = base_folders[side.path.name]
            moved.extend(prefix + folder for folder in side.folders if folder in at_base)
        else:
            kept.extend(prefix + folder for folder in side.folders)
    if any(_inside_any(path, kept) for path in others):
        return _FixtureSides(None, True, others)
    updated = tuple(
        path
        for path in others
        if _inside_any(path, moved)
        and not plan.properties_pin.is_product(path.removeprefix(prefix))
    )
    rest = tuple(path for path in others if path not in updated)
    if updated and not rest and not any(is_compiled(path) for path in change.changed):
        return _FixtureSides(updated, False, ())
    return _FixtureSides(None, False, rest)


def _inside_any(path: str, folders: list[str]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _fixture_update(
    request: GateRequest, out: OutDir, change: Change, files: tuple[str, ...]
) -> GateOutcome:
    """Fixture files changed with their pin, and nothing else but pins: a pin change, which
    the pin owners review once the pins pass `check-pins` and each changed fixture pin is
    shown to hold the tree (`digest`)."""
    outcome = _pin_change(request, out, change)
    if outcome.verdict is None or outcome.verdict.posture is not Posture.HUMAN_REVIEW:
        return outcome
    reason = f"{outcome.verdict.reason}; fixture files changed with their pin: {len(files)}"
    verdict = Verdict(Posture.HUMAN_REVIEW, GATE_ROW, reason)
    return dataclasses.replace(outcome, verdict=verdict)


# --- test changes --------------------------------------------------------------------------


def _test_side(
    request: GateRequest, change: Change, plan: Plan, others: tuple[str, ...]
) -> list[TestSideChange] | None:
    """Each test-side path of a change whose every path (OTHERS: the change's paths but its
    pins and its fixture files, changed with their pin) is test-side, with at least one;
    None for a change to score."""
    if not others or any(is_compiled(path) for path in change.changed):
        return None
    prefix = f"{change.root_in_top}/" if change.root_in_top else ""
    if not all(path.startswith(prefix) for path in others):
        return None
    in_root = [path.removeprefix(prefix) for path in others]
    try:
        return test_side_changes(
            request.root, change.base, in_root, plan.properties_pin, request.command
        )
    except git.GitHung as hung:
        raise Unusable(hung.message) from None


def _test_change(
    request: GateRequest, out: OutDir, change: Change, plan: Plan, tests: list[TestSideChange]
) -> GateOutcome:
    """Tests, conftests and pytest's settings move in changes of their own, which the test
    owners review: nothing is scored, since what judges the change is what changed. Pins
    changed beside them are checked and vetted as in a pin change."""
    chain = Chain(InProcess(request, out, change.base, change.resolution.given, {}))
    reason = f"{TEST_CHANGE_REASON}: {', '.join(test.describe() for test in tests)}"
    if plan.properties_pin.source.name not in change.changed_pin_names():
        reason += _counted_tests_note(plan.properties_pin, tests)
    pins = change.changed_pins()
    if pins:
        refused = _checked_and_vetted(request, out, change, chain)
        if refused is not None:
            return refused
        reason += f"; {PIN_CHANGE_REASON} ({', '.join(pins)}){vet_said(chain.steps)}"
    verdict = Verdict(Posture.HUMAN_REVIEW, GATE_ROW, reason)
    return GateOutcome(
        verdict, None, change, None, chain.steps, pin_change=bool(pins), test_change=tuple(tests)
    )


def _counted_tests_note(pin: PropertiesPin, tests: Sequence[TestSideChange]) -> str:
    """What the test owners must know when the change touches tests of properties whose pin
    counts their tests and leaves the pin alone: under `tests_sha256`, a test added, renamed
    or removed there, and under `min_tests`, one too many removed, makes the property
    `missing` in every change after this one."""
    touched = {name for test in tests for name in test.properties}
    props = [prop for prop in pin.properties if prop.id in touched]
    exact = [prop.id for prop in props if prop.requirement.tests_sha256 is not None]
    least = [
        prop.id
        for prop in props
        if prop.requirement.tests_sha256 is None and prop.requirement.min_tests is not None
    ]
    said = []
    if exact:
        said.append(
            f"the properties pin hashes the tests of {', '.join(exact)} (tests_sha256), which "
            "the changed files hold: where this change adds, renames or removes one of them, "
            "the pin must change with it"
        )
    if least:
        said.append(
            f"the properties pin asks for min_tests tests of {', '.join(least)}, which the "
            "changed files hold: where this change removes one of them, the pin may need "
            "lowering with it"
        )
    if not said:
        return ""
    return (
        f"; {'; '.join(said)} (`three-ledger plan` prints the figures), or every change "
        "after it is rejected at row 7"
    )


# --- the end: decision, reports --------------------------------------------------------------


def _finish(request: GateRequest, out: OutDir, outcome: GateOutcome, env: Mapping[str, str]) -> int:
    verdict = outcome.verdict
    if verdict is None:
        # merge itself refused (its --out could not be written): no decision exists.
        print(console_report(outcome), end="")
        failed = next((s for s in outcome.steps if s.kind is StepKind.MERGE), None)
        return failed.exit_code if failed and failed.exit_code else ExitCode.REFUSED
    if outcome.evidence is None:
        write_decision(out.decision, verdict, None)
    summary = summary_markdown(outcome)
    steps = [step.junit_case() for step in outcome.steps]
    prop = outcome.property_ledger()
    duration_s = prop.duration_ms / 1000 if prop is not None else 0.0
    report = DecisionReport(verdict, summary, gate_property_cases(outcome), steps, duration_s)
    write_reports(request.report_files, report, out.decision)
    print(console_report(outcome), end="")
    if env.get("GITHUB_ACTIONS") == "true":
        from three_ledger.console_guard import command

        command("".join(annotation.command() + "\n" for annotation in github_annotations(outcome)))
    append_step_summary(env, summary)
    return ExitCode.REJECT if verdict.posture is Posture.REJECT else ExitCode.OK
