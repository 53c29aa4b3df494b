"""Sharded scoring: which collected tests a plan fixes, and how they split into slices."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.pins import PropertiesPin
from three_ledger.results import CollectedIndex


def planned_ids(
    pin: PropertiesPin,
    flake_selectors: Sequence[str],
    ids: Sequence[str],
    property_ids: Sequence[tuple[str, ...]],
) -> list[str]:
    """Of the collected IDS (each with its PROPERTY_IDS), those a pinned property or a flake
    entry matches, in collection order."""
    index = CollectedIndex(ids, property_ids)
    chosen = index.pinned_positions(pin.selectors(), flake_selectors)
    return [ids[position] for position in sorted(chosen)]


def split(ids: Sequence[str], shards: int, seconds: Mapping[str, float]) -> list[list[str]]:
    """IDS in SHARDS slices: longest first into the lightest slice (lowest index on a tie).

    Each slice keeps the ids in their collection order. Without durations every test weighs
    the same, so the slices differ in size by one at most.
    """
    known = [seconds[test_id] for test_id in ids if test_id in seconds]
    if not known:
        # Every test weighs the same: the lightest slice is the next one in turn.
        return [list(ids[k::shards]) for k in range(shards)]
    # A test without a recorded duration weighs the mean of the recorded ones.
    default = sum(known) / len(known)
    weight = {test_id: seconds.get(test_id, default) for test_id in ids}
    position = {test_id: number for number, test_id in enumerate(ids)}
    slices: list[list[str]] = [[] for _ in range(shards)]
    # (load, size, index) of each slice: the heap's first is the lightest.
    lightest_first = [(0.0, 0, k) for k in range(shards)]
    for test_id in sorted(ids, key=lambda t: (-weight[t], position[t])):
        load, size, lightest = lightest_first[0]
        slices[lightest].append(test_id)
        heapq.heapreplace(lightest_first, (load + weight[test_id], size + 1, lightest))
    return [sorted(chosen, key=position.__getitem__) for chosen in slices]


def read_durations(path: Path) -> dict[str, float]:
    """A JSON object {node id: seconds}; anything else is refused (exit 2)."""
    data = jsonio.read_bytes_capped(path, "durations file")
    document = jsonio.parse_json(data, path, "durations file")
    if not isinstance(document, dict):
        raise Refused(f"{path}: $: expected an object {{node id: seconds}}")
    for key, value in document.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise Refused(f"{path}: $[{key!r}]: expected a number of seconds >= 0")
    return {key: float(value) for key, value in document.items()}
