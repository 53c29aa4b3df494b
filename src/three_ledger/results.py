"""Test results as the gate reads them (plugin JSON lines or JUnit XML), and the statuses they give.

SPEC section 4.2 steps 6-7 and section 6 are the contract for everything here.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.selection import (
    ExpectedSkip,
    Selectors,
    TestsRequirement,
    count_matched,
    held,
    selector_tuple,
    selects,
)
from three_ledger.vocabulary import Outcome, Status, status_of, worst

if TYPE_CHECKING:
    from three_ledger.ledgers import FailingTest

# `ledgers`, whose records are costly to make at import, is imported only where a score or
# a ledger's text is made.

_OUTCOME_NAMES = ", ".join(outcome.value for outcome in Outcome)
_OUTCOME_BY_NAME = {outcome.value: outcome for outcome in Outcome}
# How many non-pass tests a property's report names (stderr, ledger, summary).
FAILING_SHOWN = 3
# How many ids of failing tests outside every property the ledger keeps.
UNPINNED_SHOWN = 20


# One per test, so a dataclass with slots, which take less memory (docs/design.md), and an
# `__init__` of its own (below).
@dataclass(frozen=True, slots=True, init=False)
class TestResult:
    """One test's outcome. `aliases` are other ids it answers to (JUnit's `classname.name`).

    `groups` is None for the plugin's results, whose ids are pytest node ids: every `::` in
    them is a boundary. A JUnit result lists instead the only prefixes that select it along
    with others (its file and its classname), because a `::` inside a title is no boundary.
    """

    __test__: ClassVar[bool] = False  # a record, not a test class for pytest to collect

    id: str
    property_ids: tuple[str, ...]
    outcome: Outcome
    aliases: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None
    # Why it skipped, as the runner reported it; None unless the outcome is `skip`.
    skip_reason: str | None = None
    # Whether its `fail` is an expected failure (xfail) the runner reported; False otherwise.
    xfail: bool = False

    def __init__(
        self,
        id: str,
        property_ids: tuple[str, ...],
        outcome: Outcome,
        aliases: tuple[str, ...] = (),
        groups: tuple[str, ...] | None = None,
        skip_reason: str | None = None,
        xfail: bool = False,
    ) -> None:
        """The dataclass's `__init__`, each field set through its slot's own setter: a frozen
        dataclass sets each through `object.__setattr__`, which made one result cost some
        11,000 instructions, and a run reads one per test (20,000 in 222 million; 143 now)."""
        set_id, set_ids, set_outcome, set_aliases, set_groups, set_reason, set_xfail = (
            _RESULT_SETTERS
        )
        set_id(self, id)
        set_ids(self, property_ids)
        set_outcome(self, outcome)
        set_aliases(self, aliases)
        set_groups(self, groups)
        set_reason(self, skip_reason)
        set_xfail(self, xfail)

    def matches(self, selector: str) -> bool:
        """True when `selector` selects this result by its id or one of its aliases."""
        if self.groups is None and not self.aliases:  # a plugin result: its node id alone
            return selects(selector, self.id) or (
                self.outcome is Outcome.ERROR and held(selector, self.id)
            )
        names = (self.id, *self.aliases)
        if self.groups is None:
            return any(selects(selector, name) for name in names)
        wanted = normalised(selector)
        if "*" in wanted:
            return any(selects(wanted, name) for name in names)
        return (
            wanted in names or wanted in self.groups or any(_parametrised(wanted, n) for n in names)
        )


# Each field's slot setter, in the order of `TestResult.__init__`'s parameters.
_RESULT_SETTERS = tuple(
    TestResult.__dict__[field.name].__set__ for field in dataclasses.fields(TestResult)
)


def answers_for(result: TestResult, property_id: str, selectors: Sequence[str]) -> bool:
    """Whether RESULT answers for a property: marked with its id, or chosen by a selector.

    The one rule of which tests a property counts (SPEC 4.2 step 7): `properties`, `plan`,
    `shard-plan`, `combine` and `vet` all ask it, so none can count differently.
    """
    return property_id in result.property_ids or any(map(result.matches, selectors))


def pinned(
    result: TestResult,
    properties: Mapping[str, Sequence[str]],
    flake_selectors: Sequence[str],
) -> bool:
    """Whether RESULT answers for a pinned property (id: selectors) or a flake entry."""
    return any(
        answers_for(result, property_id, selectors) for property_id, selectors in properties.items()
    ) or any(map(result.matches, flake_selectors))


class _Lookup(ABC):
    """Names and markers looked up by selector: what `ResultIndex` and `CollectedIndex` share.

    A selector without `*` selects a plugin result whose name (id or alias) equals it or
    begins with it and `[` or `::`; in the names sorted, those are three runs found by
    bisection. It also selects the plugin's error of a collector it lies under (`held`),
    looked up by each of its folders and its file. A JUnit result's names are looked up
    the same way, with the selector normalised; its groups, by equality. A selector with
    `*` is matched one by one.
    """

    _plugin: _SortedNames
    _collectors: _SortedNames
    _junit: _SortedNames
    _junit_groups: dict[str, list[int]]
    _by_marker: dict[str, list[int]]
    _selected: dict[str, frozenset[int]]

    def selected(self, selector: str) -> frozenset[int]:
        """The positions of the results SELECTOR selects (`TestResult.matches`)."""
        found = self._selected.get(selector)
        if found is None:
            found = frozenset(self._choose(selector))
            self._selected[selector] = found
        return found

    def _choose(self, selector: str) -> Iterator[int]:
        """Chained, not yielded one by one: a file's selector chooses hundreds of positions,
        and `frozenset` takes them from the runs' slices in C."""
        if "*" in selector:
            return self._matching_one_by_one(selector)
        wanted = normalised(selector)
        return itertools.chain(
            self._plugin.equal_to(selector),
            *map(self._collectors.equal_to, _collector_ids(selector)),
            self._plugin.beginning_with(selector + "["),
            self._plugin.beginning_with(selector + "::"),
            self._junit.equal_to(wanted),
            self._junit_groups.get(wanted, ()),
            self._junit.beginning_with(wanted + "[", ending="]"),
        )

    @abstractmethod
    def _matching_one_by_one(self, selector: str) -> Iterator[int]:
        """The positions of the results SELECTOR, which holds a `*`, selects."""

    def marked(self, property_id: str) -> list[int]:
        """The positions of the results a marker names PROPERTY_ID in."""
        return self._by_marker.get(property_id, [])

    def pinned_positions(
        self, properties: Mapping[str, Sequence[str]], flake_selectors: Sequence[str]
    ) -> set[int]:
        """The positions of the results that answer for a pinned property or a flake entry."""
        positions: set[int] = set()
        for property_id, selectors in properties.items():
            positions.update(self.marked(property_id))
            for selector in selectors:
                positions |= self.selected(selector)
        for selector in flake_selectors:
            positions |= self.selected(selector)
        return positions


