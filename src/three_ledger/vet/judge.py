"""How `vet` plans its runs and judges what it saw. Pure functions and records; no I/O.

A *subject* is a set of properties with the same domain files: mutating the domain of one
is mutating the domain of all, so one run serves them all. Each subject goes through its
mutants in a scratch copy of its own (`commands/vet.py` runs up to `--jobs` at once).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence

from three_ledger.frozen import frozen
from three_ledger.other_ledgers import PropertyVet, VetTrial
from three_ledger.pins import FixturePin, Property
from three_ledger.vet.mutations import Files, Kind, Operator, mutants
from three_ledger.vocabulary import Status, VetVerdict

# What makes a mutant killed: the property no longer passes, and says so.
KILLS = frozenset({Status.FAIL, Status.ERROR})
# pytest's exits for a run that broke as a whole: collection errors (a mutant broke an
# import-time loader), an internal error, a conftest.py that failed to load. Every property
# then errors, and the trial is a `crash`: it never makes a property strong.
BROKEN_EXITS = (2, 3, 4)


def domain_files(prop: Property, pin: FixturePin) -> tuple[str, ...]:
    """The pinned paths a property's domain names, sorted (a `dir/` entry: all below it)."""
    chosen: set[str] = set()
    for entry in prop.domain:
        full = pin.domain_path(entry)
        if entry.endswith("/"):
            chosen.update(path for path in pin.files if path.startswith(full))
        elif full in pin.files:
            chosen.add(full)
    return tuple(sorted(chosen))


@frozen
class Subject:
    property_ids: tuple[str, ...]
    files: tuple[str, ...]
    reads: frozenset[str]


def subjects(
    domains: Mapping[str, tuple[str, ...]], reads: Mapping[str, frozenset[str]]
) -> list[Subject]:
    """Properties grouped by identical domain files, in the pin's order."""
    by_files: dict[tuple[str, ...], list[str]] = {}
    for property_id, files in domains.items():
        by_files.setdefault(files, []).append(property_id)
    return [
        Subject(tuple(ids), files, frozenset().union(*(reads[i] for i in ids)))
        for files, ids in by_files.items()
    ]


class Tracker:
    """One subject's way through the operators: the mutants left, each property's trials.

    A property leaves at its first kill. Every well-formed operator comes before every
    malformed one, so a first kill by a well-formed mutant is a strong property's only
    cost, and a weak one is known at its first malformed kill.
    """

    def __init__(self, subject: Subject, originals: Files, first: Sequence[Operator] = ()) -> None:
        self.subject = subject
        self.originals = originals
        self.trials: dict[str, list[VetTrial]] = {pid: [] for pid in subject.property_ids}
        # The entry mutants (FIRST) come before every other operator.
        self._queue: Iterator[tuple[Operator, dict[str, bytes]]] | None = mutants(originals, first)

    def active(self) -> list[str]:
        return [pid for pid, seen in self.trials.items() if not any(map(_killed, seen))]

    def next_mutant(self) -> tuple[Operator, dict[str, bytes]] | None:
        """The next mutant, or None when every property was killed or no operator is left."""
        if not self.active() or self._queue is None:
            return None
        mutant = next(self._queue, None)
        if mutant is None:
            self._queue = None
        return mutant

    def record(
        self,
        operator: Operator,
        files_mutated: int,
        statuses: Mapping[str, Status],
        command_exit: int,
    ) -> None:
        kind = Kind.CRASH if command_exit in BROKEN_EXITS else operator.kind
        for property_id in self.active():
            trial = VetTrial(
                operator=operator.name,
                kind=kind,
                files_mutated=files_mutated,
                status=statuses[property_id],
                command_exit=command_exit,
            )
            self.trials[property_id].append(trial)


def _killed(trial: VetTrial) -> bool:
    return trial.status in KILLS


def judge(
    trials: Sequence[VetTrial], *, files: Sequence[str], reads: frozenset[str], strict: bool
) -> PropertyVet:
    """A property's verdict from its trials, and whether it counts as a gate."""
    killed = [trial for trial in trials if _killed(trial)]
    if any(trial.kind is Kind.WELL_FORMED for trial in killed):
        verdict = VetVerdict.STRONG
    else:
        verdict = VetVerdict.WEAK if killed else VetVerdict.SURVIVED
    unread = tuple(path for path in files if path not in reads)
    counted = verdict is VetVerdict.STRONG or (verdict is VetVerdict.WEAK and not strict)
    return PropertyVet(
        baseline=Status.PASS,
        verdict=verdict,
        gate=counted and len(unread) < len(files),
        operators_tried=tuple(trial.operator for trial in trials),
        killed_by=tuple(trial.operator for trial in killed),
        survived=tuple(trial.operator for trial in trials if trial.status is Status.PASS),
        statuses_seen=_distinct(trial.status for trial in trials),
        trials=tuple(trials),
        domain_files=len(files),
        unread_domain_files=unread,
    )


# How statuses seen under mutation are listed: passing first, then the ways of not passing.
_SHOWN_ORDER = (Status.PASS, Status.SKIP, Status.MISSING, Status.FAIL, Status.ERROR)


def _distinct(statuses: Iterable[Status]) -> tuple[Status, ...]:
    present = set(statuses)
    return tuple(status for status in _SHOWN_ORDER if status in present)


def sample(paths: Iterable[str], count: int) -> list[str]:
    """Up to COUNT paths, the same on every machine: lowest SHA-256 of the path, then sorted.

    Hashing spreads the sample over every folder of the domain rather than its first one.
    """
    ranked = sorted(set(paths), key=lambda path: hashlib.sha256(path.encode()).hexdigest())
    return sorted(ranked[:count])
