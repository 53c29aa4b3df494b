"""How a properties pin meets the tests of one run or one collection: what each selector matches.

`plan` shows it before any test runs; `properties` prints its warnings after a run. Both
read the same records: a collected test is a `TestResult` whose outcome is `skip` when its
skip is decided at collection, else `pass`.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from three_ledger.frozen import frozen
from three_ledger.pins import PropertiesPin
from three_ledger.results import (
    PropertyScore,
    ResultIndex,
    TestResult,
    indexed,
    score_properties,
)
from three_ledger.selection import ExpectedSkip, TestsRequirement
from three_ledger.vocabulary import Outcome, Status

# How many matched ids `plan` shows per property, and how many close ids it suggests.
EXAMPLES_SHOWN = 5
SUGGESTIONS_SHOWN = 3
# difflib's ratio below which an id is not offered as "did you mean".
_CLOSENESS = 0.6
_SKIPS_HEADING = (
    "skips that no expected skip accepts (each makes its property `skip`); an entry below, "
    "once reviewed into expected_skips, accepts them:"
)
_PARAMETRISATION = re.compile(r"\[.*\]$", re.DOTALL)


@frozen
class SelectorMatch:
    """One selector and the number of tests it selects; close ids when it selects none."""

    selector: str
    matched: int
    did_you_mean: tuple[str, ...]


@frozen
class PropertyMatch:
    """How one pinned property's selectors match the collected tests."""

    id: str
    score: PropertyScore
    examples: tuple[str, ...]
    selectors: tuple[SelectorMatch, ...]
    # Tests that carry this id in a `@pytest.mark.property` marker.
    marked: int
    # Matched tests that skip (as far as is known) with no expected skip accepting them.
    unaccepted_skips: int
    # Matched tests that fail before they run: in a collection, those marked xfail (an
    # expected failure scores `fail`, so the property cannot pass while it counts them).
    expected_failures: int = 0
    # The first of them, by id.
    expected_failure_examples: tuple[str, ...] = ()
    # Counted tests that an `expected_skips` entry names but that did not skip at collection:
    # one that skips as it runs is left out of the run's count, which `plan` cannot see.
    expected_skips_unseen: int = 0
    # What the pin asks of its tests (`min_tests`, `tests_sha256`); None where it asks neither.
    requirement: TestsRequirement | None = None


@frozen
class SkipSuggestion:
    """An `expected_skips` entry that would accept COUNT skips a property now counts."""

    test: str
    reason: str
    count: int


@frozen
class PinMatch:
    """How a properties pin matches the collected tests, property by property."""

    properties: tuple[PropertyMatch, ...]
    # Property ids found in markers that the pin does not list, with their test counts.
    unknown_markers: dict[str, int]
    expected_skips: tuple[SelectorMatch, ...]
    unlisted_skips: tuple[SkipSuggestion, ...]
    tests: int
    # Tests that no property and no flake entry matches: how many, and the first few.
    outside: int
    outside_examples: tuple[str, ...]

    def unmatched_properties(self) -> list[str]:
        return [prop.id for prop in self.properties if prop.score.matched == 0]

    def missing_properties(self) -> list[str]:
        """The properties that would score `missing` on these tests: those that match none,
        and those whose tests fall short of the pin's `min_tests` or `tests_sha256`."""
        return [prop.id for prop in self.properties if prop.score.status is Status.MISSING]


def match_pin(
    pin: PropertiesPin,
    flake_selectors: Sequence[str],
    results: Sequence[TestResult] | ResultIndex,
) -> PinMatch:
    """Match every selector, marker and expected skip of PIN against RESULTS (the tests of a
    run or a collection, or their index)."""
    index = indexed(results)
    tests = index.results
    scores = score_properties(pin.selectors(), index, pin.expected_skips, pin.requirements())
    candidates = _Candidates([test.id for test in tests])
    kept = index.pinned_positions(pin.selectors(), flake_selectors)
    outside = [test.id for position, test in enumerate(tests) if position not in kept]
    requirements = pin.requirements()
    properties = tuple(
        _property_match(
            prop.id,
            prop.test,
            scores[prop.id],
            index,
            candidates,
            pin.expected_skips,
            requirements.get(prop.id),
        )
        for prop in pin.properties
    )
    return PinMatch(
        properties=properties,
        unknown_markers=_unknown_markers(pin, tests),
        expected_skips=tuple(
            _selector_match(skip.test, index, candidates) for skip in pin.expected_skips
        ),
        unlisted_skips=_unlisted_skips(pin, index),
        tests=len(tests),
        outside=len(outside),
        outside_examples=tuple(outside[:EXAMPLES_SHOWN]),
    )


