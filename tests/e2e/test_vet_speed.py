"""vet's speed on the example: `--jobs` changes nothing in the ledger, and the result cache
is reused on an unchanged tree and dropped when an oracle or the product changes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE

pytestmark = pytest.mark.xdist_group("vet_speed")

# The fields two honest runs of vet on the same tree may differ in.
TIMING = ("ledger_id", "duration_ms", "recorded_at")


def example(tmp_path: Path) -> Path:
    root = tmp_path / "orders"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "ledgers"))
    return root


def vet(root: Path, out: str, *extra: str, cache: Path) -> tuple[dict[str, Any], str]:
    command = [
        sys.executable, "-P", "-m", "three_ledger", "vet",
        "--pin", "pins/fixtures.json", "--properties", "pins/properties.json",
        "--command", f"{sys.executable} -m pytest -q properties/test_orders.py",
        "--out", str(root.parent / out), *extra,
    ]  # fmt: skip
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr  # weak (the round trip) still counts as a gate
    assert "Traceback" not in done.stderr
    ledger: dict[str, Any] = json.loads((root.parent / out).read_text())
    return ledger, done.stderr


def without(ledger: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in ledger.items() if key not in keys}


def test_jobs_2_writes_the_ledger_jobs_1_writes(tmp_path: Path) -> None:
    root = example(tmp_path)
    one, said_one = vet(root, "one.json", "--jobs", "1", "--no-cache", cache=tmp_path / "c")
    two, said_two = vet(root, "two.json", "--jobs", "2", "--no-cache", cache=tmp_path / "c")
    assert without(one, *TIMING) == without(two, *TIMING)
    assert list(one["properties"]) == list(two["properties"])
    trials = {pid: len(found["trials"]) for pid, found in one["properties"].items()}
    shared = max(trials[pid] for pid in trials if pid != "orders.json.round_trip")
    # The baseline, then each subject's own mutants (three properties share a domain).
    assert one["runs"] == 1 + shared + trials["orders.json.round_trip"]
    # One progress line per run's end, whatever the number of lanes.
    for said, ledger in ((said_one, one), (said_two, two)):
        ends = re.findall(r"^vet: run (\d+): exit", said, re.MULTILINE)
        assert sorted(map(int, ends)) == list(range(1, ledger["runs"] + 1))
    # With --jobs 2 the baseline ran in two slices, side by side, and counts as one run.
    assert "vet: run 1: exit 0 in" in said_one
    assert "slice" not in said_one
    assert re.search(r"^vet: run 1: exit 0 in [0-9.]+ s \(2 slices\)$", said_two, re.MULTILINE)
    log = (root.parent / "two.json.log").read_text()
    assert "=== vet run 1 (slice 1 of 2): baseline run, unmutated ===" in log
    assert "=== vet run 1 (slice 2 of 2): baseline run, unmutated ===" in log
    assert re.search(r"^vet: phases: checks .* mutants [0-9.]+ s", said_two, re.MULTILINE)
    assert not (tmp_path / "c").exists()  # --no-cache: nothing stored


def test_an_unchanged_tree_reuses_every_result_and_a_change_drops_them(tmp_path: Path) -> None:
    root = example(tmp_path)
    cache = tmp_path / "cache"
    first, said = vet(root, "first.json", cache=cache)
    assert first["reused_runs"] == 0
    assert "from the cache" not in said
    assert list((cache / "three-ledger" / "vet").glob("*.json"))

    again, said = vet(root, "again.json", cache=cache)
    assert again["runs"] == 1  # the baseline alone
    assert again["reused_runs"] == first["runs"] - 1
    assert "reused the results of" in said
    assert again["properties"] == first["properties"]

    # An oracle changes (a comment will do: its blob id is another).
    oracle = root / "properties" / "test_orders.py"
    oracle.write_text(oracle.read_text() + "# changed\n")
    changed, said = vet(root, "oracle.json", cache=cache)
    assert changed["reused_runs"] == 0
    assert changed["runs"] == first["runs"]

    # The product changes.
    product = root / "orders.py"
    product.write_text(product.read_text() + "# changed\n")
    changed, _ = vet(root, "product.json", cache=cache)
    assert changed["reused_runs"] == 0
    assert changed["properties"] == first["properties"]
