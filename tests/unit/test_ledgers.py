"""Ledger records: round trips, strict reading, own clocks, atomic writes."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers import write_json
from helpers.records import COMMIT, HEX, STAMP, property_ledger
from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.ledgers import (
    FileEntry,
    FixtureLedger,
    PropertyLedger,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
    write_ledger,
)
from three_ledger.other_ledgers import (
    DualPinLedger,
    FlakeLedger,
    MergeDecision,
    MergeInputs,
    PropertyShardLedger,
    Shard,
    ShardResult,
    StatusDifference,
)
from three_ledger.vocabulary import Outcome, Posture

RECORDS = [
    FixtureLedger(
        ledger_id="1" * 32,
        pin_id="fixpin-a",
        digest=HEX,
        fixtures_dir="fixtures",
        files=(FileEntry("fixtures/a", 3, HEX),),
        recorded_at=STAMP,
    ),
    property_ledger(),
    property_ledger(
        status_by_id={"orders.a": "pass", "orders.b": "missing"},
        tests_matched={"orders.a": 42, "orders.b": 3},
        missing_reasons={"orders.b": "3 tests matched, the pin asks for at least 42"},
    ),
    DualPinLedger(
        ledger_id="2" * 32,
        drift=True,
        left_pin_id="a",
        right_pin_id="b",
        left_digest=HEX,
        right_digest="cd" * 32,
        differences={"x.y": StatusDifference("pass", "absent")},
        recorded_at=STAMP,
    ),
    DualPinLedger.not_run("3" * 32, STAMP),
    FlakeLedger(
        ledger_id="4" * 32,
        test_id="orders.slow",
        flake_pin_id="flakepin",
        accepted_revision="abc",
        review_by="2027-01-31",
        observed=Outcome.FAIL,
        fixture_digest=HEX,
        property_ledger_sha256=HEX,
        recorded_at=STAMP,
    ),
    MergeDecision(
        ledger_id="5" * 32,
        posture=Posture.REJECT,
        row=7,
        reason="property miss stands",
        inputs=MergeInputs(HEX, HEX, None, ()),
        recorded_at=STAMP,
    ),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: type(record).__name__)
def test_round_trip(tmp_path: Path, record: Any) -> None:
    path = tmp_path / "deep/new/ledger.json"
    write_ledger(path, record)
    loaded = read_ledger(path, type(record))
    assert loaded.record == record
    text = path.read_text()
    assert text.endswith("\n")
    assert json.loads(text)["kind"] == record.KIND
    assert list(json.loads(text))[:2] == ["kind", "ledger_id"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def mutate(document: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    changed = dict(document)
    if value is KeyError:
        del changed[key]
    else:
        changed[key] = value
    return changed


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("extra", 1, "'extra' was unexpected"),
        ("oracle_moved", KeyError, "'oracle_moved' is a required property"),
        ("kind", "fixture", "expected 'property'"),
        ("fixture_digest", "AB" * 32, "$.fixture_digest"),
        ("fixture_digest", HEX + "\n", "$.fixture_digest"),
        ("recorded_at", "2026-09-25T12:00:00Z", "$.recorded_at"),
        ("recorded_at", "2026-02-30T12:00:00.000000Z", "not a real UTC time"),
        ("duration_ms", 1.5, "$.duration_ms"),
        ("status_by_id", {"a": "passed"}, "$.status_by_id.a"),
        ("ledger_id", "x", "$.ledger_id"),
        ("base_resolution", KeyError, "'base_resolution' is a required property"),
        ("base_resolution", {"given": "HEAD", "used": COMMIT, "how": "tip"},
         "$.base_resolution.how"),
        ("base_resolution", {"given": "", "used": COMMIT, "how": "ancestor"},
         "$.base_resolution.given"),
        # Every property ledger carries the counts: one written before them is refused.
        ("tests_matched", KeyError, "'tests_matched' is a required property"),
        ("tests_matched", {"orders.a": -1}, '$.tests_matched["orders.a"]'),
        ("tests_matched", {"orders.a": 1.0}, '$.tests_matched["orders.a"]'),
        ("missing_reasons", KeyError, "'missing_reasons' is a required property"),
        ("missing_reasons", {"orders.a": ""}, '$.missing_reasons["orders.a"]'),
    ],
)  # fmt: skip
def test_reader_refuses_malformed_property_ledgers(
    tmp_path: Path, key: str, value: Any, fragment: str
) -> None:
    document = mutate(property_ledger().to_json(), key, value)
    path = write_json(tmp_path / "p.json", document)
    with pytest.raises(Refused) as caught:
        read_ledger(path, PropertyLedger)
    assert caught.value.message.startswith(f"{path}: ")
    assert fragment in caught.value.message


def test_reader_refuses_a_base_used_that_is_not_the_base_revision(tmp_path: Path) -> None:
    """A ledger edited to claim another base than the one it compared with."""
    document = property_ledger().to_json()
    document["base_resolution"]["used"] = "ef" * 20
    path = write_json(tmp_path / "p.json", document)
    with pytest.raises(Refused) as caught:
        read_ledger(path, PropertyLedger)
    assert caught.value.message == (
        f"{path}: $.base_resolution.used is {'ef' * 20!r}, not $.base_revision {COMMIT!r}: "
        "the ledger was edited"
    )


def shard_ledger() -> PropertyShardLedger:
    whole = property_ledger(tests_matched={"orders.a": 1, "orders.b": 0})
    return PropertyShardLedger(
        ledger_id=whole.ledger_id, shard=Shard(0, 2, HEX), pin_id=whole.pin_id,
        property_pin_id=whole.property_pin_id, property_pin_sha256=HEX, flake_pin_sha256=None,
        fixture_digest=HEX, oracle_moved=False, oracle_changes=(), oracle_change_reasons={},
        oracle_paths_unmatched=(), base_revision=whole.base_revision,
        base_resolution=whole.base_resolution,
        head_revision=whole.head_revision, command=whole.command, command_exit=0,
        duration_ms=3, network=whole.network, network_enforcement=whole.network_enforcement,
        sandbox=whole.sandbox, tripwire=whole.tripwire, harness=None,
        tests_matched=whole.tests_matched,
        ids_run=("t.py::a",), results=(ShardResult("t.py::a", ("orders.a",), Outcome.PASS),),
        recorded_at=STAMP,
    )  # fmt: skip


@pytest.mark.parametrize("record", [property_ledger(), shard_ledger()], ids=["property", "shard"])
def test_keys_come_in_the_order_of_the_schema(tmp_path: Path, record: Any) -> None:
    required = jsonio.load_schema(record.SCHEMA)["required"]
    assert list(record.to_json()) == required
    assert required.index("run_order") == required.index("harness") + 1
    assert required.index("tests_matched") == required.index("run_order") + 1
    path = tmp_path / "ledger.json"
    write_ledger(path, record)
    assert read_ledger(path, type(record)).record == record


def test_recorded_at_differs_from_every_stamp_read() -> None:
    fixed = datetime.datetime(2026, 9, 25, 12, 0, 0, 123456, tzinfo=datetime.UTC)
    ticks = iter([fixed, fixed, fixed + datetime.timedelta(microseconds=1)])
    stamp = fresh_recorded_at([STAMP], clock=lambda: next(ticks))
    assert stamp == "2026-09-25T12:00:00.123457Z"


def test_recorded_at_has_microseconds() -> None:
    stamp = fresh_recorded_at()
    datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert len(stamp) == len(STAMP)


def test_failed_write_keeps_old_content_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("old\n")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(Refused, match="No space left on device"):
        jsonio.write_atomic(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]


def test_write_into_read_only_folder_is_a_clear_refusal(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user that ignores folder permissions (root)")
        with pytest.raises(Refused, match="cannot write"):
            jsonio.write_atomic(folder / "l.json", "x\n")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_invalid_record_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "l.json"
    with pytest.raises(Refused, match=r"\$\.fixture_digest: .not-hex. does not match"):
        write_ledger(path, property_ledger(fixture_digest="not-hex"))
    assert not path.exists()


def test_ledger_ids_are_random_version_4_uuids() -> None:
    import uuid

    ids = {new_ledger_id() for _ in range(1000)}
    assert len(ids) == 1000
    for ledger_id in ids:
        parsed = uuid.UUID(hex=ledger_id)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert parsed.hex == ledger_id
