"""`vet --jobs N`'s baseline in N slices, taken as one: the checks that the slices ran one
suite, and the union of what each recorded.

Each slice collects the whole suite and runs every N-th of its sorted node ids
(`plugin/baseline_slice.py`), so slices that collected the same ids ran each item exactly
once between them. An item's reads come from its own slice: its collectors' and fixtures'
reads are recorded in every slice that ran one of their items.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger.errors import InfraFailure
from three_ledger.ledgers import Harness, PluginSource


def collected(folder: Path) -> frozenset[str] | None:
    """The node ids a slice's processes collected (before the cut); None when none did."""
    ids: set[str] = set()
    files = sorted(folder.glob("collected-*.json"))
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                ids.update(str(node_id) for node_id in json.loads(line))
            except (ValueError, TypeError):
                raise InfraFailure(f"{path.name}: line {number} is not a list of ids") from None
    return frozenset(ids) if files else None


def same_suite(suites: Sequence[frozenset[str] | None]) -> bool:
    """Every slice collected, and collected the same ids: their cuts cover the suite once."""
    return suites[0] is not None and all(suite == suites[0] for suite in suites)


def _fixed(harness: Harness) -> tuple[object, ...]:
    """What the harness measures before any test runs: alike in every slice of one suite."""
    return (
        harness.pytest,
        harness.rootdir,
        harness.config_file,
        harness.main,
        harness.pythonpath,
        harness.addopts,
    )


def united(harnesses: Sequence[Harness]) -> Harness | None:
    """The slices' harnesses as one, united as the plugin unites xdist workers' (conftests,
    test-side modules, plugins, shadowing); None when they differ in anything else."""
    first = harnesses[0]
    if any(_fixed(other) != _fixed(first) for other in harnesses[1:]):
        return None
    plugins = {plugin.name: plugin.source for harness in harnesses for plugin in harness.plugins}
    shadowing = {path: why for harness in harnesses for path, why in harness.shadowing.items()}
    return dataclasses.replace(
        first,
        conftests=tuple(sorted({path for h in harnesses for path in h.conftests})),
        test_side_modules=tuple(sorted({path for h in harnesses for path in h.test_side_modules})),
        plugins=tuple(PluginSource(name, source) for name, source in sorted(plugins.items())),
        shadowing=dict(sorted(shadowing.items())),
    )


def merged_reads(
    maps: Sequence[Mapping[str, frozenset[str]]],
) -> dict[str, frozenset[str]]:
    """The slices' read maps (item to the pinned files it opened) as one."""
    merged: dict[str, frozenset[str]] = {}
    for reads in maps:
        for item, paths in reads.items():
            merged[item] = merged.get(item, frozenset()) | paths
    return merged