def _property_match(
    property_id: str,
    selectors: Sequence[str],
    score: PropertyScore,
    index: ResultIndex,
    candidates: _Candidates,
    expected_skips: Sequence[ExpectedSkip],
    requirement: TestsRequirement | None = None,
) -> PropertyMatch:
    matched = index.answering(property_id, selectors)
    failing = [test.id for test in matched if test.outcome is Outcome.FAIL]
    return PropertyMatch(
        id=property_id,
        score=score,
        examples=tuple(test.id for test in matched[:EXAMPLES_SHOWN]),
        selectors=tuple(_selector_match(s, index, candidates) for s in selectors),
        marked=len(index.marked(property_id)),
        unaccepted_skips=sum(1 for test in matched if _unaccepted_skip(test, expected_skips)),
        expected_failures=len(failing),
        expected_failure_examples=tuple(failing[:EXAMPLES_SHOWN]),
        requirement=requirement,
        expected_skips_unseen=_named_by_a_skip(matched, expected_skips),
    )


def _named_by_a_skip(matched: Sequence[TestResult], expected_skips: Sequence[ExpectedSkip]) -> int:
    """How many of MATCHED did not skip at collection though an expected skip names them."""
    if not expected_skips:
        return 0
    return sum(
        1
        for test in matched
        if test.outcome is not Outcome.SKIP
        and any(test.matches(skip.test) for skip in expected_skips)
    )


def _unaccepted_skip(test: TestResult, expected_skips: Sequence[ExpectedSkip]) -> bool:
    return test.outcome is Outcome.SKIP and not any(skip.covers(test) for skip in expected_skips)


def _selector_match(selector: str, index: ResultIndex, candidates: _Candidates) -> SelectorMatch:
    matched = len(index.selected(selector))
    did_you_mean = () if matched else candidates.closest(selector)
    return SelectorMatch(selector, matched, did_you_mean)


def _unknown_markers(pin: PropertiesPin, tests: Sequence[TestResult]) -> dict[str, int]:
    listed = {prop.id for prop in pin.properties}
    found = Counter(p for test in tests for p in test.property_ids if p not in listed)
    return dict(sorted(found.items()))


def _unlisted_skips(pin: PropertiesPin, index: ResultIndex) -> tuple[SkipSuggestion, ...]:
    """Skips of property tests that no expected skip accepts, grouped by class (or file) and reason.

    Each group is an `expected_skips` entry as a reviewer would write it: the class or file
    the tests share, and the reason they skip with.
    """
    groups: Counter[tuple[str, str]] = Counter()
    for test in index.pinned(pin.selectors(), ()):
        if test.skip_reason is not None and _unaccepted_skip(test, pin.expected_skips):
            groups[(_owner(test.id), test.skip_reason)] += 1
    return tuple(SkipSuggestion(test, reason, count) for (test, reason), count in groups.items())


def _owner(test_id: str) -> str:
    """The class or file that holds a test: its id up to the last `::`."""
    owner, separator, _ = _PARAMETRISATION.sub("", test_id).rpartition("::")
    return owner if separator else test_id