class ResultIndex(_Lookup):
    """RESULTS looked up by selector and by marker: the same choice as `answers_for` and
    `TestResult.matches` make one result at a time, without asking every result."""

    def __init__(self, results: Iterable[TestResult]) -> None:
        self.results = list(results)
        plugin: list[tuple[str, int]] = []
        junit: list[tuple[str, int]] = []
        self._junit_groups = {}
        self._by_marker = {}
        for position, result in enumerate(self.results):
            if result.property_ids:
                for property_id in set(result.property_ids):
                    self._by_marker.setdefault(property_id, []).append(position)
            if result.groups is None:
                plugin.append((result.id, position))
                plugin += [(alias, position) for alias in result.aliases]
                continue
            junit.append((result.id, position))
            junit += [(alias, position) for alias in result.aliases]
            for group in result.groups:
                self._junit_groups.setdefault(group, []).append(position)
        self._plugin = _SortedNames(plugin)
        self._junit = _SortedNames(junit)
        self._collectors = _SortedNames(
            [
                (result.id, position)
                for position, result in enumerate(self.results)
                if result.groups is None
                and not result.aliases
                and result.outcome is Outcome.ERROR
                and "::" not in result.id
            ]
        )
        self._selected = {}

    def _matching_one_by_one(self, selector: str) -> Iterator[int]:
        return (i for i, result in enumerate(self.results) if result.matches(selector))

    def answering(self, property_id: str, selectors: Sequence[str]) -> list[TestResult]:
        """The results that answer for a property (`answers_for`), in their order."""
        positions = set(self.marked(property_id))
        for selector in selectors:
            positions |= self.selected(selector)
        return [self.results[i] for i in sorted(positions)]

    def pinned(
        self, properties: Mapping[str, Sequence[str]], flake_selectors: Sequence[str]
    ) -> list[TestResult]:
        """The results that answer for a pinned property or a flake entry (`pinned`), in order."""
        positions = self.pinned_positions(properties, flake_selectors)
        return [self.results[i] for i in sorted(positions)]


