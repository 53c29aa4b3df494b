"""Where the gate's own process spends its CPU in one `three-ledger properties` run, by phase.

    .venv/bin/python benchmarks/profile_properties.py [--tests 2000] [--runs 3] [--closed]

Builds bench_properties.py's project (one property over N trivial tests), then runs the gate
in this process, RUNS times, with each phase wrapped in a clock: the CPU of this process
(`process_time`, every thread of it), the CPU of the children that ended during the phase
(`RUSAGE_CHILDREN`: git, the probe, the trampoline and pytest) and the wall time. Prints the
median of each as a Markdown table. Imports are timed before the first run, once.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_properties import build_repository, byte_compile, gate_argv

PYTHON = Path(sys.executable)
# (module, function, label): each phase of the run, as observation.py and properties.py call it.
PHASES = [
    ("three_ledger.commands.properties", "preflight", "checks before the run (pins, digest, git)"),
    ("three_ledger.run.observation", "stage_plugin", "copy the plugin for the child"),
    ("three_ledger.run.observation", "confine_run", "plan the sandbox"),
    ("three_ledger.run.observation", "run_child", "the test command (trampoline, pytest)"),
    ("three_ledger.run.observation", "read_plugin_records", "read the results"),
    ("three_ledger.run.observation", "read_harness", "read the harness"),
    ("three_ledger.run_order", "recorded", "the run order"),
    ("three_ledger.run.observation", "measured_changes", "the oracles, inferred (git)"),
    ("three_ledger.run.observation", "closed_changes", "the oracles, closed set (git)"),
    ("three_ledger.commands.properties", "property_ledger", "score, build the ledger"),
    ("three_ledger.commands.properties", "write_with_order", "write the ledger"),
    ("three_ledger.commands.properties", "match_pin", "match the pin (warnings)"),
]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wrap(rows: dict[str, list[tuple[float, float, float]]], label: str, real: Any) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        cpu, kids, wall = time.process_time(), children_cpu(), time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent = (time.process_time() - cpu, children_cpu() - kids, time.perf_counter() - wall)
            rows.setdefault(label, []).append(spent)

    return timed


def instrument(rows: dict[str, list[tuple[float, float, float]]]) -> None:
    import importlib

    for module_name, function, label in PHASES:
        module = importlib.import_module(module_name)
        setattr(module, function, wrap(rows, label, getattr(module, function)))


def run_gate(main: Callable[[list[str]], int], argv: list[str]) -> None:
    """The gate's own lines and the test command's output (which the gate copies to its stdout)
    kept off the table."""
    quiet = io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(quiet):
        code = main(argv)
    assert code == 0, f"the gate exited {code}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--closed", action="store_true", help="the pin with product_paths")
    args = parser.parse_args()
    byte_compile(PYTHON)
    start = time.process_time()
    from three_ledger.cli import main as gate_main
    from three_ledger.commands import properties  # noqa: F401 - imported as the gate does

    imports = time.process_time() - start
    rows: dict[str, list[tuple[float, float, float]]] = {}
    instrument(rows)
    with tempfile.TemporaryDirectory(prefix="profile-properties-") as temp:
        root = Path(temp) / "repo"
        digest = build_repository(root, args.tests)
        pin = "pins/properties-closed.json" if args.closed else "pins/properties.json"
        argv = gate_argv(PYTHON, digest, "../property.json", pin)[4:]
        totals = []
        with contextlib.chdir(root):
            for _ in range(args.runs):
                cpu, kids, wall = time.process_time(), children_cpu(), time.perf_counter()
                run_gate(gate_main, argv)
                used = time.process_time() - cpu, children_cpu() - kids
                totals.append((*used, time.perf_counter() - wall))
    print(f"{args.tests} trivial tests, {args.runs} runs; medians, ms. Imports (once, with "
          f"bytecode): {imports * 1000:.0f} ms of CPU.\n")  # fmt: skip
    print("| phase | CPU of the gate's process | CPU of its children | wall |")
    print("|---|---|---|---|")
    for label, spent in [*rows.items(), ("the whole run, after the imports", totals)]:
        cpu, kids, wall = (statistics.median(column) * 1000 for column in zip(*spent, strict=True))
        print(f"| {label} | {cpu:.1f} | {kids:.1f} | {wall:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
