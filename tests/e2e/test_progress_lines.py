"""Progress as it happens: vet says when each run starts and ends while it works, gate says
when each step starts, and `--quiet` keeps only the results."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import RunCli

pytestmark = pytest.mark.pytest_child

COMMAND = f"{sys.executable} -m pytest -q properties/test_orders.py"


def vet_argv(repo: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-P", "-m", "three_ledger", "vet",
        "--pin", str(repo / "pins/fixtures.json"),
        "--properties", str(repo / "pins/properties.json"), "--command", COMMAND,
        "--root", str(repo), "--out", str(out), *extra,
    ]  # fmt: skip


def test_vet_prints_each_run_as_it_happens(orders_repo: Path, tmp_path: Path) -> None:
    # One job: the baseline runs whole, whatever the machine's CPU count (--jobs 2's slices
    # have their own lines, tests/e2e/test_vet_runs.py).
    process = subprocess.Popen(
        vet_argv(orders_repo, tmp_path / "vet.json", "--jobs", "1"),
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line.rstrip("\n"))
        if line.startswith("vet: run 2: "):
            # The second run has ended and vet has more to do: the line came while it worked.
            assert process.poll() is None
            break
    rest = process.stderr.read().splitlines()
    assert process.wait() == 0
    lines = [line for line in seen + rest if line.startswith("vet: run ")]
    runs = [int(match[1]) for line in lines if (match := re.match(r"vet: run (\d+): exit", line))]
    # Each run ends once, numbered from 1.
    assert sorted(runs) == list(range(1, len(runs) + 1))
    assert len(runs) > 2
    assert lines[0] == "vet: run 1, baseline run, unmutated ..."
    assert len(lines) == 2 * len(runs)


def test_quiet_keeps_only_the_results(orders_repo: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        vet_argv(orders_repo, tmp_path / "vet.json", "--quiet"),
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "vet: run " not in done.stderr
    assert "strong    orders.total.non_negative" in done.stdout


def test_gate_says_when_each_step_starts(
    orders_repo: Path, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import CI_VARIABLES, git

    for key in CI_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    (orders_repo / "orders.py").write_text((orders_repo / "orders.py").read_text() + "\n")
    git(orders_repo, "commit", "-qam", "a blank line")
    result = run_cli(
        "gate", "--pins-dir", orders_repo / "pins", "--root", orders_repo, "--command", COMMAND,
        "--base", "HEAD~1", "--out-dir", tmp_path / "gate",
    )  # fmt: skip
    lines = result.out.splitlines()
    started = lines.index("gate: properties A (fixpin-orders-a) ...")
    assert lines[started + 1].startswith("properties A (fixpin-orders-a): exit ")
