"""The plugin where pytest-xdist is absent (a bare machine, or plugin autoload off): its
xdist hooks are optional, so the tripwire and the harness measurement still work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import RunCli
from helpers.scoring import PYTEST, score

pytestmark = pytest.mark.pytest_child


def test_properties_scores_with_plugin_autoload_off(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # xdist hooks are then unknown to pytest: neither the tripwire nor the harness may need them.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    command = f"{PYTEST} properties/test_orders.py"
    result = score(run_cli, orders_repo, "--base", "HEAD", command=command)
    assert result.code == 0, result.err
    written = json.loads((orders_repo.parent / "ledgers/p.json").read_text())
    assert written["tripwire"] == "sentinels"
    assert written["harness"]["test_side_modules"] == ["properties/test_orders.py"]
    assert set(written["status_by_id"].values()) == {"pass"}
