"""How a merge decision is reported: the stdout verdict, the Markdown summary and the JUnit
cases of `merge`, the step summary's size limit, GitHub's error annotation. Text only: the
files are written by workflow/decision_files.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from three_ledger.frozen import frozen
from three_ledger.merge_table import Evidence, Reading, Verdict
from three_ledger.other_ledgers import DualPinLedger, FlakeLedger
from three_ledger.report.findings import findings, one_line, plain_lines, tests_counted
from three_ledger.report.junit_verdict import PropertyCase, property_cases
from three_ledger.report.step_summary import SummaryInput, flake_owners, render
from three_ledger.report.workflow_commands import escape_data

# GitHub refuses a step summary file of 1 MiB or more: the addition is cut to stay under.
STEP_SUMMARY_LIMIT = 1024 * 1024
TRUNCATION_NOTE = (
    "\n\n_three-ledger: this report was cut to keep the step summary under 1 MiB; "
    "the full report is the `--summary-md` file._\n"
)


@frozen
class LedgerState:
    """One input ledger as both reports show it; `problem` is set when it could not be used."""

    kind: str
    path: Path
    problem: str | None
    digest: str = ""
    statuses: str = ""
    drift: str = ""
    flakes: str = ""


def ledger_states(evidence: Evidence) -> list[LedgerState]:
    states = [_fixture_state(evidence), _property_state(evidence)]
    if evidence.dual_pin is not None:
        states.append(_dual_pin_state(evidence.dual_pin))
    states += [_flake_state(reading) for reading in evidence.flakes]
    return states


def _fixture_state(evidence: Evidence) -> LedgerState:
    reading = evidence.fixture
    if reading.record is None:
        return LedgerState("fixture", reading.path, reading.problem or "not read")
    digest = f"{reading.record.digest} ({reading.record.pin_id})"
    return LedgerState("fixture", reading.path, None, digest=digest)


def _property_state(evidence: Evidence) -> LedgerState:
    reading = evidence.prop
    prop = reading.record
    if prop is None:
        return LedgerState("property", reading.path, reading.problem or "not read")
    counted = {
        prop_id: f"{status} ({tests})" if (tests := tests_counted(prop, prop_id)) else status
        for prop_id, status in prop.status_by_id.items()
    }
    statuses = _pairs(counted) or "(no property)"
    if prop.oracle_moved:
        statuses += "; oracles moved"
    flakes = _pairs(prop.flake_results)
    return LedgerState("property", reading.path, None, prop.fixture_digest, statuses, "", flakes)


def _dual_pin_state(reading: Reading[DualPinLedger]) -> LedgerState:
    dual = reading.record
    if dual is None:
        return LedgerState("dual-pin", reading.path, reading.problem or "not read")
    if not dual.run:
        return LedgerState("dual-pin", reading.path, None, drift="not run")
    digests = f"{dual.left_digest} ({dual.left_pin_id}) / {dual.right_digest} ({dual.right_pin_id})"
    split = {key: f"{diff.left} vs {diff.right}" for key, diff in dual.differences.items()}
    drift = f"drift: {_pairs(split)}" if dual.drift else "agree"
    return LedgerState("dual-pin", reading.path, None, digest=digests, drift=drift)


def _flake_state(reading: Reading[FlakeLedger]) -> LedgerState:
    flake = reading.record
    if flake is None:
        return LedgerState("flake", reading.path, reading.problem or "not read")
    flakes = f"{flake.test_id}: {flake.observed} (until {flake.review_by})"
    return LedgerState("flake", reading.path, None, digest=flake.fixture_digest, flakes=flakes)


def _pairs(mapping: Mapping[str, str]) -> str:
    return ", ".join(f"{key}: {value}" for key, value in sorted(mapping.items()))


def headline(verdict: Verdict) -> str:
    return f"merge: {verdict.posture.value} (row {verdict.row}): {verdict.reason}"


def verdict_text(evidence: Evidence, verdict: Verdict) -> str:
    """The short stdout report: one line per ledger, then the row that applied and why."""
    lines = [
        f"{state.kind} ledger {state.path}: {_plain_state(state)}"
        for state in ledger_states(evidence)
    ]
    shown = [*lines, *failure_lines(evidence), headline(verdict)]
    return "".join(one_line(line) + "\n" for line in shown)


def _plain_state(state: LedgerState) -> str:
    if state.problem is not None:
        return f"unusable: {state.problem}"
    parts = [
        f"digest {state.digest}" if state.digest else "",
        state.statuses,
        state.drift,
        f"flakes {state.flakes}" if state.flakes else "",
    ]
    return "; ".join(part for part in parts if part)


# What failed, from the property ledger: the tests behind each property miss, and the
# failures outside every property. They do not change the posture; they are for the reader.


def failure_lines(evidence: Evidence) -> list[str]:
    """The stdout lines: each property miss with its first failing tests, then unpinned ones."""
    prop = evidence.prop.record
    return plain_lines(findings(prop)) if prop is not None else []


def fit_step_summary(existing_bytes: int, text: str, limit: int = STEP_SUMMARY_LIMIT) -> str:
    """TEXT, or its head plus a note, so that the file stays under LIMIT bytes; "" if no room."""
    room = limit - 1 - existing_bytes
    data = text.encode("utf-8")
    if len(data) <= room:
        return text
    keep = room - len(TRUNCATION_NOTE.encode("utf-8"))
    if keep <= 0:
        return ""
    # Cutting at a byte count may split a character: drop the broken tail.
    return data[:keep].decode("utf-8", "ignore") + TRUNCATION_NOTE


def summary_markdown(evidence: Evidence, verdict: Verdict) -> str:
    """`merge`'s Markdown report (`--summary-md`, GitHub's step summary)."""
    owners = flake_owners(evidence.flake_pin)
    return render(SummaryInput(verdict, evidence, "three-ledger merge", flake_owners=owners))


def merge_property_cases(evidence: Evidence) -> list[PropertyCase]:
    """One JUnit case per property the property ledger scores; none without one."""
    return property_cases(evidence.prop.record, None, {}, "")


def error_annotation(verdict: Verdict) -> str:
    """One GitHub `::error::` workflow command, its message escaped as the runner expects."""
    return f"::error::{escape_data(f'three-ledger {headline(verdict)}')}"
