"""`ledgers.encode`'s column-by-column path for runs of plain records, against item by item."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from three_ledger.ledgers import FileEntry, Tool, encode


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass(frozen=True)
class Tagged:
    name: str
    colour: Colour | str
    extra: Any = None


def one_by_one(value: Any) -> Any:
    """The reference: every value converted on its own, by its runtime type."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: one_by_one(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [one_by_one(item) for item in value]
    if isinstance(value, dict):
        return {key: one_by_one(item) for key, item in value.items()}
    return value


plain = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
file_entries = st.builds(FileEntry, st.text(max_size=5), st.integers(), st.text(max_size=5))
tagged = st.builds(
    Tagged,
    st.text(max_size=3),
    st.sampled_from([Colour.RED, "red"]),
    plain | st.lists(plain, max_size=2) | st.builds(Tool, st.text(max_size=2), st.text(max_size=2)),
)
records = (
    file_entries | tagged | st.builds(Tool, plain, plain) | plain | st.sampled_from(list(Colour))
)


@settings(max_examples=400, deadline=None)
@given(st.lists(records, max_size=8) | st.lists(file_entries, max_size=8).map(tuple))
def test_encode_is_item_by_item_whatever_the_items(items: list[Any] | tuple[Any, ...]) -> None:
    assert encode(items) == one_by_one(items)
    assert encode({"files": items}) == one_by_one({"files": items})


def test_file_entries_become_objects_in_field_order() -> None:
    entries = (FileEntry("a", 1, "x"), FileEntry("b", 2, "y"))
    assert [list(item.items()) for item in encode(entries)] == [
        [("path", "a"), ("size", 1), ("sha256", "x")],
        [("path", "b"), ("size", 2), ("sha256", "y")],
    ]
