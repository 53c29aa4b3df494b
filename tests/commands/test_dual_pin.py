"""`dual-pin`: drift between two real pins, agreement, and every refusal of SPEC 4.3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli
from helpers.records import property_ledger
from three_ledger.ledgers import write_ledger

DIGEST_A = "aa" * 32
DIGEST_B = "bb" * 32


def pair(tmp_path: Path, right_change: dict[str, Any]) -> tuple[Path, Path]:
    """Two property ledgers of one patch on two pins; `right_change` alters the second."""
    left = tmp_path / "property_pin_a.json"
    right = tmp_path / "property_pin_b.json"
    left_fields = {"pin_id": "fixpin-a", "fixture_digest": DIGEST_A}
    right_fields = {"pin_id": "fixpin-b", "fixture_digest": DIGEST_B}
    write_ledger(left, property_ledger(recorded_at="2026-09-25T12:00:00.000001Z", **left_fields))
    right_fields = {"recorded_at": "2026-09-25T12:00:00.000002Z", **right_fields, **right_change}
    write_ledger(right, property_ledger(**right_fields))
    return left, right


def run_dual(run_cli: RunCli, tmp_path: Path, left: Path, right: Path) -> Any:
    return run_cli("dual-pin", "--left", left, "--right", right, "--out", tmp_path / "drift.json")


def test_seed_check_3_different_status_maps_are_drift(run_cli: RunCli, tmp_path: Path) -> None:
    left, right = pair(tmp_path, {"status_by_id": {"orders.a": "pass", "orders.b": "pass"}})
    result = run_dual(run_cli, tmp_path, left, right)
    assert result.code == 3
    drift = json.loads((tmp_path / "drift.json").read_text())
    assert drift["drift"] is True
    assert drift["dual_pin"] == "run"
    assert drift["differences"] == {"orders.b": {"left": "fail", "right": "pass"}}
    assert (drift["left_digest"], drift["right_digest"]) == (DIGEST_A, DIGEST_B)
    assert (drift["left_pin_id"], drift["right_pin_id"]) == ("fixpin-a", "fixpin-b")
    assert drift["recorded_at"] not in {
        "2026-09-25T12:00:00.000001Z",
        "2026-09-25T12:00:00.000002Z",
    }


def test_seed_check_4_same_maps_from_two_real_pins_agree(run_cli: RunCli, tmp_path: Path) -> None:
    left, right = pair(tmp_path, {})
    result = run_dual(run_cli, tmp_path, left, right)
    assert result.code == 0
    drift = json.loads((tmp_path / "drift.json").read_text())
    assert (drift["drift"], drift["differences"]) == (False, {})


def test_id_on_one_side_only_is_absent_on_the_other(run_cli: RunCli, tmp_path: Path) -> None:
    left, right = pair(tmp_path, {"status_by_id": {"orders.a": "pass"}})
    assert run_dual(run_cli, tmp_path, left, right).code == 3
    drift = json.loads((tmp_path / "drift.json").read_text())
    assert drift["differences"] == {"orders.b": {"left": "fail", "right": "absent"}}


@pytest.mark.parametrize(
    ("right_change", "fragment"),
    [
        ({"fixture_digest": DIGEST_A}, "$.fixture_digest must differ"),
        ({"pin_id": "fixpin-a"}, "$.pin_id must differ"),
        ({"recorded_at": "2026-09-25T12:00:00.000001Z"}, "$.recorded_at must differ"),
        ({"oracle_moved": True}, "$.oracle_moved is true"),
        ({"head_revision": "ef" * 20}, "$.head_revision must be equal"),
        ({"property_pin_sha256": "ef" * 32}, "$.property_pin_sha256 must be equal"),
    ],
)
def test_refusals(
    run_cli: RunCli, tmp_path: Path, right_change: dict[str, Any], fragment: str
) -> None:
    out = tmp_path / "drift.json"
    out.write_text("stale\n")
    left, right = pair(tmp_path, right_change)
    result = run_dual(run_cli, tmp_path, left, right)
    assert result.code == 2
    assert fragment in result.first_error_line
    assert not out.exists()
    assert "removed the stale file" in result.err


def test_replayed_ledger_that_differs_only_in_recorded_at(run_cli: RunCli, tmp_path: Path) -> None:
    left, _ = pair(tmp_path, {})
    document = json.loads(left.read_text())
    document["recorded_at"] = "2026-09-25T13:00:00.000000Z"
    replay = tmp_path / "renamed.json"
    replay.write_text(json.dumps(document, indent=2) + "\n")
    result = run_dual(run_cli, tmp_path, left, replay)
    assert result.code == 2
    assert "one ledger replayed is not a second pin" in result.first_error_line


def test_malformed_input_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    left, right = pair(tmp_path, {})
    right.write_text('{"kind": "property"}\n')
    result = run_dual(run_cli, tmp_path, left, right)
    assert result.code == 2
    assert str(right) in result.first_error_line


def test_out_may_not_overwrite_an_input(run_cli: RunCli, tmp_path: Path) -> None:
    left, right = pair(tmp_path, {})
    before = left.read_bytes()
    result = run_cli("dual-pin", "--left", left, "--right", right, "--out", left)
    assert result.code == 2
    assert left.read_bytes() == before


def test_not_run(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("dual-pin", "--not-run", "--out", tmp_path / "drift.json")
    assert result.code == 0
    drift = json.loads((tmp_path / "drift.json").read_text())
    assert list(drift) == ["kind", "ledger_id", "dual_pin", "recorded_at"]
    assert drift["dual_pin"] == "not_run"


@pytest.mark.parametrize(
    "argv",
    [
        ["dual-pin", "--out", "x.json"],
        ["dual-pin", "--left", "a.json", "--out", "x.json"],
        ["dual-pin", "--not-run", "--left", "a.json", "--out", "x.json"],
        ["dual-pin", "--not-run"],
    ],
)
def test_usage_errors_are_64(run_cli: RunCli, tmp_path: Path, argv: list[str]) -> None:
    result = run_cli(*argv)
    assert result.code == 64
    assert result.first_error_line.startswith("three-ledger: usage error: ")
