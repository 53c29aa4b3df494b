"""Time `three-ledger --version` and `three-ledger check-pins` on the example against a bare
interpreter start (`python -c pass`).

All run as subprocesses of the same interpreter, in alternation, after warm-up runs. Prints a
Markdown table and the targets: `--version` at most 2x the bare start and `check-pins` at
most 4x (issue 25). A third contender imports the standard library modules `check-pins`
needs and nothing else: the floor under it.

    .venv/bin/python benchmarks/bench_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench_digest import default_tool
from timing import (
    CommandFailed,
    Run,
    median_cpu_seconds,
    median_seconds,
    peak_rss_mib,
    run_measured,
    spread,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "orders"
VERSION = "three-ledger --version"
CHECK_PINS = "three-ledger check-pins (the example)"
BARE = "python -c pass"
# The standard library modules `check-pins` imports (and what they import): the floor under
# it that no change to three-ledger's own modules can go below. `dataclasses` is loaded as
# the command line loads it, with `inspect` deferred (`cli.import_dataclasses_without_inspect`).
FLOOR_MODULES = (
    "argparse, bisect, dataclasses, datetime, enum, importlib, json, locale, numbers, "
    "pathlib, re, string, threading, typing, unicodedata"
)
# A pin's hash comes from CPython's own SHA-256 (`pins.small_sha256`), not OpenSSL's.
FLOOR_CODE = (
    "from three_ledger.cli import import_dataclasses_without_inspect\n"
    "import_dataclasses_without_inspect()\n"
    f"import {FLOOR_MODULES}\n"
    "try:\n    import _sha2\nexcept ImportError:\n    import _sha256"
)
FLOOR = "python importing check-pins' standard library"
TARGETS = {VERSION: 2.0, CHECK_PINS: 4.0}


def bench(args: argparse.Namespace) -> dict[str, list[Run]]:
    commands = {
        VERSION: [str(args.three_ledger), "--version"],
        CHECK_PINS: [
            str(args.three_ledger), "check-pins", "--pins-dir", str(EXAMPLE / "pins"),
            "--root", str(EXAMPLE),
        ],
        FLOOR: [str(args.python), "-c", FLOOR_CODE],
        BARE: [str(args.python), "-c", "pass"],
    }  # fmt: skip
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for round_number in range(args.warmup + args.runs):
        for name, argv in commands.items():
            run = run_measured(args.python, argv, Path.cwd())
            if round_number >= args.warmup:
                runs[name].append(run)
    wrong = {run.stdout for run in runs[VERSION] if not run.stdout.startswith(b"three-ledger ")}
    if wrong:
        raise CommandFailed(f"{VERSION} printed {wrong}")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        runs = bench(args)
    except CommandFailed as exc:
        print(f"bench_startup: {exc}", file=sys.stderr)
        return 1
    bare = median_seconds(runs[BARE])
    bare_cpu = median_cpu_seconds(runs[BARE])
    rows = [
        f"| {name} | {median_seconds(timed) * 1000:.1f} | {spread(timed, 1000, 1)} "
        f"| {median_seconds(timed) / bare:.2f}x | {median_cpu_seconds(timed) * 1000:.1f} "
        f"| {median_cpu_seconds(timed) / bare_cpu:.2f}x | {peak_rss_mib(timed):.0f} |"
        for name, timed in runs.items()
    ]
    verdicts = []
    for name, target in TARGETS.items():
        ratio = median_seconds(runs[name]) / bare
        cpu_ratio = median_cpu_seconds(runs[name]) / bare_cpu
        verdict = "met" if ratio <= target else "**missed**"
        verdicts.append(
            f"`{name}` <= {target:.0f}x: {ratio:.2f}x, {verdict} (CPU time: {cpu_ratio:.2f}x)"
        )
    print(
        f"{args.runs} timed runs each after {args.warmup} warm-up round(s), in alternation.\n\n"
        "| command | median ms | min-max ms | ratio to bare python | median CPU ms "
        "| CPU ratio | peak RSS MiB |\n"
        "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"Targets against `{BARE}` (issue 25): " + "; ".join(verdicts) + "."
    )
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs per command")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--three-ledger", type=Path, default=default_tool(), help="executable")
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="interpreter")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    return args


if __name__ == "__main__":
    raise SystemExit(main())
