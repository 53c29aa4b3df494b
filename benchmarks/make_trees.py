"""Deterministic fixture trees for the digest benchmarks: seeded names, sizes and bytes.

Each shape lives in DATA/<shape>/ as a checkout root: `fixtures/...`, a fixture pin in
`pins/fixtures.json`, the sorted pinned paths in `paths.txt` (for `git hash-object
--stdin-paths`), and a stamp that lets a later run reuse the tree instead of rewriting it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
SEED = 6  # issue 6
# Names mix cases, digits and a few non-ASCII letters, so that sorting by code point
# (what SPEC 4.1 asks for) is really exercised.
NAME_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-\u00e9\u00f8\u65e5"
# File bytes are slices of one seeded pool taken at seeded offsets: deterministic, not
# repetitive within a file, and far faster to produce than fresh random bytes.
POOL_BYTES = 8 * MIB
WRITE_BYTES = 1 * MIB
DISK_MARGIN = 1 * GIB
SMALL_FILE_BLOCK = 4 * KIB  # the least a file costs on disk
DEFAULT_DATA = Path(__file__).resolve().parent.parent / "bench-data"  # in .gitignore

Plan = list[tuple[str, int]]


@dataclass(frozen=True)
class Shape:
    name: str
    title: str
    plan: Callable[[random.Random, bool], Plan]


def plan_large_files(rng: random.Random, tiny: bool) -> Plan:
    size = 128 * KIB if tiny else 128 * MIB
    return [(f"fixtures/large/{name}.bin", size) for name in unique_names(rng, 8)]


def plan_one_huge_file(rng: random.Random, tiny: bool) -> Plan:
    return [(f"fixtures/{unique_names(rng, 1)[0]}.bin", 2 * MIB if tiny else 2 * GIB)]


def plan_many_small_files(rng: random.Random, tiny: bool) -> Plan:
    """100,000 files of 1 KiB, three folders deep (10 x 10 x 10 folders, 100 files each)."""
    return plan_small_files(rng, (3, 4) if tiny else (10, 100))


def plan_half_million_small_files(rng: random.Random, tiny: bool) -> Plan:
    """500,000 files of 1 KiB, three folders deep (10 x 10 x 10 folders, 500 files each)."""
    return plan_small_files(rng, (3, 6) if tiny else (10, 500))


def plan_small_files(rng: random.Random, fan_out_and_per_folder: tuple[int, int]) -> Plan:
    fan_out, per_folder = fan_out_and_per_folder
    folders = unique_names(rng, fan_out)
    names = unique_names(rng, per_folder)
    return [
        (f"fixtures/{a}/{b}/{c}/{name}.json", KIB)
        for a in folders
        for b in folders
        for c in folders
        for name in names
    ]


def plan_mixed_files(rng: random.Random, tiny: bool) -> Plan:
    """5,000 files from 100 B to 4 MiB, log-uniform, spread over 50 folders."""
    count, largest = (60, 64 * KIB) if tiny else (5000, 4 * MIB)
    folders = unique_names(rng, 50)
    low, high = math.log(100), math.log(largest)
    return [
        (f"fixtures/{rng.choice(folders)}/{name}.dat", round(math.exp(rng.uniform(low, high))))
        for name in unique_names(rng, count)
    ]


SHAPES = {
    shape.name: shape
    for shape in (
        Shape("large-8x128MiB", "8 files x 128 MiB", plan_large_files),
        Shape("huge-1x2GiB", "one 2 GiB file", plan_one_huge_file),
        Shape("small-100000x1KiB", "100,000 files x 1 KiB, 3 levels deep", plan_many_small_files),
        Shape(
            "small-500000x1KiB",
            "500,000 files x 1 KiB, 3 levels deep",
            plan_half_million_small_files,
        ),
        Shape("mixed-5000", "5,000 files, 100 B-4 MiB log-uniform", plan_mixed_files),
    )
}


def unique_names(rng: random.Random, count: int) -> list[str]:
    """COUNT seeded names, NFC, distinct even on a case-insensitive filesystem."""
    names: dict[str, str] = {}
    while len(names) < count:
        name = "".join(rng.choices(NAME_LETTERS, k=rng.randint(6, 12)))
        names.setdefault(unicodedata.normalize("NFC", name).casefold(), name)
    return list(names.values())


def shape_plan(shape: str, tiny: bool) -> Plan:
    return SHAPES[shape].plan(random.Random(f"{SEED}:{shape}:plan"), tiny)


def bytes_on_disk(plan: Plan) -> int:
    return sum(max(size, SMALL_FILE_BLOCK) for _, size in plan)


def ensure_tree(data: Path, shape: str, tiny: bool) -> Path:
    """The checkout root for SHAPE under DATA, written unless an identical one is there."""
    root = data / (f"{shape}-tiny" if tiny else shape)
    plan = shape_plan(shape, tiny)
    stamp = root / "tree.stamp"
    wanted = json.dumps({"seed": SEED, "files": len(plan), "bytes": sum(s for _, s in plan)})
    if stamp.is_file() and stamp.read_text() == wanted:
        return root
    if root.exists():
        shutil.rmtree(root)
    refuse_if_disk_short(data, bytes_on_disk(plan))
    write_tree(root, shape, plan)
    stamp.write_text(wanted)
    return root


def refuse_if_disk_short(data: Path, needed: int) -> None:
    data.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(data).free
    if free < needed + DISK_MARGIN:
        raise SystemExit(
            f"make_trees: {data} has {free / GIB:.1f} GiB free; "
            f"this tree needs {needed / GIB:.1f} GiB plus a {DISK_MARGIN / GIB:.0f} GiB margin"
        )


def write_tree(root: Path, shape: str, plan: Plan) -> None:
    rng = random.Random(f"{SEED}:{shape}:bytes")
    pool = rng.randbytes(POOL_BYTES + WRITE_BYTES)
    for relative, size in plan:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as stream:
            left = size
            while left:
                count = min(left, WRITE_BYTES)
                start = rng.randrange(POOL_BYTES)
                stream.write(pool[start : start + count])
                left -= count
    paths = sorted(relative for relative, _ in plan)
    pin = {"pin_id": f"bench-{shape}", "algorithm": "sha256", "fixtures_dir": "fixtures"}
    (root / "pins").mkdir()
    (root / "pins/fixtures.json").write_text(json.dumps({**pin, "files": paths}, indent=1))
    (root / "paths.txt").write_text("".join(f"{path}\n" for path in paths), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="output folder")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append", help="repeatable")
    parser.add_argument("--tiny", action="store_true", help="small versions, for smoke tests")
    args = parser.parse_args(argv)
    for shape in args.shape or SHAPES:
        print(ensure_tree(args.data, shape, args.tiny), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
