"""Which tests `flake-evidence` reruns when none are given (pure): the listed flake entries
that did not pass, the tests behind a failing property and the unpinned failures, in that
order. `gate --flake-evidence` asks the same rule whether there is anything to rerun."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from three_ledger.ledgers import PropertyLedger
from three_ledger.selection import selects
from three_ledger.vocabulary import Outcome


def candidate_reasons(
    record: PropertyLedger,
    orders: Mapping[str, Sequence[str]],
    flaky: Mapping[str, str],
) -> dict[str, str]:
    """Each candidate's node id, with why it is one (`flake_entry`, `property`, `unpinned`).

    ORDERS: each worker's node ids in the order they ran; FLAKY: each flake entry's `test`
    selector by its test_id. A flake entry is rerun as the node ids it selected in the run.
    """
    wanted: dict[str, str] = {}
    for test_id, outcome in record.flake_results.items():
        if outcome is not Outcome.PASS and test_id in flaky:
            for ids in orders.values():
                for node in ids:
                    if selects(flaky[test_id], node):
                        wanted.setdefault(node, "flake_entry")
    for tests in record.failing_tests.values():
        for test in tests:
            wanted.setdefault(test.id, "property")
    for node in record.unpinned_failures.first_ids:
        wanted.setdefault(node, "unpinned")
    return wanted
