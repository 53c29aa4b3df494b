"""The product code of the example: reading orders and computing their totals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Order = dict[str, Any]


def load_orders(path: Path) -> list[Order]:
    orders: list[Order] = json.loads(path.read_text(encoding="utf-8"))["orders"]
    return orders


def order_total(order: Order) -> int:
    """The order's total in cents: the sum of quantity times unit price over its lines."""
    return sum(line["quantity"] * line["unit_price_cents"] for line in order["lines"])


def sort_orders(orders: list[Order]) -> list[Order]:
    """Orders by id, so that reports list them the same way on every machine."""
    return sorted(orders, key=lambda order: order["id"])


def dumps_orders(orders: list[Order]) -> str:
    return json.dumps({"orders": orders}, ensure_ascii=False, sort_keys=True)


def summarise(orders: list[Order]) -> dict[str, int]:
    return {"count": len(orders), "total_cents": sum(order_total(order) for order in orders)}
