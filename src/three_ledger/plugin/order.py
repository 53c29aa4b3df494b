"""Plugin-side: the order a run keeps, and a rerun in an order the gate gives.

The order of each worker's tests is the order of the results file's lines, each of which
names its worker (hooks.py). What this module adds is, in the controller, the seed of a
plugin that shuffles the run (pytest-randomly's, read from its option once it configured),
written to THREE_LEDGER_ORDER; and, for `flake-evidence`, THREE_LEDGER_RUN_IDS: a JSON list
of node ids that the run executes exactly, in that order, in one process, to the end.
Standard library and pytest only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

from .wire import ORDER_ENV, RUN_IDS_ENV, SEED_KEY, SEED_PLUGIN_KEY

# The plugins whose seed is recorded: their registered name, and the option holding it.
_SEEDED = {"randomly": "randomly_seed"}


def install(config: pytest.Config) -> None:
    """In the controller: record the seed when asked; take the run's order when given one."""
    if hasattr(config, "workerinput"):
        return
    # Popped, so that a pytest nested in a test neither records nor reorders.
    order_path = os.environ.pop(ORDER_ENV, None)
    ids_path = os.environ.pop(RUN_IDS_ENV, None)
    if order_path:
        config.pluginmanager.register(_SeedRecorder(order_path), "three_ledger.order_seed")
    if ids_path:
        with open(ids_path, encoding="utf-8") as stream:
            ids = json.load(stream)
        _one_process_to_the_end(config)
        config.pluginmanager.register(_GivenOrder(ids), "three_ledger.given_order")


def _one_process_to_the_end(config: pytest.Config) -> None:
    """No xdist distribution (xdist decides at its trylast configure, after this one), and no
    stop at the first failures: a rerun replays one worker's sequence whole."""
    if hasattr(config.option, "dist"):
        config.option.dist = "no"
        config.option.tx = []
    config.option.maxfail = 0


class _SeedRecorder:
    def __init__(self, path: str) -> None:
        self.path = path

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # After every configure: a seeding plugin has chosen its seed by now.
        seeds = []
        for plugin, option in _SEEDED.items():
            value = session.config.getoption(option, None)
            if session.config.pluginmanager.has_plugin(plugin) and isinstance(value, int):
                seeds.append({SEED_PLUGIN_KEY: plugin, SEED_KEY: value})
        with open(self.path, "w", encoding="utf-8") as stream:
            json.dump(seeds, stream)


class _GivenOrder:
    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None, Any, Any]:
        # Around every other implementation (a shuffling plugin's too): the given order is last.
        result = yield
        by_id = {item.nodeid: item for item in items}
        kept = [by_id[test_id] for test_id in self.ids if test_id in by_id]
        wanted = set(self.ids)
        dropped = [item for item in items if item.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
        return result
