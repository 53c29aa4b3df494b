"""The order a run's tests ran in, per worker: read from the plugin's records, then kept in
the ledger or, past IN_LEDGER_LIMIT ids, in a file beside it that the ledger binds by sha256.

The plugin writes one results line per item, naming the worker that ran it, in the order
the items finished; per worker that is the order they ran. The tripwire's sentinels are left
out: a rerun gets sentinels of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.ledgers import (
    OrderFile,
    PropertyLedger,
    RunOrder,
    Seed,
    ledger_text,
    write_ledger,
)

if TYPE_CHECKING:
    from three_ledger.other_ledgers import PropertyShardLedger
from three_ledger.plugin.wire import ID_KEY, MAIN_WORKER, SEED_KEY, SEED_PLUGIN_KEY, WORKER_KEY

# Up to this many ids in all, the order is held in the ledger itself; past it, in a file.
IN_LEDGER_LIMIT = 1000
SUFFIX = ".run-order.json"
KIND = "run_order"

# By name: the shard ledger's module is not imported by `properties` (other_ledgers.py).
LedgerT = TypeVar("LedgerT", PropertyLedger, "PropertyShardLedger")


def recorded(lines: Iterable[Mapping[str, Any]], order_path: Path, kept: Iterable[str]) -> RunOrder:
    """The run's order from the objects of the plugin's results lines, in the file's order
    (`results.read_results_records`: the same reading of the file its results come from), and
    its seed record, for the ids KEPT (the project's own items: the sentinels are not among
    them)."""
    wanted = set(kept)
    workers: dict[str, list[str]] = {}
    for line in lines:
        if line.get(ID_KEY) not in wanted:
            continue
        worker = line.get(WORKER_KEY)
        name = worker if isinstance(worker, str) and worker else MAIN_WORKER
        workers.setdefault(name, []).append(str(line[ID_KEY]))
    # One seed for the whole run: under xdist the controller hands its seed to every worker.
    seeds = _seeds(order_path)
    return RunOrder(
        tests=sum(map(len, workers.values())),
        seeds={name: seeds[0] for name in workers or [MAIN_WORKER]} if seeds else {},
        workers={name: ledger_text(ids) for name, ids in sorted(workers.items())},
    )


def _seeds(order_path: Path) -> list[Seed]:
    try:
        entries = json.loads(order_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # no session started (nothing ran), or no seeding plugin
    return [
        Seed(entry[SEED_PLUGIN_KEY], entry[SEED_KEY])
        for entry in entries
        if isinstance(entry, dict)
        and isinstance(entry.get(SEED_PLUGIN_KEY), str)
        and isinstance(entry.get(SEED_KEY), int)
    ]


def beside(ledger_path: Path) -> Path:
    """Where the order of the ledger at LEDGER_PATH goes when it is long."""
    return ledger_path.with_name(ledger_path.name + SUFFIX)


def write_with_order(out: Path, ledger: LedgerT) -> LedgerT:
    """Write LEDGER at OUT; a long order first goes to its own file beside OUT, which the
    ledger then names with its sha256. Returns the ledger as written."""
    order = ledger.run_order
    side = beside(out)
    if order is None or order.workers is None or order.tests <= IN_LEDGER_LIMIT:
        write_ledger(out, ledger)
        with contextlib.suppress(FileNotFoundError):
            side.unlink()  # an earlier run's, which this ledger does not name
        return ledger
    text = jsonio.dumps({"kind": KIND, "ledger_id": ledger.ledger_id, "workers": order.workers})
    jsonio.write_atomic(side, text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    kept = dataclasses.replace(order, workers=None, file=OrderFile(side.name, digest))
    written = dataclasses.replace(ledger, run_order=kept)
    try:
        write_ledger(out, written)
    except BaseException:
        side.unlink(missing_ok=True)
        raise
    return written


def workers(ledger_path: Path, order: RunOrder) -> dict[str, tuple[str, ...]]:
    """Each worker's ids, from the ledger or from its file (exit 2 when that file is missing,
    is not the one the ledger names, or does not hold the ledger's count)."""
    if order.workers is not None:
        return order.workers
    assert order.file is not None  # the schema holds one or the other; see _checked
    path = ledger_path.parent / order.file.path
    where = f"{ledger_path}: $.run_order.file"
    try:
        data = path.read_bytes()
    except OSError as error:
        raise Refused(f"{where}: cannot read {path}: {error.strerror}") from None
    if hashlib.sha256(data).hexdigest() != order.file.sha256:
        raise Refused(f"{where}: {path} is not the file the ledger names (its sha256 differs)")
    document = jsonio.parse_json(data, path, "run order file")
    listed = document.get("workers") if isinstance(document, dict) else None
    if not _is_order(listed) or sum(map(len, listed.values())) != order.tests:
        raise Refused(f"{path}: $.workers: not {order.tests} node ids listed per worker")
    return {name: tuple(ids) for name, ids in listed.items()}


def _is_order(value: object) -> TypeGuard[dict[str, list[str]]]:
    """Lists of non-empty node ids per worker, as the ledger's schema holds them."""
    return isinstance(value, dict) and all(
        isinstance(ids, list) and all(isinstance(test_id, str) and test_id for test_id in ids)
        for ids in value.values()
    )


def combined(shards: Sequence[tuple[int, RunOrder, Mapping[str, Sequence[str]]]]) -> RunOrder:
    """The orders of several shards (index, order, workers) as one: each worker named
    `INDEX/WORKER`, so that each shard's order stays under its shard."""
    merged: dict[str, tuple[str, ...]] = {}
    seeds: dict[str, Seed] = {}
    for index, order, lists in shards:
        for name, ids in lists.items():
            merged[f"{index}/{name}"] = tuple(ids)
        for name, seed in order.seeds.items():
            seeds[f"{index}/{name}"] = seed
    return RunOrder(tests=sum(map(len, merged.values())), seeds=seeds, workers=merged)
