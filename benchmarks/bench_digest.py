"""Time `three-ledger digest` against the straightforward baseline (and git) on five shapes.

Every contender runs as a subprocess, in alternation, after a warm-up round; the first run
of each is checked (the tool, the baseline and an older checkout must agree on the digest
and every file entry; the single SHA-256 stream must print the same digest; git's blob ids
must match the files' bytes) and every later run must print the same.
Prints Markdown tables: median and min-max wall time, the ratio of medians to the baseline
measured in the same run, peak RSS (see measure_child.py), and each issue 6 and 25 target.

    .venv/bin/python benchmarks/bench_digest.py [--data bench-data] [--runs 5] [--shape NAME]
        [--compare-with OLDER_CHECKOUT]... [--cold]

With --compare-with (repeatable), the `three-ledger digest` of an older checkout (its `src`
first on PYTHONPATH, run by --python) joins the alternation, named by its commit. With
--cold, every contender also runs with the tree's files evicted from the page cache just
before it starts (posix_fadvise DONTNEED on each file: only this tree leaves the cache, the
machine's other work keeps its own), beside its warm runs in the same alternation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from make_trees import DEFAULT_DATA, MIB, SHAPES, ensure_tree, shape_plan
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
STREAM = "single SHA-256 stream (hashlib)"
COMPARED = "three-ledger digest, --compare-with"
COLD = ", cold"
GIT_SHAPES = ("small-100000x1KiB", "small-500000x1KiB")
# Issues 6, 16 and 25, per shape: the most `three-ledger digest` may take as a ratio of the
# baseline's median wall time, and the most peak RSS it may use in MiB (None: no target).
TARGETS: dict[str, tuple[float, float | None]] = {
    "large-8x128MiB": (0.55, 64),
    "huge-1x2GiB": (0.50, 64),
    "small-100000x1KiB": (0.50, 128),
    "small-500000x1KiB": (0.50, 128),
    "mixed-5000": (0.90, None),
}
GIT_STRETCH = 1.0  # three-ledger / git, on the 100,000-file shape
STREAM_TARGET = 1.2  # three-ledger / one SHA-256 stream, on the large-file shape (issue 25)
STREAM_SHAPES = ("large-8x128MiB",)
# Issue 25: peak RSS grows by at most this much per pinned path, from 100,000 to 500,000.
RSS_SLOPE_SHAPES = ("small-100000x1KiB", "small-500000x1KiB")
RSS_SLOPE_TARGET = 200


class Disagreement(Exception):
    """Two contenders, or two runs of one, produced different results."""


@dataclass(frozen=True)
class Contender:
    name: str
    argv: list[str]
    ledger: Path | None  # where it writes its file entries; git and the stream write none
    stdin: Path | None = None
    env: tuple[tuple[str, str], ...] = ()  # set for this contender only
    cold: bool = False  # the tree leaves the page cache before each run


@dataclass(frozen=True)
class Outcome:
    """What one run produced, in a form two contenders can be compared on."""

    digest: str
    files: tuple[tuple[str, int, str], ...]


def contenders(root: Path, shape: str, args: argparse.Namespace) -> list[Contender]:
    ledgers = args.data / "ledgers"
    tool_ledger = ledgers / f"{root.name}-three-ledger.json"
    baseline_ledger = ledgers / f"{root.name}-baseline.json"
    pin_and_root = ["--pin", str(root / "pins/fixtures.json"), "--root", str(root)]
    common = [*pin_and_root, "--out"]
    found = [
        Contender(TOOL, [str(args.three_ledger), "digest", *common, str(tool_ledger)], tool_ledger),
        Contender(
            BASELINE,
            [str(args.python), str(HERE / "baseline_digest.py"), *common, str(baseline_ledger)],
            baseline_ledger,
        ),
        Contender(STREAM, [str(args.python), str(HERE / "stream_sha256.py"), *pin_and_root], None),
    ]
    for checkout in args.compare_with:
        name = f"{COMPARED} {commit_of(checkout)}"
        older_ledger = ledgers / f"{root.name}-{checkout.name}.json"
        older = [str(args.python), "-P", "-m", "three_ledger", "digest", *common, str(older_ledger)]
        path = (("PYTHONPATH", str(checkout / "src")),)
        found.append(Contender(name, older, older_ledger, env=path))
    if shape in GIT_SHAPES:
        git = ["git", "hash-object", "--stdin-paths"]
        found.append(Contender(GIT, git, None, root / "paths.txt"))
    if args.cold:
        found += [replace(each, name=each.name + COLD, cold=True) for each in found]
    return found


def commit_of(checkout: Path) -> str:
    """The checkout's commit, as its contender is named."""
    git = ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"]
    return subprocess.run(git, capture_output=True, text=True, check=True).stdout.strip()


