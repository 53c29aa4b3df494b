"""Plugin-side: a shard runs exactly its slice of a shard plan, whatever CMD's paths select.

Standard library and pytest only, staged into the test child with the plugin. With
THREE_LEDGER_SHARD_IDS naming a JSON file that holds a list of node ids, every collected item
whose node id is not in that list is deselected, before the tripwire adds its sentinels (at
the end of collection). xdist workers collect for themselves, so the controller hands the
paths on.

With THREE_LEDGER_PLANNED naming a JSON list of every node id the shard plan holds (all its
slices), a collected item outside that list is not dropped at once: it goes through every
other plugin's choice (`-k`, `-m`, a deselecting plugin), as it went through them when the
plan was collected, and the items left of it are then recorded in THREE_LEDGER_UNPLANNED (a
collection line each, `collect.collected_line`) and deselected. The gate refuses a shard
whose run collected a test the plan should hold and does not: a plan collected by code that
steered its own collection (`commands/property_shard.py`).

`vet` runs a mutant against the tests that read its files the other way round: with
THREE_LEDGER_DESELECT naming a JSON list of node ids, those items are deselected and every
other one runs, so an item the mutant itself brings into being (a new parametrisation) runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

from .collect import collected_line
from .wire import DESELECT_ENV, PLANNED_ENV, SHARD_IDS_ENV, UNPLANNED_ENV

_WORKER_KEY = "three_ledger_shard_ids"
_PLANNED_WORKER_KEY = "three_ledger_planned_ids"
_UNPLANNED_WORKER_KEY = "three_ledger_unplanned"
_DESELECT_WORKER_KEY = "three_ledger_deselect_ids"
# Set in a run whose items are a shard's slice: the tripwire then arms even on an empty slice.
SHARD_ACTIVE = pytest.StashKey[bool]()


def install(config: pytest.Config) -> None:
    """Register the deselection when the gate named a slice (env, or xdist's workerinput)."""
    path = _named(config, _WORKER_KEY, SHARD_IDS_ENV)
    planned = _named(config, _PLANNED_WORKER_KEY, PLANNED_ENV)
    unplanned = _named(config, _UNPLANNED_WORKER_KEY, UNPLANNED_ENV)
    if path:
        config.stash[SHARD_ACTIVE] = True
        keep = _Slice(path, _WORKER_KEY, keep=True)
        if planned and unplanned:
            keep.planned = _Unplanned(planned, unplanned)
            config.pluginmanager.register(keep.planned, "three_ledger.unplanned")
        config.pluginmanager.register(keep, "three_ledger.shard")
    dropped = _named(config, _DESELECT_WORKER_KEY, DESELECT_ENV)
    if dropped:
        # Every item may be left out: the tripwire then arms on an empty run, as for a shard.
        config.stash[SHARD_ACTIVE] = True
        deselect = _Slice(dropped, _DESELECT_WORKER_KEY, keep=False)
        config.pluginmanager.register(deselect, "three_ledger.deselect")


def _named(config: pytest.Config, worker_key: str, variable: str) -> str | None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        found: str | None = workerinput.get(worker_key)
        return found
    # Popped: a pytest nested in a test must not be cut down to this slice.
    return os.environ.pop(variable, None)


class _Slice:
    """KEEP: run only the items the file names; otherwise run all but those."""

    def __init__(self, path: str, worker_key: str, *, keep: bool) -> None:
        self.path = path
        self.worker_key = worker_key
        self.keep = keep
        self.ids = _read_ids(path)
        # A shard that checks its plan: the items the plan holds in no slice stay for it.
        self.planned: _Unplanned | None = None

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[self.worker_key] = self.path

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        ids, keep, planned = self.ids, self.keep, self.planned
        # Each item's fate once, then split on it: never `id()`, an audit event per item.
        if planned is None:
            fates = [(item.nodeid in ids) is keep for item in items]
        else:
            outside = planned.ids
            fates = [item.nodeid in ids or item.nodeid not in outside for item in items]
        if not all(fates):
            dropped = [item for item, kept in zip(items, fates, strict=True) if not kept]
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item, kept in zip(items, fates, strict=True) if kept]


class _Unplanned:
    """Around every choice of the items: those the plan holds in no slice, recorded (one
    write to a file opened for appending: xdist's workers share it) and deselected."""

    def __init__(self, planned: str, out: str) -> None:
        self.planned = planned
        self.out = out
        self.ids = _read_ids(planned)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_PLANNED_WORKER_KEY] = self.planned
        node.workerinput[_UNPLANNED_WORKER_KEY] = self.out

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, Any, Any]:
        result = yield
        planned = self.ids
        outside = [item for item in items if item.nodeid not in planned]
        text = "".join(
            collected_line(item.nodeid, list(item.iter_markers()), None) for item in outside
        )
        # Written even when empty: the gate tells a shard that found none from one that
        # never looked.
        descriptor = os.open(self.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, text.encode("utf-8"))
        finally:
            os.close(descriptor)
        if outside:
            config.hook.pytest_deselected(items=outside)
            items[:] = [item for item in items if item.nodeid in planned]
        return result


def _read_ids(path: str) -> frozenset[str]:
    with open(path, encoding="utf-8") as stream:
        return frozenset(json.load(stream))
