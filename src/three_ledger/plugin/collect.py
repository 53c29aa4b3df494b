"""What the plugin records for `three-ledger plan`, and the reason a test skipped.

Plugin-side: standard library and pytest only, staged into the test child with the plugin.
With THREE_LEDGER_COLLECT set, once collection ends, one JSON line per collected item is
appended to that file: its node id, the property ids of its markers and, when a skip is
already decided at collection (a `skip` marker, a `skipif` marker whose conditions are
booleans, a `unittest.skip` decorator), the reason it will skip with; when an expected
failure is (an `xfail` marker whose conditions are booleans, a `unittest.expectedFailure`
decorator), `"xfail": true`: the run scores such a test `fail` (SPEC 4.2), so a property
that counts it cannot pass.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring_ascii as _json_string

import pytest

from .wire import (
    COLLECT_ENV,
    ID_KEY,
    PROPERTY_IDS_KEY,
    PROPERTY_MARKER,
    SKIP_REASON_KEY,
    XFAIL_KEY,
)

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
        text = "".join(collected_lines(session.items))
        # Append: a command that runs pytest twice must not erase the first run's items.
        with open(self.path, "a", encoding="utf-8") as stream:
            stream.write(text)


def collected_lines(items: Iterable[pytest.Item]) -> Iterator[str]:
    """Each item's line, with its newline.

    What lies above an item is the same for every item of one parent: its parents' markers
    and, for one kind of item, the skip its test class gives. Items come in runs of one
    parent, so each run looks them up once; so is the skip of each run of items of one
    function (a parametrised test's). A walk up the chain for every item (`iter_markers`)
    and a class lookup for each were most of the cost of 20,000 lines.
    An item none of whose markers names a property or a skip (most of them) takes a
    shorter road to the same line: only a `unittest.skip` can skip it.
    """
    parent: object = _NONE_YET  # each run of one parent starts with a lookup
    above: list[pytest.Mark] = []
    above_says = False
    kind: type | None = None
    class_known = False
    class_skip: str | None = None
    # The items of one parametrised function share it: its skip is looked up once a run.
    function: object = _NONE_YET
    function_skip: str | _Undecided | None = _BY_CLASS
    function_xfail = False
    for item in items:
        if item.parent is not parent:
            parent = item.parent
            above = [] if item.parent is None else list(item.parent.iter_markers())
            above_says = any(marker.name in _SAYING for marker in above)
            kind = None
        if type(item) is not kind:
            kind = type(item)
            class_known = False
        own = item.own_markers
        says = above_says
        for marker in own:
            if marker.name in _SAYING:
                says = True
                break
        # The item's own markers, then its parents', closest first (`iter_markers`).
        markers = [*own, *above] if says else []
        reason = _marker_skip(markers) if says else _BY_FUNCTION
        obj = getattr(item, "obj", None)
        if obj is not function:
            function, function_skip = obj, _function_skip(obj)
            function_xfail = getattr(obj, "__unittest_expecting_failure__", False) is True
        if reason is _BY_FUNCTION:
            reason = function_skip
        if isinstance(reason, _Undecided):
            if not class_known:
                class_skip, class_known = _class_skip(item), True
            reason = class_skip
        xfail = function_xfail or (says and _marker_xfail(markers))
        if says or reason is not None or xfail:
            yield collected_line(item.nodeid, markers, reason, xfail=xfail)
        else:
            yield f"{{{_ID}: {_json_string(item.nodeid)}, {_PROPERTY_IDS}: []}}\n"


# The markers a line says something about: its property ids, a skip or an expected failure
# known at collection.
_SAYING = frozenset({PROPERTY_MARKER, "skip", "skipif", "xfail"})


class _Undecided:
    """A skip lookup that decided nothing: the next one decides (the markers', then the
    function's, then the test class's)."""


_BY_FUNCTION = _Undecided()
_BY_CLASS = _Undecided()
# No item seen yet: the first item starts a run (of its parent, of its function).
_NONE_YET = object()


def collected_line(
    nodeid: str, markers: list[pytest.Mark], reason: str | None, *, xfail: bool = False
) -> str:
    """One item's line, the text `json.dumps` makes of it, with its newline.

    Made from `json`'s own string encoder, as a results line is (`hooks.results_line`):
    `json.dumps` builds an encoder for every call. Property ids that are not all strings
    (`@pytest.mark.property(3)`) go through `json.dumps`, and the gate refuses the line.
    """
    property_ids = sorted(
        {arg for marker in markers if marker.name == PROPERTY_MARKER for arg in marker.args}
    )
    if not all(type(property_id) is str for property_id in property_ids):
        line: dict[str, object] = {ID_KEY: nodeid, PROPERTY_IDS_KEY: property_ids}
        if reason is not None:
            line[SKIP_REASON_KEY] = reason
        if xfail:
            line[XFAIL_KEY] = True
        return json.dumps(line) + "\n"
    ids = ", ".join(map(_json_string, property_ids))
    text = f"{{{_ID}: {_json_string(nodeid)}, {_PROPERTY_IDS}: [{ids}]"
    if reason is not None:
        text += f", {_SKIP_REASON}: {_json_string(reason)}"
    if xfail:
        text += f", {_XFAIL}: true"
    return text + "}\n"


_ID, _PROPERTY_IDS, _SKIP_REASON, _XFAIL = map(
    _json_string, (ID_KEY, PROPERTY_IDS_KEY, SKIP_REASON_KEY, XFAIL_KEY)
)


def _marker_skip(markers: list[pytest.Mark]) -> str | _Undecided | None:
    """The skip MARKERS decide at collection; `_BY_FUNCTION` where they decide none."""
    for marker in markers:
        if marker.name == "skip":
            reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
            return reason if isinstance(reason, str) else "unconditional skip"
    for marker in markers:
        if marker.name != "skipif":
            continue
        conditions = marker.args or (marker.kwargs.get("condition"),)
        reason = marker.kwargs.get("reason")
        # A string condition is evaluated by pytest only when the test runs.
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return reason if isinstance(reason, str) else None
    return _BY_FUNCTION


def _marker_xfail(markers: list[pytest.Mark]) -> bool:
    """Whether MARKERS decide an expected failure at collection: an `xfail` marker with no
    condition, or with conditions that are booleans, one of them true. pytest evaluates a
    string condition only when the test runs."""
    for marker in markers:
        if marker.name != "xfail":
            continue
        conditions = marker.args or (
            (marker.kwargs["condition"],) if "condition" in marker.kwargs else ()
        )
        if not conditions:
            return True
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return True
    return False


def _function_skip(function: object) -> str | _Undecided | None:
    """The skip an item's FUNCTION gives (`unittest.skip`); `_BY_CLASS` where it gives none."""
    if getattr(function, "__unittest_skip__", False):
        return _unittest_reason(function)
    return _BY_CLASS


def _class_skip(item: pytest.Item) -> str | None:
    """The skip ITEM's test class gives (`unittest.skip` on a TestCase), or None."""
    owner = getattr(item, "cls", None)
    return _unittest_reason(owner) if getattr(owner, "__unittest_skip__", False) else None


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
