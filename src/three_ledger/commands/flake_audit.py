"""`three-ledger flake-audit LEDGER...`: which flake entries never fired, and which always failed.

It reads the property and flake ledgers of past runs (files, or folders searched for
`*.json`), only the keys it needs, so a ledger of an older version is read as far as it
goes: a ledger or key it cannot use is named on stderr, one line each, and left out. The
report goes to stdout; it never writes a pin.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.flake.audit import (
    Audit,
    EntryTally,
    FlakeNote,
    PropertyRun,
    Standing,
    tally,
)
from three_ledger.pins import load_flake_pin
from three_ledger.vocabulary import Outcome

_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
_HEADINGS = {
    Standing.NEVER_FIRED: "never fired (passed in every run): a candidate for removal",
    Standing.ALWAYS_FAILED: (
        "failed every time: a candidate for removal (a flake entry that always fails is a "
        "broken test with a licence)"
    ),
    Standing.FIRED: "fired in some runs, passed in others",
    Standing.TOO_FEW_RUNS: "too few runs to judge",
    Standing.NOT_SEEN: "on the flake pin, in no run read",
}


@dataclass
class _Read:
    """What the ledgers gave: the runs, the flake notes, and what was left out and why."""

    runs: list[PropertyRun] = field(default_factory=list)
    notes: list[FlakeNote] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    other_kinds: Counter[str] = field(default_factory=Counter)


def flake_audit(
    *, ledgers: Sequence[Path], min_runs: int, flake_pin: Path | None, as_json: bool
) -> int:
    pinned = [entry.test_id for entry in load_flake_pin(flake_pin).flakes] if flake_pin else None
    read = _Read()
    for path in _ledger_files(ledgers):
        _read_one(path, read)
    for line in read.skipped:
        print(f"three-ledger: warning: {line}", file=sys.stderr)
    if read.other_kinds:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(read.other_kinds.items()))
        print(f"three-ledger: flake-audit: not read (other kinds): {kinds}", file=sys.stderr)
    audit = tally(read.runs, read.notes, min_runs=min_runs, pinned=pinned)
    print(json.dumps(_as_json(audit, min_runs), indent=2) if as_json else _text(audit, min_runs))
    return ExitCode.OK


def _ledger_files(paths: Sequence[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            yield path
        else:
            raise Refused(f"{path}: no such ledger file or folder")


def _read_one(path: Path, read: _Read) -> None:
    data = jsonio.read_bytes_capped(path, "ledger")
    document = jsonio.parse_json(data, path, "ledger")
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind == "property":
        _property_run(path, document, hashlib.sha256(data).hexdigest(), read)
    elif kind == "flake":
        _flake_note(path, document, hashlib.sha256(data).hexdigest(), read)
    else:
        read.other_kinds[kind if isinstance(kind, str) else "no kind"] += 1


def _property_run(path: Path, document: dict[str, Any], sha256: str, read: _Read) -> None:
    results = document.get("flake_results")
    if results is None:
        read.skipped.append(f"{path}: skipped: no `flake_results` key")
        return
    if not isinstance(results, dict) or not all(v in _OUTCOMES for v in results.values()):
        read.skipped.append(
            f"{path}: skipped: `flake_results` is not an object of test outcomes "
            f"({', '.join(sorted(_OUTCOMES))})"
        )
        return
    read.runs.append(PropertyRun(sha256, results, _clock(path, document, read)))


def _flake_note(path: Path, document: dict[str, Any], sha256: str, read: _Read) -> None:
    test_id, observed = document.get("test_id"), document.get("observed")
    if not isinstance(test_id, str) or observed not in _OUTCOMES:
        key = "test_id" if not isinstance(test_id, str) else "observed"
        read.skipped.append(f"{path}: skipped: no usable `{key}` key")
        return
    cited = document.get("property_ledger_sha256")
    if not isinstance(cited, str):
        read.skipped.append(
            f"{path}: key `property_ledger_sha256` skipped (absent or not a string): the "
            "ledger counts as a run of its own"
        )
        cited = sha256
    read.notes.append(FlakeNote(test_id, observed, cited, _clock(path, document, read)))


def _clock(path: Path, document: dict[str, Any], read: _Read) -> str | None:
    clock = document.get("recorded_at")
    if isinstance(clock, str):
        return clock
    read.skipped.append(f"{path}: key `recorded_at` skipped (absent or not a string)")
    return None


def _text(audit: Audit, min_runs: int) -> str:
    span = (
        f", recorded {audit.first_recorded} to {audit.last_recorded}"
        if audit.first_recorded
        else ""
    )
    lines = [f"flake-audit: {_count(audit.runs, 'run')} read{span}; judged over {min_runs}+ runs"]
    for standing, heading in _HEADINGS.items():
        entries = audit.of(standing)
        if entries:
            lines += ["", f"{heading}:", *(f"  {_entry_line(entry)}" for entry in entries)]
    if not audit.entries:
        lines.append("no flake entry in any run read")
    return "\n".join(lines)


def _entry_line(entry: EntryTally) -> str:
    if entry.runs == 0:
        return f"{entry.test_id}: no run"
    outcomes = ", ".join(f"{name} {count}" for name, count in sorted(entry.outcomes.items()))
    runs = _count(entry.runs, "run")
    return f"{entry.test_id}: did not pass in {entry.fired} of {runs} ({outcomes})"


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _as_json(audit: Audit, min_runs: int) -> dict[str, Any]:
    return {
        "runs": audit.runs,
        "min_runs": min_runs,
        "first_recorded": audit.first_recorded,
        "last_recorded": audit.last_recorded,
        "entries": [
            {
                "test_id": entry.test_id,
                "standing": entry.standing.value,
                "runs": entry.runs,
                "did_not_pass": entry.fired,
                "outcomes": dict(sorted(entry.outcomes.items())),
            }
            for entry in audit.entries
        ],
    }
