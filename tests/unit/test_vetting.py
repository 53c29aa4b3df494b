"""Tests for three_ledger.vet.judge: grouping properties into runs, and judging their trials."""

from __future__ import annotations

import json
from pathlib import Path

from three_ledger.commands.vet import read_reads
from three_ledger.other_ledgers import PropertyVet, VetTrial
from three_ledger.pins import FixturePin, Property
from three_ledger.vet.judge import (
    Subject,
    Tracker,
    domain_files,
    judge,
    sample,
    subjects,
)
from three_ledger.vet.mutations import Kind
from three_ledger.vet.report import not_a_gate_line
from three_ledger.vocabulary import Status, VetVerdict

PIN = FixturePin(
    source=Path("pins/fixtures.json"),
    pin_id="fixpin-test",
    fixtures_dirs=("data",),
    digest=None,
    description=None,
    files=("data/a.json", "data/valid/x.json", "data/valid/y.json", "data/validity.json"),
)


def prop(*domain: str) -> Property:
    return Property(id="p", claim="c", domain=domain, test=())


def test_domain_files_expands_folders_and_keeps_only_pinned_paths() -> None:
    assert domain_files(prop("valid/"), PIN) == ("data/valid/x.json", "data/valid/y.json")
    assert domain_files(prop("a.json", "valid/x.json"), PIN) == (
        "data/a.json",
        "data/valid/x.json",
    )


def test_domain_files_of_several_folders_are_relative_to_root() -> None:
    pin = FixturePin(
        source=Path("pins/fixtures.json"),
        pin_id="fixpin-two",
        fixtures_dirs=("spec", "port/fixtures"),
        digest=None,
        description=None,
        files=("port/fixtures/a.md", "port/fixtures/b/c.md", "spec/s.json"),
        listed=True,
    )
    assert domain_files(prop("port/fixtures/b/", "spec/s.json", "s.json"), pin) == (
        "port/fixtures/b/c.md",
        "spec/s.json",
    )


def test_reads_are_named_from_root_and_only_pinned_files_count(tmp_path: Path) -> None:
    pin = FixturePin(
        source=Path("pins/fixtures.json"),
        pin_id="fixpin-two",
        fixtures_dirs=("spec", "port/fixtures"),
        digest=None,
        description=None,
        files=("port/fixtures/a.md", "spec/a.md"),
        listed=True,
    )
    lines = [
        {"id": "t.py::one", "reads": ["spec/a.md", "t.py", "conftest.py"]},
        {"id": "t.py::two", "reads": ["port/fixtures/a.md"]},
    ]
    (tmp_path / "reads-1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert read_reads(tmp_path, pin) == {
        "t.py::one": frozenset({"spec/a.md"}),
        "t.py::two": frozenset({"port/fixtures/a.md"}),
    }


def subject(ids: str, files: str, reads: str = "") -> Subject:
    return Subject(tuple(ids.split()), tuple(files.split()), frozenset(reads.split()))


def test_properties_with_the_same_domain_share_a_subject() -> None:
    grouped = subjects(
        {"p1": ("a", "b"), "p2": ("c",), "p3": ("a", "b")},
        {"p1": frozenset({"a"}), "p2": frozenset({"c"}), "p3": frozenset({"b", "z"})},
    )
    assert grouped == [subject("p1 p3", "a b", "a b z"), subject("p2", "c", "c")]


def trial(operator: str, kind: Kind, status: Status) -> VetTrial:
    return VetTrial(operator=operator, kind=kind, files_mutated=1, status=status, command_exit=1)


WELL, BAD = Kind.WELL_FORMED, Kind.MALFORMED


def test_a_well_formed_kill_is_strong() -> None:
    trials = [
        trial("json.negate_number", WELL, Status.PASS),
        trial("json.drop_element", WELL, Status.FAIL),
    ]
    found = judge(trials, files=["f"], reads=frozenset({"f"}), strict=True)
    assert (found.verdict, found.gate) == (VetVerdict.STRONG, True)
    assert found.killed_by == ("json.drop_element",)
    assert found.survived == ("json.negate_number",)
    assert found.statuses_seen == (Status.PASS, Status.FAIL)


def test_only_malformed_kills_are_weak_and_strict_counts_them_as_surviving() -> None:
    trials = [trial("json.negate_number", WELL, Status.PASS), trial("empty", BAD, Status.ERROR)]
    lenient = judge(trials, files=["f"], reads=frozenset({"f"}), strict=False)
    strict = judge(trials, files=["f"], reads=frozenset({"f"}), strict=True)
    assert (lenient.verdict, lenient.gate) == (VetVerdict.WEAK, True)
    assert (strict.verdict, strict.gate) == (VetVerdict.WEAK, False)


