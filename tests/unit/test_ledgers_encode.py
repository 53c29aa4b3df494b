"""The column-by-column routes of `ledgers`: `encode` on runs of plain records, and
`write_fixture_ledger`, each against the one-by-one route it stands in for."""

from __future__ import annotations

import dataclasses
import enum
import json
import operator
import tempfile
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fast_path_examples
from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.ledgers import (
    FILE_ENTRY_KEYS,
    FileEntry,
    FixtureLedger,
    Tool,
    encode,
    write_fixture_ledger,
    write_ledger,
)

# A fast path held to its reference: see helpers.fast_path_examples.
EXAMPLES = fast_path_examples()


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


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(records, max_size=8)
    | st.lists(file_entries, max_size=8).map(tuple)
    | st.lists(plain, max_size=8).map(tuple)
)
def test_encode_is_item_by_item_whatever_the_items(items: list[Any] | tuple[Any, ...]) -> None:
    assert encode(items) == one_by_one(items)
    assert encode({"files": items}) == one_by_one({"files": items})


def test_file_entries_become_objects_in_field_order() -> None:
    entries = (FileEntry("a", 1, "x"), FileEntry("b", 2, "y"))
    assert [list(item.items()) for item in encode(entries)] == [
        [("path", "a"), ("size", 1), ("sha256", "x")],
        [("path", "b"), ("size", 2), ("sha256", "y")],
    ]


# --- write_fixture_ledger: the columnar route to the same bytes and the same refusals ---------

hex_digests = st.text("0123456789abcdef", min_size=64, max_size=64)
plain_entries = st.builds(
    FileEntry,
    st.sampled_from(["fixtures/a.json", "fixtures/\u65e5.json", 'fixtures/"q"%s.json']),
    st.integers(min_value=0, max_value=2**40),
    hex_digests,
)
near_values: dict[str, st.SearchStrategy[Any]] = {
    "path": st.sampled_from(["", "x", "\n"]),
    "size": st.sampled_from([-1, -(2**40)]),
    "sha256": st.sampled_from(["", "ab", "0" * 63 + "g", "0" * 63 + "\u00e9", "A" * 64]),
}


@st.composite
def fixture_ledgers(draw: st.DrawFn) -> FixtureLedger:
    """Ledgers of plain entries, some with one entry (or the pin id) a little wrong."""
    entries = draw(st.lists(plain_entries, max_size=8))
    spoil: bool = draw(st.booleans())
    if entries and spoil:
        index = draw(st.integers(0, len(entries) - 1))
        field = draw(st.sampled_from(sorted(near_values)))
        wrong: Any = draw(near_values[field])
        entries[index] = dataclasses.replace(entries[index], **{field: wrong})
    return FixtureLedger(
        ledger_id="0123456789abcdef" * 2,
        pin_id=draw(st.sampled_from(["fix.pin", "fix.pin", "bad pin"])),
        digest="ab" * 32,
        fixtures_dir="fixtures",
        files=tuple(entries),
        recorded_at="2026-11-30T10:11:12.123456Z",
    )


def outcome(write: Callable[[Path, FixtureLedger], None], path: Path, ledger: FixtureLedger) -> str:
    try:
        write(path, ledger)
    except Refused as refused:
        return f"refused: {refused}"
    return path.read_text(encoding="utf-8")


@settings(max_examples=EXAMPLES, deadline=None)
@given(fixture_ledgers())
def test_write_fixture_ledger_writes_and_refuses_as_write_ledger(ledger: FixtureLedger) -> None:
    with tempfile.TemporaryDirectory() as temp:
        plain = outcome(write_ledger, Path(temp, "l.json"), ledger)
        columns = outcome(write_fixture_ledger, Path(temp, "l.json"), ledger)
    assert columns == plain


def write_from_columns(path: Path, ledger: FixtureLedger) -> None:
    """The digest command's route: the entries given as columns, the ledger's own left empty."""
    columns = tuple(list(map(operator.attrgetter(key), ledger.files)) for key in FILE_ENTRY_KEYS)
    empty = dataclasses.replace(ledger, files=())
    write_fixture_ledger(path, empty, jsonio.Rows(FILE_ENTRY_KEYS, columns))


@settings(max_examples=EXAMPLES, deadline=None)
@given(fixture_ledgers())
def test_entries_given_as_columns_write_and_refuse_as_write_ledger(ledger: FixtureLedger) -> None:
    with tempfile.TemporaryDirectory() as temp:
        plain = outcome(write_ledger, Path(temp, "l.json"), ledger)
        columns = outcome(write_from_columns, Path(temp, "l.json"), ledger)
    assert columns == plain


def write_from_compact_columns(path: Path, ledger: FixtureLedger) -> None:
    """The digest command's route as it holds the entries: sizes in an array, digests as
    raw bytes (`jsonio.HexDigests`)."""
    paths = tuple(entry.path for entry in ledger.files)
    sizes = array("Q", [entry.size for entry in ledger.files])
    digests = jsonio.HexDigests(b"".join(bytes.fromhex(entry.sha256) for entry in ledger.files))
    empty = dataclasses.replace(ledger, files=())
    write_fixture_ledger(path, empty, jsonio.Rows(FILE_ENTRY_KEYS, (paths, sizes, digests)))


@settings(max_examples=EXAMPLES, deadline=None)
@given(fixture_ledgers(), st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=600))
def test_compact_columns_write_as_write_ledger(ledger: FixtureLedger, raw: list[bytes]) -> None:
    """Entries that `digest` can make (sizes >= 0, real digests) write the same bytes."""
    entries = (
        FileEntry(f"fixtures/{n}.bin", n * 9, raw_digest.hex()) for n, raw_digest in enumerate(raw)
    )
    ledger = dataclasses.replace(ledger, pin_id="fix.pin", files=tuple(entries))
    with tempfile.TemporaryDirectory() as temp:
        plain = outcome(write_ledger, Path(temp, "l.json"), ledger)
        compact = outcome(write_from_compact_columns, Path(temp, "l.json"), ledger)
    assert compact == plain
    assert not compact.startswith("refused")


def test_file_entry_keys_are_the_schema_keys_in_order() -> None:
    item = jsonio.load_schema("fixture-ledger")["properties"]["files"]["items"]
    assert tuple(item["properties"]) == tuple(item["required"]) == FILE_ENTRY_KEYS


def test_write_fixture_ledger_on_many_files_is_the_indented_document(tmp_path: Path) -> None:
    entries = tuple(
        FileEntry(f"fixtures/{index:05d}\u00e9.json", index, f"{index:064x}")
        for index in range(3000)
    )
    ledger = FixtureLedger(
        ledger_id="0123456789abcdef" * 2,
        pin_id="fix.pin",
        digest="ab" * 32,
        fixtures_dir="fixtures",
        files=entries,
        recorded_at="2026-11-30T10:11:12.123456Z",
    )
    write_fixture_ledger(tmp_path / "l.json", ledger)
    text = (tmp_path / "l.json").read_text(encoding="utf-8")
    assert text == json.dumps(ledger.to_json(), indent=2, ensure_ascii=False) + "\n"
