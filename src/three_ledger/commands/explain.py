"""`three-ledger explain LEFT RIGHT`: which pinned files moved between two fixture ledgers (4.8).

Stdout holds one line per moved path (see `FileChange.line`); the verdict goes to stderr.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.fixture_diff import FileChange, file_changes, repeated_paths
from three_ledger.ledgers import FixtureLedger, read_ledger


def explain(*, left_path: Path, right_path: Path) -> int:
    left = _read(left_path)
    right = _read(right_path)
    changes = file_changes(left.files, right.files)
    for change in changes:
        print(change.line())
    for line in _verdict(left, right, changes):
        print(f"three-ledger: {line}", file=sys.stderr)
    if left.digest == right.digest and not changes:
        return ExitCode.OK
    # Equal digests over different file lists cannot both be honest: that is not "equal".
    return ExitCode.LEDGERS_DIFFER


def _read(path: Path) -> FixtureLedger:
    ledger = read_ledger(path, FixtureLedger).record
    repeated = repeated_paths(ledger.files)
    if repeated:
        raise Refused(f"{path}: $.files: {repeated[0]!r} is listed more than once")
    return ledger


def _verdict(left: FixtureLedger, right: FixtureLedger, changes: list[FileChange]) -> list[str]:
    lines = []
    if left.pin_id != right.pin_id:
        lines.append(f"note: the ledgers come from different pins ({left.pin_id}, {right.pin_id})")
    if left.digest == right.digest and not changes:
        return [*lines, f"digests are equal ({left.digest}): no pinned file moved"]
    counts = Counter(change.kind for change in changes)
    summary = ", ".join(f"{counts[kind]} {kind}" for kind in ("added", "removed", "changed"))
    if left.digest == right.digest:
        lines.append(
            f"digests are equal but the file lists differ ({summary}): one ledger does not "
            "describe the bytes it was written from (edited or forged); trust neither"
        )
    elif not changes:
        lines.append(
            f"digests differ ({left.digest} -> {right.digest}) but the file lists are equal: "
            "one ledger does not describe the bytes it was written from (edited or forged); "
            "trust neither"
        )
    else:
        lines.append(f"digests differ ({left.digest} -> {right.digest}): {summary}")
    return lines
