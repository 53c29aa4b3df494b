"""`properties` run in-process over a repository of the example, and the ledger it wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from helpers import CliResult, RunCli

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def live_digest(run_cli: RunCli, repo: Path, pin: str = "pins/fixtures.json") -> str:
    result = run_cli("digest", "--pin", repo / pin, "--root", repo, "--out", repo.parent / "f.json")
    assert result.code == 0, result.err
    return result.out.strip()


def score(
    run_cli: RunCli,
    repo: Path,
    *extra: str | Path,
    command: str = f"{PYTEST} properties/test_orders.py",
    digest: str | None = None,
    pin: str = "pins/fixtures.json",
) -> CliResult:
    expected = digest or live_digest(run_cli, repo, pin)
    return run_cli(
        "properties", "--pin", repo / pin, "--expect-digest", expected,
        "--properties", repo / "pins/properties.json", "--command", command,
        "--root", repo, "--out", repo.parent / "ledgers/p.json", *extra,
    )  # fmt: skip


def ledger(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.parent / "ledgers/p.json").read_text())
    return document
