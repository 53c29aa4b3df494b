"""`three-ledger merge`: load the evidence, apply the merge table, write the decision (4.5).

Every problem with a ledger becomes a `reject` decision (exit 1); only an output path merge
may not write is a refusal (exit 2).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from three_ledger import git, jsonio
from three_ledger.digest import live_digest, refuse_unreviewed
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.isolation import refuse_code_from_root
from three_ledger.ledgers import (
    DualPinLedger,
    FixtureLedger,
    FlakeLedger,
    MergeDecision,
    MergeInputs,
    Posture,
    PropertyLedger,
    RecordT,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
    write_ledger,
)
from three_ledger.merge_table import (
    Evidence,
    FlakePinView,
    LiveTree,
    PinChanges,
    Reading,
    TreeBinding,
    Verdict,
    decide,
    ledger_stamps,
)
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import (
    load_fixture_pin,
    load_flake_pin,
    utc_today,
)
from three_ledger.report.posture import append_step_summary, error_annotation, verdict_text

if TYPE_CHECKING:
    from three_ledger.report import junit_verdict as verdict_junit


@dataclass(frozen=True)
class Sources:
    """Where merge reads its evidence from, as the command line gave it."""

    fixture: Path
    prop: Path
    dual_pin: Path | None
    flakes: tuple[Path, ...]
    flake_pin: Path | None
    pin: Path | None
    root: Path
    pins_dir: Path | None
    base: str | None
    properties_pin: Path | None = None

    def ledgers(self) -> list[Path]:
        dual_pin = [self.dual_pin] if self.dual_pin is not None else []
        return [self.fixture, self.prop, *dual_pin, *self.flakes]

    def consults_root(self) -> bool:
        """Whether merge reads ROOT at all: a live digest, or git against the base."""
        return self.pin is not None or self.base is not None

    def pins(self) -> list[Path]:
        named = (self.pin, self.flake_pin, self.properties_pin)
        return [path for path in named if path is not None]


def merge(
    *,
    fixture_path: Path,
    property_path: Path,
    dual_pin_path: Path | None,
    flake_paths: Sequence[Path],
    flake_pin_path: Path | None,
    pin_path: Path | None,
    root: Path,
    pins_dir: Path | None,
    base: str | None,
    out: Path,
    properties_pin_path: Path | None = None,
    summary_md: Path | None,
    verdict_junit: Path | None = None,
    verdict_dotenv: Path | None = None,
    env: Mapping[str, str] = os.environ,
) -> int:
    sources = Sources(
        fixture=fixture_path,
        prop=property_path,
        dual_pin=dual_pin_path,
        flakes=tuple(flake_paths),
        flake_pin=flake_pin_path,
        pin=pin_path,
        root=root,
        pins_dir=pins_dir,
        base=base,
        properties_pin=properties_pin_path,
    )
    reports = Reports(summary_md, verdict_junit, verdict_dotenv)
    return exit_code(judge(sources, out, reports, env).verdict.posture)


def exit_code(posture: Posture) -> ExitCode:
    """SPEC 2: reject exits 1; both review postures exit 0."""
    match posture:
        case Posture.REJECT:
            return ExitCode.REJECT
        case Posture.HUMAN_REVIEW | Posture.REVIEW:
            return ExitCode.OK
        case _:
            assert_never(posture)


@dataclass(frozen=True)
class Reports:
    """The optional reports of a decision, beside the decision itself."""

    summary_md: Path | None = None
    verdict_junit: Path | None = None
    verdict_dotenv: Path | None = None

    def outputs(self) -> list[Output]:
        flags = (
            ("--summary-md", self.summary_md),
            ("--verdict-junit", self.verdict_junit),
            ("--verdict-dotenv", self.verdict_dotenv),
        )
        return [Output(flag, path) for flag, path in flags if path is not None]


@dataclass(frozen=True)
class Judgement:
    evidence: Evidence
    verdict: Verdict


def judge(sources: Sources, out: Path, reports: Reports, env: Mapping[str, str]) -> Judgement:
    """Read the evidence, apply the table, write the decision and its reports, report it."""
    refuse_unwritable_outputs(sources, out, reports)
    evidence = gather(sources)
    verdict = decide(evidence)
    with nothing_left_on_failure(out):
        write_ledger(out, _decision(evidence, verdict))
        write_reports(reports, evidence, verdict, sources, out)
    _report(evidence, verdict, env, sources)
    return Judgement(evidence, verdict)


def write_reports(
    reports: Reports, evidence: Evidence, verdict: Verdict, sources: Sources, out: Path
) -> None:
    from three_ledger.report import junit_verdict as verdict_junit

    if reports.summary_md is not None:
        jsonio.write_atomic(reports.summary_md, summary_markdown(evidence, verdict, sources))
    if reports.verdict_junit is not None:
        decision = verdict_junit.DecisionCase(verdict.posture.value, verdict.row, verdict.reason)
        cases = property_cases(evidence)
        document = verdict_junit.junit_xml(decision, cases).decode("utf-8")
        jsonio.write_atomic(reports.verdict_junit, document)
    if reports.verdict_dotenv is not None:
        text = verdict_junit.dotenv(verdict.posture.value, verdict.row, os.fspath(out))
        jsonio.write_atomic(reports.verdict_dotenv, text)


def property_cases(evidence: Evidence) -> list[verdict_junit.PropertyCase]:
    from three_ledger.report.junit_verdict import PropertyCase

    prop = evidence.prop.record
    if prop is None:
        return []
    return [PropertyCase(prop_id, status) for prop_id, status in prop.status_by_id.items()]


def summary_markdown(evidence: Evidence, verdict: Verdict, sources: Sources) -> str:
    from three_ledger.report.step_summary import SummaryInput, render

    owners = _flake_owners(sources)
    return render(SummaryInput(verdict, evidence, "three-ledger merge", flake_owners=owners))


def _flake_owners(sources: Sources) -> dict[str, str]:
    if sources.flake_pin is None:
        return {}
    try:
        pin = load_flake_pin(sources.flake_pin)
    except Refused:
        return {}
    return {entry.test_id: entry.owner for entry in pin.flakes if entry.owner}


def refuse_unwritable_outputs(sources: Sources, out: Path, reports: Reports) -> None:
    """Exit 2 for an output that is an input, a pin, or inside a pin folder (SPEC 3)."""
    outputs = [Output("--out", out), *reports.outputs()]
    refuse_unwritable(
        outputs, pins=sources.pins(), pins_dir=sources.pins_dir, inputs=sources.ledgers()
    )


def gather(sources: Sources) -> Evidence:
    """Read every ledger and ask every git question; problems are recorded, never raised."""
    return Evidence(
        fixture=read_evidence(sources.fixture, FixtureLedger),
        prop=read_evidence(sources.prop, PropertyLedger),
        dual_pin=read_evidence(sources.dual_pin, DualPinLedger) if sources.dual_pin else None,
        flakes=tuple(read_evidence(path, FlakeLedger) for path in sources.flakes),
        live=_live_tree(sources.pin, sources.root) if sources.pin else None,
        pin_changes=_pin_changes(sources),
        flake_pin=_flake_pin_view(sources),
        today=utc_today(),
        own_code=_own_code_problem(sources.root) if sources.consults_root() else None,
        binding=_tree_binding(sources),
    )


def _tree_binding(sources: Sources) -> TreeBinding | None:
    """ROOT's HEAD, the base's commit and the properties pin as the base has it (SPEC 4.5+)."""
    if sources.base is None:
        return None
    try:
        top = git.work_tree_top(sources.root)
        head = git.head_revision(sources.root)
        base = git.resolve_base_commit(top, sources.base)
        pin = _pin_at_base(top, base, sources.properties_pin)
    except Refused as exc:
        return TreeBinding(problem=_one_line(exc))
    if pin is None:
        return TreeBinding(head=head, base=base)
    sha256, ids = pin
    return TreeBinding(head=head, base=base, pin_sha256=sha256, pin_ids=ids)


def _pin_at_base(top: Path, base: str, path: Path | None) -> tuple[str, tuple[str, ...]] | None:
    """The sha256 of the properties pin's bytes at the base, and its property ids."""
    if path is None:
        return None
    relative = git.inside_work_tree(path, top)
    data = git.file_at(top, base, relative)
    if data is None:
        raise Refused(f"--properties {path}: the base {base[:12]} has no such file")
    try:
        ids = tuple(entry["id"] for entry in json.loads(data)["properties"])
    except (ValueError, KeyError, TypeError):
        raise Refused(f"--properties {path}: not a readable properties pin at the base") from None
    return hashlib.sha256(data).hexdigest(), ids