def outcome(contender: Contender, run: Run, root: Path) -> Outcome:
    if contender.name.startswith(GIT):
        return git_outcome(run.stdout, root)
    if contender.ledger is None:
        return Outcome(run.stdout.decode().strip(), ())
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
    """Refuse unless every contender agrees with the tool on the digest, and every one that
    writes a ledger on every file entry (git's blob ids were checked on their own)."""
    tool = outcomes[TOOL]
    for name, other in outcomes.items():
        if name.startswith(GIT):
            continue
        if tool.digest != other.digest:
            raise Disagreement(f"digest: {TOOL} {tool.digest}, {name} {other.digest}")
        if other.files and tool.files != other.files:
            pairs = zip(tool.files, other.files, strict=False)
            first = next((f"{a} against {b}" for a, b in pairs if a != b), "their counts differ")
            raise Disagreement(f"file entries differ from {name}: {first}")


def bench_shape(shape: str, args: argparse.Namespace) -> dict[str, list[Run]]:
    """Every timed run of every contender on SHAPE, once all of them have agreed."""
    root = ensure_tree(args.data, shape, args.tiny)
    (args.data / "ledgers").mkdir(exist_ok=True)
    runners = contenders(root, shape, args)
    runs: dict[str, list[Run]] = {contender.name: [] for contender in runners}
    checked: dict[str, tuple[Outcome, bytes]] = {}
    # With no repository above the data, git reads the paths relative to ROOT.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    paths = (root / "paths.txt").read_text(encoding="utf-8").splitlines()
    for round_number in range(args.warmup + args.runs):
        # Rotating the order spreads any drift of a noisy machine over every contender.
        for contender in rotated(runners, round_number):
            if contender.cold:
                evict_from_page_cache(root, paths)
            run = run_measured(
                args.python, contender.argv, root, {**env, **dict(contender.env)}, contender.stdin
            )
            if contender.name not in checked:
                checked[contender.name] = (outcome(contender, run, root), run.stdout)
            elif run.stdout != checked[contender.name][1]:
                raise Disagreement(f"{contender.name}: two runs printed different output")
            if round_number >= args.warmup:
                runs[contender.name].append(run)
            print(f"  {shape}: {contender.name}: {run.seconds:.3f} s", file=sys.stderr)
    check_agreement({name: result for name, (result, _) in checked.items()})
    return runs


