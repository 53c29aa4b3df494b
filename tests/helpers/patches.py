"""The example in a git repository of its own, changed as a patch would change it, then run
through the CI workflow of docs/ci.md to the merge decision.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import EXAMPLE, RunCli, git

PYTEST = f"{sys.executable} -m pytest -q properties/test_orders.py"
# The example as its base commit: the pins reviewed, the flake pin left out (not in play here).
BROKEN_TOTAL = "\n\ndef order_total(order):\n    return _order_total(order) - 10**12\n"


@dataclass(frozen=True)
class Repo:
    root: Path
    ledgers: Path
    base: str
    run_cli: RunCli

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)

    def as_base(self, message: str) -> Repo:
        """Commit what is here as the reviewed base the next patch is compared with."""
        self.commit(message)
        return dataclasses.replace(self, base=git(self.root, "rev-parse", "HEAD"))

    def ci(self, command: str = PYTEST) -> dict[str, Any]:
        """The workflow of docs/ci.md over this checkout; the merge decision it ends in."""
        for side, pin in (("a", "pins/fixtures.json"), ("b", "pins/fixtures_b.json")):
            digest = self.run_cli(
                "digest", "--pin", self.root / pin, "--root", self.root,
                "--out", self.ledgers / f"f_{side}.json",
            ).out.strip()  # fmt: skip
            self.run_cli(
                "properties", "--pin", self.root / pin, "--expect-digest", digest or "0" * 64,
                "--properties", self.root / "pins/properties.json", "--command", command,
                "--root", self.root, "--base", self.base, "--out", self.ledgers / f"p_{side}.json",
            )  # fmt: skip
        self.run_cli(
            "dual-pin", "--left", self.ledgers / "p_a.json", "--right", self.ledgers / "p_b.json",
            "--out", self.ledgers / "d.json",
        )  # fmt: skip
        self.run_cli(
            "merge", "--fixture-ledger", self.ledgers / "f_a.json",
            "--property-ledger", self.ledgers / "p_a.json", "--dual-pin", self.ledgers / "d.json",
            "--pin", self.root / "pins/fixtures.json", "--root", self.root,
            "--pins-dir", self.root / "pins", "--base", self.base,
            "--properties", self.root / "pins/properties.json",
            "--out", self.ledgers / "decision.json",
        )  # fmt: skip
        decision: dict[str, Any] = json.loads((self.ledgers / "decision.json").read_text())
        return decision

    def property_ledger(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.ledgers / "p_a.json").read_text())
        return document

    def properties_stderr(self, command: str = PYTEST) -> str:
        """What `properties` said on stderr, from its first line of its own: the progress line
        before it says what ran, not what went wrong."""
        digest = self.run_cli(
            "digest", "--pin", self.root / "pins/fixtures.json", "--root", self.root,
            "--out", self.ledgers / "f.json",
        ).out.strip()  # fmt: skip
        err = self.run_cli(
            "properties", "--pin", self.root / "pins/fixtures.json", "--expect-digest", digest,
            "--properties", self.root / "pins/properties.json", "--command", command,
            "--root", self.root, "--base", self.base, "--out", self.ledgers / "p.json",
        ).err  # fmt: skip
        lines = err.splitlines(keepends=True)
        first = next((n for n, line in enumerate(lines) if line.startswith("three-ledger")), 0)
        return "".join(lines[first:])


def break_total(repo: Repo) -> None:
    product = repo.root / "orders.py"
    text = product.read_text().replace("def order_total(order", "def _order_total(order")
    product.write_text(text + BROKEN_TOTAL)


def example_repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    """The example committed as the base: its pins reviewed, the flake pin left out."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "pins/flakes.json").unlink()
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base: orders, properties, reviewed pins")
    return Repo(root, tmp_path / "ledgers", git(root, "rev-parse", "HEAD"), run_cli)


def posture(decision: dict[str, Any]) -> tuple[str, int]:
    return decision["posture"], decision["row"]
