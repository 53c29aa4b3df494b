"""`three-ledger merge`: load the evidence, apply the merge table, write the decision (4.5).

Every problem with a ledger becomes a `reject` decision (exit 1); only an output path merge
may not write is a refusal (exit 2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import assert_never

from three_ledger import git, jsonio
from three_ledger.digest import live_digest, refuse_unreviewed
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.isolation import refuse_code_from_root
from three_ledger.ledgers import FixtureLedger, PropertyLedger, RecordT, read_ledger
from three_ledger.merge_table import (
    Evidence,
    FlakePinView,
    LiveTree,
    PinChanges,
    Reading,
    TreeBinding,
    Verdict,
    decide,
)
from three_ledger.other_ledgers import DualPinLedger, FlakeEvidenceLedger, FlakeLedger
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import load_fixture_pin, load_flake_pin, utc_today
from three_ledger.report.posture import (
    error_annotation,
    merge_property_cases,
    summary_markdown,
    verdict_text,
)
from three_ledger.vocabulary import Posture
from three_ledger.workflow.decision_files import (
    DecisionReport,
    ReportFiles,
    append_step_summary,
    write_decision,
    write_reports,
)


@frozen
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
    # For `gate`: why a ledger of its chain is absent (the step that refused, its first line).
    why_missing: Mapping[Path, str] = field(default_factory=dict)
    flake_evidence: Path | None = None

    def ledgers(self) -> list[Path]:
        optional = [path for path in (self.dual_pin, self.flake_evidence) if path is not None]
        return [self.fixture, self.prop, *optional, *self.flakes]

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
    flake_evidence_path: Path | None = None,
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
        flake_evidence=flake_evidence_path,
    )
    files = ReportFiles(summary_md, verdict_junit, verdict_dotenv)
    refuse_unwritable_outputs(sources, out, files)
    # Read once: the merge table and every report use this one record.
    flake_pin = read_flake_pin(sources.flake_pin)
    return exit_code(judge(sources, flake_pin, out, files, env).verdict.posture)


def exit_code(posture: Posture) -> ExitCode:
    """SPEC 2: reject exits 1; both review postures exit 0."""
    match posture:
        case Posture.REJECT:
            return ExitCode.REJECT
        case Posture.HUMAN_REVIEW | Posture.REVIEW:
            return ExitCode.OK
        case _:
            assert_never(posture)


@frozen
class Judgement:
    evidence: Evidence
    verdict: Verdict


def judge(
    sources: Sources,
    flake_pin: FlakePinView | None,
    out: Path,
    files: ReportFiles,
    env: Mapping[str, str],
) -> Judgement:
    """Read the evidence, apply the table, write the decision and its reports, report it.

    The outputs have been checked (`refuse_unwritable_outputs`); FLAKE_PIN is
    `sources.flake_pin` as read once for this run (`read_flake_pin`).
    """
    evidence = gather(sources, flake_pin)
    verdict = decide(evidence)
    summary = summary_markdown(evidence, verdict)
    prop = evidence.prop.record
    duration_s = prop.duration_ms / 1000 if prop is not None else 0.0
    report = DecisionReport(verdict, summary, merge_property_cases(evidence), (), duration_s)
    with nothing_left_on_failure(out):
        write_decision(out, verdict, evidence)
        write_reports(files, report, out)
    print(verdict_text(evidence, verdict), end="")
    append_step_summary(env, summary)
    if verdict.posture is Posture.REJECT and env.get("GITHUB_ACTIONS") == "true":
        from three_ledger.console_guard import command

        command(error_annotation(verdict) + "\n")
    return Judgement(evidence, verdict)


def read_flake_pin(path: Path | None) -> FlakePinView | None:
    """The flake pin, read once per run; a pin that cannot be read keeps why (merge row 4)."""
    if path is None:
        return None
    try:
        return FlakePinView(path, load_flake_pin(path))
    except Refused as exc:
        return FlakePinView(path, None, _one_line(exc))


def refuse_unwritable_outputs(sources: Sources, out: Path, files: ReportFiles) -> None:
    """Exit 2 for an output that is an input, a pin, or inside a pin folder (SPEC 3)."""
    outputs = [Output("--out", out), *files.outputs()]
    refuse_unwritable(
        outputs, pins=sources.pins(), pins_dir=sources.pins_dir, inputs=sources.ledgers()
    )


def gather(sources: Sources, flake_pin: FlakePinView | None) -> Evidence:
    """Read every ledger and ask every git question; problems are recorded, never raised."""
    return Evidence(
        fixture=_explained(read_evidence(sources.fixture, FixtureLedger), sources),
        prop=_explained(read_evidence(sources.prop, PropertyLedger), sources),
        dual_pin=(
            _explained(read_evidence(sources.dual_pin, DualPinLedger), sources)
            if sources.dual_pin
            else None
        ),
        flakes=tuple(read_evidence(path, FlakeLedger) for path in sources.flakes),
        live=_live_tree(sources.pin, sources.root, sources.base) if sources.pin else None,
        pin_changes=_pin_changes(sources),
        flake_pin=_accepted_at_base(flake_pin, sources),
        today=utc_today(),
        own_code=_own_code_problem(sources.root) if sources.consults_root() else None,
        binding=_tree_binding(sources),
        flake_evidence=(
            read_evidence(sources.flake_evidence, FlakeEvidenceLedger)
            if sources.flake_evidence
            else None
        ),
    )


def _explained(reading: Reading[RecordT], sources: Sources) -> Reading[RecordT]:
    """A ledger the chain did not write says which step refused, and its first line."""
    why = sources.why_missing.get(reading.path)
    if why is None or reading.sha256 is not None:
        return reading
    return Reading(reading.path, None, None, f"{reading.path}: not written: {why}")


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


def _live_tree(pin_path: Path, root: Path, base: str | None) -> LiveTree:
    """The tree under ROOT as `digest --base BASE` sees it; a refusal is kept (merge row 1)."""
    try:
        pin = load_fixture_pin(pin_path)
        live = live_digest(root, pin)
        refuse_unreviewed(root, pin, live, base)
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


def _accepted_at_base(view: FlakePinView | None, sources: Sources) -> FlakePinView | None:
    """VIEW with each entry whose accepted_revision fails the base (SPEC 3.3), given --base."""
    if view is None or view.pin is None or sources.base is None:
        return view
    try:
        unaccepted = view.pin.unaccepted(sources.root, sources.base)
    except Refused as exc:
        unaccepted = {entry.test_id: _one_line(exc) for entry in view.pin.flakes}
    return dataclasses.replace(view, unaccepted=unaccepted)
