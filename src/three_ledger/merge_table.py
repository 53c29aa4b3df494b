"""The merge table of SPEC 4.5: a pure function from loaded evidence to (posture, row, reason).

Everything that touches the disk or git happens before `decide` is called; `decide` only
reads the `Evidence` it is given, so each row can be tested on its own.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Generic

from three_ledger.frozen import frozen
from three_ledger.ledgers import FixtureLedger, PropertyLedger, RecordT
from three_ledger.other_ledgers import (
    CandidateEvidence,
    DualPinLedger,
    FlakeEvidenceLedger,
    FlakeLedger,
)
from three_ledger.pins import FlakePin
from three_ledger.plugin.wire import in_the_tests_own_folder
from three_ledger.selection import selects
from three_ledger.vocabulary import FlakeVerdict, OracleModel, Outcome, Posture, RerunMode

# Row 8 for a change that adds test modules beside what is scored: nothing ran them.
UNSCORED_NEW_TESTS = "new tests land unscored: the test owners review them"


@frozen
class Reading(Generic[RecordT]):
    """One ledger file as merge found it: its record, or why it has none."""

    path: Path
    # Of the bytes read, even from an invalid file; None when the file could not be read.
    sha256: str | None
    record: RecordT | None
    problem: str | None = None

    def why_unusable(self) -> str:
        # Read errors already start with the file's path.
        return self.problem or f"{self.path}: not read"


@frozen
class LiveTree:
    """What `--pin` found under ROOT: the pin's id and live digest, or why there is none."""

    pin_path: Path
    pin_id: str | None
    digest: str | None
    problem: str | None = None


@frozen
class PinChanges:
    """Files under `--pins-dir` that differ from `--base`, or why git could not tell."""

    pins_dir: Path
    base: str
    changed: tuple[str, ...]
    problem: str | None = None


@frozen
class FlakePinView:
    """The `--flake-pin` as loaded, and each listed id whose accepted_revision fails the base."""

    path: Path
    pin: FlakePin | None
    problem: str | None = None
    unaccepted: Mapping[str, str] = field(default_factory=dict)


@frozen(kw_only=True)
class TreeBinding:
    """What the ledgers must have been written about: ROOT's HEAD, `--base`'s commit and, with
    `--properties`, that pin's bytes and ids as the base has them; or why git could not tell."""

    head: str | None = None
    base: str | None = None
    pin_sha256: str | None = None
    pin_ids: tuple[str, ...] | None = None
    problem: str | None = None


@frozen
class Evidence:
    fixture: Reading[FixtureLedger]
    prop: Reading[PropertyLedger]
    dual_pin: Reading[DualPinLedger] | None
    flakes: tuple[Reading[FlakeLedger], ...]
    live: LiveTree | None
    pin_changes: PinChanges | None
    flake_pin: FlakePinView | None
    today: datetime.date
    # Why the gate's own code cannot be trusted here (it runs code from ROOT), else None.
    own_code: str | None = None
    binding: TreeBinding | None = None
    # `--flake-evidence`: the reruns of this run's candidates, which a flake note must bear.
    flake_evidence: Reading[FlakeEvidenceLedger] | None = None


@frozen
class Verdict:
    posture: Posture
    row: int
    reason: str