class CollectedIndex(_Lookup):
    """A collection's node ids (plugin results: no alias, no group) and their property ids,
    looked up as `ResultIndex` looks up their results, without a result made for each.

    `shard-plan` needs no more of a collected test than these two; at 20,000 tests, making
    a `TestResult` each and indexing those cost some 200 million instructions more.
    """

    def __init__(self, ids: Sequence[str], property_ids: Sequence[tuple[str, ...]]) -> None:
        self._ids = ids
        self._by_marker = {}
        for position, marked in enumerate(property_ids):
            if marked:
                for property_id in set(marked):
                    self._by_marker.setdefault(property_id, []).append(position)
        self._plugin = _SortedNames.of(ids)
        self._junit = _SortedNames.of(())
        self._collectors = _SortedNames.of(())  # a collection holds no error of its own
        self._junit_groups = {}
        self._selected = {}

    def _matching_one_by_one(self, selector: str) -> Iterator[int]:
        # As `TestResult.matches` asks of a plugin result without aliases: its node id alone.
        return (i for i, test_id in enumerate(self._ids) if selects(selector, test_id))


def indexed(results: Sequence[TestResult] | ResultIndex) -> ResultIndex:
    """RESULTS indexed, unless they already are: one index serves every count of a run."""
    return results if isinstance(results, ResultIndex) else ResultIndex(results)


class _SortedNames:
    """Names, each with the position of its result, sorted for lookup by bisection."""

    def __init__(self, pairs: list[tuple[str, int]]) -> None:
        """PAIRS (name, position), in rising positions: sorted by name alone, each name's
        positions stay in that order (the sort is stable), as sorting the pairs would."""
        pairs.sort(key=itemgetter(0))
        self._names = [name for name, _ in pairs]
        self._positions = [position for _, position in pairs]

    @classmethod
    def of(cls, names: Sequence[str]) -> _SortedNames:
        """NAMES, each at its own position: the pairs' order, without a pair made for each."""
        index = cls.__new__(cls)
        index._positions = sorted(range(len(names)), key=names.__getitem__)
        index._names = [names[position] for position in index._positions]
        return index

    def equal_to(self, name: str) -> Iterator[int]:
        """The positions under NAME itself."""
        start = bisect.bisect_left(self._names, name)
        stop = bisect.bisect_right(self._names, name, lo=start)
        return iter(self._positions[start:stop])

    def beginning_with(self, prefix: str, ending: str = "") -> Iterator[int]:
        """The positions under names that begin with PREFIX (and end with ENDING).

        The names that begin with PREFIX are those from PREFIX up to, not including, PREFIX
        with its last character one higher: a run found by two bisections (PREFIX ends with
        `[` or `:`, so that character exists)."""
        start = bisect.bisect_left(self._names, prefix)
        past = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        stop = bisect.bisect_left(self._names, past, lo=start)
        if not ending:
            return iter(self._positions[start:stop])
        names, positions = self._names, self._positions
        return (positions[at] for at in range(start, stop) if names[at].endswith(ending))


