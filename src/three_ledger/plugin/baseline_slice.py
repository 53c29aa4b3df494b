"""Plugin-side: one slice of `vet`'s baseline, which `vet --jobs N` runs in N slices at once.

Standard library and pytest only, staged into the test child with the plugin. With
THREE_LEDGER_SLICE set to `K/N` (K from 1), the whole suite is collected as usual, then its
node ids are sorted and every N-th one from the K-th is kept: the rest are deselected, before
the tripwire adds its sentinels. The slices of one suite are thus disjoint and cover it,
whatever order a plugin runs the items in. With THREE_LEDGER_SLICE_COLLECTED naming a
folder, each process that collects appends every node id it collected (before the cut) to a
file of its own there, so that `vet` can check that every slice collected the same items.
xdist workers collect for themselves, so the controller hands both on.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from .shard import SHARD_ACTIVE
from .wire import SLICE_COLLECTED_ENV, SLICE_ENV

_WORKER_KEY = "three_ledger_baseline_slice"


def install(config: pytest.Config) -> None:
    """Register the cut when `vet` named a slice (env, or xdist's workerinput)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        named: list[str] | None = workerinput.get(_WORKER_KEY)
    else:
        # Popped: a pytest nested in a test must not be cut down to this slice.
        wanted, folder = os.environ.pop(SLICE_ENV, None), os.environ.pop(SLICE_COLLECTED_ENV, "")
        named = None if wanted is None else [wanted, folder]
    if named is None:
        return
    # The slice may hold no item: the tripwire then arms on an empty run, as for a shard.
    config.stash[SHARD_ACTIVE] = True
    config.pluginmanager.register(_Slice(*named), "three_ledger.baseline_slice")


class _Slice:
    def __init__(self, wanted: str, folder: str) -> None:
        self.named = (wanted, folder)
        number, _, count = wanted.partition("/")
        self.index, self.count = int(number) - 1, int(count)
        self.folder = folder

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = self.named

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        ordered = sorted({item.nodeid for item in items})
        kept = set(ordered[self.index :: self.count])
        if self.folder:
            path = os.path.join(self.folder, f"collected-{os.getpid()}.json")
            with open(path, "a", encoding="utf-8") as stream:
                stream.write(json.dumps(ordered) + "\n")
        dropped = [item for item in items if item.nodeid not in kept]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid in kept]
