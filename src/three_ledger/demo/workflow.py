"""One demo scenario, run as CI would: the gate's chain (workflow/chain.py), each step a child.

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
from typing import assert_never

from three_ledger.commands.merge import read_flake_pin
from three_ledger.demo.repository import ScenarioPaths, demo_environment
from three_ledger.demo.scenarios import Expected, Scenario
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.gate_plan import FixtureSide, find_pins
from three_ledger.other_ledgers import MergeDecision
from three_ledger.report.gate_summary import Step
from three_ledger.runner import run_command
from three_ledger.workflow.chain import (
    Call,
    Chain,
    CheckPins,
    Digest,
    DualPin,
    FlakeEvidence,
    FlakeObserve,
    Merge,
    Pins,
    Properties,
    Ran,
    Vet,
    run_chain,
)

PROPERTIES_TIMEOUT_S = 120
# No demo step but `properties` runs a test suite; any step past this is hung.
STEP_TIMEOUT_S = 2 * PROPERTIES_TIMEOUT_S
TEST_COMMAND = [sys.executable, "-m", "pytest", "-q", "properties/test_orders.py"]


@frozen
class ScenarioResult:
    scenario: Scenario
    # Each step's exit code, by the table's column ("digest A", "dual-pin", "merge", ...).
    exits: Mapping[str, int]
    actual: Expected | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.actual == self.scenario.expected


@frozen
class ScenarioLedgers:
    """Where a scenario's ledgers go: its `ledgers/` folder, beside the worktree."""

    folder: Path

    def fixture(self, side: FixtureSide) -> Path:
        return self.folder / f"fixture_{side.slug}.json"

    def prop(self, side: FixtureSide) -> Path:
        return self.folder / f"property_{side.slug}.json"

    def prop_log(self, side: FixtureSide) -> Path | None:
        return None  # properties' own default: beside the ledger

    @property
    def dual_pin(self) -> Path:
        return self.folder / "dual_pin.json"

    def flake(self, number: int) -> Path:
        return self.folder / ("flake.json" if number == 1 else f"flake_{number}.json")

    @property
    def decision(self) -> Path:
        return self.folder / "merge.json"

    @property
    def summary(self) -> Path:
        return self.folder / "merge.md"


