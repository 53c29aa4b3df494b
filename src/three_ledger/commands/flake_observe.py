"""`three-ledger flake-observe`: record that a pre-listed flaky test fired again (SPEC 4.4).

The flake ledger is the narrowest of the three: it is written only when the fixture and
property evidence already agree, and it never carries a property id or any failing id
other than the one the human flake pin lists.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from three_ledger import git
from three_ledger.errors import FlakeRefused, GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.isolation import refuse_code_from_root
from three_ledger.ledgers import (
    FixtureLedger,
    LedgerFile,
    PropertyLedger,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
    write_ledger,
)
from three_ledger.other_ledgers import FlakeLedger
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import FlakeEntry, FlakePin, load_flake_pin, utc_today
from three_ledger.vocabulary import Outcome

# The six preconditions of SPEC 4.4, as the refusal message names them.
DIGESTS_AGREE = "precondition 1 (valid ledgers whose digests agree)"
ORACLES_INTACT = "precondition 2 (oracles did not move)"
LISTED_AND_CURRENT = "precondition 3 (id listed in the flake pin, review_by not passed)"
NOT_A_PROPERTY = "precondition 4 (id is not a property id)"
OBSERVED = "precondition 5 (this run recorded a non-pass outcome for the id)"
PIN_UNCHANGED = "precondition 6 (flake pin unchanged against the base)"


@contextlib.contextmanager
def _as_flake_refusal(precondition: str) -> Iterator[None]:
    """Turn any refusal into exit 3: the seed gives flake-observe one refusal code."""
    try:
        yield
    except GateError as exc:
        if isinstance(exc, FlakeRefused):
            raise
        refusal = FlakeRefused(f"{precondition} failed: {exc.message}", exc.details)
        refusal.notes.extend(exc.notes)
        raise refusal from exc


def flake_observe(
    *,
    fixture_path: Path,
    property_path: Path,
    flake_pin_path: Path,
    test_id: str,
    out: Path,
    root: Path,
    base: str | None,
) -> int:
    # The --out checks come first and outside the cleanup: an --out that is a pin or an
    # input must be refused, never removed as if it were a stale ledger.
    with _as_flake_refusal("--out check"):
        refuse_unwritable(
            [Output("--out", out)], pins=[flake_pin_path], inputs=[fixture_path, property_path]
        )
    with nothing_left_on_failure(out):
        ledger = _observe(fixture_path, property_path, flake_pin_path, test_id, root, base)
        with _as_flake_refusal("writing the flake ledger"):
            write_ledger(out, ledger)
    print(
        f"flake observed: {test_id} was {ledger.observed} on digest {ledger.fixture_digest} "
        f"(listed by {ledger.flake_pin_id} until {ledger.review_by}); a flake note is not a pass"
    )
    return ExitCode.OK


def _observe(
    fixture_path: Path,
    property_path: Path,
    flake_pin_path: Path,
    test_id: str,
    root: Path,
    base: str | None,
) -> FlakeLedger:
    """Check the six preconditions in order; the first that fails is the refusal."""
    if base is not None:  # only then is ROOT consulted
        with _as_flake_refusal("the gate's own code"):
            refuse_code_from_root(root)
    fixture, prop = _agreeing_ledgers(fixture_path, property_path)
    _refuse_moved_oracles(prop)
    pin, entry = _current_entry(flake_pin_path, test_id, root, base)
    _refuse_property_id(prop, test_id)
    observed = _observed_outcome(prop, test_id)
    if base is not None:
        _refuse_changed_pin(flake_pin_path, root, base)
    return FlakeLedger(
        ledger_id=new_ledger_id(),
        test_id=test_id,
        flake_pin_id=pin.pin_id,
        accepted_revision=entry.accepted_revision,
        review_by=entry.review_by.isoformat(),
        observed=observed,
        fixture_digest=fixture.record.digest,
        property_ledger_sha256=prop.sha256,
        recorded_at=fresh_recorded_at([fixture.record.recorded_at, prop.record.recorded_at]),
    )


def _agreeing_ledgers(
    fixture_path: Path, property_path: Path
) -> tuple[LedgerFile[FixtureLedger], LedgerFile[PropertyLedger]]:
    with _as_flake_refusal(DIGESTS_AGREE):
        fixture = read_ledger(fixture_path, FixtureLedger)
        prop = read_ledger(property_path, PropertyLedger)
    if fixture.record.digest != prop.record.fixture_digest:
        raise FlakeRefused(
            f"{DIGESTS_AGREE} failed: {property_path}: $.fixture_digest "
            f"{prop.record.fixture_digest} is not the digest {fixture.record.digest} "
            f"of {fixture_path}"
        )
    return fixture, prop


def _refuse_moved_oracles(prop: LedgerFile[PropertyLedger]) -> None:
    if prop.record.oracle_moved:
        raise FlakeRefused(
            f"{ORACLES_INTACT} failed: {prop.path}: $.oracle_moved is true: "
            "an edited oracle is reviewed on its own, never explained by a flake note",
            [f"oracle changed: {path}" for path in prop.record.oracle_changes],
        )


def _current_entry(
    flake_pin_path: Path, test_id: str, root: Path, base: str | None
) -> tuple[FlakePin, FlakeEntry]:
    with _as_flake_refusal(LISTED_AND_CURRENT):
        pin = load_flake_pin(flake_pin_path)
    entry = pin.entry(test_id)
    if entry is None:
        raise FlakeRefused(
            f"{LISTED_AND_CURRENT} failed: {flake_pin_path}: {test_id!r} is not listed; "
            "only a human-reviewed flake pin lists a flaky test",
            [_listed_ids(pin, test_id)],
        )
    today = utc_today()
    if entry.expired(today):
        raise FlakeRefused(
            f"{LISTED_AND_CURRENT} failed: {flake_pin_path}: {test_id!r} had review_by "
            f"{entry.review_by.isoformat()}, which passed (today is {today.isoformat()} UTC); "
            "the tool never extends it"
        )
    if base is not None:
        with _as_flake_refusal(LISTED_AND_CURRENT):
            _refuse_unaccepted(pin, entry, root, base)
    return pin, entry


# How many of the pin's ids a refusal names.
_IDS_SHOWN = 10


def _listed_ids(pin: FlakePin, test_id: str) -> str:
    """The pin's test ids, the closest to the mistyped one first."""
    from three_ledger.matching import closest_first

    listed = closest_first(test_id, [entry.test_id for entry in pin.flakes])
    more = len(listed) - _IDS_SHOWN
    shown = ", ".join(listed[:_IDS_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f"{pin.source} lists, closest first: {shown}"


def _refuse_unaccepted(pin: FlakePin, entry: FlakeEntry, root: Path, base: str) -> None:
    """The label must have been accepted at the base or before it (SPEC 3.3)."""
    reason = pin.unaccepted(root, base).get(entry.test_id)
    if reason is not None:
        raise Refused(f"{pin.source}: {entry.test_id!r}: {reason}")


def _refuse_property_id(prop: LedgerFile[PropertyLedger], test_id: str) -> None:
    if test_id in prop.record.status_by_id:
        raise FlakeRefused(
            f"{NOT_A_PROPERTY} failed: {test_id!r} is a property id of {prop.path}: "
            "a flake note cannot explain a property result"
        )


def _observed_outcome(prop: LedgerFile[PropertyLedger], test_id: str) -> Outcome:
    observed = prop.record.flake_results.get(test_id)
    if observed is None:
        raise FlakeRefused(
            f"{OBSERVED} failed: {prop.path}: $.flake_results holds no outcome for "
            f"{test_id!r}: nothing observed, nothing written"
        )
    if observed is Outcome.PASS:
        raise FlakeRefused(
            f"{OBSERVED} failed: {prop.path}: $.flake_results records {test_id!r} as pass: "
            "there is no flake to note"
        )
    return observed


def _refuse_changed_pin(flake_pin_path: Path, root: Path, base: str) -> None:
    with _as_flake_refusal(PIN_UNCHANGED):
        changed = git.changed_since(root, base, flake_pin_path)
    if changed:
        raise FlakeRefused(
            f"{PIN_UNCHANGED} failed: {flake_pin_path} differs from the base {base}: "
            "pin mutation; a flake pin changes only in its own reviewed commit"
        )
