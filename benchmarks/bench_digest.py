"""Time `three-ledger digest` against the straightforward baseline (and git) on four shapes.

Every contender runs as a subprocess, in alternation, after a warm-up round; the first run
of each is checked (the tool and the baseline must agree on the digest and every file entry;
git's blob ids must match the files' bytes) and every later run must print the same.
Prints Markdown tables: median and min-max wall time, the ratio of medians to the baseline
measured in the same run, peak RSS (see measure_child.py), and each issue 6 target.

    .venv/bin/python benchmarks/bench_digest.py [--data bench-data] [--runs 5] [--shape NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from make_trees import DEFAULT_DATA, SHAPES, ensure_tree
from timing import (
    HERE,
    CommandFailed,
    Run,
    median_cpu_seconds,
    median_seconds,
    peak_rss_mib,
    run_measured,
    spread,
)

TOOL = "three-ledger digest"
BASELINE = "baseline (read_bytes + rglob)"
GIT = "git hash-object --stdin-paths"
GIT_SHAPE = "small-100000x1KiB"
# Issues 6 and 16, per shape: the most `three-ledger digest` may take as a ratio of the
# baseline's median wall time, and the most peak RSS it may use in MiB (None: no target).
TARGETS: dict[str, tuple[float, float | None]] = {
    "large-8x128MiB": (0.65, 64),
    "huge-1x2GiB": (0.60, 64),
    "small-100000x1KiB": (0.50, 128),
    "mixed-5000": (0.90, None),
}
GIT_STRETCH = 1.0  # three-ledger / git, on the many-small-files shape


class Disagreement(Exception):
    """Two contenders, or two runs of one, produced different results."""


@dataclass(frozen=True)
class Contender:
    name: str
    argv: list[str]
    ledger: Path | None  # where it writes its file entries; git writes none
    stdin: Path | None = None


@dataclass(frozen=True)
class Outcome:
    """What one run produced, in a form two contenders can be compared on."""

    digest: str
    files: tuple[tuple[str, int, str], ...]


def contenders(root: Path, shape: str, args: argparse.Namespace) -> list[Contender]:
    ledgers = args.data / "ledgers"
    tool_ledger = ledgers / f"{root.name}-three-ledger.json"
    baseline_ledger = ledgers / f"{root.name}-baseline.json"
    common = ["--pin", str(root / "pins/fixtures.json"), "--root", str(root), "--out"]
    found = [
        Contender(TOOL, [str(args.three_ledger), "digest", *common, str(tool_ledger)], tool_ledger),
        Contender(
            BASELINE,
            [str(args.python), str(HERE / "baseline_digest.py"), *common, str(baseline_ledger)],
            baseline_ledger,
        ),
    ]
    if shape == GIT_SHAPE:
        git = ["git", "hash-object", "--stdin-paths"]
        found.append(Contender(GIT, git, None, root / "paths.txt"))
    return found


def outcome(contender: Contender, run: Run, root: Path) -> Outcome:
    if contender.ledger is None:
        return git_outcome(run.stdout, root)
    text = contender.ledger.read_text(encoding="utf-8")
    document = json.loads(text)
    if contender.name == TOOL and text != json.dumps(document, indent=2, ensure_ascii=False) + "\n":
        raise Disagreement(f"{contender.name}: the ledger is not in the form of SPEC 4.1")
    files = tuple((entry["path"], entry["size"], entry["sha256"]) for entry in document["files"])
    printed = run.stdout.decode().strip()
    if document["digest"] != printed:
        raise Disagreement(f"{contender.name}: printed {printed}, ledger {document['digest']}")
    return Outcome(printed, files)


def git_outcome(stdout: bytes, root: Path) -> Outcome:
    """git prints blob ids, not the digest: check each one against its file's bytes."""
    paths = (root / "paths.txt").read_text(encoding="utf-8").splitlines()
    blob_ids = stdout.decode().split()
    if len(blob_ids) != len(paths):
        raise Disagreement(f"{GIT}: {len(blob_ids)} ids for {len(paths)} paths")
    for path, blob_id in zip(paths, blob_ids, strict=True):
        data = (root / path).read_bytes()
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() != blob_id:
            raise Disagreement(f"{GIT}: wrong blob id {blob_id} for {path}")
    return Outcome("", ())


def check_agreement(outcomes: dict[str, Outcome]) -> None:
    """Refuse unless the tool and the baseline agree on the digest and every file entry."""
    tool, baseline = outcomes[TOOL], outcomes[BASELINE]
    if tool.digest != baseline.digest:
        raise Disagreement(f"digest: {TOOL} {tool.digest}, baseline {baseline.digest}")
    if tool.files != baseline.files:
        pairs = zip(tool.files, baseline.files, strict=False)
        first = next((f"{a} against {b}" for a, b in pairs if a != b), "their counts differ")
        raise Disagreement(f"file entries differ: {first}")


