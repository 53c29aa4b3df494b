"""The object read a piece at a time: what it accepts is what the whole text parses to, and
it holds far less than the text while it reads."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import fast_path_examples
from three_ledger import json_stream, jsonio
from three_ledger.errors import Refused

EXAMPLES = fast_path_examples()
DECODER = jsonio._strict_decoder()
CAP = jsonio.MAX_DOCUMENT_BYTES

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)
objects = st.dictionaries(st.text(max_size=8), values | st.lists(st.text(max_size=10)))
layouts = st.sampled_from(
    [
        {},
        {"indent": 2},
        {"indent": "\t", "ensure_ascii": False},
        {"separators": (",", ":")},
        {"separators": (" ,\r\n", " :\t"), "ensure_ascii": False},
    ]
)
# Characters that make a text JSON or spoil it, for texts one edit away from a document.
SPOILERS = '{}[],:"\\ \n0-.eEtn\ufeff\x00'


def streamed(path: Path, chunk_bytes: int, max_bytes: int = CAP) -> Any:
    return json_stream.read_object(path, DECODER, max_bytes, chunk_bytes=chunk_bytes)


def same(left: Any, right: Any) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0 or True, order counts)."""
    return repr(left) == repr(right)


@settings(
    max_examples=EXAMPLES,
    deadline=None,  # a file written and read in pieces of a byte: slow on a busy machine
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(document=objects, layout=layouts, chunk_bytes=st.integers(1, 64))
def test_an_object_is_read_as_the_whole_text_parses(
    tmp_path: Path, document: dict[str, Any], layout: dict[str, Any], chunk_bytes: int
) -> None:
    path = tmp_path / "pin.json"
    path.write_text(json.dumps(document, **layout), encoding="utf-8")
    result = streamed(path, chunk_bytes)
    assert result is not None, "a well-formed object was declined"
    assert same(result[0], jsonio.parse_json(path.read_bytes(), path, "pin"))


@settings(
    max_examples=EXAMPLES,
    deadline=None,  # a file written and read in pieces of a byte: slow on a busy machine
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    document=objects,
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(SPOILERS + "x")), max_size=3),
    chunk_bytes=st.integers(1, 64),
)
def test_a_text_it_accepts_parses_to_the_same_and_none_it_refuses(
    tmp_path: Path, document: dict[str, Any], edits: list[tuple[int, str]], chunk_bytes: int
) -> None:
    text = json.dumps(document, ensure_ascii=False)
    for position, character in edits:
        at = position % (len(text) + 1)
        # "x" deletes the character there; anything else is put in before it.
        text = text[:at] + text[at + 1 :] if character == "x" else text[:at] + character + text[at:]
    path = tmp_path / "pin.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    result = streamed(path, chunk_bytes)
    try:
        expected = jsonio.parse_json(path.read_bytes(), path, "pin")
    except Refused:
        # Declined, or read with a lone surrogate that `jsonio` then refuses, as here.
        assert result is None or not jsonio._is_unicode(result[0])
        return
    if result is not None:
        assert same(result[0], expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('\ufeff{"a": 1}', "Unexpected UTF-8 BOM"),
        ('{"a": "\\ud800"}', "a lone surrogate escape"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": [1, 2,]}', "line 1, column 13"),
        ('{"a": 1} {}', "Extra data"),
        ('["a"]', None),
    ],
)
def test_the_reader_refuses_as_the_whole_text_is_refused(
    tmp_path: Path, text: str, message: str | None
) -> None:
    path = tmp_path / "pin.json"
    path.write_text(text, encoding="utf-8")
    result = streamed(path, 4)
    # Declined, or (a lone surrogate) left to the caller's check, as for the whole text.
    assert result is None or not jsonio._is_unicode(result[0])
    if message is None:  # JSON, but not an object: read whole, as it parses
        assert jsonio.read_json_object(path, "pin") == ["a"]
        return
    with pytest.raises(Refused) as refusal:
        jsonio.read_json_object(path, "pin")
    assert message in str(refusal.value)
    assert str(refusal.value).startswith(f"{path}: pin is not valid")


def test_a_file_that_is_not_utf8_or_too_large_or_a_folder_is_refused_as_before(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff"}')
    assert streamed(bad, 3) is None
    with pytest.raises(Refused, match=r"is not valid UTF-8 \(byte 7\)"):
        jsonio.read_json_object(bad, "pin")
    large = tmp_path / "large.json"
    large.write_text('{"a": "' + "b" * 100 + '"}')
    assert streamed(large, 8, max_bytes=100) is None
    assert streamed(large, 8, max_bytes=110) is not None
    with pytest.raises(Refused, match="is a folder"):
        jsonio.read_json_object(tmp_path, "pin")


def test_a_pipe_is_left_to_the_caller_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "pin.fifo"
    os.mkfifo(fifo)
    assert streamed(fifo, 4) is None  # it would block here if it opened the pipe
    writer = threading.Thread(target=fifo.write_text, args=('{"a": 1}',))
    writer.start()
    try:
        assert jsonio.read_json_object(fifo, "pin") == {"a": 1}
    finally:
        writer.join(timeout=10)


def test_a_value_longer_than_many_pieces_is_read_in_doubling_reads(tmp_path: Path) -> None:
    # One read a byte would scan the value again for each of its 300,000 bytes.
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"a": "b" * 300_000, "n": 12345678901234567890}))
    result = streamed(path, 1)
    assert result is not None
    assert result[0] == {"a": "b" * 300_000, "n": 12345678901234567890}


def test_a_long_list_of_paths_is_read_without_its_text_held_whole(tmp_path: Path) -> None:
    paths = [f"fixtures/folder-{n % 97}/case-{n:06d}-é.json" for n in range(50_000)]
    path = tmp_path / "pin.json"
    path.write_text(json.dumps({"pin_id": "p", "files": paths}, indent=2), encoding="utf-8")
    text_bytes = path.stat().st_size

    def held_while_reading(read: Any) -> int:
        tracemalloc.start()
        try:
            document = read()
            live, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert document["files"] == paths
        return peak - live

    whole = held_while_reading(lambda: jsonio.parse_json(path.read_bytes(), path, "pin"))
    pieces = held_while_reading(lambda: streamed(path, 64 * 1024)[0])
    assert whole > text_bytes
    assert pieces < text_bytes / 4
