"""The plugin where pytest-xdist is absent (a bare machine, or plugin autoload off): its
xdist hooks are optional, so the tripwire and the harness measurement still work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import RunCli
from test_tripwire import PYTEST, score


def test_properties_scores_with_plugin_autoload_off(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # xdist hooks are then unknown to pytest: neither the tripwire nor the harness may need them.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = score(run_cli, orders_repo, f"{PYTEST} properties/test_orders.py")
    assert result.code == 0, result.err
    written = json.loads((orders_repo.parent / "ledgers/p.json").read_text())
    assert written["tripwire"] == "sentinels"
    assert written["harness"]["test_side_modules"] == ["properties/test_orders.py"]
    assert set(written["status_by_id"].values()) == {"pass"}
