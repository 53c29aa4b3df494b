"""`digest` over many small files: the seed's hash, every file in the ledger, one intruder found;
and the read cap on a ledger of a million files.

`THREE_LEDGER_SLOW_TESTS=1` adds the 100,000-file tree (10-25 s); by default the test runs
with 10,000 files (1,000 in the command layer).
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path

import pytest

from helpers import RunCli, fixture_pin, many_files, seed_digest
from helpers.records import HEX, STAMP
from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.ledgers import FixtureLedger, read_ledger, write_fixture_ledger

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


def test_a_fixture_ledger_of_a_million_files_is_refused_naming_the_read_cap(
    tmp_path: Path,
) -> None:
    """A pin of 1,000,000 files writes a ledger over the cap, refused before it is parsed;
    half as many files, half the bytes: under it (the 500,000-file benchmark's ledger)."""
    too_large = tmp_path / "too-large.json"
    write_synthetic_fixture_ledger(too_large, 1_000_000)
    assert too_large.stat().st_size // 2 < jsonio.MAX_DOCUMENT_BYTES < too_large.stat().st_size
    with pytest.raises(Refused) as refused:
        read_ledger(too_large, FixtureLedger)
    assert str(refused.value) == (
        f"{too_large}: fixture ledger is larger than 128 MiB (134217728 bytes), "
        "the most a pin or ledger may hold"
    )


def write_synthetic_fixture_ledger(path: Path, count: int) -> None:
    """A fixture ledger of COUNT files of 1 KiB, through the writer `digest` uses; the paths
    (about 50 characters, as in the benchmark's trees) are made in sorted order."""
    paths = [
        f"fixtures/d{i // 10_000:03d}/d{i // 100 % 100:02d}/f-{i:015d}.json" for i in range(count)
    ]
    sizes = array("Q", [1024]) * count
    digests = jsonio.HexDigests(bytes(32 * count))
    ledger = FixtureLedger(
        ledger_id="0" * 32,
        pin_id="fixpin-large",
        digest=HEX,
        fixtures_dir="fixtures",
        files=(),
        recorded_at=STAMP,
    )
    write_fixture_ledger(
        path, ledger, jsonio.Rows(("path", "size", "sha256"), (paths, sizes, digests))
    )
