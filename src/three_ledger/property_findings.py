"""What a property ledger says about failures, in words: the tests behind each miss, and
the failures outside every property. `properties` prints them; `merge` reports them.
"""

from __future__ import annotations

from three_ledger.ledgers import PropertyLedger


def miss_lines(ledger: PropertyLedger) -> list[str]:
    """One line per property that is not `pass`, naming the first tests that did not pass."""
    lines = []
    for property_id in ledger.failing_ids():
        status = ledger.status_by_id[property_id]
        tests = ledger.failing_tests.get(property_id, ())
        named = ", ".join(f"{test.id} ({test.outcome})" for test in tests)
        left_out = ledger.expected_skips_left_out.get(property_id, 0)
        if not named:
            named = "no test matched" + (
                f" once {left_out} expected skip(s) were left out" if left_out else ""
            )
        lines.append(f"{property_id} is {status}: {named}")
    return lines


def unpinned_line(ledger: PropertyLedger) -> str | None:
    """`N tests outside every property failed: ...`, or None when none did."""
    unpinned = ledger.unpinned_failures
    if unpinned.count == 0:
        return None
    shown = ", ".join(unpinned.first_ids)
    more = unpinned.count - len(unpinned.first_ids)
    if more > 0:
        shown += f" (and {more} more)"
    noun = "test" if unpinned.count == 1 else "tests"
    return f"{unpinned.count} {noun} outside every property failed: {shown}"
