"""`selector_covers`: one selector selects every id another can select, decided statically.

Checked against `selects` over a set of ids: a cover the rule claims must hold for every id.
"""

from __future__ import annotations

import pytest

from three_ledger.commands.check_pins import selector_covers
from three_ledger.selection import selects

IDS = [
    "t/test_a.py",
    "t/test_a.py::test_x",
    "t/test_a.py::test_x[1]",
    "t/test_a.py::test_xy",
    "t/test_a.py::K::test_x",
    "t/test_b.py::test_x",
    "u/test_a.py::test_x",
]

COVERS = [
    ("t/test_a.py::test_x", "t/test_a.py::test_x"),
    ("t/test_a.py", "t/test_a.py::test_x"),
    ("t/test_a.py::test_x", "t/test_a.py::test_x[1]"),
    ("t/*::test_x", "t/test_a.py::test_x"),
    ("t/*", "t/test_*.py::test_x"),
    ("*::test_x", "t/*::test_x"),
    ("t/test_a.py", "t/test_a.py::*"),
    ("t/test_a.py::test_x*", "t/test_a.py::test_x"),
]

# Each with an id the narrow selector selects and the wide one does not.
DOES_NOT_COVER = [
    ("t/test_a.py::test_x", "t/test_a.py", "t/test_a.py::test_xy"),
    ("t/test_a.py::test_x", "t/test_a.py::test_xy", "t/test_a.py::test_xy"),
    ("t/test_a.py::test_x", "t/test_a.py::test_x*", "t/test_a.py::test_xy"),
    ("t/test_a.py::test_x", "t/*::test_x", "t/test_b.py::test_x"),
    ("t/*::test_x", "*::test_x", "u/test_a.py::test_x"),
    ("*_a.py::test_x", "t/test_*::test_x", "t/test_b.py::test_x"),
]


@pytest.mark.parametrize(("wide", "narrow"), COVERS)
def test_a_cover_selects_every_id_the_narrow_selector_selects(wide: str, narrow: str) -> None:
    assert selector_covers(wide, narrow)
    assert all(selects(wide, test_id) for test_id in IDS if selects(narrow, test_id))


@pytest.mark.parametrize(("wide", "narrow", "escaping"), DOES_NOT_COVER)
def test_no_cover_where_some_id_escapes(wide: str, narrow: str, escaping: str) -> None:
    assert selects(narrow, escaping)
    assert not selects(wide, escaping)
    assert not selector_covers(wide, narrow)
