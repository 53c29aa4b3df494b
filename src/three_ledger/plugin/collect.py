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
        with open(self.path, "a", encoding="utf-8") as stream:
            for item in session.items:
                stream.write(json.dumps(collected_line(item)) + "\n")


def collected_line(item: pytest.Item) -> dict[str, Any]:
    property_ids = sorted(
        {arg for marker in item.iter_markers(name=PROPERTY_MARKER) for arg in marker.args}
    )
    line: dict[str, Any] = {ID_KEY: item.nodeid, PROPERTY_IDS_KEY: property_ids}
    reason = skip_known_at_collection(item)
    if reason is not None:
        line[SKIP_REASON_KEY] = reason
    return line


def skip_known_at_collection(item: pytest.Item) -> str | None:
    """The reason ITEM will skip with, when that is decided before it runs; else None."""
    for marker in item.iter_markers(name="skip"):
        reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
        return reason if isinstance(reason, str) else "unconditional skip"
    for marker in item.iter_markers(name="skipif"):
        conditions = marker.args or (marker.kwargs.get("condition"),)
        reason = marker.kwargs.get("reason")
        # A string condition is evaluated by pytest only when the test runs.
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return reason if isinstance(reason, str) else None
    for owner in (getattr(item, "obj", None), getattr(item, "cls", None)):
        if getattr(owner, "__unittest_skip__", False):
            why = getattr(owner, "__unittest_skip_why__", "")
            return why if isinstance(why, str) else None
    return None


def skip_reason(report: pytest.TestReport) -> str | None:
    """The reason a skipped report gives (`pytest.skip`, markers, `unittest.skip`), or None."""
    longrepr = report.longrepr
    # A skip's longrepr is (path, line, message); through xdist it may arrive as a list.
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 and isinstance(longrepr[2], str):
        return longrepr[2].removeprefix(_SKIPPED_PREFIX)
    return None