class _Candidates:
    """The ids a "did you mean" may offer: every file, class and test, without parameters."""

    def __init__(self, test_ids: Iterable[str]) -> None:
        self.test_ids = test_ids

    @functools.cached_property
    def names(self) -> list[str]:
        # Built on the first "did you mean" only: most runs never need one.
        names: set[str] = set()
        for test_id in self.test_ids:
            parts = _PARAMETRISATION.sub("", test_id).split("::")
            names.update("::".join(parts[: end + 1]) for end in range(len(parts)))
        return sorted(names)

    def closest(self, selector: str) -> tuple[str, ...]:
        """Up to 3 selectors close to SELECTOR, the closest first.

        A selector that begins some ids without ending at a boundary (`::test_minimum` for
        `::test_minimum_low`) is offered with `*` first. Otherwise the offers are close
        ids, or close beginnings of ids with `*` (a typo in a name's first part).
        """
        import difflib  # here: only a selector that matches nothing is offered others

        wanted = selector.replace("*", "")
        if any(name.startswith(wanted) for name in self.names):
            # A folder's name: everything under it, said so (Pygments' trial was offered
            # `tests/examplefiles*`, which `tests/examplefiles_old/` would match too).
            folder = wanted.rstrip("/") + "/"
            if not wanted.endswith("/") and all(
                name.startswith(folder) for name in self.names if name.startswith(wanted)
            ):
                return (f"{folder}*",)
            return (f"{wanted}*",)
        names = self._near(wanted)
        # A beginning cut inside `::`, or that is a whole name, adds nothing to the names.
        beginnings = {name[: len(wanted)] for name in names if len(name) > len(wanted)}
        beginnings = {b for b in beginnings if not b.endswith(":")} - set(names)
        offers = [
            *difflib.get_close_matches(wanted, names, SUGGESTIONS_SHOWN, _CLOSENESS),
            *(
                f"{beginning}*"
                for beginning in difflib.get_close_matches(
                    wanted, sorted(beginnings), SUGGESTIONS_SHOWN, _CLOSENESS
                )
            ),
        ]
        return tuple(closest_first(wanted, offers, strip="*")[:SUGGESTIONS_SHOWN])

    def _near(self, wanted: str) -> list[str]:
        """The names under the longest file or class part of WANTED that exists (speed only)."""
        parts = wanted.split("::")
        for keep in range(len(parts) - 1, 0, -1):
            owner = "::".join(parts[:keep]) + "::"
            near = [name for name in self.names if name.startswith(owner)]
            if near:
                return near
        return self.names


def closest_first(word: str, candidates: Iterable[str], strip: str = "") -> list[str]:
    """CANDIDATES sorted by closeness to WORD (ignoring STRIP characters), closest first."""
    import difflib  # here, as above: a run whose selectors all match never needs it

    def distance(candidate: str) -> tuple[float, str]:
        compared = candidate.replace(strip, "") if strip else candidate
        return (-difflib.SequenceMatcher(None, word, compared).ratio(), candidate)

    return sorted(set(candidates), key=distance)


def warning_lines(match: PinMatch) -> list[str]:
    """What `plan` and `properties` warn about: selectors and markers that meet no test."""
    lines: list[str] = []
    for prop in match.properties:
        for selector in prop.selectors:
            if selector.matched == 0:
                lines.append(f"{prop.id}: selector {selector.selector!r} matches no test")
                lines += _did_you_mean(selector)
    for index, skip in enumerate(match.expected_skips):
        if skip.matched == 0:
            lines.append(f"expected_skips[{index}]: {skip.selector!r} matches no test")
            lines += _did_you_mean(skip)
    for property_id, count in match.unknown_markers.items():
        lines.append(
            f"marker id {property_id!r} ({_tests(count)}) is not a property of the pin: "
            "its tests count for no property"
        )
    return lines


def skip_suggestion_lines(match: PinMatch) -> list[str]:
    """The skips no expected skip accepts, as entries a reviewer may copy into the pin."""
    if not match.unlisted_skips:
        return []
    lines = [_SKIPS_HEADING]
    for suggestion in match.unlisted_skips:
        entry = json.dumps({"test": suggestion.test, "reason": suggestion.reason})
        lines.append(f"  {entry}  ({_tests(suggestion.count)})")
    return lines


def _did_you_mean(selector: SelectorMatch) -> list[str]:
    return [f"  did you mean {name}" for name in selector.did_you_mean]


def _tests(count: int) -> str:
    return f"{count} test" if count == 1 else f"{count} tests"