def _collector_ids(selector: str) -> list[str]:
    """The ids of the collectors a selector without `*` lies under (`held`): the session,
    each of its folders, and its file."""
    path, inside, _ = selector.partition("::")
    ids = ["."]
    at = path.find("/")
    while at != -1:
        ids.append(path[:at])
        at = path.find("/", at + 1)
    if inside:  # `held`: a selector under the file holds `::` after its path, even `x.py::`
        ids.append(path)
    return ids


def _parametrised(selector: str, name: str) -> bool:
    return name.startswith(selector + "[") and name.endswith("]")


_WHITESPACE = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


def normalised(text: str) -> str:
    """TEXT as XML attribute normalisation leaves it: tab, CR and LF read as spaces.

    A reporter that writes a tab or a newline in an attribute literally loses it on parsing,
    one that writes `&#9;` keeps it: both a JUnit id and the selector compared with it get
    this form.
    """
    return text.replace("\r\n", "\n").translate(_WHITESPACE)


def merge_worst(results: Iterable[TestResult]) -> list[TestResult]:
    """One result per id, first-seen order: the worst outcome, property ids and aliases united."""
    merged: dict[str, TestResult] = {}
    for result in results:
        earlier = merged.get(result.id)
        merged[result.id] = result if earlier is None else _merge_pair(earlier, result)
    return list(merged.values())


def _merge_pair(earlier: TestResult, later: TestResult) -> TestResult:
    groups = None
    if earlier.groups is not None or later.groups is not None:
        groups = _united(earlier.groups or (), later.groups or ())
    outcome = worst((earlier.outcome, later.outcome))
    return TestResult(
        id=earlier.id,
        property_ids=_united(earlier.property_ids, later.property_ids),
        outcome=outcome,
        aliases=_united(earlier.aliases, later.aliases),
        groups=groups,
        skip_reason=earlier.skip_reason or later.skip_reason,
        # Expected only where no failure of either was unexpected.
        xfail=outcome is Outcome.FAIL
        and all(one.xfail for one in (earlier, later) if one.outcome is Outcome.FAIL),
    )