def _own_code_problem(root: Path) -> str | None:
    try:
        refuse_code_from_root(root)
    except Refused as exc:
        return _one_line(exc)
    return None


def read_evidence(path: Path, kind: type[RecordT]) -> Reading[RecordT]:
    try:
        ledger = read_ledger(path, kind)
    except Refused as exc:
        return Reading(path, _sha256_or_none(path), None, _one_line(exc))
    return Reading(path, ledger.sha256, ledger.record)


def _sha256_or_none(path: Path) -> str | None:
    """The sha256 of an invalid ledger's bytes, so the decision records what was rejected."""
    try:
        return hashlib.sha256(jsonio.read_bytes_capped(path, "ledger")).hexdigest()
    except Refused:
        return None


def _one_line(error: Refused) -> str:
    return "; ".join([error.message, *error.details])


def _live_tree(pin_path: Path, root: Path) -> LiveTree:
    try:
        pin = load_fixture_pin(pin_path)
        live = live_digest(root, pin)
        refuse_unreviewed(root, pin, live, None)
    except Refused as exc:
        return LiveTree(pin_path, None, None, _one_line(exc))
    return LiveTree(pin_path, pin.pin_id, live.digest)


def _pin_changes(sources: Sources) -> PinChanges | None:
    if sources.pins_dir is None or sources.base is None:
        return None
    try:
        changed = git.changed_since(sources.root, sources.base, sources.pins_dir)
    except Refused as exc:
        return PinChanges(sources.pins_dir, sources.base, (), _one_line(exc))
    if not changed and not sources.pins_dir.is_dir():
        # A mistyped --pins-dir would otherwise report "nothing moved".
        problem = "not a folder, and git lists nothing under it"
        return PinChanges(sources.pins_dir, sources.base, (), problem)
    return PinChanges(sources.pins_dir, sources.base, tuple(changed))


