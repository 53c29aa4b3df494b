"""The demo's flake check: `flake-evidence` tells a random test from an order-dependent one.

A small repository of its own, its tests committed with its pins: a polluter that leaves
state behind, a victim that fails after it, and a test that fails on half its runs. The
suite is scored by `properties`; `flake-evidence --reruns 5 --budget-s 20` must then call the
victim `order_dependent_victim`, naming the polluter, and the random test
`non_deterministic`, the only one with a proposal. Beside the table, like the vet check.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from three_ledger.demo.repository import demo_environment
from three_ledger.demo.workflow import STEP_TIMEOUT_S
from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.ledgers import read_ledger
from three_ledger.other_ledgers import FlakeEvidenceLedger
from three_ledger.runner import run_command
from three_ledger.vocabulary import FlakeVerdict

NAME = "flake-evidence"
# The reruns and wall-clock budget the check gives flake-evidence.
RERUNS = 5
BUDGET_S = 20
DESCRIPTION = (
    "a victim fails after a polluter, and another test fails on half its runs: "
    "flake-evidence --reruns 5 --budget-s 20 must call one order-dependent, naming its "
    "polluter, and the other non-deterministic, the only one proposed for the flake pin"
)
TESTS = "tests/test_flaky.py"
POLLUTER = f"{TESTS}::test_polluter"
VICTIM = f"{TESTS}::test_victim"
RANDOM = f"{TESTS}::test_random"
_SUITE = """import json
import os
from pathlib import Path

CACHE = {}


def test_polluter():
    CACHE["currency"] = "JPY"  # left behind for whoever runs next


def test_victim():
    assert CACHE.get("currency", "EUR") == "EUR", "a test before it changed the currency"


def test_random():
    assert os.urandom(1)[0] < 128, "fails on half its runs"


def test_orders_fixture():
    fixtures = Path(os.environ["THREE_LEDGER_FIXTURES"])
    assert json.loads((fixtures / "orders.json").read_text())["orders"] == []
"""
_COMMAND = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]


@frozen
class FlakeOutcome:
    exit_code: int
    lines: tuple[str, ...]
    ledger: FlakeEvidenceLedger | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        if self.exit_code != 0 or self.ledger is None:
            return False
        found = {candidate.id: candidate for candidate in self.ledger.candidates}
        victim, random = found.get(VICTIM), found.get(RANDOM)
        return (
            victim is not None
            and random is not None
            and victim.verdict is FlakeVerdict.ORDER_DEPENDENT_VICTIM
            and victim.polluter == POLLUTER
            and victim.proposal is None
            and random.verdict is FlakeVerdict.NON_DETERMINISTIC
            and random.proposal is not None
        )


def build(folder: Path) -> None:
    """The repository: fixtures, pins and tests in one reviewed commit."""
    repo = folder / "repo"
    files = {
        "fixtures/orders.json": '{"orders": []}\n',
        "pins/fixtures.json": json.dumps(
            {"pin_id": "fixpin-flaky", "algorithm": "sha256", "files": ["fixtures/orders.json"]}
        ),
        "pins/properties.json": json.dumps(
            {
                "pin_id": "proppin-flaky",
                "fixture_pins": ["fixpin-flaky"],
                "oracle_paths": ["tests"],
                "properties": [
                    {
                        "id": "orders.empty",
                        "claim": "The pinned orders file holds no order.",
                        "domain": ["orders.json"],
                        "test": f"{TESTS}::test_orders_fixture",
                    }
                ],
            }
        ),
        TESTS: _SUITE,
        "pytest.ini": "[pytest]\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    (folder / "ledgers").mkdir()
    (folder / "logs").mkdir()
    env = demo_environment()
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "flaky suite, reviewed"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def run_flake_check(folder: Path) -> FlakeOutcome:
    """digest, properties, then flake-evidence on the victim and the random test."""
    started = time.monotonic()
    repo, ledgers = folder / "repo", folder / "ledgers"
    pins = ["--pin", "pins/fixtures.json"]
    steps = [
        ("digest", [*pins, "--out", str(ledgers / "fixture.json")]),
        (
            "properties",
            [
                *pins, "--expect-digest", "DIGEST", "--properties", "pins/properties.json",
                "--command", shlex.join(_COMMAND), "--base", "HEAD",
                "--out", str(ledgers / "property.json"),
            ],
        ),
        (
            "flake-evidence",
            [
                "--fixture-ledger", str(ledgers / "fixture.json"),
                "--property-ledger", str(ledgers / "property.json"),
                *pins, "--properties", "pins/properties.json",
                # The random test first: each candidate gets its share of the budget left
                # (three fifths here: three modes against the victim's two), and the victim,
                # deterministic, needs one round to show its verdict, where the random test
                # needs as many as fit to show both outcomes.
                "--command", shlex.join(_COMMAND), "--candidates", RANDOM, VICTIM,
                "--reruns", str(RERUNS), "--budget-s", str(BUDGET_S),
                "--out", str(ledgers / "evidence.json"),
            ],
        ),
    ]  # fmt: skip
    digest = ""
    code = 0
    for name, args in steps:
        given = [digest if arg == "DIGEST" else arg for arg in args]
        code = _step(repo, folder / "logs" / f"{name}.log", [name, *given])
        if name == "digest":
            digest = _digest(ledgers / "fixture.json")
        if code not in (0, 1):
            break
    log = (folder / "logs" / "flake-evidence.log").read_text(encoding="utf-8", errors="replace")
    lines = tuple(line for line in log.splitlines() if not line.startswith("three-ledger"))
    return FlakeOutcome(code, lines, _read(ledgers / "evidence.json"), time.monotonic() - started)


def _step(repo: Path, log: Path, args: list[str]) -> int:
    with open(os.devnull, "wb") as quiet:  # the log keeps the output
        done = run_command(
            [sys.executable, "-P", "-m", "three_ledger", *args],
            cwd=repo,
            env={**demo_environment(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            timeout_s=STEP_TIMEOUT_S,
            log_path=log,
            console=quiet,
        )
    return 4 if done.exit_code is None else done.exit_code


def _digest(path: Path) -> str:
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["digest"])
    except (OSError, ValueError, KeyError):
        return "missing"


def _read(path: Path) -> FlakeEvidenceLedger | None:
    if not path.is_file():
        return None
    try:
        return read_ledger(path, FlakeEvidenceLedger).record
    except Refused:
        return None
