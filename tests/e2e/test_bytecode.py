"""Bytecode: only what this run compiled. Each way a change could have Python or pytest load
bytecode in place of its source, tried on the example with a broken product through the CI
workflow of docs/ci.md, is refused before anything runs; an honest change whose tests sit in
the fixtures folder, run with bytecode writing on, is `review` and leaves no `__pycache__`.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE, RunCli, git, write_json

pytestmark = pytest.mark.pytest_child

PYTEST = f"{sys.executable} -m pytest -q properties/test_orders.py"
PINS = ("pins/fixtures.json", "pins/fixtures_b.json")


@dataclass(frozen=True)
class Repo:
    root: Path
    ledgers: Path
    base: str
    run_cli: RunCli

    def commit(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)

    def properties(self, side: str, pin: str, command: str) -> int:
        """`digest` then `properties` on one fixture pin; the exit of `properties`."""
        digest = self.run_cli(
            "digest", "--pin", self.root / pin, "--root", self.root,
            "--out", self.ledgers / f"f_{side}.json",
        ).out.strip()  # fmt: skip
        return self.run_cli(
            "properties", "--pin", self.root / pin, "--expect-digest", digest or "0" * 64,
            "--properties", self.root / "pins/properties.json", "--command", command,
            "--root", self.root, "--base", self.base, "--out", self.ledgers / f"p_{side}.json",
        ).code  # fmt: skip

    def ci(self, command: str = PYTEST) -> dict[str, Any]:
        """The workflow of docs/ci.md over this checkout; the merge decision it ends in."""
        for side, pin in zip("ab", PINS, strict=True):
            self.properties(side, pin, command)
        self.run_cli(
            "dual-pin", "--left", self.ledgers / "p_a.json", "--right", self.ledgers / "p_b.json",
            "--out", self.ledgers / "d.json",
        )  # fmt: skip
        self.run_cli(
            "merge", "--fixture-ledger", self.ledgers / "f_a.json",
            "--property-ledger", self.ledgers / "p_a.json", "--dual-pin", self.ledgers / "d.json",
            "--pin", self.root / PINS[0], "--root", self.root,
            "--pins-dir", self.root / "pins", "--base", self.base,
            "--properties", self.root / "pins/properties.json",
            "--out", self.ledgers / "decision.json",
        )  # fmt: skip
        decision: dict[str, Any] = json.loads((self.ledgers / "decision.json").read_text())
        return decision

    def pycache_folders(self) -> list[str]:
        found = self.root.rglob("__pycache__")
        return sorted(path.relative_to(self.root).as_posix() for path in found)


def based_on(root: Path, ledgers: Path, run_cli: RunCli) -> Repo:
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base: orders, properties, reviewed pins")
    return Repo(root, ledgers, git(root, "rev-parse", "HEAD"), run_cli)


def posture(decision: dict[str, Any]) -> tuple[str, int]:
    return decision["posture"], decision["row"]


@pytest.fixture
def writing_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python writes bytecode, as on a CI runner by default."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)


# --- the honest control --------------------------------------------------------------------


def move_tests_into_the_fixtures_folder(root: Path) -> None:
    """The example with its property tests kept in pin A's fixtures folder, and pinned there."""
    (root / "properties/test_orders.py").rename(root / "fixtures/test_orders.py")
    (root / "properties").rmdir()
    (root / "pins/flakes.json").unlink()
    (root / ".gitignore").write_text("__pycache__/\n")
    pin = json.loads((root / PINS[0]).read_text())
    del pin["digest"]
    pin["files"].append("fixtures/test_orders.py")
    write_json(root / PINS[0], pin)
    properties = json.loads((root / "pins/properties.json").read_text())
    properties["oracle_paths"] = ["fixtures/test_orders.py", "pytest.ini"]
    for entry in properties["properties"]:
        if "test" in entry:
            entry["test"] = entry["test"].replace("properties/", "fixtures/")
    write_json(root / "pins/properties.json", properties)


@pytest.mark.usefixtures("writing_bytecode")
def test_an_honest_change_with_tests_in_the_fixtures_folder_is_review_and_leaves_no_bytecode(
    tmp_path: Path, run_cli: RunCli
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    move_tests_into_the_fixtures_folder(root)
    repo = based_on(root, tmp_path / "ledgers", run_cli)
    (root / "orders.py").write_text((root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    decision = repo.ci(f"{sys.executable} -m pytest -q fixtures/test_orders.py")
    assert posture(decision) == ("review", 9), decision["reason"]
    assert repo.pycache_folders() == []
