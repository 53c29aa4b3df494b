"""Property tests of the example, run over the pinned fixture bytes.

three-ledger passes the pinned fixtures folder in THREE_LEDGER_FIXTURES; run by
hand, the tests read ./fixtures.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from orders import dumps_orders, load_orders, order_total, sort_orders, summarise

FIXTURES = Path(os.environ.get("THREE_LEDGER_FIXTURES", Path(__file__).parent.parent / "fixtures"))
FIXTURE_FILES = sorted(path.name for path in FIXTURES.glob("*.json"))
ORDER_ID = re.compile(r"ord-[0-9]{4}")


@pytest.fixture(params=FIXTURE_FILES)
def orders(request: pytest.FixtureRequest) -> list[dict]:
    return load_orders(FIXTURES / request.param)


def test_total_non_negative(orders: list[dict]) -> None:
    for order in orders:
        assert order_total(order) >= 0, order["id"]


def test_total_matches_lines(orders: list[dict]) -> None:
    for order in orders:
        assert order_total(order) == order["total_cents"], order["id"]


def test_id_stable(orders: list[dict]) -> None:
    ids = [order["id"] for order in sort_orders(orders)]
    assert ids == sorted(order["id"] for order in orders)
    assert len(set(ids)) == len(ids)
    assert all(ORDER_ID.fullmatch(order_id) for order_id in ids)


@pytest.mark.property("orders.json.round_trip")
def test_round_trip(orders: list[dict]) -> None:
    assert json.loads(dumps_orders(orders)) == {"orders": orders}


def test_boundary_timeout() -> None:
    """Timing-sensitive on purpose: a loaded CI machine can miss the budget."""
    budget_ms = float(os.environ.get("ORDERS_SUMMARY_BUDGET_MS", "250"))
    orders = load_orders(FIXTURES / "orders_boundary.json")
    started = time.perf_counter()
    for _ in range(2_000):
        summarise(orders)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert elapsed_ms < budget_ms, f"summarising took {elapsed_ms:.1f} ms"