def evict_from_page_cache(root: Path, paths: list[str]) -> None:
    """Drop the tree's files from the page cache, as on a runner that has not read them."""
    os.sync()  # only clean pages can be dropped
    for path in paths:
        fd = os.open(root / path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def rotated(items: list[Contender], by: int) -> list[Contender]:
    by %= len(items)
    return items[by:] + items[:by]


def timing_rows(shape: str, runs: dict[str, list[Run]]) -> list[str]:
    """One row per contender; a cold contender's ratios are to the cold baseline."""
    return [timing_row(shape, name, timed, runs) for name, timed in runs.items()]


def timing_row(shape: str, name: str, timed: list[Run], runs: dict[str, list[Run]]) -> str:
    baseline_runs = runs[BASELINE + COLD if name.endswith(COLD) else BASELINE]
    baseline, baseline_cpu = median_seconds(baseline_runs), median_cpu_seconds(baseline_runs)
    return (
        f"| {shape} | {name} | {median_seconds(timed):.3f} | {spread(timed)} "
        f"| {median_seconds(timed) / baseline:.2f}x | {peak_rss_mib(timed):.0f} "
        f"| {median_cpu_seconds(timed):.3f} | {median_cpu_seconds(timed) / baseline_cpu:.2f}x |"
    )


def target_rows(shape: str, runs: dict[str, list[Run]]) -> list[str]:
    ratio_target, rss_target = TARGETS[shape]
    rows = [
        target_row(shape, f"wall <= {ratio_target:.2f}x baseline", ratio(runs), ratio_target, "x")
    ]
    if rss_target is not None:
        rss = peak_rss_mib(runs[TOOL])
        rows.append(target_row(shape, f"peak RSS <= {rss_target} MiB", rss, rss_target, " MiB"))
    if shape in STREAM_SHAPES:
        target = f"wall <= {STREAM_TARGET}x one SHA-256 stream"
        rows.append(target_row(shape, target, ratio(runs, STREAM), STREAM_TARGET, "x"))
    if GIT in runs and shape == GIT_SHAPES[0]:
        target = f"stretch: wall <= {GIT_STRETCH}x git"
        rows.append(target_row(shape, target, ratio(runs, GIT), GIT_STRETCH, "x"))
    return rows


def ratio(runs: dict[str, list[Run]], against: str = BASELINE, of: str = TOOL) -> float:
    return median_seconds(runs[of]) / median_seconds(runs[against])


def rss_slope_rows(peaks: dict[str, float], tiny: bool) -> list[str]:
    """Issue 25: how much peak RSS grows per pinned path, between the two small shapes."""
    if not all(shape in peaks for shape in RSS_SLOPE_SHAPES):
        return []
    fewer, more = (len(shape_plan(shape, tiny)) for shape in RSS_SLOPE_SHAPES)
    slope = (peaks[RSS_SLOPE_SHAPES[1]] - peaks[RSS_SLOPE_SHAPES[0]]) * MIB / (more - fewer)
    target = f"peak RSS grows <= {RSS_SLOPE_TARGET} B per pinned path, {fewer:,} to {more:,}"
    return [target_row(RSS_SLOPE_SHAPES[1], target, slope, RSS_SLOPE_TARGET, " B")]


def target_row(shape: str, target: str, measured: float, limit: float, unit: str) -> str:
    verdict = "met" if measured <= limit else "**missed**"
    return f"| {shape} | {target} | {measured:.2f}{unit} | {verdict} |"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    timings, targets, peaks = [], [], {}
    load_before = os.getloadavg()
    for shape in args.shape or SHAPES:
        try:
            runs = bench_shape(shape, args)
        except (Disagreement, CommandFailed) as exc:
            print(f"bench_digest: {shape}: {exc}", file=sys.stderr)
            return 1
        timings += timing_rows(shape, runs)
        targets += target_rows(shape, runs)
        peaks[shape] = peak_rss_mib(runs[TOOL])
    targets += rss_slope_rows(peaks, args.tiny)
    cache = "warm page cache" + (
        ", and cold (`, cold`: the tree evicted first)" if args.cold else ""
    )
    print(
        f"{args.runs} timed runs per contender after {args.warmup} warm-up round(s), in "
        f"rotating order, {cache}, {os.cpu_count()} CPUs; every digest agreed. Load average "
        f"{load_label(load_before)} before, {load_label(os.getloadavg())} after.\n\n"
        "| shape | contender | median s | min-max s | ratio to baseline | peak RSS MiB "
        "| median CPU s | CPU ratio |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(timings) + "\n\n"
    )
    if args.tiny:
        print("Tiny trees measure start-up, not hashing: the targets apply to full trees.")
    else:
        print(
            "| shape | target (issues 6, 16, 25) | measured | verdict |\n"
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
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="CHECKOUT",
        action="append",
        default=[],
        help="an older checkout, run alongside (repeatable)",
    )
    parser.add_argument("--cold", action="store_true", help="also run with the tree evicted")
    args = parser.parse_args(argv)
    for checkout in args.compare_with:
        if not (checkout / "src/three_ledger").is_dir():
            parser.error(f"--compare-with: {checkout} has no src/three_ledger")
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    args.data = args.data.resolve()
    args.compare_with = [checkout.resolve() for checkout in args.compare_with]
    return args


def load_label(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{figure:.2f}" for figure in load)


def default_tool() -> Path:
    beside = Path(sys.executable).parent / "three-ledger"
    return beside if beside.exists() else Path(shutil.which("three-ledger") or "three-ledger")


if __name__ == "__main__":
    raise SystemExit(main())
