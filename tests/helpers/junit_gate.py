"""A small JavaScript library and its orders, and digest, `properties --junit-xml`, merge on
it, as a CI job runs them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import RunCli

# The library under test, and the orders its fixture pin pins (as fixtures/orders.json).
TOTAL_JS = b"""\
function total(order) {
  return order.lines.reduce((sum, line) => sum + line.quantity * line.price, 0);
}
module.exports = { total };
"""
ORDERS_JSON = json.dumps(
    [
        {"id": "ord-0001", "lines": [{"quantity": 2, "price": 3}], "total": 6},
        {"id": "ord-0002", "lines": [], "total": 0},
    ]
).encode()


@dataclass(frozen=True)
class Gate:
    """What the chain ended in: the properties exit, the merge row and posture, the ledger."""

    properties_exit: int
    stderr: str
    row: int
    posture: str
    ledger: dict[str, Any] | None


def junit_gate(run_cli: RunCli, repo: Path, report: Path, command: str = "npm test") -> Gate:
    """Score REPO's pins against `main` from the report COMMAND writes at REPORT, then merge.

    The ledgers go to a folder beside REPO.
    """
    ledgers = repo.parent / "ledgers"
    digest = run_cli(
        "digest", "--pin", repo / "pins/fixtures.json", "--root", repo,
        "--out", ledgers / "f.json",
    )  # fmt: skip
    assert digest.code == 0, digest.err
    scored = run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest.out.strip(),
        "--properties", repo / "pins/properties.json", "--command", command, "--root", repo,
        "--base", "main", "--junit-xml", report, "--out", ledgers / "p.json",
    )  # fmt: skip
    run_cli(
        "merge", "--fixture-ledger", ledgers / "f.json", "--property-ledger", ledgers / "p.json",
        "--out", ledgers / "d.json",
    )  # fmt: skip
    decision = json.loads((ledgers / "d.json").read_text())
    ledger_path = ledgers / "p.json"
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else None
    return Gate(scored.code, scored.err, decision["row"], decision["posture"], ledger)
