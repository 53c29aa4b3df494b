"""What a property ledger says about failures, in words: the tests behind each miss, why a
missing property is missing, and the failures outside every property. `properties` prints
them; `merge` reports them.
"""

from __future__ import annotations

import re

from three_ledger.frozen import frozen
from three_ledger.ledgers import PropertyLedger
from three_ledger.paths import neutral


@frozen
class Finding:
    """A headline (a property miss, or the failures outside every property) and its tests.

    `tests` pairs each test id with its outcome ("" where the ledger keeps none); `more`
    counts the tests the ledger does not name.
    """

    headline: str
    tests: tuple[tuple[str, str], ...] = ()
    more: int = 0


def findings(ledger: PropertyLedger) -> list[Finding]:
    """Every property that is not `pass`, with its first failing tests; then unpinned failures;
    then the files the run read that git ignores."""
    found = [_miss(ledger, property_id) for property_id in ledger.failing_ids()]
    unpinned = ledger.unpinned_failures
    if unpinned.count:
        noun = "test" if unpinned.count == 1 else "tests"
        found.append(
            Finding(
                f"{unpinned.count} {noun} outside every property failed",
                tuple((test_id, "") for test_id in unpinned.first_ids),
                unpinned.count - len(unpinned.first_ids),
            )
        )
    if ledger.untracked_reads:
        found.append(_untracked_reads(ledger.untracked_reads))
    return found


# The files the run read that git ignores, named before they are counted.
UNTRACKED_SHOWN = 5


def _untracked_reads(paths: tuple[str, ...]) -> Finding:
    """mistune's trial: a pass that rested on a git-ignored file said so in the ledger alone.
    Such a file moves no oracle (a clean checkout has none of it); it is named, so that a
    person knows what a run on a clean checkout, as in CI, would lack."""
    count = len(paths)
    noun, them = ("file", "it") if count == 1 else ("files", "them")
    return Finding(
        f"the run read {count} {noun} git ignores: a clean checkout, as in CI, lacks {them}",
        tuple((path, "") for path in paths[:UNTRACKED_SHOWN]),
        count - min(count, UNTRACKED_SHOWN),
    )


def _miss(ledger: PropertyLedger, property_id: str) -> Finding:
    status = ledger.status_by_id[property_id]
    reason = ledger.missing_reasons.get(property_id)
    tests = ledger.failing_tests.get(property_id, ())
    return Finding(
        f"{property_id} is {status}: {reason}" if reason else f"{property_id} is {status}",
        tuple((test.id, _how(test.outcome, test.reason)) for test in tests),
        ledger.failing_count(property_id) - len(tests),
    )


def tests_counted(ledger: PropertyLedger, property_id: str) -> str:
    """How many tests the property counted, in words ("42 tests"); "" when not recorded."""
    count = ledger.tests_matched.get(property_id)
    if count is None:
        return ""
    return "1 test" if count == 1 else f"{count} tests"


def status_lines(ledger: PropertyLedger) -> list[str]:
    """One line per property: its status, its id and how many tests it counted."""
    lines = []
    for property_id, status in ledger.status_by_id.items():
        counted = tests_counted(ledger, property_id)
        lines.append(
            f"{status:8} {property_id} ({counted})" if counted else f"{status:8} {property_id}"
        )
    return lines


def _how(outcome: str, reason: str | None) -> str:
    return f"{outcome}: {reason}" if reason else outcome


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def one_line(value: str) -> str:
    """VALUE with every control character shown as an escape: a console line stays one line,
    and none reads as a GitHub workflow command (`paths.neutral`)."""
    return neutral(_CONTROL.sub(lambda match: repr(match.group(0))[1:-1], value))


def plain_lines(found: list[Finding]) -> list[str]:
    """Each headline, then its tests indented below it, one per line; a test id (a file name
    of the change's, a parameter) cannot break its line or forge another."""
    lines = []
    for finding in found:
        lines.append(one_line(f"{finding.headline}:" if finding.tests else finding.headline))
        lines += [
            one_line(f"  {test_id} ({outcome})" if outcome else f"  {test_id}")
            for test_id, outcome in finding.tests
        ]
        if finding.more > 0:
            lines.append(f"  ... and {finding.more} more")
    return lines
