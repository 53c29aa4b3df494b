"""The gate's side of the tripwire: where the plugin keeps its record, and what it recorded.

In a pytest run the plugin (`plugin/tripwire.py`) places two sentinel items, one that must
pass and one that must fail, and audits pytest's machinery. Its record holds, for each pytest
session, the sentinels' node ids and how they were made (`sentinels`, or `basic` where the
project's items could not host them), and every change to the machinery by code that may
not make it. A change, a sentinel recorded the opposite way or not at all, no sentinels, or
a session whose sentinels are not one that must pass and one that must fail: the run's
results are not evidence (exit 4). In `--junit-xml` mode there is no plugin to
add them, and the ledger says `tripwire: none`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.plugin.wire import (
    FAILED_DIGESTS_KEY,
    FAILED_IDS_KEY,
    FAILED_KEY,
    MACHINERY_KEY,
    MADE_BY_KEY,
    MECHANISM_KEY,
    PRODUCT_PATHS_ENV,
    SENTINELS_KEY,
    TRIPWIRE_ENV,
    TRIPWIRE_SEED_ENV,
    failed_id_digest,
)
from three_ledger.results import TestResult
from three_ledger.vocabulary import Outcome, Tripwire, weakest_tripwire

# A record holds a few lines; one this large was not written by the plugin.
_MAX_RECORD_BYTES = 16 * 1024 * 1024
_MUSTS = {"pass": Outcome.PASS, "fail": Outcome.FAIL}
_OPPOSITE = {Outcome.PASS: Outcome.FAIL, Outcome.FAIL: Outcome.PASS}


@frozen
class TripwireRecord:
    """What the plugin recorded: each session's sentinels and mechanism, and each finding."""

    sessions: tuple[Mapping[str, Outcome], ...]
    mechanisms: tuple[Tripwire, ...]
    findings: tuple[str, ...]
    # Each session's count of the project's tests pytest reported failing (None: not said),
    # and their node ids (None: not said, or too many to list), or beyond the budget a
    # digest of each (`failed_id_digest`; None: not said, or the ids were).
    failed: tuple[int | None, ...] = ()
    failed_ids: tuple[tuple[str, ...] | None, ...] = ()
    failed_digests: tuple[frozenset[str] | None, ...] = ()


def record_path(private: Path) -> Path:
    """Where the plugin keeps the record of one run, in the run's private folder."""
    return private / "tripwire.jsonl"


def fresh_seed() -> str:
    """Where the sentinels go and what they are called: random for each run."""
    return os.urandom(16).hex()


def environment(record: Path, product_paths: Sequence[str] | None) -> dict[str, str]:
    """What the plugin needs: where to keep the record, the run's seed, and the pin's
    `product_paths`: a module they hold is the product's, never test-side, wherever it lies
    (a package's own `testing/` folder of helpers it ships)."""
    env = {TRIPWIRE_ENV: str(record), TRIPWIRE_SEED_ENV: fresh_seed()}
    if product_paths:
        env[PRODUCT_PATHS_ENV] = json.dumps(list(product_paths))
    return env


