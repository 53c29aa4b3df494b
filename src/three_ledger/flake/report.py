"""What `flake-evidence` prints: each candidate's verdict and intervals, the proposals to
paste, and apart from them the evidence on a property's tests, which changes no posture."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import encode
from three_ledger.other_ledgers import CandidateEvidence, FlakeEvidenceLedger

OWNERS_HEADING = "For the test owners (the property miss stands, row 7):"


def report(ledger: FlakeEvidenceLedger, out: Path) -> int:
    for line in lines(ledger):
        print(line)
    print(f"three-ledger: flake evidence written to {out}", file=sys.stderr)
    return ExitCode.OK


def lines(ledger: FlakeEvidenceLedger) -> list[str]:
    seconds = ledger.duration_ms / 1000
    layers = ", ".join(f"{name} {state}" for name, state in ledger.sandbox_layers.items())
    shown = [
        (
            f"flake-evidence: {len(ledger.candidates)} candidate(s), {ledger.runs} reruns in "
            f"{seconds:.1f} s (budget {ledger.budget_s} s); sandbox: {layers or 'none'}"
        )
    ]
    theirs = [c for c in ledger.candidates if c.property_ids]
    ours = [c for c in ledger.candidates if not c.property_ids]
    for candidate in ours:
        shown += candidate_lines(candidate)
    proposals = [c.proposal for c in ours if c.proposal is not None]
    if proposals:
        shown.append(
            "Proposed flake pin entries (paste into the flake pin, fill in every FILL-IN, "
            "add an owner; the schema refuses FILL-IN):"
        )
        shown += [f"  {json.dumps(encode(p), ensure_ascii=False)}" for p in proposals]
    if theirs:
        shown.append(OWNERS_HEADING)
        for candidate in theirs:
            shown += [f"  {line}" for line in candidate_lines(candidate)]
    return shown


def candidate_lines(candidate: CandidateEvidence) -> list[str]:
    head = f"{candidate.id}: {candidate.verdict}"
    if candidate.property_ids:
        head += f" (answers for {', '.join(candidate.property_ids)})"
    shown = [head]
    prefix = f"{candidate.prefix} test(s) ran before it in {candidate.worker}"
    shown.append(f"  {prefix}")
    for mode, tally in candidate.modes.items():
        broken = f", {tally.broken} broke as a whole" if tally.broken else ""
        shown.append(f"  {mode}: {tally.bound or 'no run reached it'}{broken}")
    if candidate.polluter is not None:
        shown.append(f"  likely polluter: {candidate.polluter}")
    shown += _each("  changed its own inputs (restored in the copy): ", candidate.inputs_changed)
    if candidate.unfinished is not None:
        shown.append(f"  unfinished: {candidate.unfinished}")
    return shown


def _each(label: str, paths: Iterable[str]) -> list[str]:
    listed = ", ".join(paths)
    return [f"{label}{listed}"] if listed else []
