"""`flake-audit`'s tally (pure): how each flake entry fared over the runs of past ledgers.

A run is one property ledger (by the sha256 of its bytes, so one artifact kept twice counts
once): its `flake_results` holds the outcome of every listed flake entry that ran, passes
included. A flake ledger adds a run only when the property ledger it cites is not among
those read: it then records one run in which its entry did not pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum

from three_ledger.frozen import frozen
from three_ledger.vocabulary import Outcome

_FAILED = frozenset({Outcome.FAIL.value, Outcome.ERROR.value})


class Standing(Enum):
    """What the runs say of one entry, in the order the report lists them."""

    NEVER_FIRED = "never_fired"
    ALWAYS_FAILED = "always_failed"
    FIRED = "fired"
    TOO_FEW_RUNS = "too_few_runs"
    NOT_SEEN = "not_seen"


@frozen
class PropertyRun:
    """The part of one property ledger the audit reads."""

    sha256: str
    flake_results: Mapping[str, str]
    recorded_at: str | None


@frozen
class FlakeNote:
    """The part of one flake ledger the audit reads."""

    test_id: str
    observed: str
    # The property ledger it cites; its own sha256 when it cites none (an older ledger).
    property_ledger_sha256: str
    recorded_at: str | None


@frozen
class EntryTally:
    test_id: str
    outcomes: Counter[str]
    # Fewer runs than this do not judge the entry (`flake-audit --min-runs`).
    min_runs: int

    @property
    def runs(self) -> int:
        return sum(self.outcomes.values())

    @property
    def fired(self) -> int:
        return self.runs - self.outcomes[Outcome.PASS.value]

    @property
    def standing(self) -> Standing:
        if self.runs == 0:
            return Standing.NOT_SEEN
        if self.runs < self.min_runs:
            return Standing.TOO_FEW_RUNS
        if self.fired == 0:
            return Standing.NEVER_FIRED
        if sum(self.outcomes[name] for name in _FAILED) == self.runs:
            return Standing.ALWAYS_FAILED
        return Standing.FIRED


@frozen
class Audit:
    runs: int
    first_recorded: str | None
    last_recorded: str | None
    entries: tuple[EntryTally, ...]

    def of(self, standing: Standing) -> list[EntryTally]:
        return [entry for entry in self.entries if entry.standing is standing]


def tally(
    property_runs: Iterable[PropertyRun],
    flake_notes: Iterable[FlakeNote],
    *,
    min_runs: int,
    pinned: Sequence[str] | None = None,
) -> Audit:
    """Each entry's outcomes over the runs; PINNED (the flake pin's ids) limits the entries
    to those and adds the ones no run saw."""
    runs: dict[str, PropertyRun] = {run.sha256: run for run in property_runs}
    outcomes: dict[str, Counter[str]] = {}
    for run in runs.values():
        for test_id, outcome in run.flake_results.items():
            outcomes.setdefault(test_id, Counter())[outcome] += 1
    extra: dict[tuple[str, str], FlakeNote] = {}
    for note in flake_notes:
        if note.property_ledger_sha256 not in runs:
            extra.setdefault((note.property_ledger_sha256, note.test_id), note)
    for note in extra.values():
        outcomes.setdefault(note.test_id, Counter())[note.observed] += 1
    ids = sorted(outcomes) if pinned is None else list(pinned)
    clocks = sorted(
        clock
        for clock in [
            *(run.recorded_at for run in runs.values()),
            *(note.recorded_at for note in extra.values()),
        ]
        if clock is not None
    )
    return Audit(
        runs=len(runs) + len({sha for sha, _ in extra}),
        first_recorded=clocks[0] if clocks else None,
        last_recorded=clocks[-1] if clocks else None,
        entries=tuple(
            EntryTally(test_id, outcomes.get(test_id, Counter()), min_runs) for test_id in ids
        ),
    )
