"""`properties` over a pytest child that runs its tests in xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import RunCli
from helpers.scoring import PYTEST, ledger, score

pytestmark = pytest.mark.pytest_child


def test_xdist_gives_the_same_statuses(run_cli: RunCli, orders_repo: Path) -> None:
    code = orders_repo / "orders.py"
    code.write_text(code.read_text().replace('order["id"])', 'order["id"], reverse=True)'))
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 1
    serial = ledger(orders_repo)["status_by_id"]
    command = f"{PYTEST} -n 2 properties/test_orders.py"
    assert score(run_cli, orders_repo, "--base", "HEAD", command=command).code == 1
    assert ledger(orders_repo)["status_by_id"] == serial
    assert serial["orders.id.stable"] == "fail"
