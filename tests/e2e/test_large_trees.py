"""`digest` over many small files: the seed's hash, every file in the ledger, one intruder found.

`THREE_LEDGER_SLOW_TESTS=1` adds the 100,000-file tree (10-25 s); by default the test runs
with 10,000 files (1,000 in the command layer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import RunCli, fixture_pin, many_files, seed_digest

SLOW = bool(os.environ.get("THREE_LEDGER_SLOW_TESTS"))


@pytest.mark.parametrize(
    "count",
    [
        10_000,
        pytest.param(
            100_000,
            marks=pytest.mark.skipif(not SLOW, reason="10-25 s: set THREE_LEDGER_SLOW_TESTS=1"),
        ),
    ],
)
def test_a_tree_of_many_files(run_cli: RunCli, tmp_path: Path, count: int) -> None:
    files = many_files(tmp_path, count)
    pin = fixture_pin(tmp_path, files)
    out = tmp_path / "ledgers/fixture.json"
    result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
    assert result.code == 0, result.err
    assert result.out == seed_digest(tmp_path, files) + "\n"
    ledger = json.loads(out.read_text())
    assert len(ledger["files"]) == count
    assert [entry["path"] for entry in ledger["files"]] == sorted(files)
    # One file more, deep in the tree, and the whole tree is refused, naming it.
    (tmp_path / "fixtures/d42/intruder.json").write_bytes(b"{}")
    result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
    intruder = "fixtures/d42/intruder.json: unpinned file"
    assert result.code == 2
    assert result.first_error_line == (
        f"three-ledger: refused: fixture tree does not match {pin}: {intruder}"
    )
    assert not out.exists()
