"""A property command that floods its output (SPEC 4.2 step 4): the gate streams it to the
console and the log, keeps every byte in order in the log, and its own memory stays flat.

The gate runs in a process of its own whose peak RSS (RUSAGE_SELF: the gate alone, not the
child) is compared with the same gate's peak over a command that prints nothing.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import PLUGIN_STAND_IN, beside

MIB = 1024 * 1024
# Peak RSS the gate may gain over a quiet run, whatever the output: a few pipe chunks.
GROWTH_LIMIT_KIB = 24 * 1024

GATE = """
import resource, sys
from three_ledger.cli import main
code = main(sys.argv[1:])
sys.stderr.write(f"\\nGATE-PEAK-KIB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
sys.exit(code)
"""

# Writes MIB-sized blocks (random bytes, seeded; or one digit string with no newline at all),
# then the one results line the gate reads.
FLOOD = (
    PLUGIN_STAND_IN
    + """
import random
blocks, kind = int(sys.argv[1]), sys.argv[2]
out = sys.stdout.buffer
rng = random.Random(7)
for index in range(blocks):
    out.write(rng.randbytes(1 << 20) if kind == "random" else b"%08d" % index * (1 << 17))
out.flush()
with open(os.environ["THREE_LEDGER_RESULTS"], "a") as results:
    results.write(json.dumps({"id": "properties/test_orders.py::test_id_stable",
                              "property_ids": [], "outcome": "pass"}) + "\\n")
"""
)


def expected_output(blocks: int, kind: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    rng = random.Random(7)
    for index in range(blocks):
        digest.update(rng.randbytes(MIB) if kind == "random" else b"%08d" % index * (MIB // 8))
    return blocks * MIB, digest.hexdigest()


def run_gate(repo: Path, digest: str, blocks: int, kind: str) -> tuple[int, str, int]:
    """Run `properties` over the flood; return its exit code, stderr and own peak RSS in KiB."""
    flood = beside(repo, "flood.py", FLOOD)
    done = subprocess.run(
        [sys.executable, "-P", "-c", GATE, "properties", "--pin", "pins/fixtures.json",
         "--expect-digest", digest, "--properties", "pins/properties.json", "--base", "HEAD",
         "--command", f"{sys.executable} {flood} {blocks} {kind}", "--out", "../ledgers/p.json"],
        cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    *messages, peak = done.stderr.splitlines()
    assert peak.startswith("GATE-PEAK-KIB ")
    return done.returncode, "\n".join(messages), int(peak.split()[1])


@pytest.fixture
def repo_and_digest(orders_repo: Path) -> tuple[Path, str]:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../f.json"],
        cwd=orders_repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return orders_repo, done.stdout.strip()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.parametrize(
    ("blocks", "kind"),
    [(200, "random"), (64, "one-line")],
    ids=["200MB-of-lines", "64MB-in-one-line-without-newline"],
)
def test_flooding_output_is_logged_in_full_and_the_gate_stays_flat(
    repo_and_digest: tuple[Path, str], blocks: int, kind: str
) -> None:
    repo, digest = repo_and_digest
    quiet_code, _, quiet_peak = run_gate(repo, digest, 0, kind)
    assert quiet_code == 1  # one property passed, the others are missing
    code, err, peak = run_gate(repo, digest, blocks, kind)
    assert code == 1, err
    log = repo.parent / "ledgers/p.json.log"
    size, sha256 = expected_output(blocks, kind)
    assert log.stat().st_size == size
    assert file_sha256(log) == sha256
    ledger = json.loads((repo.parent / "ledgers/p.json").read_text())
    assert ledger["status_by_id"]["orders.id.stable"] == "pass"
    growth = peak - quiet_peak
    assert growth < GROWTH_LIMIT_KIB, f"the gate grew by {growth} KiB for {size} bytes of output"
