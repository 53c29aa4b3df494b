"""The floor of the test child's audit hooks and of the tripwire: per audit event and per test.

    .venv/bin/python benchmarks/bench_audit_hook.py [--events 1000000] [--tests 2000] [--runs 5]

Per event: a loop of `id()` calls (each raises the `builtins.id` audit event, which every hook
drops at its first statement) in a fresh Python, with no hook, with the machinery audit's hook
(`plugin/machinery.py`, armed after importing pytest, as in a gate run) and with the closed
oracle set's hook (`plugin/measure.py`, recording into a temporary folder). The difference
from the bare loop, over the number of calls, is what a hook costs an event it does not want.

Per test: pytest on bench_properties.py's project, in-process under a counting hook, on 5 and on
N tests, gives how many events a test raises. The test command of a gate run (pytest with the
staged plugin writing its results) with and without the tripwire, on 5 and on N tests, gives
the tripwire's cost: fixed (at 5 tests) and per test (the slope). CPU time throughout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_properties import build_repository, byte_compile
from timing import run_measured

PYTHON = Path(sys.executable)
EVENT_LOOP = """
import sys, time
{arm}
thing = object()
start = time.process_time()
for _ in range({events}):
    id(thing)
print(time.process_time() - start)
"""
HOOKS = {
    "no hook": "",
    "machinery audit (tripwire)": (
        "import pytest; from three_ledger.plugin import machinery; machinery.start()"
    ),
    "closed oracle set (measure.py)": (
        "import os, tempfile; os.environ['THREE_LEDGER_MEASURE'] = tempfile.mkdtemp(); "
        "os.environ['THREE_LEDGER_MEASURE_ROOT'] = tempfile.mkdtemp(); "
        "from three_ledger.plugin import measure; measure.arm()"
    ),
}
COUNTING = """
import collections, json, sys
counts = collections.Counter()
sys.addaudithook(lambda event, args: counts.update((event,)))
import pytest
pytest.main(["-q", "-p", "no:cacheprovider", "properties/test_many.py"])
print(json.dumps(sum(counts.values())))
"""
SMALL = 5


def per_event_ns(events: int, runs: int) -> dict[str, float]:
    """Nanoseconds a hook adds to one event it drops, median of RUNS, in alternation."""
    seconds: dict[str, list[float]] = {name: [] for name in HOOKS}
    for _ in range(runs):
        for name, arm in HOOKS.items():
            code = EVENT_LOOP.format(arm=arm, events=events)
            done = subprocess.run([str(PYTHON), "-c", code], capture_output=True, check=True)
            seconds[name].append(float(done.stdout.decode().split()[-1]))
    bare = statistics.median(seconds["no hook"])
    return {name: (statistics.median(s) - bare) / events * 1e9 for name, s in seconds.items()}


def events_per_test(small: Path, large: Path, count: int) -> float:
    def counted(root: Path) -> int:
        done = subprocess.run(
            [str(PYTHON), "-c", COUNTING], cwd=root, capture_output=True, check=True
        )
        return int(done.stdout.decode().split()[-1])

    return (counted(large) - counted(small)) / (count - SMALL)


def child_environment(staged: Path, module: str, records: Path, tripwire: bool) -> dict[str, str]:
    """The staged plugin writing results, as in a gate run; with TRIPWIRE, the tripwire too."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update(
        PYTHONPATH=str(staged),
        PYTEST_PLUGINS=module,
        PYTEST_ADDOPTS="-p no:three_ledger.pytest_plugin",
        PYTHONDONTWRITEBYTECODE="1",
        THREE_LEDGER_RESULTS=str(records / "results.jsonl"),
    )
    if tripwire:
        env["THREE_LEDGER_TRIPWIRE"] = str(records / "tripwire.jsonl")
    return env


def tripwire_cost(roots: dict[int, Path], runs: int, temp: Path) -> dict[int, float]:
    """Seconds of CPU the tripwire adds to the test command, at each size (median of RUNS)."""
    from three_ledger.run.staging import stage_plugin

    staged = stage_plugin(temp / "staged")
    cpu: dict[tuple[int, bool], list[float]] = {}
    for _ in range(runs):
        for size, root in roots.items():
            for tripwire in (False, True):
                env = child_environment(staged.folder, staged.module, temp, tripwire)
                argv = [str(PYTHON), "-m", "pytest", "-q", "properties/test_many.py"]
                run = run_measured(PYTHON, argv, root, env=env)
                cpu.setdefault((size, tripwire), []).append(run.cpu_seconds)
    return {
        size: statistics.median(cpu[(size, True)]) - statistics.median(cpu[(size, False)])
        for size in roots
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    byte_compile(PYTHON)
    per_event = per_event_ns(args.events, args.runs)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as temp:
        roots = {size: Path(temp) / f"repo-{size}" for size in (SMALL, args.tests)}
        for size, root in roots.items():
            build_repository(root, size)
        events = events_per_test(roots[SMALL], roots[args.tests], args.tests)
        tripwire = tripwire_cost(roots, args.runs, Path(temp))
    print(f"{args.runs} runs each, medians of CPU time; {args.events} events per loop.\n")
    print("| hook | ns per event it drops | per test, at the events a trivial test raises |")
    print("|---|---|---|")
    for name, nanoseconds in per_event.items():
        if name != "no hook":
            print(f"| {name} | {nanoseconds:.0f} | {nanoseconds * events / 1000:.1f} µs |")
    slope = (tripwire[args.tests] - tripwire[SMALL]) / (args.tests - SMALL)
    print(f"\nAudit events per trivial test: {events:.1f}.")
    print(
        f"The tripwire in the test command: {tripwire[SMALL] * 1000:.0f} ms at {SMALL} tests, "
        f"{tripwire[args.tests] * 1000:.0f} ms at {args.tests}: {slope * 1e6:.0f} µs a test."
    )
    print(json.dumps({"per_event_ns": per_event, "events_per_test": events}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
