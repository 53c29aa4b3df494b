"""`three-ledger dual-pin`: compare one patch's property ledgers from two fixture pins (4.3)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import (
    LedgerFile,
    PropertyLedger,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
    write_ledger,
)
from three_ledger.other_ledgers import DualPinLedger, StatusDifference
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.vocabulary import Status


def dual_pin_not_run(*, out: Path) -> int:
    with nothing_left_on_failure(out):
        write_ledger(out, DualPinLedger.not_run(new_ledger_id(), fresh_recorded_at()))
    print("dual-pin: not run (one pin is weaker evidence)")
    return ExitCode.OK


def dual_pin(*, left_path: Path, right_path: Path, out: Path) -> int:
    refuse_unwritable([Output("--out", out)], inputs=[left_path, right_path])
    with nothing_left_on_failure(out):
        left = read_ledger(left_path, PropertyLedger)
        right = read_ledger(right_path, PropertyLedger)
        refuse_unpaired(left, right)
        differences = status_differences(left.record.status_by_id, right.record.status_by_id)
        ledger = DualPinLedger(
            ledger_id=new_ledger_id(),
            drift=bool(differences),
            left_pin_id=left.record.pin_id,
            right_pin_id=right.record.pin_id,
            left_digest=left.record.fixture_digest,
            right_digest=right.record.fixture_digest,
            differences=differences,
            recorded_at=fresh_recorded_at([left.record.recorded_at, right.record.recorded_at]),
        )
        write_ledger(out, ledger)
    for prop_id, diff in differences.items():
        print(f"drift: {prop_id}: {diff.left} on {left_path}, {diff.right} on {right_path}")
    if differences:
        return ExitCode.DRIFT
    print("dual-pin: the two pins agree")
    return ExitCode.OK


def refuse_unpaired(left: LedgerFile[PropertyLedger], right: LedgerFile[PropertyLedger]) -> None:
    """Refuse two ledgers that are not one patch scored on two real pins."""
    for side in (left, right):
        if side.record.oracle_moved:
            raise Refused(f"{side.path}: $.oracle_moved is true: this ledger is invalid")
    mismatches = [
        (field, "must be equal: both sides must score the same patch with the same properties")
        for field in ("head_revision", "property_pin_sha256")
        if getattr(left.record, field) != getattr(right.record, field)
    ] + [
        (field, "must differ: one ledger replayed is not a second pin")
        for field in ("pin_id", "fixture_digest")
        if getattr(left.record, field) == getattr(right.record, field)
    ]
    if left.record.recorded_at == right.record.recorded_at:
        mismatches.append(("recorded_at", "must differ: equal clocks are a writer bug"))
    if mismatches:
        field, reason = mismatches[0]
        raise Refused(f"{left.path} and {right.path}: $.{field} {reason}")


def status_differences(
    left: Mapping[str, Status], right: Mapping[str, Status]
) -> dict[str, StatusDifference]:
    """Every id whose status differs, `absent` standing in for a missing side; sorted by id."""
    return {
        prop_id: StatusDifference(left.get(prop_id, "absent"), right.get(prop_id, "absent"))
        for prop_id in sorted(left.keys() | right.keys())
        if left.get(prop_id) != right.get(prop_id)
    }
