"""What the plugin records for `three-ledger plan`, and the reason a test skipped.

Plugin-side: standard library and pytest only, staged into the test child with the plugin.
With THREE_LEDGER_COLLECT set, once collection ends, one JSON line per collected item is
appended to that file: its node id, the property ids of its markers and, when a skip is
already decided at collection (a `skip` marker, a `skipif` marker whose conditions are
booleans, a `unittest.skip` decorator), the reason it will skip with.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from .wire import COLLECT_ENV, ID_KEY, PROPERTY_IDS_KEY, PROPERTY_MARKER, SKIP_REASON_KEY

# What pytest puts before a skip's reason in the report.
_SKIPPED_PREFIX = "Skipped: "


def register_collection_recorder(config: pytest.Config) -> None:
    """Record the collected items into $THREE_LEDGER_COLLECT, when it is set."""
    # Popped, as the results file is: a pytest nested in this one must not write here.
    path = os.environ.pop(COLLECT_ENV, None)
    if path:
        config.pluginmanager.register(_CollectionRecorder(path), "three_ledger.collection")


class _CollectionRecorder:
    def __init__(self, path: str) -> None:
        self.path = path

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Append: a command that runs pytest twice must not erase the first run's items.
        classes: dict[tuple[type, int], str | None] = {}
        with open(self.path, "a", encoding="utf-8") as stream:
            for item in session.items:
                stream.write(json.dumps(collected_line(item, classes)) + "\n")


def collected_line(
    item: pytest.Item, classes: dict[tuple[type, int], str | None]
) -> dict[str, Any]:
    """ITEM's line. CLASSES holds, per kind of item and parent collector already seen, the
    skip its test class gives: looking the class up walks the chain again for every item."""
    # One walk up the item's chain for every marker: each `iter_markers(name=...)` walks it
    # again, and a collection of 20,000 items made three walks each.
    markers: dict[str, list[pytest.Mark]] = {}
    for marker in item.iter_markers():
        markers.setdefault(marker.name, []).append(marker)
    property_ids = sorted(
        {arg for marker in markers.get(PROPERTY_MARKER, ()) for arg in marker.args}
    )
    line: dict[str, Any] = {ID_KEY: item.nodeid, PROPERTY_IDS_KEY: property_ids}
    reason = skip_known_at_collection(item, markers, classes)
    if reason is not None:
        line[SKIP_REASON_KEY] = reason
    return line


def skip_known_at_collection(
    item: pytest.Item,
    markers: dict[str, list[pytest.Mark]],
    classes: dict[tuple[type, int], str | None],
) -> str | None:
    """The reason ITEM will skip with, when that is decided before it runs; else None.

    MARKERS are the item's own and its parents' by name, closest first (`iter_markers`).
    """
    for marker in markers.get("skip", ()):
        reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
        return reason if isinstance(reason, str) else "unconditional skip"
    for marker in markers.get("skipif", ()):
        conditions = marker.args or (marker.kwargs.get("condition"),)
        reason = marker.kwargs.get("reason")
        # A string condition is evaluated by pytest only when the test runs.
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return reason if isinstance(reason, str) else None
    function = getattr(item, "obj", None)
    if getattr(function, "__unittest_skip__", False):
        return _unittest_reason(function)
    # The test class is the same for every item of one kind under one parent.
    parent = (type(item), id(item.parent))
    if parent not in classes:
        owner = getattr(item, "cls", None)
        classes[parent] = (
            _unittest_reason(owner) if getattr(owner, "__unittest_skip__", False) else None
        )
    return classes[parent]


def _unittest_reason(owner: object) -> str | None:
    why = getattr(owner, "__unittest_skip_why__", "")
    return why if isinstance(why, str) else None


def skip_reason(report: pytest.TestReport) -> str | None:
    """The reason a skipped report gives (`pytest.skip`, markers, `unittest.skip`), or None."""
    longrepr = report.longrepr
    # A skip's longrepr is (path, line, message); through xdist it may arrive as a list.
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 and isinstance(longrepr[2], str):
        return longrepr[2].removeprefix(_SKIPPED_PREFIX)
    return None