def _flake_pin_view(sources: Sources) -> FlakePinView | None:
    if sources.flake_pin is None:
        return None
    try:
        pin = load_flake_pin(sources.flake_pin)
    except Refused as exc:
        return FlakePinView(sources.flake_pin, None, _one_line(exc))
    if sources.base is None:
        return FlakePinView(sources.flake_pin, pin)
    try:
        unaccepted = pin.unaccepted(sources.root, sources.base)
    except Refused as exc:
        unaccepted = {entry.test_id: _one_line(exc) for entry in pin.flakes}
    return FlakePinView(sources.flake_pin, pin, None, unaccepted)


def _decision(evidence: Evidence, verdict: Verdict) -> MergeDecision:
    dual_pin = evidence.dual_pin
    inputs = MergeInputs(
        fixture=evidence.fixture.sha256,
        property=evidence.prop.sha256,
        dual_pin=dual_pin.sha256 if dual_pin is not None else None,
        flakes=tuple(r.sha256 for r in evidence.flakes if r.sha256 is not None),
    )
    return MergeDecision(
        ledger_id=new_ledger_id(),
        posture=verdict.posture,
        row=verdict.row,
        reason=verdict.reason,
        inputs=inputs,
        recorded_at=fresh_recorded_at(stamp for _, stamp in ledger_stamps(evidence)),
    )


def _report(evidence: Evidence, verdict: Verdict, env: Mapping[str, str], sources: Sources) -> None:
    print(verdict_text(evidence, verdict), end="")
    step_summary = env.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        text = summary_markdown(evidence, verdict, sources)
        warning = append_step_summary(Path(step_summary), text)
        if warning is not None:
            print(f"three-ledger: {warning}", file=sys.stderr)
    if verdict.posture is Posture.REJECT and env.get("GITHUB_ACTIONS") == "true":
        print(error_annotation(verdict))
