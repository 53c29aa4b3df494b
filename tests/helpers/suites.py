"""Small generated suites in real git repositories, for `plan` and `properties` end to end."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import CliResult, RunCli, git, write_json

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
TEST_FILE = "tests/test_suite.py"

# Parametrised over the pinned fixtures, a marked test, a test whose marker names no property,
# a unittest class with a decorated skip, and tests no property covers.
SUITE = """
import os
import unittest
from pathlib import Path

import pytest

FIXTURES = Path(os.environ.get("THREE_LEDGER_FIXTURES", "fixtures"))
CASES = sorted(path.name for path in FIXTURES.glob("*.json"))
BROKEN = os.environ.get("SUITE_BROKEN", "")
SKIP_REASON = os.environ.get("SUITE_SKIP_REASON", "Leap seconds are unsupported.")


@pytest.mark.parametrize("case", CASES)
def test_parse(case):
    assert (FIXTURES / case).read_text() != BROKEN


def test_total():
    assert "total" != BROKEN


@pytest.mark.property("suite.marked")
def test_marked():
    assert "marked" != BROKEN


@pytest.mark.property("suite.unknown")
def test_unknown_marker():
    pass


def test_outside_one():
    assert "outside" != BROKEN


def test_outside_two():
    assert "outside" != BROKEN


class TestDraft(unittest.TestCase):
    def test_minimum_low(self):
        self.assertNotEqual("minimum", BROKEN)

    def test_minimum_high(self):
        pass

    @unittest.skip("Format checker 'idn-hostname' not found.")
    def test_format_idn(self):
        pass

    def test_format_dynamic(self):
        raise unittest.SkipTest(SKIP_REASON)
"""

FIXTURES = {"fixtures/a.json": b'{"a": 1}\n', "fixtures/b.json": b'{"b": 2}\n'}


def prop(property_id: str, test: str | Sequence[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": property_id,
        "claim": f"{property_id} holds.",
        "domain": ["a.json"],
    }
    if test is not None:
        entry["test"] = test if isinstance(test, str) else list(test)
    return entry


def properties_pin(properties: Sequence[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "pin_id": "proppin-suite",
        "fixture_pins": ["fixpin-suite"],
        "network": "banned",
        # The suite reads these: the test child's environment is closed to anything else.
        "env": ["SUITE_BROKEN", "SUITE_SKIP_REASON"],
        "properties": list(properties),
        **extra,
    }


def make_suite(
    folder: Path, properties: dict[str, Any], source: str = SUITE, ini: str = "[pytest]\n"
) -> Path:
    """A git repository holding the suite, its fixtures and both pins, in one commit."""
    for relative, data in FIXTURES.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(data)
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    (folder / TEST_FILE).write_text(textwrap.dedent(source))
    (folder / "pytest.ini").write_text(ini)
    (folder / ".gitignore").write_text("ledgers/\n__pycache__/\n")
    pin = {"pin_id": "fixpin-suite", "algorithm": "sha256", "files": sorted(FIXTURES)}
    write_json(folder / "pins/fixtures.json", pin)
    write_json(folder / "pins/properties.json", properties)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "suite and pins")
    return folder


def edit_properties(folder: Path, properties: dict[str, Any]) -> None:
    (folder / "pins/properties.json").write_text(json.dumps(properties, indent=2) + "\n")


def plan(run_cli: RunCli, repo: Path, *extra: str | Path, command: str = PYTEST) -> CliResult:
    return run_cli(
        "plan", "--pin", repo / "pins/fixtures.json", "--properties",
        repo / "pins/properties.json", "--command", command, "--root", repo, *extra,
    )  # fmt: skip


def plan_json(run_cli: RunCli, repo: Path, *extra: str | Path, command: str = PYTEST) -> Any:
    result = plan(run_cli, repo, "--json", *extra, command=command)
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


def by_id(document: Any) -> dict[str, Any]:
    return {entry["id"]: entry for entry in document["properties"]}
