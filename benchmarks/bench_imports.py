"""How long a command's imports take, timed inside fresh processes: the steady part of a start.

A whole run's CPU time moves by a third between runs on a shared machine; the process time
of the imports alone, taken with `time.process_time()` inside the process, after the
interpreter has started, moves far less. Each round starts one process per contender, in
alternating order, and each loads the package as the command line does: `dataclasses`
first (with `inspect` deferred, where the version has `cli.import_dataclasses_without_inspect`),
then the parser and the command's module, with the cyclic collector paused.

    .venv/bin/python benchmarks/bench_imports.py [--command properties] [--runs 21]
        [--compare-with OTHER_PYTHON ...]

OTHER_PYTHON is a Python for which another version of three-ledger is importable (a
wrapper that puts a `git archive` of it first on PYTHONPATH, say).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

PYTHON = Path(sys.executable)

# Run by each contender; prints the milliseconds of process time the imports took.
_TIMED = """
import gc, importlib, sys, time
gc.disable()
started = time.process_time()
try:
    from three_ledger.cli import import_dataclasses_without_inspect
except ImportError:  # a version from before it
    pass
else:
    import_dataclasses_without_inspect()
import three_ledger.cli.dispatch
importlib.import_module("three_ledger.commands." + sys.argv[1])
print((time.process_time() - started) * 1000)
"""


def timed_imports(python: Path, command: str) -> float:
    done = subprocess.run(
        [str(python), "-c", _TIMED, command], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{python}: the imports failed: {done.stderr.strip()}")
    return float(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", default="properties", help="a module of commands/")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--compare-with", type=Path, action="append", default=[])
    args = parser.parse_args()
    pythons = {"this checkout": PYTHON} | {str(other): other for other in args.compare_with}
    times: dict[str, list[float]] = {name: [] for name in pythons}
    for round_number in range(args.warmup + args.runs):
        order = list(pythons.items())
        if round_number % 2:
            order.reverse()
        for name, python in order:
            milliseconds = timed_imports(python, args.command.replace("-", "_"))
            if round_number >= args.warmup:
                times[name].append(milliseconds)
    print(f"Imports of `{args.command}`: {args.runs} fresh processes each, alternated; ms of")
    print("process time from before `dataclasses` to after the command's module.\n")
    print("| version | median ms | min-max ms | ratio to this checkout |\n|---|---|---|---|")
    ours = statistics.median(times["this checkout"])
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"| {name} | {median:.1f} | {min(values):.1f}-{max(values):.1f} | "
            f"{median / ours:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