def decide(evidence: Evidence) -> Verdict:
    """Apply the rows in order; the first that matches wins."""
    if evidence.own_code is not None:
        return _reject(1, f"do not score: {evidence.own_code}")
    fixture = evidence.fixture.record
    if fixture is None:
        said = evidence.fixture.why_unusable()
        why = f"{said}{_live_problem(evidence.live, said)}"
        return _reject(1, f"do not score: fixture ledger {why}")
    if (moved := _tree_moved(fixture, evidence.live)) is not None:
        return _reject(1, f"do not score: {moved}")

    # Before the property ledger is read: a pin edited in the change is the first thing to
    # say about it, whatever else is wrong with a ledger scored under that pin.
    if (pins_moved := _pins_moved(evidence.pin_changes)) is not None:
        return _reject(4, f"pin mutation: {pins_moved}")

    prop = evidence.prop.record
    if prop is None:
        return _reject(2, f"do not score: property ledger {evidence.prop.why_unusable()}")
    if (unmatched := _property_unmatched(fixture, prop, evidence.prop.path)) is not None:
        return _reject(2, f"do not score: {unmatched}")

    if (elsewhere := _scored_elsewhere(evidence.binding, prop)) is not None:
        return _reject(2, f"do not score: {elsewhere}")
    if (other_run := _evidence_of_another_run(evidence)) is not None:
        return _reject(2, f"do not score: {other_run}")

    if (shared := _shared_clock(evidence)) is not None:
        return _reject(3, f"writer bug: {shared}")

    if mutation := _pin_mutation(evidence, fixture, prop) or _pin_bytes(evidence.binding, prop):
        return _reject(4, f"pin mutation: {mutation}")

    if prop.oracle_moved:
        return _reject(5, f"review the oracle edit on its own: {_moved_oracles(prop)}")

    if (drift := _dual_pin_problem(evidence.dual_pin, prop)) is not None:
        return _reject(6, drift)

    if misses := sorted(prop.failing_ids()):
        listed = ", ".join(_miss(prop, prop_id) for prop_id in misses)
        return _reject(7, f"property miss stands: {listed}")

    if prop.unscored_new_files:
        listed = ", ".join(prop.unscored_new_files)
        reason = f"{UNSCORED_NEW_TESTS}: {listed}{_flake_note(evidence)}"
        return Verdict(Posture.HUMAN_REVIEW, 8, reason)

    if (unexplained := _unexplained_exit(prop)) is not None:
        return Verdict(Posture.HUMAN_REVIEW, 8, f"{unexplained}{_flake_note(evidence)}")

    dual = evidence.dual_pin.record if evidence.dual_pin else None
    if dual is None or not dual.run:
        why = "no dual-pin ledger" if dual is None else "dual-pin not run"
        reason = f"one pin is weaker evidence: {why}{_flake_note(evidence)}"
        return Verdict(Posture.HUMAN_REVIEW, 8, reason)

    if contradicted := _contradicted_flake_notes(evidence):
        found = "; ".join(
            f"{entry} {_HOW_IT_FAILED[verdict]} (flake-evidence: {verdict.value})"
            for entry, verdict in contradicted.items()
        )
        reason = (
            f"a flake note the reruns contradict: {found}, which no flakiness explains"
            f"{_flake_note(evidence)}"
        )
        return Verdict(Posture.HUMAN_REVIEW, 8, reason)

    reason = (
        f"a person reads the diff: every property passes and pins {dual.left_pin_id} and "
        f"{dual.right_pin_id} agree{_flake_note(evidence)}"
    )
    return Verdict(Posture.REVIEW, 9, reason)


def _evidence_of_another_run(evidence: Evidence) -> str | None:
    """Row 2: a flake evidence ledger that cannot be read, or that reran the candidates of
    another property ledger."""
    reading = evidence.flake_evidence
    if reading is None:
        return None
    record = reading.record
    if record is None:
        return f"flake evidence ledger {reading.why_unusable()}"
    if record.property_ledger_sha256 != evidence.prop.sha256:
        return (
            f"flake evidence ledger {reading.path} reran the candidates of property ledger "
            f"{record.property_ledger_sha256[:12]}, not of {evidence.prop.path}"
        )
    return None


# The verdicts whose reruns failed every time in the run's order: a failure the order
# reproduces each time is no flake, whether or not the test fails alone too.
_HOW_IT_FAILED = {
    FlakeVerdict.CONSISTENT_FAILURE: "failed every rerun, in order and alone",
    FlakeVerdict.ORDER_DEPENDENT_VICTIM: "failed every rerun in the run's order, and passed alone",
    FlakeVerdict.ORDER_DEPENDENT_BRITTLE: (
        "failed every rerun in the run's order and alone, and passed after the same tests reversed"
    ),
}


def _contradicted_flake_notes(evidence: Evidence) -> dict[str, FlakeVerdict]:
    """The flake notes (by entry id) whose test the reruns found failing every time in the
    run's order, with that test's verdict: `consistent_failure`, or an order-dependent
    verdict whose original-order reruns all failed (the red team's leak, which failed every
    time after the tests before it and passed alone, was `review` with its flake note)."""
    reading = evidence.flake_evidence
    view = evidence.flake_pin
    if reading is None or reading.record is None or view is None or view.pin is None:
        return {}
    failing = {
        candidate.id: candidate.verdict
        for candidate in reading.record.candidates
        if candidate.verdict in _HOW_IT_FAILED and _failed_every_time_in_order(candidate)
    }
    selectors = view.pin.selectors()
    noted = [r.record.test_id for r in evidence.flakes if r.record is not None]
    contradicted: dict[str, FlakeVerdict] = {}
    for entry in noted:
        if entry not in selectors:
            continue
        for test, verdict in failing.items():
            if selects(selectors[entry], test):
                contradicted.setdefault(entry, verdict)
    return contradicted


