"""The files a merge decision is reported in, written from records for `merge` and `gate`:
the decision ledger, `--summary-md`, `--verdict-junit`, `--verdict-dotenv`, and GitHub's
step summary. The text comes from report/; this module only writes it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger import jsonio
from three_ledger.frozen import frozen
from three_ledger.ledgers import fresh_recorded_at, new_ledger_id, write_ledger
from three_ledger.merge_table import Evidence, Verdict, ledger_stamps
from three_ledger.other_ledgers import MergeDecision, MergeInputs
from three_ledger.outputs import Output
from three_ledger.report.junit_verdict import (
    DecisionCase,
    PropertyCase,
    StepCase,
    dotenv,
    junit_xml,
)
from three_ledger.report.posture import fit_step_summary


@frozen
class ReportFiles:
    """The optional reports of a decision, beside the decision itself, as the user named them."""

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


@frozen
class DecisionReport:
    """What the report files say about one decision."""

    verdict: Verdict
    summary_md: str
    properties: Sequence[PropertyCase]
    # gate's steps; `merge` reports none, and its JUnit has a decision case instead.
    steps: Sequence[StepCase] = ()
    # How long the scored run took (the property ledger's duration_ms), in seconds.
    duration_s: float = 0.0


def write_decision(path: Path, verdict: Verdict, evidence: Evidence | None) -> None:
    """The decision ledger; EVIDENCE None: gate decided before the merge table (no inputs)."""
    write_ledger(path, _decision(verdict, evidence))


def _decision(verdict: Verdict, evidence: Evidence | None) -> MergeDecision:
    if evidence is None:
        inputs, stamps = MergeInputs(None, None, None, ()), []
    else:
        dual_pin = evidence.dual_pin
        inputs = MergeInputs(
            fixture=evidence.fixture.sha256,
            property=evidence.prop.sha256,
            dual_pin=dual_pin.sha256 if dual_pin is not None else None,
            flakes=tuple(r.sha256 for r in evidence.flakes if r.sha256 is not None),
            flake_evidence=(
                evidence.flake_evidence.sha256 if evidence.flake_evidence is not None else None
            ),
        )
        stamps = [stamp for _, stamp in ledger_stamps(evidence)]
    return MergeDecision(
        ledger_id=new_ledger_id(),
        posture=verdict.posture,
        row=verdict.row,
        reason=verdict.reason,
        inputs=inputs,
        recorded_at=fresh_recorded_at(stamps),
    )


def write_reports(files: ReportFiles, report: DecisionReport, decision: Path) -> None:
    """Write each report file the user asked for; the dotenv names the DECISION ledger."""
    verdict = report.verdict
    if files.summary_md is not None:
        jsonio.write_atomic(files.summary_md, report.summary_md)
    if files.verdict_junit is not None:
        case = DecisionCase(verdict.posture, verdict.row, verdict.reason)
        document = junit_xml(case, report.properties, report.steps, report.duration_s)
        jsonio.write_atomic(files.verdict_junit, document.decode("utf-8"))
    if files.verdict_dotenv is not None:
        text = dotenv(verdict.posture, verdict.row, os.fspath(decision))
        jsonio.write_atomic(files.verdict_dotenv, text)


def append_step_summary(env: Mapping[str, str], text: str) -> None:
    """Append TEXT to GitHub's step summary file, when set; a warning when it could not be."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        warning = append_to_step_summary(Path(target), text)
        if warning is not None:
            print(f"three-ledger: {warning}", file=sys.stderr)


def append_to_step_summary(path: Path, text: str) -> str | None:
    """Append TEXT to PATH, cut to stay under 1 MiB; a warning when it could not be (all) added."""
    try:
        existing = path.stat().st_size if path.exists() else 0
        addition = fit_step_summary(existing, ("\n" if existing else "") + text)
        if addition:
            with path.open("a", encoding="utf-8") as stream:
                stream.write(addition)
    except OSError as exc:
        return f"could not append to GITHUB_STEP_SUMMARY {path}: {exc.strerror or exc}"
    if not addition:
        return f"GITHUB_STEP_SUMMARY {path} is full (1 MiB): the report was not added"
    return None
