"""The demo's runner: each step of the chain as the command line a CI job would type, paths
relative to the scenario's worktree, and the table column each step's exit goes in."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from helpers.records import flake_pin
from three_ledger.demo.repository import ScenarioPaths
from three_ledger.demo.workflow import TEST_COMMAND, ChildSteps, ScenarioLedgers, step_column
from three_ledger.gate_plan import FixtureSide
from three_ledger.merge_table import FlakePinView
from three_ledger.workflow.chain import (
    Call,
    CheckPins,
    Digest,
    DualPin,
    FlakeEvidence,
    FlakeObserve,
    Merge,
    Properties,
    Vet,
)

BASE = "cd" * 20
FOLDER = Path("/demo/scenarios/clean")
PATHS = ScenarioPaths(FOLDER)
LEDGERS = ScenarioLedgers(PATHS.ledgers)
SIDE_A = FixtureSide("A", "fixpin-orders-a", PATHS.worktree / "pins/fixtures.json")
SIDE_B = FixtureSide("B", "fixpin-orders-b", PATHS.worktree / "pins/fixtures_b.json")
PINS = PATHS.worktree / "pins"
COMMAND = shlex.join(TEST_COMMAND)


def arguments(call: Call) -> list[str]:
    return ChildSteps(PATHS, {}, BASE).arguments(call)


def test_digest_and_properties_name_the_pin_and_ledgers_as_seen_from_the_worktree() -> None:
    assert arguments(Digest(SIDE_A, LEDGERS.fixture(SIDE_A))) == [
        "digest", "--pin", "pins/fixtures.json", "--out", "../ledgers/fixture_a.json",
        "--base", BASE,
    ]  # fmt: skip
    scored = Properties(
        SIDE_B, "ab" * 32, PINS / "properties.json", PINS / "flakes.json",
        LEDGERS.prop(SIDE_B), LEDGERS.prop_log(SIDE_B),
    )  # fmt: skip
    assert arguments(scored) == [
        "properties", "--pin", "pins/fixtures_b.json", "--expect-digest", "ab" * 32,
        "--properties", "pins/properties.json", "--flake-pin", "pins/flakes.json",
        "--base", BASE, "--timeout", "120", "--command", COMMAND,
        "--out", "../ledgers/property_b.json",
    ]  # fmt: skip


def test_dual_pin_compares_two_ledgers_or_records_not_run_for_one() -> None:
    left, right = LEDGERS.prop(SIDE_A), LEDGERS.prop(SIDE_B)
    assert arguments(DualPin((left, right), LEDGERS.dual_pin)) == [
        "dual-pin", "--left", "../ledgers/property_a.json", "--right",
        "../ledgers/property_b.json", "--out", "../ledgers/dual_pin.json",
    ]  # fmt: skip
    assert arguments(DualPin((left,), LEDGERS.dual_pin)) == [
        "dual-pin", "--not-run", "--out", "../ledgers/dual_pin.json",
    ]  # fmt: skip


def test_flake_observe_and_merge_get_every_ledger_and_pin_the_chain_names() -> None:
    observe = FlakeObserve(
        "orders.boundary.timeout", LEDGERS.fixture(SIDE_A), LEDGERS.prop(SIDE_A),
        PINS / "flakes.json", LEDGERS.flake(1),
    )  # fmt: skip
    assert arguments(observe) == [
        "flake-observe", "--fixture-ledger", "../ledgers/fixture_a.json",
        "--property-ledger", "../ledgers/property_a.json", "--flake-pin", "pins/flakes.json",
        "--test-id", "orders.boundary.timeout", "--base", BASE, "--out", "../ledgers/flake.json",
    ]  # fmt: skip
    merge = Merge(
        fixture=LEDGERS.fixture(SIDE_A),
        prop=LEDGERS.prop(SIDE_A),
        dual_pin=LEDGERS.dual_pin,
        flakes=(LEDGERS.flake(1), LEDGERS.flake(2)),
        flake_pin=FlakePinView(PINS / "flakes.json", flake_pin()),
        pin=SIDE_A.path,
        pins_dir=PINS,
        properties_pin=PINS / "properties.json",
        out=LEDGERS.decision,
    )
    assert arguments(merge) == [
        "merge", "--fixture-ledger", "../ledgers/fixture_a.json",
        "--property-ledger", "../ledgers/property_a.json", "--dual-pin", "../ledgers/dual_pin.json",
        "--flake-ledger", "../ledgers/flake.json", "--flake-ledger", "../ledgers/flake_2.json",
        "--flake-pin", "pins/flakes.json", "--pin", "pins/fixtures.json", "--pins-dir", "pins",
        "--base", BASE, "--properties", "pins/properties.json", "--out", "../ledgers/merge.json",
        "--summary-md", "../ledgers/merge.md",
    ]  # fmt: skip


def test_vet_and_check_pins_run_as_a_pin_reviewer_would() -> None:
    vetted = Vet(SIDE_A, PINS / "properties.json", LEDGERS.folder / "vet.json", PATHS.logs / "v")
    assert arguments(vetted) == [
        "vet", "--pin", "pins/fixtures.json", "--properties", "pins/properties.json",
        "--command", COMMAND, "--log", "../logs/v", "--out", "../ledgers/vet.json",
    ]  # fmt: skip
    assert arguments(CheckPins(PINS)) == ["check-pins", "--pins-dir", "pins"]


def test_flake_evidence_reruns_on_the_first_sides_ledgers_within_its_budget() -> None:
    gathered = FlakeEvidence(
        SIDE_A, LEDGERS.fixture(SIDE_A), LEDGERS.prop(SIDE_A), PINS / "properties.json",
        PINS / "flakes.json", LEDGERS.folder / "flake_evidence.json", PATHS.logs / "fe", 3, 20.0,
    )  # fmt: skip
    assert arguments(gathered) == [
        "flake-evidence", "--fixture-ledger", "../ledgers/fixture_a.json",
        "--property-ledger", "../ledgers/property_a.json", "--pin", "pins/fixtures.json",
        "--properties", "pins/properties.json", "--flake-pin", "pins/flakes.json",
        "--command", COMMAND, "--reruns", "3", "--budget-s", "20", "--log", "../logs/fe",
        "--out", "../ledgers/flake_evidence.json",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "column"),
    [
        (Digest(SIDE_B, LEDGERS.fixture(SIDE_B)), "digest B"),
        (DualPin((LEDGERS.prop(SIDE_A),), LEDGERS.dual_pin), "dual-pin"),
        (CheckPins(PINS), "check-pins"),
    ],
)
def test_each_step_exit_goes_in_its_column(call: Call, column: str) -> None:
    assert step_column(call) == column