def _failed_every_time_in_order(candidate: CandidateEvidence) -> bool:
    tally = candidate.modes.get(RerunMode.ORIGINAL)
    return tally is not None and 0 < tally.failed == tally.runs - tally.broken


_FAILED = frozenset({Outcome.FAIL, Outcome.ERROR})

# How the closed model measured an oracle it knew nothing else of (`oracle_change_reasons`).
_MEASURED = frozenset({"imported by the run", "executed by the run", "read by the run"})


def _moved_oracles(prop: PropertyLedger) -> str:
    """Row 5's paths; a file the closed model measured says so, and how to make it product:
    a new module of the product's, outside `product_paths`, is an oracle until they hold it
    (pycodestyle's trial: a helper split out of the one module the pin declared)."""
    reasons = prop.oracle_change_reasons
    measured = [path for path in prop.oracle_changes if reasons.get(path) in _MEASURED]
    shown = ", ".join(
        f"{path}: {reasons[path]}" if path in measured else path for path in prop.oracle_changes
    )
    said = f"oracles moved ({shown or 'no path listed'})"
    if measured and prop.oracle_model is OracleModel.CLOSED:
        said += (
            "; a file the run imports, executes or reads is an oracle unless the pin's "
            "product_paths holds it: if it is product, add it there in a pin change first"
        )
        if not all(map(in_the_tests_own_folder, measured)):
            said += (
                "; if it is the tests' (their data outside a tests folder at the top), list it in "
                "oracle_paths, and an edit of it alone goes to the test owners"
            )
    return said


def _unexplained_exit(prop: PropertyLedger) -> str | None:
    """Row 8: the command exited non-zero, yet no test of its results failed, pinned or not.

    Something failed that the results do not show: a runner whose report leaves a failure
    out, a crash after the last test, a report rewritten after it was written (the JUnit
    path trusts the code under test with it). The statuses stand; a person reads the log.
    """
    if prop.command_exit == 0 or prop.unpinned_failures.count:
        return None
    if any(outcome in _FAILED for outcome in prop.flake_results.values()):
        return None
    return (
        f"the command exited {prop.command_exit}, but no test of its results failed: "
        "something failed that the results do not show (read the run's log)"
    )


def _scored_elsewhere(binding: TreeBinding | None, prop: PropertyLedger) -> str | None:
    """Row 2: a property ledger about another commit, base or set of properties."""
    if binding is None:
        return None
    if binding.problem is not None:
        return f"cannot tell which tree the ledgers describe: {binding.problem}"
    if binding.head is not None and prop.head_revision != binding.head:
        return (
            f"the property ledger scored head {prop.head_revision[:12]}, not ROOT's HEAD "
            f"{binding.head[:12]}: a ledger replayed from another commit"
        )
    if binding.base is not None and prop.base_revision != binding.base:
        return (
            f"the property ledger compared oracles with base {prop.base_revision[:12]}, "
            f"not --base {binding.base[:12]}"
        )
    if binding.pin_ids is not None and set(prop.status_by_id) != set(binding.pin_ids):
        extra = sorted(set(prop.status_by_id) - set(binding.pin_ids))
        absent = sorted(set(binding.pin_ids) - set(prop.status_by_id))
        return (
            "the property ledger's status map is not the properties pin's ids at the base "
            f"(not in the pin: {', '.join(extra) or 'none'}; "
            f"not scored: {', '.join(absent) or 'none'})"
        )
    return None


def _pin_bytes(binding: TreeBinding | None, prop: PropertyLedger) -> str | None:
    """Row 4: a ledger written under properties-pin bytes the base does not have."""
    if binding is None or binding.pin_sha256 is None:
        return None
    if prop.property_pin_sha256 == binding.pin_sha256:
        return None
    return (
        f"the property ledger was written under a properties pin whose sha256 is "
        f"{prop.property_pin_sha256[:12]}, but the pin at the base has {binding.pin_sha256[:12]}"
    )


def _reject(row: int, reason: str) -> Verdict:
    return Verdict(Posture.REJECT, row, reason)


# Failing tests a row-7 reason names per property before "and N more".
FIRST_FAILING_TESTS = 3


