"""A real project's suite under the gate: the recorded copy of tomli (tests/data/tomli) in a
scratch git repository, its pins reviewed in a commit of their own, and `three-ledger gate`
run over a change as a CI job runs it.

The copy's own README says what was kept and why; its two pins folders are two ways its
owners could pin it: every case file a fixture (`pins`), or only the valid cases
(`pins-valid-cases`), the invalid ones left to the tests as plain data.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import CI_VARIABLES, REPO, git

TOMLI = REPO / "tests" / "data" / "tomli"
PROJECT = TOMLI / "project"
# Each way of pinning the copy: the pins folder it commits as `pins/` in its base.
LAYOUTS = {"cases-pinned": TOMLI / "pins", "valid-cases-pinned": TOMLI / "pins-valid-cases"}
# What CI runs: tomli's tests against its src layout (tomli's own CI installs the package
# first; here the src folder goes on pytest's path), with no cache written into the checkout.
TEST_COMMAND = shlex.join(
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "pythonpath=src",
     "tests"]
)  # fmt: skip
GATE_TIMEOUT_S = 300


@dataclass(frozen=True)
class Suite:
    """The copy in git: tomli as recorded, then one base commit per pins layout."""

    repo: Path
    bases: Mapping[str, str]


def build_suite(where: Path) -> Suite:
    """tomli committed as recorded, then each layout's pins reviewed in a commit of their own,
    on a branch of its own (the layout's name)."""
    repo = where / "tomli"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tomli 2.4.0, trimmed")
    bases: dict[str, str] = {}
    for layout, pins in LAYOUTS.items():
        git(repo, "checkout", "-q", "-b", layout, "main")
        shutil.copytree(pins, repo / "pins")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"pins: {layout}, reviewed")
        bases[layout] = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return Suite(repo, bases)


@dataclass(frozen=True)
class GateRun:
    """What one `gate` run left: its exit, its output, and the ledgers it wrote."""

    code: int
    out: str
    err: str
    folder: Path

    @property
    def decision(self) -> dict[str, Any]:
        return self._ledger("decision.json")

    @property
    def property_ledger(self) -> dict[str, Any]:
        return self._ledger("property-a.json")

    @property
    def summary(self) -> str:
        return (self.folder / "summary.md").read_text(encoding="utf-8")

    def _ledger(self, name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.folder / name).read_text(encoding="utf-8"))
        return document


@dataclass(frozen=True)
class Change:
    """A private clone of the suite at one layout's base, where a patch is written."""

    root: Path
    base: str

    def read(self, path: str) -> str:
        return (self.root / path).read_text(encoding="utf-8")

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def replace(self, path: str, old: str, new: str) -> None:
        """Replace every `old` in PATH, which must hold it: a patch that no longer applies to
        the recorded copy fails here, not as a posture no one asked about."""
        text = self.read(path)
        assert old in text, f"{path} no longer holds {old!r}"
        self.write(path, text.replace(old, new))

    def commit(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)

    def gate(self, out: Path, command: str = TEST_COMMAND) -> GateRun:
        """`three-ledger gate` from the checkout, as a CI step runs it, in a process of its own."""
        argv = [
            sys.executable, "-P", "-m", "three_ledger", "gate", "--pins-dir", "pins",
            "--command", command, "--base", self.base, "--out-dir", str(out),
            "--summary-md", str(out / "summary.md"),
        ]  # fmt: skip
        env = {key: value for key, value in os.environ.items() if key not in CI_VARIABLES}
        completed = subprocess.run(
            argv, cwd=self.root, env=env, capture_output=True, text=True, timeout=GATE_TIMEOUT_S
        )
        return GateRun(completed.returncode, completed.stdout, completed.stderr, out)


def change_from(suite: Suite, layout: str, where: Path) -> Change:
    """A clone of the suite checked out at the layout's base, on a branch for the change."""
    root = where / "tomli"
    git(where, "clone", "-q", "--no-hardlinks", str(suite.repo), str(root))
    base = suite.bases[layout]
    git(root, "checkout", "-q", "-b", "change", base)
    return Change(root, base)
