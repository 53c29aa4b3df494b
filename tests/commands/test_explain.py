"""`explain` and `fixture_diff`: which pinned files moved between two fixture ledgers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import CliResult, RunCli, fixture_pin, make_tree, write_json
from three_ledger.digest import live_digest
from three_ledger.fixture_diff import file_changes
from three_ledger.ledgers import FileEntry, FixtureLedger, read_ledger
from three_ledger.pins import load_fixture_pin

BEFORE = {
    "fixtures/keep.json": b"{}",
    "fixtures/valid/changed.json": b'{"n": 1}',
    "fixtures/valid/gone.json": b"[1, 2, 3]",
}
AFTER = {
    "fixtures/keep.json": b"{}",
    "fixtures/valid/changed.json": b'{"n": 10}',
    "fixtures/invalid/new.json": b"{",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ledger_of(run_cli: RunCli, root: Path, files: dict[str, bytes], name: str) -> Path:
    """Write `files` as the whole fixtures tree of `root`, then digest it into a ledger."""
    make_tree(root, files)
    pin = fixture_pin(root, list(files), name=f"{name}.json")
    out = root.parent / "ledgers" / f"{name}.json"
    result = run_cli("digest", "--pin", pin, "--root", root, "--out", out)
    assert result.code == 0, result.err
    return out


def explain(run_cli: RunCli, left: Path, right: Path) -> CliResult:
    return run_cli("explain", left, right)


def edit(path: Path, change: Any) -> Path:
    document = json.loads(path.read_text())
    change(document)
    return write_json(path.with_name(f"edited-{path.name}"), document)


def test_changed_added_and_removed_are_each_reported(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    right = ledger_of(run_cli, tmp_path / "head", AFTER, "right")
    result = explain(run_cli, left, right)
    assert result.code == 1
    old, new = BEFORE["fixtures/valid/changed.json"], AFTER["fixtures/valid/changed.json"]
    gone, added = BEFORE["fixtures/valid/gone.json"], AFTER["fixtures/invalid/new.json"]
    assert result.out.splitlines() == [
        f"added\tfixtures/invalid/new.json\tsize - -> 1\tsha256 - -> {sha(added)}",
        f"changed\tfixtures/valid/changed.json\tsize 8 -> 9\tsha256 {sha(old)} -> {sha(new)}",
        f"removed\tfixtures/valid/gone.json\tsize 9 -> -\tsha256 {sha(gone)} -> -",
    ]
    assert "1 added, 1 removed, 1 changed" in result.err


def test_the_one_changed_file_in_a_large_tree(run_cli: RunCli, tmp_path: Path) -> None:
    files = {f"fixtures/valid/{i % 9}/case_{i:04d}.json": str(i).encode() for i in range(600)}
    left = ledger_of(run_cli, tmp_path / "base", files, "left")
    files["fixtures/valid/4/case_0301.json"] = b"moved"
    right = ledger_of(run_cli, tmp_path / "head", files, "right")
    result = explain(run_cli, left, right)
    assert result.code == 1
    assert [line.split("\t")[:2] for line in result.out.splitlines()] == [
        ["changed", "fixtures/valid/4/case_0301.json"]
    ]


def test_equal_ledgers_exit_0(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    right = ledger_of(run_cli, tmp_path / "head", BEFORE, "right")
    assert (
        json.loads(left.read_text())["recorded_at"] != json.loads(right.read_text())["recorded_at"]
    )
    result = explain(run_cli, left, right)
    assert (result.code, result.out) == (0, "")
    assert "digests are equal" in result.err


def test_lines_are_sorted_by_path(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", {"fixtures/m": b"1"}, "left")
    names = ["fixtures/\u00e9", "fixtures/B", "fixtures/a", "fixtures/m"]
    right = ledger_of(run_cli, tmp_path / "head", dict.fromkeys(names, b"2"), "right")
    paths = [line.split("\t")[1] for line in explain(run_cli, left, right).out.splitlines()]
    assert paths == sorted(names)


def test_forged_digest_over_an_equal_file_list(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    forged = edit(left, lambda document: document.update(digest="0" * 64))
    result = explain(run_cli, left, forged)
    assert (result.code, result.out) == (1, "")
    assert "the file lists are equal" in result.err
    assert "forged" in result.err


def test_equal_digests_over_different_file_lists_is_not_equal(
    run_cli: RunCli, tmp_path: Path
) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    forged = edit(left, lambda document: document["files"][0].update(size=99))
    result = explain(run_cli, left, forged)
    assert result.code == 1
    assert result.out.startswith("changed\tfixtures/keep.json\tsize 2 -> 99\t")
    assert "digests are equal but the file lists differ" in result.err


def test_a_control_character_in_a_path_cannot_forge_a_line(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    forged = edit(left, lambda document: document["files"][0].update(path="fixtures/x\nadded\ty"))
    lines = explain(run_cli, left, forged).out.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("added\t'fixtures/x\\nadded\\ty'\tsize - -> 2")


def test_different_pins_are_noted(run_cli: RunCli, tmp_path: Path) -> None:
    left = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    other = edit(left, lambda document: document.update(pin_id="fixpin-other"))
    result = explain(run_cli, left, other)
    assert result.code == 0
    assert "different pins (fixpin-test, fixpin-other)" in result.err


def break_kind(document: dict[str, Any]) -> None:
    document["kind"] = "property"


def break_digest(document: dict[str, Any]) -> None:
    document["digest"] = "XYZ"


def drop_files(document: dict[str, Any]) -> None:
    del document["files"]


def repeat_a_path(document: dict[str, Any]) -> None:
    document["files"].append(document["files"][0])


@pytest.mark.parametrize("damage", [break_kind, break_digest, drop_files, repeat_a_path])
@pytest.mark.parametrize("side", ["left", "right"])
def test_invalid_ledger_exits_2(run_cli: RunCli, tmp_path: Path, damage: Any, side: str) -> None:
    good = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    bad = edit(good, damage)
    result = explain(run_cli, *((bad, good) if side == "left" else (good, bad)))
    assert (result.code, result.out) == (2, "")
    assert result.first_error_line.startswith(f"three-ledger: refused: {bad}: $")


def test_missing_or_non_json_ledger_exits_2(run_cli: RunCli, tmp_path: Path) -> None:
    good = ledger_of(run_cli, tmp_path / "base", BEFORE, "left")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    for bad in (tmp_path / "absent.json", garbage):
        result = explain(run_cli, good, bad)
        assert result.code == 2
        assert str(bad) in result.first_error_line


def test_missing_operand_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("explain", tmp_path / "one.json").code == 64


def entry(path: str, data: bytes) -> FileEntry:
    return FileEntry(path=path, size=len(data), sha256=sha(data))


def test_file_changes_ignores_unmoved_entries() -> None:
    same = entry("f/a", b"1")
    changes = file_changes([same, entry("f/b", b"1")], [same, entry("f/b", b"2")])
    assert [(change.path, change.kind) for change in changes] == [("f/b", "changed")]
    assert file_changes([same], [same]) == []


def test_file_changes_against_live_bytes(run_cli: RunCli, tmp_path: Path) -> None:
    """A ledger compared with the live tree, as `explain` compares two ledgers."""
    root = tmp_path / "repo"
    left = read_ledger(ledger_of(run_cli, root, BEFORE, "left"), FixtureLedger).record
    (root / "fixtures/valid/changed.json").write_bytes(b"{}")
    live = live_digest(root, load_fixture_pin(root / "pins/left.json"))
    before, after = sha(BEFORE["fixtures/valid/changed.json"]), sha(b"{}")
    assert [change.line() for change in file_changes(left.files, live.files)] == [
        f"changed\tfixtures/valid/changed.json\tsize 8 -> 2\tsha256 {before} -> {after}"
    ]