def test_skip_and_missing_are_not_kills() -> None:
    trials = [trial("empty", BAD, Status.SKIP), trial("truncate_half", BAD, Status.MISSING)]
    found = judge(trials, files=["f"], reads=frozenset({"f"}), strict=False)
    assert (found.verdict, found.gate) == (VetVerdict.SURVIVED, False)
    assert found.statuses_seen == (Status.SKIP, Status.MISSING)
    assert found.killed_by == found.survived == ()


def test_a_killed_property_that_read_none_of_its_domain_is_not_a_gate() -> None:
    trials = [trial("json.negate_number", WELL, Status.FAIL)]
    found = judge(trials, files=["f", "g"], reads=frozenset({"other"}), strict=False)
    assert (found.verdict, found.gate) == (VetVerdict.STRONG, False)
    assert found.unread_domain_files == ("f", "g")
    partly = judge(trials, files=["f", "g"], reads=frozenset({"g"}), strict=False)
    assert (partly.gate, partly.unread_domain_files) == (True, ("f",))


def test_the_last_line_names_each_property_that_is_not_a_gate_under_its_reason() -> None:
    killed = [trial("json.negate_number", WELL, Status.FAIL)]
    crashed = [trial("json.negate_number", WELL, Status.PASS), trial("empty", BAD, Status.ERROR)]
    survived = [trial("json.negate_number", WELL, Status.PASS)]

    def judged(trials: list[VetTrial], read: str, *, strict: bool = False) -> PropertyVet:
        return judge(trials, files=["f"], reads=frozenset({read}), strict=strict)

    properties = {
        "strong": judged(killed, "f"),
        "ceremony": judged(survived, "f"),
        "elsewhere": judged(killed, "other"),
        "crash.elsewhere": judged(crashed, "other"),
    }
    assert not_a_gate_line(properties, strict=False) == (
        "3 propert(ies) are not a gate: 1 cannot fail on their fixtures: ceremony; "
        "2 read none of their domain files: elsewhere, crash.elsewhere"
    )
    # Under --strict a crash is no kill: that property cannot fail, whatever it reads.
    strict = {**properties, "crash.elsewhere": judged(crashed, "other", strict=True)}
    assert not_a_gate_line(strict, strict=True) == (
        "3 propert(ies) are not a gate: 2 cannot fail on their fixtures: ceremony, "
        "crash.elsewhere; 1 read none of their domain files: elsewhere"
    )
    assert not_a_gate_line({"strong": properties["strong"]}, strict=False) is None


def test_a_tracker_stops_a_property_at_its_first_kill() -> None:
    tracker = Tracker(subject("p1 p2", "f.json"), {"f.json": b'{"n": [1, 2]}'})
    first = tracker.next_mutant()
    assert first is not None
    assert first[0].name == "json.negate_number"
    tracker.record(first[0], 1, {"p1": Status.FAIL, "p2": Status.PASS}, 1)
    assert tracker.active() == ["p2"]
    second = tracker.next_mutant()
    assert second is not None
    assert second[0].name == "json.drop_element"
    tracker.record(second[0], 1, {"p1": Status.PASS, "p2": Status.ERROR}, 1)
    assert tracker.active() == []
    assert tracker.next_mutant() is None
    assert [t.operator for t in tracker.trials["p1"]] == ["json.negate_number"]
    assert [t.status for t in tracker.trials["p2"]] == [Status.PASS, Status.ERROR]


def test_a_tracker_runs_out_of_operators() -> None:
    tracker = Tracker(subject("p1", "f.bin"), {"f.bin": b"\x00\x01"})
    seen = []
    while (mutant := tracker.next_mutant()) is not None:
        seen.append(mutant[0].name)
        tracker.record(mutant[0], 1, {"p1": Status.PASS}, 0)
    assert seen == ["empty", "flip_middle_byte", "truncate_half"]


def test_the_per_file_sample_is_fixed_and_spread() -> None:
    paths = [f"data/{folder}/{n}.json" for folder in "abc" for n in range(20)]
    chosen = sample(paths, 6)
    assert chosen == sample(reversed(paths), 6) == sorted(chosen)
    assert len(chosen) == 6
    assert len({path.split("/")[1] for path in chosen}) > 1
    assert sample(paths[:3], 10) == sorted(paths[:3])