def _miss(prop: PropertyLedger, prop_id: str) -> str:
    """`ID is STATUS`, then the tests behind it, so the posture line names what to fix."""
    tests = [test.id for test in prop.failing_tests.get(prop_id, ())]
    said = f"{prop_id} is {prop.status_by_id[prop_id]}"
    if not tests:
        return said
    shown = tests[:FIRST_FAILING_TESTS]
    more = prop.failing_count(prop_id) - len(shown)
    # A property that is `skip` names its skipped tests as such (Pygments' trial read
    # "failing" for a product that skipped them).
    how = "skipped" if prop.status_by_id[prop_id] == "skip" else "failing"
    return f"{said} ({how}: {', '.join(shown)}{f' and {more} more' if more > 0 else ''})"


def _tree_moved(fixture: FixtureLedger, live: LiveTree | None) -> str | None:
    """Row 1, second half: with `--pin`, the tree under ROOT must still be F's tree."""
    if live is None:
        return None
    if live.problem is not None or live.digest is None:
        return f"live tree refused under pin {live.pin_path}: {live.problem or 'no digest'}"
    if live.pin_id != fixture.pin_id:
        return f"pin {live.pin_path} is {live.pin_id!r}, the fixture ledger is {fixture.pin_id!r}"
    if live.digest != fixture.digest:
        return f"live digest {live.digest} no longer equals the fixture ledger's {fixture.digest}"
    return None


def _live_problem(live: LiveTree | None, said: str) -> str:
    """Why `--pin` refused the tree under ROOT, often why F is missing: it names the files.
    What SAID already holds (the digest step's refusal, its head) is not said again."""
    if live is None or live.problem is None or live.problem in said:
        return ""
    parts = live.problem.split("; ")
    for count in range(len(parts) - 1, 0, -1):
        if "; ".join(parts[:count]) in said:
            return f"; the tree itself is refused, naming: {_first(parts[count:])}"
    return f"; the tree itself is refused: {_first(parts)}"


# The parts of a refusal the one-line reason carries, at most: the digest step names the rest.
_NAMED_PARTS = 3


def _first(parts: list[str]) -> str:
    """PARTS joined, the first few: chardet's trial had a posture line of 2,500 characters,
    19 moved files long."""
    if len(parts) <= _NAMED_PARTS:
        return "; ".join(parts)
    return f"{'; '.join(parts[:_NAMED_PARTS])}; and {len(parts) - _NAMED_PARTS} more"


def _property_unmatched(fixture: FixtureLedger, prop: PropertyLedger, path: Path) -> str | None:
    if prop.fixture_digest != fixture.digest:
        return (
            f"property ledger {path} scored digest {prop.fixture_digest}, "
            f"not the fixture ledger's {fixture.digest}"
        )
    if not prop.status_by_id:
        # An empty score is a missing score, not a quiet yes.
        return f"property ledger {path} scores no property"
    return None


def _shared_clock(evidence: Evidence) -> str | None:
    """Row 3: two ledgers carrying one `recorded_at` means one writer copied the other."""
    seen: dict[str, Path] = {}
    for path, stamp in ledger_stamps(evidence):
        if stamp in seen:
            return f"{seen[stamp]} and {path} share recorded_at {stamp}"
        seen[stamp] = path
    return None


def ledger_stamps(evidence: Evidence) -> list[tuple[Path, str]]:
    """(path, recorded_at) of every input ledger that could be read."""
    readings: list[Reading[FixtureLedger] | Reading[PropertyLedger] | Reading[DualPinLedger]]
    readings = [evidence.fixture, evidence.prop]
    if evidence.dual_pin is not None:
        readings.append(evidence.dual_pin)
    stamps = [(r.path, r.record.recorded_at) for r in readings if r.record is not None]
    stamps += [(r.path, r.record.recorded_at) for r in evidence.flakes if r.record is not None]
    return stamps


def _pins_moved(changes: PinChanges | None) -> str | None:
    """Row 4, checked first: with `--pins-dir/--base`, a pin moved in the change."""
    if changes is None:
        return None
    if changes.problem is not None:
        return f"cannot tell whether {changes.pins_dir} moved: {changes.problem}"
    if changes.changed:
        listed = ", ".join(changes.changed)
        return f"pins added, changed or removed against {changes.base}: {listed}"
    return None


