"""Tests for three_ledger.vet.mutations: what each operator does to a file's bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from three_ledger.vet import mutations
from three_ledger.vet.mutations import MALFORMED, OPERATORS, WELL_FORMED, Kind, mutants

ORDER = b"""{
  "id": "ord-0001",
  "lines": [{"sku": "TEA", "quantity": 2, "price": 250}, {"sku": "CUP", "quantity": 1, "price": 5}],
  "paid": true,
  "refunded": false,
  "total": 505
}
"""
TEXT = b"alpha\nbeta\ngamma\ndelta\n"


def operator(name: str) -> mutations.Operator:
    return next(op for op in OPERATORS if op.name == name)


def mutate(name: str, data: bytes, path: str = "f.json") -> bytes | None:
    return operator(name).apply({path: data}).get(path)


def test_the_operators_and_their_kinds() -> None:
    assert [op.name for op in WELL_FORMED] == [
        "json.negate_number", "json.drop_element", "json.swap_values", "text.drop_line",
        "text.swap_lines", "json.zero_number", "json.bump_number", "json.blow_up_number",
        "swap_files",
    ]  # fmt: skip
    assert [op.name for op in MALFORMED] == ["empty", "flip_middle_byte", "truncate_half"]
    assert {op.kind for op in WELL_FORMED} == {Kind.WELL_FORMED}
    assert {op.kind for op in MALFORMED} == {Kind.MALFORMED}


def numbers(document: Any) -> list[Any]:
    if isinstance(document, dict):
        return [n for value in document.values() for n in numbers(value)]
    if isinstance(document, list):
        return [n for value in document for n in numbers(value)]
    return [document] if type(document) in (int, float) else []


@pytest.mark.parametrize(
    ("name", "changed"),
    [
        ("json.negate_number", lambda before, after: before == -after and after != 0),
        ("json.zero_number", lambda before, after: after == 0 != before),
        ("json.bump_number", lambda before, after: after == before + 1),
        ("json.blow_up_number", lambda before, after: after == 2**53 + 1),
    ],
)
def test_number_operators_change_a_few_numbers_and_nothing_else(name: str, changed: Any) -> None:
    mutated = mutate(name, ORDER)
    assert mutated is not None
    before, after = numbers(json.loads(ORDER)), numbers(json.loads(mutated))
    moved = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert 1 <= len(moved) <= mutations.SITES
    assert all(changed(b, a) for b, a in moved)
    # The bytes around each edited number are untouched: same lines, same layout.
    assert mutated.count(b"\n") == ORDER.count(b"\n")
    assert mutated.replace(b"-", b"") != ORDER or name != "json.negate_number"


def test_drop_element_removes_an_array_element_and_keeps_valid_json() -> None:
    mutated = mutate("json.drop_element", ORDER)
    assert mutated is not None
    assert len(json.loads(mutated)["lines"]) == 1
    assert json.loads(mutated)["id"] == "ord-0001"


@pytest.mark.parametrize("array", [b"[1]", b"[1, 2]", b"[1, 2, 3]", b"[[1, 2], [3]]", b' [ "a" ] '])
def test_drop_element_on_every_shape_of_array_is_still_json(array: bytes) -> None:
    mutated = mutate("json.drop_element", array)
    assert mutated is not None
    assert len(json.dumps(json.loads(mutated))) < len(json.dumps(json.loads(array)))


def test_swap_values_swaps_two_values_of_one_type() -> None:
    document = b'{"a": "x", "b": 1, "c": "y", "d": true, "e": false, "f": 1.5}'
    mutated = mutate("json.swap_values", document)
    assert mutated is not None
    assert json.loads(mutated) == {"a": "y", "b": 1, "c": "x", "d": False, "e": True, "f": 1.5}


def test_swap_values_never_swaps_equal_values_or_keys() -> None:
    assert mutate("json.swap_values", b'{"a": "x", "b": "x"}') is None
    assert mutate("json.swap_values", b'{"a": 1, "b": "1"}') is None


@pytest.mark.parametrize(
    "data", [b"", b"not json", b'{"a": NaN}', b"\xff\xfe", b"[1, 2", b'{"a": 1} {"b": 2}']
)
def test_json_operators_leave_what_is_not_strict_json_alone(data: bytes) -> None:
    for op in WELL_FORMED:
        if op.name.startswith("json."):
            assert mutate(op.name, data) is None, op.name


def test_drop_line_drops_lines_but_never_all() -> None:
    mutated = mutate("text.drop_line", TEXT, "f.txt")
    assert mutated is not None
    kept = mutated.decode().splitlines()
    assert 1 <= len(kept) < 4
    assert all(line in TEXT.decode().splitlines() for line in kept)
    assert mutate("text.drop_line", b"one\ntwo", "f.txt") == b"two"


def test_swap_lines_keeps_each_line_ending_in_its_place() -> None:
    assert mutate("text.swap_lines", b"a\nb", "f.txt") == b"b\na"
    assert mutate("text.swap_lines", b"a\r\nb\n", "f.txt") == b"b\r\na\n"
    mutated = mutate("text.swap_lines", TEXT, "f.txt")
    assert mutated is not None
    assert sorted(mutated.splitlines()) == sorted(TEXT.splitlines()) != mutated.splitlines()


@pytest.mark.parametrize("data", [b"single line\n", b"a\0b\nc\n", ORDER, b"\xff\n\xfe\n"])
def test_line_operators_need_two_lines_of_text_that_is_not_json(data: bytes) -> None:
    assert mutate("text.drop_line", data, "f.txt") is None
    assert mutate("text.swap_lines", data, "f.txt") is None


def test_swap_files_swaps_neighbours_with_the_same_suffix() -> None:
    files = {"a.json": b"1", "b.json": b"2", "c.toml": b"x", "d.toml": b"y", "e.json": b"3"}
    swapped = operator("swap_files").apply(files)
    assert swapped == {"a.json": b"2", "b.json": b"1", "c.toml": b"y", "d.toml": b"x"}
    assert operator("swap_files").apply({"a.json": b"1"}) == {}
    assert operator("swap_files").apply({"a.json": b"1", "b.json": b"1"}) == {}


def test_malformed_operators() -> None:
    assert mutate("empty", b"abc") == b""
    assert mutate("flip_middle_byte", b"abc") == b"a\x9dc"
    assert mutate("truncate_half", b"abcd") == b"ab"
    for op in MALFORMED:
        assert mutate(op.name, b"") is None  # an empty file has nothing left to break


def test_mutants_skip_operators_that_change_nothing_and_repeats() -> None:
    files = {"one.bin": b"\x00\x01"}
    names = [op.name for op, _ in mutants(files)]
    # Binary: only the malformed operators apply; truncating two bytes to one is not empty.
    assert names == ["empty", "flip_middle_byte", "truncate_half"]
    names = [op.name for op, _ in mutants({"one.bin": b"\x07"})]
    assert names == ["empty", "flip_middle_byte"]  # truncating one byte repeats `empty`


def test_the_same_bytes_give_the_same_mutants() -> None:
    files = {"a.json": ORDER, "b.txt": TEXT}
    first = [(op.name, mutation) for op, mutation in mutants(files)]
    assert first == [(op.name, mutation) for op, mutation in mutants(files)]
    assert [name for name, _ in first][:3] == [
        "json.negate_number", "json.drop_element", "json.swap_values",
    ]  # fmt: skip


scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
json_values = st.recursive(
    scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 2]))
def test_well_formed_json_operators_always_give_valid_json(value: Any, indent: int | None) -> None:
    data = json.dumps(value, indent=indent).encode()
    for op in WELL_FORMED:
        mutated = op.apply({"f.json": data}).get("f.json")
        if mutated is not None and op.name.startswith("json."):
            json.loads(mutated)
            assert mutated != data
