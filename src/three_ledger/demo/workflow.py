"""One demo scenario, run as CI would: digest, properties, dual-pin, flake-observe, merge.

Each step is `python -m three_ledger ...` in a child process, in the scenario's worktree,
through the runner (so a hung step times out like any child of the gate).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from three_ledger.demo.repository import (
    FLAKE_PIN,
    PIN_A,
    PIN_B,
    PROPERTIES_PIN,
    ScenarioPaths,
    demo_environment,
)
from three_ledger.demo.scenarios import Expected, Scenario
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import MergeDecision, Posture, read_ledger, recorded_digest
from three_ledger.runner import run_command

PROPERTIES_TIMEOUT_S = 120
# No demo step but `properties` runs a test suite; any step past this is hung.
STEP_TIMEOUT_S = 2 * PROPERTIES_TIMEOUT_S
TEST_COMMAND = [sys.executable, "-m", "pytest", "-q", "properties/test_orders.py"]


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    exits: Mapping[str, int]
    actual: Expected | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.actual == self.scenario.expected


@dataclass
class Steps:
    """Runs one scenario's steps in its worktree and keeps each step's exit code."""

    paths: ScenarioPaths
    env: Mapping[str, str]
    exits: dict[str, int] = field(default_factory=dict)

    def run(self, column: str, *args: str) -> int:
        command = [sys.executable, "-P", "-m", "three_ledger", *args]
        log = self.paths.logs / f"{len(self.exits) + 1}-{column.replace(' ', '-').lower()}.log"
        with open(os.devnull, "wb") as quiet:
            done = run_command(
                command,
                cwd=self.paths.worktree,
                env=self.env,
                timeout_s=STEP_TIMEOUT_S,
                log_path=log,
                console=quiet,
            )
        with log.open("a", encoding="utf-8") as stream:
            stream.write(f"\n$ {shlex.join(['three-ledger', *args])}\n")
            failure = done.failure()
            if failure is not None:
                stream.write(f"demo: {failure}\n")
        code = ExitCode.INFRA_FAILURE if done.exit_code is None else done.exit_code
        self.exits[column] = code
        return code

    def wrote(self, ledger: str) -> bool:
        return (self.paths.ledgers / ledger).is_file()


def ledger(name: str) -> str:
    """A ledger's path as the steps see it: beside the worktree, never inside a pin folder."""
    return f"../ledgers/{name}"


def run_scenario(scenario: Scenario, paths: ScenarioPaths, base: str) -> ScenarioResult:
    """digest, properties, dual-pin, flake-observe, merge: the seed's order, each a child."""
    started = time.monotonic()
    steps = Steps(paths, {**demo_environment(), **scenario.env})
    sides = [("A", PIN_A), ("B", PIN_B)] if scenario.two_pins else [("A", PIN_A)]
    for side, pin in sides:
        _digest_and_score(steps, side, pin, base)
    _dual_pin(steps, scenario)
    if scenario.observe is not None and steps.wrote("property_a.json"):
        _flake_observe(steps, scenario.observe, base)
    _merge(steps, base)
    actual = read_decision(paths.ledgers / "merge.json")
    return ScenarioResult(scenario, dict(steps.exits), actual, time.monotonic() - started)


def _digest_and_score(steps: Steps, side: str, pin: str, base: str) -> None:
    fixture, scored = f"fixture_{side.lower()}.json", f"property_{side.lower()}.json"
    steps.run(f"digest {side}", "digest", "--pin", pin, "--out", ledger(fixture), "--base", base)
    # No fixture ledger, no digest to insist on: the score is absent by rule.
    expect = recorded_digest(steps.paths.ledgers / fixture)
    if expect is None:
        return
    steps.run(
        f"properties {side}",
        *("properties", "--pin", pin, "--expect-digest", expect),
        *("--properties", PROPERTIES_PIN, "--flake-pin", FLAKE_PIN, "--base", base),
        *("--timeout", str(PROPERTIES_TIMEOUT_S), "--command", shlex.join(TEST_COMMAND)),
        *("--out", ledger(scored)),
    )


def _dual_pin(steps: Steps, scenario: Scenario) -> None:
    out = ("--out", ledger("dual_pin.json"))
    if not scenario.two_pins:
        if steps.wrote("property_a.json"):
            steps.run("dual-pin", "dual-pin", "--not-run", *out)
        return
    if steps.wrote("property_a.json") and steps.wrote("property_b.json"):
        left, right = ledger("property_a.json"), ledger("property_b.json")
        steps.run("dual-pin", "dual-pin", "--left", left, "--right", right, *out)


def _flake_observe(steps: Steps, test_id: str, base: str) -> None:
    steps.run(
        "flake-observe",
        *("flake-observe", "--fixture-ledger", ledger("fixture_a.json")),
        *("--property-ledger", ledger("property_a.json"), "--flake-pin", FLAKE_PIN),
        *("--test-id", test_id, "--base", base, "--out", ledger("flake.json")),
    )


def _merge(steps: Steps, base: str) -> None:
    """Merge gets the fixture and property ledgers whether or not they were written (a
    missing one is a rejected score), and the dual-pin and flake ledgers that were."""
    optional = [
        ("--dual-pin", ledger("dual_pin.json")) if steps.wrote("dual_pin.json") else (),
        ("--flake-ledger", ledger("flake.json")) if steps.wrote("flake.json") else (),
    ]
    steps.run(
        "merge",
        *("merge", "--fixture-ledger", ledger("fixture_a.json")),
        *("--property-ledger", ledger("property_a.json")),
        *(flag for pair in optional for flag in pair),
        *("--flake-pin", FLAKE_PIN, "--pin", PIN_A, "--pins-dir", "pins", "--base", base),
        *("--out", ledger("merge.json"), "--summary-md", ledger("merge.md")),
    )


def read_decision(path: Path) -> Expected | None:
    """The posture and row of a merge decision, or None when there is no valid one."""
    if not path.is_file():
        return None
    try:
        decision = read_ledger(path, MergeDecision).record
    except Refused:
        return None
    return Expected(Posture(decision.posture), decision.row)