def _united(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


@frozen
class PropertyScore:
    """One property's status, with what explains it.

    `matched` counts the results its selectors and markers matched, `expected_skips` those
    left out as expected skips, `tests` the distinct ids of the rest (the counted results,
    in run order), `non_pass` the first FAILING_SHOWN of the rest that did not pass, in run
    order, `non_pass_count` how many of the rest did not pass, and `missing_reason` why a
    `missing` property is missing (None for any other).
    """

    status: Status
    matched: int
    expected_skips: int
    non_pass: tuple[TestResult, ...]
    tests: tuple[str, ...] = ()
    missing_reason: str | None = None
    non_pass_count: int = 0

    @property
    def tests_matched(self) -> int:
        """How many distinct results the property counted: the ledger's `tests_matched`."""
        return len(self.tests)


# The statuses a pin's unmet TestsRequirement turns into `missing`. A failing or erroring
# test stands: it is the stronger finding, and what `vet` counts as a kill.
_REQUIREMENT_MISSES = frozenset({Status.PASS, Status.SKIP})


def score_properties(
    selectors: Mapping[str, Selectors],
    results: Sequence[TestResult] | ResultIndex,
    expected_skips: Sequence[ExpectedSkip] = (),
    requirements: Mapping[str, TestsRequirement] | None = None,
) -> dict[str, PropertyScore]:
    """Score each property (keyed by id, in input order) from its selectors and markers.

    `pass` only when every matched result passed; else the worst outcome; `missing` when
    nothing matched once expected skips are left out, or when the counted results fall short
    of the property's REQUIREMENTS (pin keys `min_tests`, `tests_sha256`) and none failed or
    errored. A skipped or missing property is not a pass.
    """
    wanted = requirements or {}
    index = indexed(results)
    return {
        property_id: _score(
            property_id,
            selector_tuple(chosen),
            index,
            expected_skips,
            wanted.get(property_id, TestsRequirement()),
        )
        for property_id, chosen in selectors.items()
    }


def property_statuses(
    selectors: Mapping[str, Selectors],
    results: Sequence[TestResult],
    expected_skips: Sequence[ExpectedSkip] = (),
    requirements: Mapping[str, TestsRequirement] | None = None,
) -> dict[str, Status]:
    """The status alone of each property; see `score_properties`."""
    scores = score_properties(selectors, results, expected_skips, requirements)
    return {property_id: score.status for property_id, score in scores.items()}


def _score(
    property_id: str,
    selectors: tuple[str, ...],
    index: ResultIndex,
    expected_skips: Sequence[ExpectedSkip],
    wanted: TestsRequirement,
) -> PropertyScore:
    matched = index.answering(property_id, selectors)
    counted = [r for r in matched if not any(skip.covers(r) for skip in expected_skips)]
    non_pass = tuple(r for r in counted if r.outcome is not Outcome.PASS)
    tests = tuple(dict.fromkeys(result.id for result in counted))
    left_out = len(matched) - len(counted)
    status = status_of(result.outcome for result in counted)
    unmet = wanted.unmet(tests, left_out)
    reason = None
    if status is Status.MISSING:
        reason = "; ".join(unmet) or count_matched(0, left_out)
    elif unmet and status in _REQUIREMENT_MISSES:
        status, reason = Status.MISSING, "; ".join(unmet)
    return PropertyScore(
        status=status,
        matched=len(matched),
        expected_skips=left_out,
        non_pass=non_pass[:FAILING_SHOWN],
        tests=tests,
        missing_reason=reason,
        non_pass_count=len(non_pass),
    )


def matching(
    property_id: str, selectors: Selectors, results: Iterable[TestResult]
) -> list[TestResult]:
    """The results a property answers for: its selectors', and those marked with its id."""
    return ResultIndex(results).answering(property_id, selector_tuple(selectors))


def unpinned_failures(
    selectors: Mapping[str, Selectors],
    flake_selectors: Sequence[str],
    results: Sequence[TestResult] | ResultIndex,
) -> list[TestResult]:
    """Failed or errored results that no property and no flake entry matches, in run order.

    An expected failure (xfail) is none: the project said it fails, and pytest counts it
    apart. Inside a property it still scores `fail` (SPEC 4.2)."""
    index = indexed(results)
    properties = {property_id: selector_tuple(chosen) for property_id, chosen in selectors.items()}
    kept = index.pinned_positions(properties, flake_selectors)
    return [
        result
        for position, result in enumerate(index.results)
        if result.outcome in (Outcome.FAIL, Outcome.ERROR)
        and not result.xfail
        and position not in kept
    ]


def flake_outcomes(
    selectors: Mapping[str, str], results: Sequence[TestResult] | ResultIndex
) -> dict[str, Outcome]:
    """Worst outcome of each flaky test (keyed by test_id) that ran; absent when none matched."""
    index = indexed(results)
    outcomes: dict[str, Outcome] = {}
    for test_id, selector in selectors.items():
        matched = [index.results[i].outcome for i in sorted(index.selected(selector))]
        if matched:
            outcomes[test_id] = worst(matched)
    return outcomes


def read_results_file(path: Path) -> list[TestResult]:
    """Read the plugin's JSON lines, merged worst-first per id (pytest may run twice).

    Every line must be one valid record, or the whole file is refused (InfraFailure, exit 4).
    One exception: a last line without its newline that is not valid JSON or UTF-8 is ignored,
    because a run killed mid-write leaves exactly that, and the lines before it are still
    evidence. `skip_reason` is optional; other keys are ignored.
    """
    return read_results_records(path)[0]


def read_results_records(path: Path) -> tuple[list[TestResult], list[dict[str, Any]]]:
    """`read_results_file`'s results, and the object of each line they were read from, in the
    file's order (the run order's source: `run_order.recorded`), from one reading of the file.
    An unfinished last line that is not a record is in neither."""
    label = f"results file {path}"
    lines = _read_bytes(path, label).split(b"\n")
    # After the final newline, split leaves b"" or the unfinished tail of a killed write.
    complete = lines[:-1]
    records = parsed_together(complete)
    if records is None:  # one line at a time: the first that is not a record is named
        read = [_line(label, number, raw) for number, raw in enumerate(complete, start=1)]
        results = [result for result, _ in read]
        records = [record for _, record in read]
    else:
        results = _results_from_json(label, records)
    if lines[-1]:
        unfinished = _unfinished_line(label, len(lines), lines[-1])
        if unfinished is not None:
            results.append(unfinished[0])
            records = [*records, unfinished[1]]
    if not results:
        raise InfraFailure(f"{label}: empty, so no results could be read")
    return merge_worst(results), records


def _read_bytes(path: Path, label: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InfraFailure(f"{label}: missing, so no results could be read") from None
    except OSError as error:
        raise InfraFailure(f"{label}: {error.strerror}, so no results could be read") from None


def parsed_together(lines: list[bytes]) -> list[dict[str, Any]] | None:
    """Every line's object, parsed in one call as the items of one list (20,000 calls of
    json.loads cost some 40 ms); None where that does not give one object per line, and the
    lines are then read one by one, which names the first that is not a record."""
    try:
        # Decoded strictly first: json.loads of bytes would let UTF-8 surrogates through.
        records: list[Any] = json.loads(f"[{b','.join(lines).decode('utf-8')}]")
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if len(records) != len(lines) or not all(type(record) is dict for record in records):
        return None
    return records


def _unfinished_line(
    label: str, number: int, raw: bytes
) -> tuple[TestResult, dict[str, Any]] | None:
    """The result and the object of a last line without its newline; None where it is not
    JSON, which a killed write leaves."""
    try:
        decoded = _decoded_json(label, number, raw)
    except InfraFailure:
        return None
    return _checked(label, number, decoded)


def _line(label: str, number: int, raw: bytes) -> tuple[TestResult, dict[str, Any]]:
    return _checked(label, number, _decoded_json(label, number, raw))


def _checked(label: str, number: int, decoded: object) -> tuple[TestResult, dict[str, Any]]:
    """The result of one line's object, and the object: `_result_from_json` refuses any
    other value than an object (InfraFailure)."""
    return _result_from_json(label, number, decoded), cast("dict[str, Any]", decoded)


def _decoded_json(label: str, number: int, raw: bytes) -> object:
    where = f"{label}: line {number}"
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InfraFailure(f"{where}: not UTF-8") from None
    except json.JSONDecodeError as error:
        raise InfraFailure(f"{where}: not valid JSON ({error.msg})") from None
    except ValueError:  # an integer past the interpreter's digit limit
        raise InfraFailure(f"{where}: not valid JSON (a number is too long)") from None
    except RecursionError:
        raise InfraFailure(f"{where}: not valid JSON (nested too deeply)") from None


def _results_from_json(label: str, records: list[dict[str, Any]]) -> list[TestResult]:
    """Each record as a result. A record as the plugin writes it is read in one loop, with no
    call per record (this runs for every test of a run); any other goes to
    `_result_from_json`, which names what is wrong with it."""
    results = []
    for number, record in enumerate(records, start=1):
        test_id = record.get("id")
        property_ids = record.get("property_ids")
        name = record.get("outcome")
        outcome = _OUTCOME_BY_NAME.get(name) if type(name) is str else None
        reason = record.get("skip_reason")
        xfail = record.get("xfail")
        if (
            type(test_id) is str
            and test_id
            and type(property_ids) is list
            and (not property_ids or all(type(p) is str for p in property_ids))
            and outcome is not None
            and (reason is None or type(reason) is str)
            and (xfail is None or (xfail is True and outcome is Outcome.FAIL))
        ):
            kept = reason if outcome is Outcome.SKIP else None
            results.append(
                TestResult(test_id, tuple(property_ids), outcome, (), None, kept, xfail is True)
            )
        else:
            results.append(_result_from_json(label, number, record))
    return results


def _result_from_json(label: str, number: int, record: object) -> TestResult:
    if not isinstance(record, dict):
        raise InfraFailure(f"{label}: line {number}: must be a JSON object")
    test_id = record.get("id")
    if not isinstance(test_id, str) or not test_id:
        raise InfraFailure(f"{label}: line {number}: 'id' must be a non-empty string")
    property_ids = record.get("property_ids")
    if not isinstance(property_ids, list) or not all(isinstance(p, str) for p in property_ids):
        raise InfraFailure(f"{label}: line {number}: 'property_ids' must be a list of strings")
    name = record.get("outcome")
    outcome = _OUTCOME_BY_NAME.get(name) if isinstance(name, str) else None
    if outcome is None:
        raise InfraFailure(f"{label}: line {number}: 'outcome' must be one of {_OUTCOME_NAMES}")
    skip_reason = record.get("skip_reason")
    if skip_reason is not None and not isinstance(skip_reason, str):
        raise InfraFailure(f"{label}: line {number}: 'skip_reason' must be a string")
    xfail = record.get("xfail")
    if xfail is not None and (xfail is not True or outcome is not Outcome.FAIL):
        raise InfraFailure(
            f"{label}: line {number}: 'xfail' may only be true, on an outcome of 'fail'"
        )
    return TestResult(
        id=test_id,
        property_ids=tuple(property_ids),
        outcome=outcome,
        skip_reason=skip_reason if outcome is Outcome.SKIP else None,
        xfail=xfail is True,
    )


def scored_fields(
    selectors: Mapping[str, Selectors],
    expected_skips: Sequence[ExpectedSkip],
    flake_selectors: Mapping[str, str],
    results: Sequence[TestResult] | ResultIndex,
    requirements: Mapping[str, TestsRequirement] | None = None,
) -> dict[str, Any]:
    """The property ledger's fields computed from the whole run's results under the pins.

    SELECTORS are each property's by id, FLAKE_SELECTORS each flake entry's by test_id,
    REQUIREMENTS what the pin asks of each property's tests (`min_tests`, `tests_sha256`).
    """
    from three_ledger.ledgers import UnpinnedFailures, ledger_text

    index = indexed(results)
    scores = score_properties(selectors, index, expected_skips, requirements)
    unpinned = unpinned_failures(selectors, list(flake_selectors.values()), index)
    return {
        "status_by_id": {property_id: score.status for property_id, score in scores.items()},
        "flake_results": flake_outcomes(flake_selectors, index),
        "tests_matched": {p: score.tests_matched for p, score in scores.items()},
        "expected_skips_left_out": {
            p: score.expected_skips for p, score in scores.items() if score.expected_skips
        },
        "failing_tests": {
            p: _failing_tests(score) for p, score in scores.items() if score.non_pass
        },
        "failing_counts": {
            p: score.non_pass_count for p, score in scores.items() if score.non_pass
        },
        "missing_reasons": {
            p: score.missing_reason for p, score in scores.items() if score.missing_reason
        },
        "unpinned_failures": UnpinnedFailures(
            count=len(unpinned),
            first_ids=ledger_text([result.id for result in unpinned[:UNPINNED_SHOWN]]),
        ),
    }


def _failing_tests(score: PropertyScore) -> tuple[FailingTest, ...]:
    from three_ledger.ledgers import FailingTest, ledger_text

    return tuple(
        FailingTest(ledger_text([test.id])[0], test.outcome, _reason(test.skip_reason))
        for test in score.non_pass
    )


def _reason(reason: str | None) -> str | None:
    from three_ledger.ledgers import ledger_text

    return None if reason is None else ledger_text([reason])[0]
