"""Where `three-ledger digest` spends its time and memory, step by step, on one tree.

Runs the steps of `commands/digest.py` in this process, in order, with the cycle
collector paused as the command pauses it, and prints for each: CPU time, and the peak
RSS of the process after it. With --tracemalloc, also the Python memory each step
leaves live and the most it held while running (tracemalloc slows every step down
and adds to RSS: read its columns, not the times, in that mode).

    .venv/bin/python benchmarks/profile_digest.py [--shape small-100000x1KiB] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from make_trees import DEFAULT_DATA, SHAPES, ensure_tree

from three_ledger import ledgers, pins
from three_ledger.digest import hash_files, tree_problems

MIB = 1024 * 1024


def steps(root: Path, out: Path) -> list[tuple[str, Callable[[dict[str, Any]], object]]]:
    """The command's steps; each reads what the earlier ones left in `state`."""

    def ledger(state: dict[str, Any]) -> ledgers.FixtureLedger:
        pin, live = state["load the pin"], state["hash the files"]
        return ledgers.FixtureLedger(
            ledger_id=ledgers.new_ledger_id(),
            pin_id=pin.pin_id,
            digest=live.digest,
            **pin.ledger_folders(),
            files=(),
            recorded_at=ledgers.fresh_recorded_at(),
        )

    return [
        ("load the pin", lambda state: pins.load_fixture_pin(root / "pins/fixtures.json")),
        ("check the tree", lambda state: tree_problems(root, state["load the pin"])),
        ("hash the files", lambda state: hash_files(root, sorted(state["load the pin"].files))),
        (
            "check and write the ledger",
            lambda state: ledgers.write_fixture_ledger(
                out, ledger(state), state["hash the files"].rows()
            ),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="trees (make_trees.py)")
    parser.add_argument("--shape", choices=list(SHAPES), default="small-100000x1KiB")
    parser.add_argument("--tiny", action="store_true", help="the small version of the shape")
    parser.add_argument("--tracemalloc", action="store_true", help="Python memory per step")
    args = parser.parse_args(argv)
    root = ensure_tree(args.data.resolve(), args.shape, args.tiny)
    gc.disable()
    if args.tracemalloc:
        tracemalloc.start()
    print(f"{args.shape}{' (tiny)' if args.tiny else ''}\n")
    print("| step | CPU ms | peak RSS after, MiB | traced live MiB | traced peak MiB |")
    print("|---|---|---|---|---|")
    state: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as temp:
        for name, step in steps(root, Path(temp) / "ledger.json"):
            started = time.process_time()
            state[name] = step(state)
            cpu_ms = (time.process_time() - started) * 1000
            print(f"| {name} | {cpu_ms:.0f} | {peak_rss_mib():.1f} | {traced()} |")
    return 0


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def traced() -> str:
    if not tracemalloc.is_tracing():
        return "- | -"
    live, peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    return f"{live / MIB:.1f} | {peak / MIB:.1f}"


if __name__ == "__main__":
    sys.exit(main())