def _pin_mutation(evidence: Evidence, fixture: FixtureLedger, prop: PropertyLedger) -> str | None:
    """Row 4: a flake ledger the pins and this run do not back."""
    view = evidence.flake_pin
    if view is not None and view.pin is None:
        return f"flake pin {view.path} cannot be read: {view.problem or 'not read'}"
    for reading in evidence.flakes:
        if (problem := _unbacked_flake(reading, fixture, prop, evidence)) is not None:
            return problem
    return None


def _unbacked_flake(
    reading: Reading[FlakeLedger],
    fixture: FixtureLedger,
    prop: PropertyLedger,
    evidence: Evidence,
) -> str | None:
    flake = reading.record
    if flake is None:
        return f"flake ledger {reading.why_unusable()}"
    where = f"flake ledger {reading.path}"
    if (foreign := _foreign_flake(flake, fixture, prop, evidence.prop.sha256)) is not None:
        return f"{where} is not about this run: {foreign}"
    view = evidence.flake_pin
    if view is not None and view.pin is not None:
        return _unlisted_flake(flake, view.pin, view, where, evidence.today)
    return None


def _foreign_flake(
    flake: FlakeLedger, fixture: FixtureLedger, prop: PropertyLedger, prop_sha256: str | None
) -> str | None:
    """A flake note binds itself to one run: this fixture digest and these property bytes."""
    if flake.fixture_digest != fixture.digest:
        return f"its fixture_digest {flake.fixture_digest} is not {fixture.digest}"
    if flake.property_ledger_sha256 != prop_sha256:
        return (
            f"its property_ledger_sha256 {flake.property_ledger_sha256} is not the sha256 "
            f"{prop_sha256} of the property ledger"
        )
    if flake.test_id in prop.status_by_id:
        return f"{flake.test_id!r} is a property id; a flake note cannot explain a property"
    recorded = prop.flake_results.get(flake.test_id)
    if recorded != flake.observed:
        shown = recorded or "no outcome"
        return f"it says {flake.test_id!r} was {flake.observed}; the property ledger has {shown}"
    return None


def _unlisted_flake(
    flake: FlakeLedger, pin: FlakePin, view: FlakePinView, where: str, today: datetime.date
) -> str | None:
    """SPEC 4.5 row 4 with `--flake-pin`: the pin, as it stands, must list the id."""
    if flake.flake_pin_id != pin.pin_id:
        return f"{where} cites flake pin {flake.flake_pin_id!r}, {view.path} is {pin.pin_id!r}"
    entry = pin.entry(flake.test_id)
    if entry is None:
        return f"{where} cites {flake.test_id!r}, which {view.path} does not list"
    if entry.expired(today):
        return (
            f"{where} cites {flake.test_id!r}, whose review_by {entry.review_by.isoformat()} "
            f"in {view.path} has passed (today is {today.isoformat()} UTC)"
        )
    if (flake.accepted_revision, flake.review_by) != (
        entry.accepted_revision,
        entry.review_by.isoformat(),
    ):
        return f"{where} does not match the entry for {flake.test_id!r} in {view.path}"
    if flake.test_id in view.unaccepted:
        return f"{where}: {view.unaccepted[flake.test_id]}"
    return None


def _dual_pin_problem(reading: Reading[DualPinLedger] | None, prop: PropertyLedger) -> str | None:
    """Row 6: drift between the pins, or a dual-pin ledger that is not about this run."""
    if reading is None:
        return None
    dual = reading.record
    if dual is None:
        return f"the dual-pin ledger is not about this run: {reading.why_unusable()}"
    if not dual.run:
        return None
    if prop.fixture_digest not in (dual.left_digest, dual.right_digest):
        return (
            f"the dual-pin ledger is not about this run: {reading.path} cites digests "
            f"{dual.left_digest} and {dual.right_digest}, neither is {prop.fixture_digest}"
        )
    if dual.drift:
        split = ", ".join(
            f"{prop_id} is {diff.left} on {dual.left_pin_id}, {diff.right} on {dual.right_pin_id}"
            for prop_id, diff in sorted(dual.differences.items())
        )
        return f"file fixture drift: {split or 'the pins disagree'}"
    return None


def _flake_note(evidence: Evidence) -> str:
    count = len(evidence.flakes)
    if count == 0:
        return ""
    ids = ", ".join(r.record.test_id for r in evidence.flakes if r.record is not None)
    return f"; {count} flake note(s) ({ids}) attached: a flake note is not a pass"
