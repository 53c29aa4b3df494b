"""Plugin-side: a shard runs exactly its slice of a shard plan, whatever CMD's paths select.

Standard library and pytest only, staged into the test child with the plugin. With
THREE_LEDGER_SHARD_IDS naming a JSON file that holds a list of node ids, every collected item
whose node id is not in that list is deselected, before the tripwire adds its sentinels (its
hook is trylast). xdist workers collect for themselves, so the controller hands the path on.

`vet` runs a mutant against the tests that read its files the other way round: with
THREE_LEDGER_DESELECT naming a JSON list of node ids, those items are deselected and every
other one runs, so an item the mutant itself brings into being (a new parametrisation) runs.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from .wire import DESELECT_ENV, SHARD_IDS_ENV

_WORKER_KEY = "three_ledger_shard_ids"
_DESELECT_WORKER_KEY = "three_ledger_deselect_ids"
# Set in a run whose items are a shard's slice: the tripwire then arms even on an empty slice.
SHARD_ACTIVE = pytest.StashKey[bool]()


def install(config: pytest.Config) -> None:
    """Register the deselection when the gate named a slice (env, or xdist's workerinput)."""
    path = _named(config, _WORKER_KEY, SHARD_IDS_ENV)
    if path:
        config.stash[SHARD_ACTIVE] = True
        config.pluginmanager.register(_Slice(path, _WORKER_KEY, keep=True), "three_ledger.shard")
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
        with open(path, encoding="utf-8") as stream:
            self.ids = frozenset(json.load(stream))

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[self.worker_key] = self.path

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        kept = [item for item in items if (item.nodeid in self.ids) is self.keep]
        dropped = [item for item in items if (item.nodeid in self.ids) is not self.keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
