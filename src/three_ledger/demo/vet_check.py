"""The demo's vet check: a pin change adds a ceremony property, and `vet` catches it.

The patch adds `orders.fixtures.read` to the properties pin, with a test that reads the
orders and asserts nothing about them: it would pass whatever the fixtures held. `vet`
runs on the patched pin as the pin's reviewer would, and must exit 1 naming it, while
every property of the example is killed. This is evidence for a person reviewing a pin
change, not a row of the merge table.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

from three_ledger.demo.repository import (
    PIN_A,
    PROPERTIES_PIN,
    ScenarioPaths,
    check_out_patch,
    demo_environment,
)
from three_ledger.demo.scenarios import ORACLE, Replace
from three_ledger.demo.workflow import STEP_TIMEOUT_S, TEST_COMMAND, ledger
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.ledgers import read_ledger
from three_ledger.other_ledgers import VetLedger
from three_ledger.runner import run_command
from three_ledger.vocabulary import VetVerdict

NAME = "vet-ceremony"
CEREMONY_ID = "orders.fixtures.read"
DESCRIPTION = (
    f"a pin change adds {CEREMONY_ID}, whose test reads the orders and asserts nothing "
    "about them; vet, run by the pin's reviewer, must name it and kill every other property"
)
CEREMONY_TEST = Replace(
    ORACLE,
    "def test_boundary_timeout() -> None:\n",
    "def test_fixtures_read() -> None:\n"
    '    """Ceremony: reads every orders file and asserts nothing about what it holds."""\n'
    "    for name in FIXTURE_FILES:\n"
    "        assert (FIXTURES / name).read_bytes() is not None\n"
    "\n\n"
    "def test_boundary_timeout() -> None:\n",
)


@frozen
class AddProperty:
    """Append the ceremony property to the properties pin."""

    def apply(self, root: Path) -> None:
        path = root / PROPERTIES_PIN
        pin = json.loads(path.read_text(encoding="utf-8"))
        pin["properties"].append(
            {
                "id": CEREMONY_ID,
                "claim": "The pinned orders files are read by the suite.",
                "domain": ["orders_min.json"],
                "test": f"{ORACLE}::test_fixtures_read",
            }
        )
        path.write_text(json.dumps(pin, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


@frozen
class VetOutcome:
    exit_code: int
    # vet's stdout: one line per property.
    lines: tuple[str, ...]
    ledger: VetLedger | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        """Exit 1 for the ceremony property alone: it survived; every other one is a gate."""
        if self.exit_code != ExitCode.NOT_A_GATE or self.ledger is None:
            return False
        found = self.ledger.properties
        others = [found[pid].gate for pid in found if pid != CEREMONY_ID]
        ceremony = found.get(CEREMONY_ID)
        return ceremony is not None and ceremony.verdict is VetVerdict.SURVIVED and all(others)


def prepare_vet_check(repo: Path, base: str, paths: ScenarioPaths) -> None:
    edits = (CEREMONY_TEST, AddProperty())
    check_out_patch(repo, base, f"scenario/{NAME}", edits, f"{NAME}: {DESCRIPTION}", paths)


def run_vet_check(paths: ScenarioPaths) -> VetOutcome:
    """`three-ledger vet` on the patched pin, as a child process in the worktree."""
    started = time.monotonic()
    args = [
        *("vet", "--pin", PIN_A, "--properties", PROPERTIES_PIN),
        *("--command", shlex.join(TEST_COMMAND), "--out", ledger("vet.json")),
    ]
    # The example needs no pytest plugin of its own: with autoload off, each of vet's runs
    # starts a bare pytest (plus the gate's staged plugin), whatever else is installed.
    env = {**demo_environment(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    with open(os.devnull, "wb") as quiet:  # the log keeps the output
        done = run_command(
            [sys.executable, "-P", "-m", "three_ledger", *args],
            cwd=paths.worktree,
            env=env,
            timeout_s=STEP_TIMEOUT_S,
            log_path=paths.logs / "vet.log",
            console=quiet,
        )
    code = ExitCode.INFRA_FAILURE if done.exit_code is None else done.exit_code
    log = (paths.logs / "vet.log").read_text(encoding="utf-8", errors="replace")
    lines = tuple(line for line in log.splitlines() if line.split(" ", 1)[0] in _VERDICTS)
    return VetOutcome(code, lines, _read(paths.ledgers / "vet.json"), time.monotonic() - started)


_VERDICTS = {verdict.value for verdict in VetVerdict}


def _read(path: Path) -> VetLedger | None:
    if not path.is_file():
        return None
    try:
        return read_ledger(path, VetLedger).record
    except Refused:
        return None
