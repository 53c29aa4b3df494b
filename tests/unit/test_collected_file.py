"""The collection file `plan` and `shard-plan` read: one JSON object per line, each a test.

Lines are parsed in one call where that gives one object per line; every refusal still names
its line, as a parse line by line would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from three_ledger.errors import InfraFailure
from three_ledger.run.collection import read_collected, read_collected_ids
from three_ledger.vocabulary import Outcome


def collected(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "collected.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def line(test_id: str, *property_ids: str, skip: str | None = None, xfail: bool = False) -> str:
    record = {"id": test_id, "property_ids": list(property_ids), "skip_reason": skip}
    return json.dumps({**record, "xfail": True} if xfail else record)


def test_each_line_is_a_test_in_collection_order(tmp_path: Path) -> None:
    path = collected(
        tmp_path,
        line("t.py::b", "p.b"),
        line("t.py::a"),
        line("t.py::c", skip="x"),
        line("t.py::d", xfail=True),  # an expected failure scores fail
    )
    tests = read_collected(path, tmp_path / "log")
    assert [(t.id, t.property_ids, t.outcome) for t in tests] == [
        ("t.py::b", ("p.b",), Outcome.PASS),
        ("t.py::a", (), Outcome.PASS),
        ("t.py::c", (), Outcome.SKIP),
        ("t.py::d", (), Outcome.FAIL),
    ]
    assert tests[2].skip_reason == "x"


@pytest.mark.parametrize(
    ("lines", "refusal"),
    [
        ([line("t.py::a"), "{not json"], "line 2: not valid JSON"),
        ([line("t.py::a"), "", line("t.py::b")], "line 2: not valid JSON"),
        ([line("t.py::a"), "[1]"], "line 2: not a collected test"),
        # One object split over two lines: the first is named.
        (['{"id": "t.py::a", "property_ids": [', '"p"], "skip_reason": null}'],
         "line 1: not valid JSON"),
        ([line("t.py::a"), '{"id": "t.py::b", "property_ids": "p"}'],
         "line 2: not a collected test"),
        ([line("t.py::a"), '{"id": "t.py::b", "property_ids": ["p", 3]}'],
         "line 2: not a collected test"),
        (['{"id": 1, "property_ids": []}'], "line 1: not a collected test"),
        ([line("t.py::a"), '{"id": "t.py::b", "property_ids": [], "skip_reason": 3}'],
         "line 2: not a collected test"),
        ([line("t.py::a"), '{"id": "t.py::b", "property_ids": [], "xfail": 1}'],
         "line 2: not a collected test"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("reader", [read_collected, read_collected_ids])
def test_a_line_that_is_not_a_test_is_named(
    tmp_path: Path, lines: list[str], refusal: str, reader: Callable[[Path, Path], object]
) -> None:
    with pytest.raises(InfraFailure, match=refusal):
        reader(collected(tmp_path, *lines), tmp_path / "log")


def test_shard_plans_reading_gives_the_ids_and_property_ids_of_the_tests(tmp_path: Path) -> None:
    """`read_collected_ids` (shard-plan) makes no result per test, but gives what the results
    of `read_collected` (plan, init) hold: an id repeated is one test, its markers united."""
    path = collected(
        tmp_path,
        line("t.py::b", "p.b"),
        line("t.py::a", skip="x"),
        line("t.py::b", "p.a", "p.b"),
        line("t.py::c"),
        line("t.py::a", "p.c"),
    )
    tests = read_collected(path, tmp_path / "log")
    found = read_collected_ids(path, tmp_path / "log")
    assert found.ids == [t.id for t in tests] == ["t.py::b", "t.py::a", "t.py::c"]
    assert found.property_ids == [t.property_ids for t in tests]
    assert found.property_ids == [("p.b", "p.a"), ("p.c",), ()]
