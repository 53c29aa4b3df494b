"""Sharded scoring at scale: a generated suite of N tests under P properties.

    .venv/bin/python benchmarks/bench_shards.py [--tests 20000] [--properties 200] [--runs 3]

Builds a throwaway git repository (one fixture, P test files of N/P parametrised trivial
tests, one property per file), then measures, as medians over --runs:
  - `shard-plan --shards 4` against pytest's own `--collect-only`;
  - the 4 shard runs (`properties --shard-plan --shard K`, one after another, as local
    processes), and `combine` of their ledgers on its own;
  - `properties` on every test against plain pytest.
It checks that the combined statuses equal the unsharded run's, and prints a Markdown table
of wall seconds and CPU seconds (user+sys of the whole process tree), with the load average.
Every process it starts caches bytecode (it drops PYTHONDONTWRITEBYTECODE from its own
environment): without that, every process compiles the gate from source and pytest rewrites
every test module again, and a run set that way once gave `shard-plan` 1.38x where the same
benchmark with caching on gave 0.93x.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench_properties import PLUGINS_OFF

PYTHON = sys.executable
SHARDS = 4
TESTS = """import pytest


@pytest.mark.parametrize("n", range({count}))
def test_trivial(n: int) -> None:
    assert n >= 0
"""


def build(root: Path, tests: int, properties: int) -> str:
    """The benchmark project, committed; returns the fixture digest."""
    (root / "fixtures").mkdir(parents=True)
    (root / "fixtures/a.json").write_text("{}\n")
    (root / "properties").mkdir()
    props = []
    for k in range(properties):
        (root / f"properties/test_p{k:03}.py").write_text(TESTS.format(count=tests // properties))
        props.append({"id": f"bench.p{k:03}", "claim": f"File {k} holds.", "domain": ["a.json"],
                      "test": f"properties/test_p{k:03}.py"})  # fmt: skip
    (root / "pytest.ini").write_text(f"[pytest]\naddopts = {PLUGINS_OFF}\n")
    # Runs that write bytecode leave it beside the tests; the gate refuses it unless ignored.
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (root / "pins").mkdir()
    fixture_pin = {"pin_id": "fixpin-bench", "algorithm": "sha256", "files": ["fixtures/a.json"]}
    (root / "pins/fixtures.json").write_text(json.dumps(fixture_pin))
    pin = {"pin_id": "proppin-bench", "fixture_pins": ["fixpin-bench"], "properties": props}
    (root / "pins/properties.json").write_text(json.dumps(pin))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=root,
                       check=True)  # fmt: skip
    return gate(root, "digest", "--pin", "pins/fixtures.json", "--out", "../f.json").strip()


def gate(root: Path, *args: str) -> str:
    done = subprocess.run([PYTHON, "-P", "-m", "three_ledger", *args], cwd=root,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"three-ledger {args[0]} exited {done.returncode}: {done.stderr}")
    return done.stdout


def timed(argv: Sequence[str], root: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user+sys of ARGV and every process it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]!r}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=20_000)
    parser.add_argument("--properties", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for every process started below
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as temp:
        root = Path(temp) / "repo"
        root.mkdir()
        digest = build(root, args.tests, args.properties)
        pytest = [PYTHON, "-m", "pytest", "-q", "properties"]
        me = [PYTHON, "-P", "-m", "three_ledger"]
        pins = ["--pin", "pins/fixtures.json", "--properties", "pins/properties.json"]
        cmd = ["--command", " ".join(pytest)]
        plan = [*me, "shard-plan", *pins, *cmd, "--shards", str(SHARDS), "--out", "../plan.json"]
        scoring = [*me, "properties", *pins, *cmd, "--expect-digest", digest, "--base", "HEAD"]
        shard_ledgers = [f"../shard_{k}.json" for k in range(SHARDS)]
        combine = [*me, "combine", "--plan", "../plan.json", "--out", "../combined.json"]
        times: dict[str, list[tuple[float, float]]] = {}
        load = os.getloadavg()
        for _ in range(args.runs):
            for name, argv in (
                ("pytest --collect-only", [*pytest, "--collect-only"]),
                ("shard-plan --shards 4", plan),
            ):
                times.setdefault(name, []).append(timed(argv, root))
            shards = [
                timed([*scoring, "--shard-plan", "../plan.json", "--shard", str(k),
                       "--out", shard_ledgers[k]], root)
                for k in range(SHARDS)
            ]  # fmt: skip
            shard_total = (sum(wall for wall, _ in shards), sum(cpu for _, cpu in shards))
            times.setdefault("4 shard runs (sum)", []).append(shard_total)
            times.setdefault("combine", []).append(timed([*combine, *shard_ledgers], root))
            for name, argv in (
                ("pytest (plain)", pytest),
                ("properties (all tests)", [*scoring, "--out", "../whole.json"]),
            ):
                times.setdefault(name, []).append(timed(argv, root))
        combined = json.loads((Path(temp) / "combined.json").read_text())["status_by_id"]
        whole = json.loads((Path(temp) / "whole.json").read_text())["status_by_id"]
        if combined != whole:
            raise SystemExit("the combined statuses differ from the unsharded run's")
    print_table(args, times, (load, os.getloadavg()))
    return 0


def print_table(
    args: argparse.Namespace,
    times: dict[str, list[tuple[float, float]]],
    loads: tuple[tuple[float, ...], tuple[float, ...]],
) -> None:
    print(f"{args.tests} tests, {args.properties} properties, medians of {args.runs} runs")
    before, after = (" ".join(f"{value:.2f}" for value in load) for load in loads)
    print(f"load average before {before}, after {after}\n")
    print("| step | wall s (min-max) | CPU s | wall ratio | CPU ratio |")
    print("|---|---:|---:|---:|---:|")
    pairs = {"shard-plan --shards 4": "pytest --collect-only",
             "properties (all tests)": "pytest (plain)"}  # fmt: skip
    wall = {name: statistics.median(w for w, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    for name, values in times.items():
        spread = f"{min(w for w, _ in values):.3f}-{max(w for w, _ in values):.3f}"
        ratios = ["", ""]
        if name in pairs:
            ratios = [
                f"{wall[name] / wall[pairs[name]]:.3f}x",
                f"{cpu[name] / cpu[pairs[name]]:.3f}x",
            ]
        print(f"| {name} | {wall[name]:.3f} ({spread}) | {cpu[name]:.3f} | {' | '.join(ratios)} |")


if __name__ == "__main__":
    sys.exit(main())