def bench_shape(shape: str, args: argparse.Namespace) -> dict[str, list[Run]]:
    """Every timed run of every contender on SHAPE, once all of them have agreed."""
    root = ensure_tree(args.data, shape, args.tiny)
    (args.data / "ledgers").mkdir(exist_ok=True)
    runners = contenders(root, shape, args)
    runs: dict[str, list[Run]] = {contender.name: [] for contender in runners}
    checked: dict[str, tuple[Outcome, bytes]] = {}
    # With no repository above the data, git reads the paths relative to ROOT.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    for round_number in range(args.warmup + args.runs):
        # Rotating the order spreads any drift of a noisy machine over every contender.
        for contender in rotated(runners, round_number):
            run = run_measured(args.python, contender.argv, root, env, contender.stdin)
            if contender.name not in checked:
                checked[contender.name] = (outcome(contender, run, root), run.stdout)
            elif run.stdout != checked[contender.name][1]:
                raise Disagreement(f"{contender.name}: two runs printed different output")
            if round_number >= args.warmup:
                runs[contender.name].append(run)
            print(f"  {shape}: {contender.name}: {run.seconds:.3f} s", file=sys.stderr)
    check_agreement({name: result for name, (result, _) in checked.items()})
    return runs


def rotated(items: list[Contender], by: int) -> list[Contender]:
    by %= len(items)
    return items[by:] + items[:by]


def timing_rows(shape: str, runs: dict[str, list[Run]]) -> list[str]:
    baseline = median_seconds(runs[BASELINE])
    baseline_cpu = median_cpu_seconds(runs[BASELINE])
    return [
        f"| {shape} | {name} | {median_seconds(timed):.3f} | {spread(timed)} "
        f"| {median_seconds(timed) / baseline:.2f}x | {peak_rss_mib(timed):.0f} "
        f"| {median_cpu_seconds(timed):.3f} | {median_cpu_seconds(timed) / baseline_cpu:.2f}x |"
        for name, timed in runs.items()
    ]


def target_rows(shape: str, runs: dict[str, list[Run]]) -> list[str]:
    ratio_target, rss_target = TARGETS[shape]
    ratio = median_seconds(runs[TOOL]) / median_seconds(runs[BASELINE])
    rows = [target_row(shape, f"wall <= {ratio_target:.2f}x baseline", ratio, ratio_target, "x")]
    if rss_target is not None:
        rss = peak_rss_mib(runs[TOOL])
        rows.append(target_row(shape, f"peak RSS <= {rss_target} MiB", rss, rss_target, " MiB"))
    if GIT in runs:
        to_git = median_seconds(runs[TOOL]) / median_seconds(runs[GIT])
        rows.append(target_row(shape, "stretch: wall <= 1.0x git", to_git, GIT_STRETCH, "x"))
    return rows


def target_row(shape: str, target: str, measured: float, limit: float, unit: str) -> str:
    verdict = "met" if measured <= limit else "**missed**"
    return f"| {shape} | {target} | {measured:.2f}{unit} | {verdict} |"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    timings, targets = [], []
    for shape in args.shape or SHAPES:
        try:
            runs = bench_shape(shape, args)
        except (Disagreement, CommandFailed) as exc:
            print(f"bench_digest: {shape}: {exc}", file=sys.stderr)
            return 1
        timings += timing_rows(shape, runs)
        targets += target_rows(shape, runs)
    print(
        f"{args.runs} timed runs per contender after {args.warmup} warm-up round(s), in "
        f"rotating order, warm page cache, {os.cpu_count()} CPUs; every digest agreed.\n\n"
        "| shape | contender | median s | min-max s | ratio to baseline | peak RSS MiB "
        "| median CPU s | CPU ratio |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(timings) + "\n\n"
    )
    if args.tiny:
        print("Tiny trees measure start-up, not hashing: the targets apply to full trees.")
    else:
        print(
            "| shape | target (issues 6, 16) | measured | verdict |\n"
            "|---|---|---|---|\n" + "\n".join(targets)
        )
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="trees and ledgers")
    parser.add_argument("--shape", choices=list(SHAPES), action="append", help="repeatable")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per contender")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--tiny", action="store_true", help="small trees: a smoke test")
    parser.add_argument("--three-ledger", type=Path, default=default_tool(), help="executable")
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="for baseline")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    args.data = args.data.resolve()
    return args


def default_tool() -> Path:
    beside = Path(sys.executable).parent / "three-ledger"
    return beside if beside.exists() else Path(shutil.which("three-ledger") or "three-ledger")


if __name__ == "__main__":
    raise SystemExit(main())
