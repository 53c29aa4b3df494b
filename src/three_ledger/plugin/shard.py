"""Plugin-side: a shard runs exactly its slice of a shard plan, whatever CMD's paths select.

Standard library and pytest only, staged into the test child with the plugin. With
THREE_LEDGER_SHARD_IDS naming a JSON file that holds a list of node ids, every collected item
whose node id is not in that list is deselected, before the tripwire adds its sentinels (its
hook is trylast). xdist workers collect for themselves, so the controller hands the path on.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from .wire import SHARD_IDS_ENV

_WORKER_KEY = "three_ledger_shard_ids"
# Set in a run whose items are a shard's slice: the tripwire then arms even on an empty slice.
SHARD_ACTIVE = pytest.StashKey[bool]()


def install(config: pytest.Config) -> None:
    """Register the deselection when the gate named a slice (env, or xdist's workerinput)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        path = workerinput.get(_WORKER_KEY)
    else:
        # Popped: a pytest nested in a test must not be cut down to this slice.
        path = os.environ.pop(SHARD_IDS_ENV, None)
    if not path:
        return
    with open(path, encoding="utf-8") as stream:
        ids = json.load(stream)
    config.stash[SHARD_ACTIVE] = True
    config.pluginmanager.register(_Slice(path, frozenset(ids)), "three_ledger.shard")


class _Slice:
    def __init__(self, path: str, ids: frozenset[str]) -> None:
        self.path = path
        self.ids = ids

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = self.path

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        kept = [item for item in items if item.nodeid in self.ids]
        dropped = [item for item in items if item.nodeid not in self.ids]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
