"""`vet`'s entry mutants (the entries a property's tests consume) and its crash kills."""

from __future__ import annotations

import json
import tomllib

from three_ledger.vet.judge import Subject, Tracker, judge
from three_ledger.vet.mutations import Kind, entry_operators, entry_words
from three_ledger.vocabulary import Status, VetVerdict

SPEC = json.dumps(
    [
        {"markdown": "*a*", "html": "<em>a</em>", "example": 1, "ok": True},
        {"markdown": "**b**", "html": "<strong>b</strong>", "example": 2, "ok": False},
        {"markdown": "c", "html": "c", "example": 3, "ok": True},
    ],
    indent=2,
).encode()

BLOCKS = b"Simple:\n.\n| a |\n.\n<table>\n</table>\n.\n\n\nSecond:\n.\nx\n.\n<p>x</p>\n.\n"


def test_the_words_of_a_parametrisation() -> None:
    ids = [
        "t.py::test_spec[entry42]",
        "t.py::test_table[2-Simple:-| a |-<table>]",
        "t.py::test_plain",
        "t.py::TestA::test_b[deposit]",
    ]
    assert entry_words(ids) == {"entry42", "2", "Simple:", "| a |", "<table>", "deposit"}


def _one(words: dict[str, frozenset[str]], files: dict[str, bytes]) -> tuple[str, bytes]:
    operators = entry_operators(words, files)
    assert len(operators) == 1
    (_, data), *rest = operators[0].apply(files).items()
    assert rest == []
    assert operators[0].kind is Kind.WELL_FORMED
    return operators[0].name, data


def test_a_json_list_element_named_by_its_index_is_mutated_alone() -> None:
    name, data = _one({"s.json": frozenset({"entry1"})}, {"s.json": SPEC})
    assert name == "entry.json_element"
    before, after = json.loads(SPEC), json.loads(data)
    assert after[0] == before[0]
    assert after[2] == before[2]
    assert after[1] == {
        "markdown": "**b**~",
        "html": "<strong>b</strong>~",
        "example": 3,
        "ok": True,
    }


def test_a_json_object_member_named_by_its_key() -> None:
    document = b'{"deposit": {"amount": 5, "note": "x"}, "refund": {"amount": 1}}'
    name, data = _one({"c.json": frozenset({"deposit"})}, {"c.json": document})
    assert name == "entry.json_member"
    assert json.loads(data) == {"deposit": {"amount": 6, "note": "x~"}, "refund": {"amount": 1}}


def test_a_toml_table_named_by_the_id() -> None:
    text = b'[deposit]\namount = 5\nnote = "x"\nflag = true\n\n[refund]\namount = 1\n'
    name, data = _one({"c.toml": frozenset({"deposit"})}, {"c.toml": text})
    assert name == "entry.toml_table"
    assert tomllib.loads(data.decode()) == {
        "deposit": {"amount": 6, "note": "x~", "flag": False},
        "refund": {"amount": 1},
    }


def test_a_markdown_fixture_block_named_by_its_first_separator() -> None:
    name, data = _one({"t.md": frozenset({"1", "Simple:"})}, {"t.md": BLOCKS})
    assert name == "entry.markdown_block"
    assert data == BLOCKS.replace(b"<table>\n</table>\n", b"<table>~\n</table>~\n")
    # Counted from 1 as well: the second block's first separator is line 10 (index 9).
    _, second = _one({"t.md": frozenset({"10"})}, {"t.md": BLOCKS})
    assert second == BLOCKS.replace(b"<p>x</p>\n", b"<p>x</p>~\n")


def test_no_entry_operator_where_no_id_names_an_entry() -> None:
    files = {"s.json": SPEC, "t.md": BLOCKS, "x.bin": b"\x00"}
    assert entry_operators({"s.json": frozenset({"entry9"}), "t.md": frozenset({"3"})}, files) == ()
    assert entry_operators({}, files) == ()
    assert entry_operators({"x.bin": frozenset({"1"})}, files) == ()


def test_entry_mutants_come_first() -> None:
    files = {"s.json": SPEC}
    tracker = Tracker(
        Subject(("p",), ("s.json",), frozenset()),
        files,
        entry_operators({"s.json": frozenset({"entry0"})}, files),
    )
    first = tracker.next_mutant()
    assert first is not None
    assert first[0].name == "entry.json_element"


def test_a_kill_by_a_crash_of_the_whole_run_is_a_crash_trial_and_never_strong() -> None:
    files = {"s.json": SPEC}
    tracker = Tracker(Subject(("p",), ("s.json",), frozenset()), files)
    mutant = tracker.next_mutant()
    assert mutant is not None
    assert mutant[0].kind is Kind.WELL_FORMED
    tracker.record(mutant[0], 1, {"p": Status.ERROR}, 2)
    (trial,) = tracker.trials["p"]
    assert trial.kind is Kind.CRASH
    found = judge(tracker.trials["p"], files=["s.json"], reads=frozenset({"s.json"}), strict=False)
    assert found.verdict is VetVerdict.WEAK
    strict = judge(tracker.trials["p"], files=["s.json"], reads=frozenset({"s.json"}), strict=True)
    assert (strict.verdict, strict.gate) == (VetVerdict.WEAK, False)
