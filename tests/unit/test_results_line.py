"""The plugin's results line is the text `json.dumps` makes of the same record, with its
newline: it is made from `json`'s string encoder, once per test, without `json.dumps`."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from three_ledger.plugin.hooks import results_line
from three_ledger.plugin.wire import Outcome

# Node ids as pytest makes them, and what a parametrisation id may hold: quotes,
# backslashes, control characters, letters outside ASCII, characters outside the BMP.
ODD_IDS = [
    "tests/test_a.py::test_b",
    'tests/test_a.py::test_b[a"b]',
    "tests/test_a.py::test_b[back\\slash]",
    "tests/test_a.py::test_b[tab\tnew\nline\x00\x1f\x7f]",
    "tests/tëst_ä.py::Test日本::test_🙂[é-\u2028-\ud7ff]",
    # A file name that is not UTF-8, as `os.fsdecode` gives it: a lone surrogate.
    "tests/test_\udcff.py::test_b",
]


def _dumps(nodeid: str, ids: list[str], outcome: Outcome, worker: str, skip: str | None) -> str:
    line: dict[str, object] = {
        "id": nodeid,
        "property_ids": sorted(ids),
        "outcome": outcome,
        "worker": worker,
    }
    if skip is not None:
        line["skip_reason"] = skip
    return json.dumps(line) + "\n"


def test_each_odd_node_id_is_written_as_json_dumps_writes_it() -> None:
    for nodeid in ODD_IDS:
        for outcome in Outcome:
            skip = "needs 'x' \\ \u00e9" if outcome is Outcome.SKIP else None
            made = results_line(nodeid, ["b.p", "a.p"], outcome, "gw1", skip)
            assert made == _dumps(nodeid, ["b.p", "a.p"], outcome, "gw1", skip)
            assert json.loads(made)["id"] == nodeid


@given(
    nodeid=st.text(min_size=1),
    ids=st.lists(st.text()),
    outcome=st.sampled_from(list(Outcome)),
    worker=st.text(),
    skip=st.none() | st.text(),
)
def test_any_record_is_written_as_json_dumps_writes_it(
    nodeid: str, ids: list[str], outcome: Outcome, worker: str, skip: str | None
) -> None:
    assert results_line(nodeid, ids, outcome, worker, skip) == _dumps(
        nodeid, ids, outcome, worker, skip
    )
