"""What one `flake-evidence` rerun costs against a plain pytest run of the same tests.

    .venv/bin/python benchmarks/bench_flake.py [--runs 5] [--reruns 2 8]

The suite is the demo's flake suite (a polluter, its victim, a random test, one property),
built in a temporary git repository and scored once by `digest` and `properties`. Then, in
alternation after a warm-up round:

- `flake-evidence --candidates VICTIM --reruns N` for each N given (the victim never stops
  early: an all-same result is rerun to the count asked, two modes a round, and its polluter
  search adds one or two runs). The cost of one rerun is the slope between the two Ns: the
  difference in time over the difference in the runs the ledgers count, so the command's
  start, checks and scratch copy drop out;
- plain pytest on the victim's original-order rerun (the polluter, then the victim), as
  the demo's command runs it, with the same environment (plugin autoload off).

Wall and CPU time (user + sys of the whole process tree) are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from timing import Run, median_cpu_seconds, median_seconds, run_measured

from three_ledger.demo import flake_check
from three_ledger.demo.repository import demo_environment

PYTHON = Path(sys.executable)
PLAIN = "plain pytest (polluter, victim)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-flake-") as temp:
        folder = Path(temp)
        flake_check.build(folder)
        repo = folder / "repo"
        env = {**demo_environment(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        fixture, scored = _score(repo, folder / "ledgers", env)
        commands: dict[str, list[str]] = {
            f"flake-evidence --reruns {n}": _evidence(fixture, scored, n, folder / f"e{n}.json")
            for n in args.reruns
        }
        commands[PLAIN] = [
            str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            flake_check.POLLUTER, flake_check.VICTIM,
        ]  # fmt: skip
        runs: dict[str, list[Run]] = {name: [] for name in commands}
        counted: dict[str, set[int]] = {name: set() for name in commands}
        for round_number in range(args.warmup + args.runs):
            for name, command in commands.items():
                run = _measured(command, repo, env, plain=name == PLAIN)
                if name != PLAIN:
                    counted[name].add(_runs(folder / f"e{name.split()[-1]}.json"))
                if round_number >= args.warmup:
                    runs[name].append(run)
    _print(args, runs, counted)
    return 0


def _score(repo: Path, ledgers: Path, env: dict[str, str]) -> tuple[Path, Path]:
    fixture, scored = ledgers / "fixture.json", ledgers / "property.json"
    pins = ["--pin", "pins/fixtures.json"]
    _gate(repo, env, "digest", *pins, "--out", str(fixture))
    digest = json.loads(fixture.read_text(encoding="utf-8"))["digest"]
    _gate(
        repo, env, "properties", *pins, "--expect-digest", digest,
        "--properties", "pins/properties.json", "--command", shlex.join(_command()),
        "--base", "HEAD", "--out", str(scored), ok=(0, 1),
    )  # fmt: skip
    return fixture, scored


def _command() -> list[str]:
    return [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]


def _evidence(fixture: Path, scored: Path, reruns: int, out: Path) -> list[str]:
    return [
        str(PYTHON), "-P", "-m", "three_ledger", "flake-evidence",
        "--fixture-ledger", str(fixture), "--property-ledger", str(scored),
        "--pin", "pins/fixtures.json", "--properties", "pins/properties.json",
        "--command", shlex.join(_command()), "--candidates", flake_check.VICTIM,
        "--reruns", str(reruns), "--budget-s", "600", "--out", str(out),
    ]  # fmt: skip


def _gate(repo: Path, env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> None:
    done = subprocess.run(
        [str(PYTHON), "-P", "-m", "three_ledger", *args],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode not in ok:
        raise SystemExit(f"bench_flake: {args[0]} exited {done.returncode}: {done.stderr}")


def _measured(command: list[str], repo: Path, env: dict[str, str], *, plain: bool) -> Run:
    if not plain:
        return run_measured(PYTHON, command, repo, env)
    # The victim fails after its polluter: pytest exits 1. It writes no bytecode, as the
    # gate's child does not: the tree must stay as scored.
    return run_measured(PYTHON, command, repo, {**env, "PYTHONDONTWRITEBYTECODE": "1"}, ok=(1,))


def _runs(ledger: Path) -> int:
    return int(json.loads(ledger.read_text(encoding="utf-8"))["runs"])


def _print(
    args: argparse.Namespace, runs: dict[str, list[Run]], counted: dict[str, set[int]]
) -> None:
    print(f"{args.runs} timed runs each after {args.warmup} warm-up round(s), in alternation; "
          f"load average {os.getloadavg()[0]:.2f}.\n")  # fmt: skip
    print("| command | reruns counted | median s | median CPU s |")
    print("|---|---|---|---|")
    for name, timed in runs.items():
        count = ", ".join(str(n) for n in sorted(counted[name])) or "-"
        print(
            f"| {name} | {count} | {median_seconds(timed):.3f} | {median_cpu_seconds(timed):.3f} |"
        )
    low, high = sorted(args.reruns)[0], sorted(args.reruns)[-1]
    lo_name, hi_name = f"flake-evidence --reruns {low}", f"flake-evidence --reruns {high}"
    if len(counted[lo_name]) != 1 or len(counted[hi_name]) != 1:
        print("\nthe rerun counts varied between runs: no slope")
        return
    extra = next(iter(counted[hi_name])) - next(iter(counted[lo_name]))
    wall = (median_seconds(runs[hi_name]) - median_seconds(runs[lo_name])) / extra
    cpu = (median_cpu_seconds(runs[hi_name]) - median_cpu_seconds(runs[lo_name])) / extra
    plain_wall, plain_cpu = median_seconds(runs[PLAIN]), median_cpu_seconds(runs[PLAIN])
    print(
        f"\nOne rerun: {wall:.3f} s wall, {cpu:.3f} s CPU; plain pytest on the same tests: "
        f"{plain_wall:.3f} s wall, {plain_cpu:.3f} s CPU; ratio {wall / plain_wall:.2f}x wall, "
        f"{cpu / plain_cpu:.2f}x CPU."
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument(
        "--reruns", type=int, nargs=2, default=[2, 8], metavar=("LOW", "HIGH"),
        help="the two --reruns counts whose difference gives one rerun's cost",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0 or min(args.reruns) < 1 or len(set(args.reruns)) < 2:
        parser.error("--runs >= 1, --warmup >= 0, two different --reruns counts >= 1")
    return args


if __name__ == "__main__":
    raise SystemExit(main())