@dataclass
class ChildSteps:
    """Runs each step of the chain as a child in the scenario's worktree; keeps each exit."""

    paths: ScenarioPaths
    env: Mapping[str, str]
    base: str
    exits: dict[str, int] = field(default_factory=dict)
    ran: int = 0

    @property
    def ledgers(self) -> ScenarioLedgers:
        return ScenarioLedgers(self.paths.ledgers)

    def run(self, name: str, call: Call) -> Ran:
        self.ran += 1
        column = step_column(call)
        args = self.arguments(call)
        log = self.paths.logs / f"{self.ran}-{column.replace(' ', '-').lower()}.log"
        with open(os.devnull, "wb") as quiet:
            done = run_command(
                [sys.executable, "-P", "-m", "three_ledger", *args],
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
        return Ran(code, log)

    def finished(self, step: Step) -> None:
        """Nothing to print per step: the demo prints its table once every scenario is done."""

    def arguments(self, call: Call) -> list[str]:
        """The command line of CALL, as a CI job in the worktree would type it."""
        match call:
            case Digest():
                return [
                    *("digest", "--pin", self._at(call.side.path)),
                    *("--out", self._at(call.out), "--base", self.base),
                ]
            case Properties():
                return self._properties(call)
            case DualPin():
                if len(call.scored) == 1:
                    return ["dual-pin", "--not-run", "--out", self._at(call.out)]
                left, right = (self._at(path) for path in call.scored)
                return ["dual-pin", "--left", left, "--right", right, "--out", self._at(call.out)]
            case FlakeObserve():
                return [
                    *("flake-observe", "--fixture-ledger", self._at(call.fixture)),
                    *("--property-ledger", self._at(call.prop)),
                    *("--flake-pin", self._at(call.flake_pin), "--test-id", call.test_id),
                    *("--base", self.base, "--out", self._at(call.out)),
                ]
            case FlakeEvidence():
                return self._flake_evidence(call)
            case Vet():
                return [
                    *("vet", "--pin", self._at(call.side.path)),
                    *("--properties", self._at(call.properties_pin)),
                    *("--command", shlex.join(TEST_COMMAND), "--log", self._at(call.log)),
                    *("--out", self._at(call.out)),
                ]
            case CheckPins():
                return ["check-pins", "--pins-dir", self._at(call.pins_dir)]
            case Merge():
                return self._merge(call)
            case _:
                assert_never(call)

    def _flake_evidence(self, call: FlakeEvidence) -> list[str]:
        flake_pin = ["--flake-pin", self._at(call.flake_pin)] if call.flake_pin else []
        return [
            *("flake-evidence", "--fixture-ledger", self._at(call.fixture)),
            *("--property-ledger", self._at(call.prop), "--pin", self._at(call.side.path)),
            *("--properties", self._at(call.properties_pin), *flake_pin),
            *("--command", shlex.join(TEST_COMMAND), "--reruns", str(call.reruns)),
            *("--budget-s", f"{call.budget_s:g}", "--log", self._at(call.log)),
            *("--out", self._at(call.out)),
        ]

    def _properties(self, call: Properties) -> list[str]:
        flake_pin = ["--flake-pin", self._at(call.flake_pin)] if call.flake_pin else []
        log = ["--log", self._at(call.log)] if call.log else []
        return [
            *("properties", "--pin", self._at(call.side.path)),
            *("--expect-digest", call.expect_digest),
            *("--properties", self._at(call.properties_pin), *flake_pin, "--base", self.base),
            *("--timeout", str(PROPERTIES_TIMEOUT_S), "--command", shlex.join(TEST_COMMAND)),
            *log,
            *("--out", self._at(call.out)),
        ]

    def _merge(self, call: Merge) -> list[str]:
        flakes = [flag for path in call.flakes for flag in ("--flake-ledger", self._at(path))]
        flake_pin = ["--flake-pin", self._at(call.flake_pin.path)] if call.flake_pin else []
        return [
            *("merge", "--fixture-ledger", self._at(call.fixture)),
            *("--property-ledger", self._at(call.prop), "--dual-pin", self._at(call.dual_pin)),
            *flakes,
            *flake_pin,
            *("--pin", self._at(call.pin), "--pins-dir", self._at(call.pins_dir)),
            *("--base", self.base, "--properties", self._at(call.properties_pin)),
            *("--out", self._at(call.out)),
            *("--summary-md", self._at(self.ledgers.summary)),
        ]

    def _at(self, path: Path) -> str:
        """PATH as the step sees it, relative to the worktree (ledgers are `../ledgers/...`)."""
        return os.path.relpath(path, self.paths.worktree)


def step_column(call: Call) -> str:
    """The table column of a step: its command, and the fixture pin's label where it has one."""
    match call:
        case Digest() | Properties() | Vet():
            return f"{call.KIND} {call.side.label}"
        case _:
            return str(call.KIND)


def ledger(name: str) -> str:
    """A ledger's path as the steps see it: beside the worktree, never inside a pin folder."""
    return f"../ledgers/{name}"


def run_scenario(scenario: Scenario, paths: ScenarioPaths, base: str) -> ScenarioResult:
    """The gate's chain, each step a child; one-pin scenarios score pin A alone."""
    started = time.monotonic()
    runner = ChildSteps(paths, {**demo_environment(), **scenario.env}, base)
    plan = find_pins(paths.worktree / "pins")
    pins = Pins(
        sides=plan.sides if scenario.two_pins else plan.sides[:1],
        properties_pin=plan.properties_pin.source,
        flake_pin=read_flake_pin(plan.flake_pin),
        pins_dir=paths.worktree / "pins",
    )
    chain = Chain(runner)
    run_chain(chain, pins, runner.ledgers)
    decision = chain.steps[-1].record
    actual = (
        Expected(decision.posture, decision.row) if isinstance(decision, MergeDecision) else None
    )
    return ScenarioResult(scenario, dict(runner.exits), actual, time.monotonic() - started)
