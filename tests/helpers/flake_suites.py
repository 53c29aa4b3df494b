"""A toy suite with one test of each flaky kind, scored by `properties`, for `flake-evidence`."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from helpers import git, make_tree, write_json

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
TOY = "properties/test_toy.py"
# A byte of os.urandom below 77 fails: 77/256 = 30.1 % of runs, independent from run to run.
RANDOM_BODY = "assert os.urandom(1)[0] >= 77"
TOY_TESTS = f"""
import json
import os
from pathlib import Path

STATE = {{}}
FIXTURES = Path(os.environ.get("THREE_LEDGER_FIXTURES", Path(__file__).parent.parent / "fixtures"))


def test_a_setter():
    STATE["set"] = True


def test_b_brittle():
    assert STATE.get("set"), "needs test_a_setter to run first"


def test_c_polluter():
    STATE["polluted"] = True


def test_d_victim():
    assert not STATE.get("polluted"), "fails after test_c_polluter"


def test_e_random():
    {RANDOM_BODY}


def test_f_broken():
    assert False, "always"


def test_g_clean():
    assert json.loads((FIXTURES / "a.json").read_text())["ok"]
"""
PROPERTY_TESTS = f"""
import os

import pytest


@pytest.mark.property("toy.random")
def test_random_property():
    {RANDOM_BODY}


def test_rewrites_its_fixture():
    fixture = os.path.join(os.environ["THREE_LEDGER_FIXTURES"], "a.json")
    if "three-ledger-flake-" in fixture:  # only in flake-evidence's scratch copy
        with open(fixture, "w") as stream:
            stream.write('{{"ok": false}}')
"""


def make_toy(root: Path) -> Path:
    """The toy suite in a git repository, its pins committed as the base."""
    make_tree(root, {
        "fixtures/a.json": b'{"ok": true}',
        TOY: textwrap.dedent(TOY_TESTS).encode(),
        "properties/test_z_property.py": textwrap.dedent(PROPERTY_TESTS).encode(),
        "pytest.ini": b"[pytest]\n",
    })  # fmt: skip
    write_json(
        root / "pins/fixtures.json",
        {"pin_id": "fixpin-toy", "algorithm": "sha256", "files": ["fixtures/a.json"]},
    )
    claims: list[dict[str, Any]] = [
        {"id": "toy.clean", "claim": "The clean test passes.", "domain": ["a.json"],
         "test": f"{TOY}::test_g_clean"},
        {"id": "toy.random", "claim": "A property whose test is random.", "domain": ["a.json"]},
    ]  # fmt: skip
    write_json(
        root / "pins/properties.json",
        {"pin_id": "proppin-toy", "fixture_pins": ["fixpin-toy"], "properties": claims},
    )
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "toy suite, reviewed pins")
    return root


def score_toy(root: Path, run: Any, command: str = f"{PYTEST} properties") -> tuple[Path, Path]:
    """Fixture and property ledgers of the toy suite (RUN: the CLI runner of the tests)."""
    ledgers = root.parent / "ledgers"
    fixture = ledgers / "fixture.json"
    result = run("digest", "--pin", root / "pins/fixtures.json", "--root", root, "--out", fixture)
    assert result.code == 0, result.err
    digest = json.loads(fixture.read_text())["digest"]
    prop = ledgers / "property.json"
    result = run(
        "properties", "--pin", root / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", root / "pins/properties.json", "--command", command, "--root", root,
        "--base", "HEAD", "--out", prop,
    )  # fmt: skip
    assert result.code in (0, 1), result.err
    return fixture, prop


def evidence_args(root: Path, fixture: Path, prop: Path, *extra: str | Path) -> list[str | Path]:
    return [
        "flake-evidence", "--fixture-ledger", fixture, "--property-ledger", prop,
        "--pin", root / "pins/fixtures.json", "--properties", root / "pins/properties.json",
        "--command", f"{PYTEST} properties", "--root", root,
        "--out", root.parent / "ledgers/evidence.json", *extra,
    ]  # fmt: skip
