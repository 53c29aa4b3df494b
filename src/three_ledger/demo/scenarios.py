"""The demo's scenarios as data: what each patch changes, and the merge posture it must end in.

Each scenario starts from the demo repository's base commit (the reviewed pins), applies its
edits, commits them as the change under test, and runs the workflow on that commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

from three_ledger.frozen import frozen
from three_ledger.vocabulary import Posture

ORDERS = "orders.py"
ORACLE = "properties/test_orders.py"
FLAKE_PIN = "pins/flakes.json"
# Pre-listed in the example's flake pin: a wall-clock budget a loaded runner can miss.
LISTED_FLAKE = "orders.boundary.timeout"


@frozen
class Replace:
    """Replace the one occurrence of `old` in a file of the example."""

    path: str
    old: str
    new: str

    def apply(self, root: Path) -> None:
        target = root / self.path
        text = target.read_text(encoding="utf-8")
        if text.count(self.old) != 1:
            # The example and this table ship together: a miss here is a bug in the demo.
            raise ValueError(f"demo patch: {self.path} does not hold {self.old!r} exactly once")
        target.write_text(text.replace(self.old, self.new), encoding="utf-8", newline="")


@frozen
class Write:
    """Create a file (or replace its whole content)."""

    path: str
    text: str

    def apply(self, root: Path) -> None:
        (root / self.path).write_text(self.text, encoding="utf-8", newline="")


@frozen
class AppendFlakeEntry:
    """Append an entry to the flake pin, copying the reviewed entry's revision and date.

    This is what an agent does to make a failure look pre-listed; the copy makes the entry
    look as reviewed as the first one, so only the pin-mutation check can catch it.
    """

    test_id: str
    test: str

    def apply(self, root: Path) -> None:
        target = root / FLAKE_PIN
        pin = json.loads(target.read_text(encoding="utf-8"))
        reviewed = pin["flakes"][0]
        pin["flakes"].append(
            {
                "test_id": self.test_id,
                "test": self.test,
                "accepted_revision": reviewed["accepted_revision"],
                "review_by": reviewed["review_by"],
            }
        )
        target.write_text(json.dumps(pin, indent=2) + "\n", encoding="utf-8")


Edit = Replace | Write | AppendFlakeEntry


@frozen
class Expected:
    posture: Posture
    row: int

    def __str__(self) -> str:
        return f"{self.posture.value} row {self.row}"


@frozen
class Scenario:
    name: str
    # One line: what the patch does and why the gate answers as it does.
    description: str
    edits: tuple[Edit, ...]
    expected: Expected
    # Score the patch on pin B too, and compare the two property ledgers with dual-pin.
    two_pins: bool = False
    # Extra environment for every step of the scenario.
    env: Mapping[str, str] = field(default_factory=dict)


# A behaviour-preserving refactor of the product code: every property still holds.
CLEAN = Replace(
    ORDERS,
    '    return {"count": len(orders), "total_cents": sum(order_total(order) for order in orders)}',
    "    totals = [order_total(order) for order in orders]\n"
    '    return {"count": len(totals), "total_cents": sum(totals)}',
)
_TOTAL = '    return sum(line["quantity"] * line["unit_price_cents"] for line in order["lines"])'
DROP_QUANTITY = Replace(
    ORDERS, _TOTAL, '    return sum(line["unit_price_cents"] for line in order["lines"])'
)
CLAMP_TO_INT32 = Replace(
    ORDERS,
    _TOTAL,
    '    total = sum(line["quantity"] * line["unit_price_cents"] for line in order["lines"])\n'
    "    return min(total, 2**31 - 1)",
)
WEAKEN_ORACLE = Replace(
    ORACLE,
    'assert order_total(order) == order["total_cents"]',
    'assert order_total(order) <= order["total_cents"]',
)
SORT_BY_TOTAL = Replace(
    ORDERS,
    'return sorted(orders, key=lambda order: order["id"])',
    "return sorted(orders, key=order_total)",
)
MOVE_FIXTURE_BYTES = Replace(
    "fixtures/orders_min.json",
    '"quantity": 1, "unit_price_cents": 250}],\n      "total_cents": 250',
    '"quantity": 2, "unit_price_cents": 250}],\n      "total_cents": 500',
)
UNPINNED_FIXTURE = Write(
    "fixtures/orders_refund.json",
    '{"orders": [{"id": "ord-0009", "currency": "EUR", '
    '"lines": [{"sku": "TEA-100", "quantity": -1, "unit_price_cents": 250}], '
    '"total_cents": -250}]}\n',
)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "clean-one-pin",
        "a refactor of summarise(), scored on pin A only: dual-pin not run",
        (CLEAN,),
        Expected(Posture.HUMAN_REVIEW, 8),
    ),
    Scenario(
        "clean-two-pins",
        "the same refactor scored on pins A and B, which agree",
        (CLEAN,),
        Expected(Posture.REVIEW, 9),
        two_pins=True,
    ),
    Scenario(
        "flake-observed",
        f"the same refactor on a slow runner (simulated: ORDERS_SUMMARY_BUDGET_MS=0 for the "
        f"test run), so the pre-listed {LISTED_FLAKE} fails; flake-observe writes a flake note",
        (CLEAN,),
        Expected(Posture.REVIEW, 9),
        two_pins=True,
        env={"ORDERS_SUMMARY_BUDGET_MS": "0"},
    ),
    Scenario(
        "fixture-moved",
        "changes a quantity (and its total) in fixtures/orders_min.json: the reviewed digest "
        "refuses, no fixture ledger, so merge rejects at row 1",
        (CLEAN, MOVE_FIXTURE_BYTES),
        Expected(Posture.REJECT, 1),
    ),
    Scenario(
        "unpinned-fixture",
        "adds fixtures/orders_refund.json, which pin A does not list: digest refuses",
        (CLEAN, UNPINNED_FIXTURE),
        Expected(Posture.REJECT, 1),
    ),
    Scenario(
        "property-broken",
        "order_total() drops the quantity: orders.total.matches_lines fails on both pins",
        (DROP_QUANTITY,),
        Expected(Posture.REJECT, 7),
        two_pins=True,
    ),
    Scenario(
        "oracle-edited",
        "drops the quantity and weakens the test that would catch it: oracles moved",
        (DROP_QUANTITY, WEAKEN_ORACLE),
        Expected(Posture.REJECT, 5),
    ),
    Scenario(
        "pins-drift",
        "clamps totals to 2**31-1: passes on pin A (largest total 2**31-1), fails on pin B "
        "(a total past 2**53)",
        (CLAMP_TO_INT32,),
        Expected(Posture.REJECT, 6),
        two_pins=True,
    ),
    Scenario(
        "flake-pin-mutated",
        "sorts orders by total and appends the broken sort test to pins/flakes.json as "
        "a flake: flake-observe refuses, merge sees the pin mutation",
        (SORT_BY_TOTAL, AppendFlakeEntry("orders.id.sort_flaky", f"{ORACLE}::test_id_stable")),
        Expected(Posture.REJECT, 4),
    ),
)