def read_record(path: Path) -> TripwireRecord:
    """The record at PATH; InfraFailure when it is missing, too large or malformed."""
    try:
        with path.open("rb") as stream:
            data = stream.read(_MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        data = b""
    if len(data) > _MAX_RECORD_BYTES:
        raise InfraFailure(f"tripwire: its record is over {_MAX_RECORD_BYTES} bytes")
    sessions: list[Mapping[str, Outcome]] = []
    mechanisms: list[Tripwire] = []
    findings: list[str] = []
    failed: list[int | None] = []
    failed_ids: list[tuple[str, ...] | None] = []
    failed_digests: list[frozenset[str] | None] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        line = _line(raw, number)
        if MACHINERY_KEY in line:
            findings.append(_finding(line, number))
        else:
            musts, mechanism = _session(line, number)
            sessions.append(musts)
            mechanisms.append(mechanism)
            failed.append(_failed(line, number))
            failed_ids.append(_failed_ids(line, number))
            failed_digests.append(_failed_digests(line, number))
    return TripwireRecord(
        tuple(sessions),
        tuple(mechanisms),
        tuple(findings),
        tuple(failed),
        tuple(failed_ids),
        tuple(failed_digests),
    )


def _failed(line: Mapping[str, object], number: int) -> int | None:
    count = line.get(FAILED_KEY)
    if count is None:
        return None
    if type(count) is not int or count < 0:
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    return count


def _failed_ids(line: Mapping[str, object], number: int) -> tuple[str, ...] | None:
    ids = line.get(FAILED_IDS_KEY)
    if ids is None:
        return None
    if type(ids) is not list or not all(type(test_id) is str for test_id in ids):
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    return tuple(ids)


def _failed_digests(line: Mapping[str, object], number: int) -> frozenset[str] | None:
    digests = line.get(FAILED_DIGESTS_KEY)
    if digests is None:
        return None
    if type(digests) is not list or not all(map(_is_digest, digests)):
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    return frozenset(digests)


def _is_digest(value: object) -> bool:
    return type(value) is str and len(value) == 32 and set(value) <= _HEX


_HEX = frozenset("0123456789abcdef")


def _line(raw: bytes, number: int) -> dict[str, object]:
    try:
        line = json.loads(raw)
    except ValueError:
        line = None
    if not isinstance(line, dict):
        raise InfraFailure(f"tripwire: line {number} of its record is not a JSON object")
    return line


def _finding(line: Mapping[str, object], number: int) -> str:
    what, by = line.get(MACHINERY_KEY), line.get(MADE_BY_KEY)
    if not isinstance(what, str) or not isinstance(by, str | None):
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    return what if by is None else f"{what}, by {by}"


def _session(line: Mapping[str, object], number: int) -> tuple[dict[str, Outcome], Tripwire]:
    musts, mechanism = line.get(SENTINELS_KEY), line.get(MECHANISM_KEY)
    if not isinstance(musts, dict) or mechanism not in (Tripwire.SENTINELS, Tripwire.BASIC, None):
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    if not all(isinstance(key, str) and value in _MUSTS for key, value in musts.items()):
        raise InfraFailure(f"tripwire: line {number} of its record is malformed")
    made = Tripwire.BASIC if mechanism is None else Tripwire(str(mechanism))
    return {key: _MUSTS[value] for key, value in musts.items()}, made


def checked_and_removed(
    results: Sequence[TestResult], record: TripwireRecord, *, allow_empty: bool = False
) -> tuple[list[TestResult], Tripwire]:
    """RESULTS without the sentinels, once the machinery is shown untouched and each sentinel
    to have its required outcome; and the weakest mechanism of the run's sessions.

    Nothing else recorded is refused, except with ALLOW_EMPTY (a shard's empty slice).
    """
    if record.findings:
        why = (
            "code that patches pytest or unittest can force outcomes: "
            "no result of this run is evidence"
        )
        raise InfraFailure(
            f"the run's machinery was modified: {record.findings[0]}",
            [*record.findings[1:], why],
        )
    sentinels = [session for session in record.sessions if session]
    if not sentinels:
        raise InfraFailure(
            "tripwire: no sentinel was recorded: the pytest session did not finish, or "
            "something removed the gate's plugin, so no result of it is evidence"
        )
    recorded = {result.id: result.outcome for result in results}
    for session in sentinels:
        _as_placed(session)
        for name, must in session.items():
            _check(name, must, recorded.get(name))
    gate_items = {name for session in sentinels for name in session}
    own = [result for result in results if result.id not in gate_items]
    if not own and not allow_empty:
        raise InfraFailure("the run recorded no result besides the tripwire's sentinels")
    _refuse_lost_failures(own, record)
    return own, weakest_tripwire(record.mechanisms)


def _refuse_lost_failures(own: Sequence[TestResult], record: TripwireRecord) -> None:
    """Each session's failing tests, as pytest reported them, are failing in the results
    too (merged worst-first, a test failing in one session fails in them): results holding
    fewer were changed after the plugin wrote them. A run's code can rewrite the results
    file; to pass this check it must find and rewrite the tripwire's record as well."""
    reported = max((count for count in record.failed if count is not None), default=0)
    failing = {result.id for result in own if result.outcome in (Outcome.FAIL, Outcome.ERROR)}
    if len(failing) < reported:
        raise InfraFailure(
            f"pytest reported {reported} of the project's tests failing, the results hold "
            f"{len(failing)}: {_CHANGED}"
        )
    # The count kept, the failures swapped for others: each one pytest named must fail.
    for ids in record.failed_ids:
        lost = next((test_id for test_id in ids or () if test_id not in failing), None)
        if lost is not None:
            raise InfraFailure(
                f"pytest reported {lost} failing, the results do not hold it failing: {_CHANGED}"
            )
    # Too many ids to list: a digest of each, which only a failing test of the results has.
    if any(digests is not None for digests in record.failed_digests):
        held = set(map(failed_id_digest, failing))
        for digests in record.failed_digests:
            lost_count = len((digests or frozenset()) - held)
            if lost_count:
                raise InfraFailure(
                    f"{lost_count} of the tests pytest reported failing (too many to name, "
                    f"each recorded by a digest of its id) are not failing in the results: "
                    f"{_CHANGED}"
                )


_CHANGED = (
    "the results were changed after the plugin wrote them (code under test can rewrite "
    "them), so no result of this run is evidence"
)


def _as_placed(session: Mapping[str, Outcome]) -> None:
    """A session's sentinels must be the two the plugin places: one that must pass, one that
    must fail. Any other set was not made by the plugin, and the results it would take out
    of the run could be the project's own (a real failure passed off as a sentinel's)."""
    musts = sorted(session.values())
    if musts != sorted(_OPPOSITE):
        named = ", ".join(f"{name} must {must}" for name, must in sorted(session.items()))
        raise InfraFailure(
            f"tripwire: a session recorded {len(musts)} sentinels ({named}) where the plugin "
            "places one that must pass and one that must fail: something in this run "
            "tampers with the tripwire, so no result of it is evidence"
        )


def _check(name: str, must: Outcome, seen: Outcome | None) -> None:
    """A sentinel must have run, and its outcome must not be the opposite of what it must do.

    Each shares the fixtures of the project's item beside it: where those break (a fixture
    file `vet` empties, say), it errors as the project's items do, which rewrites nothing. A
    forcing that turns failures into passes still turns the must-fail sentinel's into one.
    """
    if seen is not None and seen is not _OPPOSITE[must]:
        return
    if seen is None:
        found = (
            "was not recorded: the session ended before it ran (`pytest.exit`, `os._exit` or a "
            "crash of the test process), or something in this run rewrites test outcomes"
        )
    else:
        found = f"was recorded as {seen}: something in this run rewrites test outcomes"
    raise InfraFailure(
        f"tripwire: sentinel {name} must {must} but {found}, so no result of it is evidence"
    )
