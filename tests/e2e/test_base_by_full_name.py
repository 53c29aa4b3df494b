"""The base by its full name, in checkouts as a GitHub runner makes them: a bare `origin`, a
clone of it, the event payload at GITHUB_EVENT_PATH and the runner's variables.

Each attack ships a broken product with the test that would catch it weakened. Read the old
way, its base hid the weakened test and `gate` answered `human_review`; each test here names
what catches it now. The controls are honest changes that still pass.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import CI_VARIABLES, RunCli, git, write_json
from three_ledger.demo import repository as demo
from three_ledger.demo.scenarios import CLEAN, DROP_QUANTITY, WEAKEN_ORACLE, Replace, Write

pytestmark = pytest.mark.pytest_child

TEST_COMMAND = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "properties/test_orders.py"])  # fmt: skip
# The broken product and the weakened test that lets it pass.
BROKEN_AND_HIDDEN = (DROP_QUANTITY, WEAKEN_ORACLE)
Edit = Replace | Write


@dataclass(frozen=True)
class Project:
    """A developer's clone of `origin`, where main holds the reviewed base."""

    tmp: Path
    origin: Path
    dev: Path
    base: str

    def push(self, branch: str, edits: Sequence[Edit], message: str) -> str:
        """Commit EDITS on BRANCH in the developer's clone and push it; return the commit."""
        for edit in edits:
            edit.apply(self.dev)
        git(self.dev, "add", "-A")
        git(self.dev, "commit", "-q", "--allow-empty", "-m", message)
        git(self.dev, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
        return git(self.dev, "rev-parse", "HEAD")

    def main_moves_on(self) -> str:
        """Someone else's reviewed change lands on main after the branch was made."""
        other = self.tmp / "other"
        git(self.tmp, "clone", "-q", str(self.origin), str(other))
        (other / "NOTES.md").write_text("release notes\n", encoding="utf-8")
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", "notes")
        git(other, "push", "-q", "origin", "HEAD:refs/heads/main")
        return git(other, "rev-parse", "HEAD")

    def runner_checkout(self, branch: str) -> Path:
        """actions/checkout with `fetch-depth: 0`: every branch as refs/remotes/origin/*, tags."""
        checkout = self.tmp / f"runner-{branch}"
        git(self.tmp, "clone", "-q", "--branch", branch, str(self.origin), str(checkout))
        return checkout


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    for key in (*CI_VARIABLES, "PYTEST_ADDOPTS"):
        monkeypatch.delenv(key, raising=False)
    upstream = tmp_path / "upstream"
    demo.build_repository(upstream)
    pin_path = upstream / "pins/properties.json"
    pin = json.loads(pin_path.read_text(encoding="utf-8"))
    pin["fixture_pins"] = pin["fixture_pins"][:1]  # one pin: one test run per gate
    write_json(pin_path, pin)
    git(upstream, "commit", "-q", "-am", "pins: score on pin A only")
    git(upstream, "branch", "-M", "main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream), str(origin))
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(origin), str(dev))
    git(dev, "checkout", "-q", "-b", "feature")
    return Project(tmp_path, origin, dev, git(upstream, "rev-parse", "HEAD"))


def on_github(
    monkeypatch: pytest.MonkeyPatch, tmp: Path, event: str, payload: dict[str, Any], ref: str
) -> None:
    """The variables a runner sets for EVENT, its payload written where they say."""
    path = write_json(tmp / "event.json", payload)
    for key, value in {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event,
                       "GITHUB_EVENT_PATH": str(path), "GITHUB_REF": ref}.items():  # fmt: skip
        monkeypatch.setenv(key, value)


@dataclass(frozen=True)
class GateRun:
    code: int
    out: str
    decision: dict[str, Any]
    folder: Path

    @property
    def row(self) -> tuple[str, int]:
        return self.decision["posture"], self.decision["row"]

    def base_resolution(self) -> Any:
        return json.loads((self.folder / "property-a.json").read_text())["base_resolution"]


def gate(run_cli: RunCli, checkout: Path, *base: str) -> GateRun:
    folder = checkout.parent / f"{checkout.name}-ledgers"
    result = run_cli("gate", "--pins-dir", checkout / "pins", "--root", checkout,
                     "--command", TEST_COMMAND, "--out-dir", folder, *base)  # fmt: skip
    decision = json.loads((folder / "decision.json").read_text(encoding="utf-8"))
    assert result.code == (1 if decision["posture"] == "reject" else 0), result.err
    return GateRun(result.code, result.out, decision, folder)


def test_a_tag_named_origin_main_pushed_with_the_change_is_row_0(
    project: Project, run_cli: RunCli
) -> None:
    """git resolves the tag before the remote branch: the change compared with itself."""
    project.push("feature", BROKEN_AND_HIDDEN, "faster totals")
    git(project.dev, "tag", "origin/main")
    git(project.dev, "push", "-q", "origin", "refs/tags/origin/main")
    checkout = project.runner_checkout("feature")
    ran = gate(run_cli, checkout, "--base", "origin/main")
    assert ran.row == ("reject", 0)
    assert ran.decision["reason"].startswith(
        "gate inputs unusable: base revision 'origin/main' is ambiguous: 'origin/main' names "
        "refs/tags/origin/main and refs/remotes/origin/main"
    )
    # By its full name, the base is the reviewed main: the weakened test shows.
    ran = gate(run_cli, checkout, "--base", "refs/remotes/origin/main")
    assert ran.row == ("reject", 5)
    assert ran.base_resolution() == {
        "given": "refs/remotes/origin/main", "used": project.base, "how": "ancestor",
    }  # fmt: skip


def test_a_second_push_to_a_branch_is_compared_with_the_default_branch(
    project: Project, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`before` would be the author's first push, which already weakened the test."""
    first = project.push("feature", BROKEN_AND_HIDDEN, "faster totals")
    second = project.push("feature", [CLEAN], "tidy summarise()")
    project.main_moves_on()
    checkout = project.runner_checkout("feature")
    payload = {"ref": "refs/heads/feature", "before": first, "after": second,
               "repository": {"default_branch": "main", "full_name": "example/orders"}}  # fmt: skip
    on_github(monkeypatch, project.tmp, "push", payload, "refs/heads/feature")
    ran = gate(run_cli, checkout)
    assert ran.row == ("reject", 5)
    assert (
        f"gate: base {project.base[:12]} (from repository.default_branch in GITHUB_EVENT_PATH "
        "(a push to refs/heads/feature); HEAD's merge-base with refs/remotes/origin/main)"
    ) in ran.out
    assert ran.base_resolution() == {
        "given": "refs/remotes/origin/main", "used": project.base, "how": "merge-base",
    }  # fmt: skip


def test_an_honest_pull_request_on_a_detached_merge_commit_is_scored(
    project: Project, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.push("feature", [CLEAN], "tidy summarise()")
    tip = project.main_moves_on()
    checkout = project.runner_checkout("main")
    # What actions/checkout checks out for a pull request: refs/pull/N/merge, detached.
    git(checkout, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "origin/feature")
    git(checkout, "checkout", "-q", "--detach")
    git(checkout, "branch", "-q", "-D", "main")
    payload = {"number": 7, "pull_request": {"number": 7, "base": {"sha": tip, "ref": "main"}}}
    on_github(monkeypatch, project.tmp, "pull_request", payload, "refs/pull/7/merge")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    ran = gate(run_cli, checkout)
    assert ran.row == ("human_review", 8)
    assert ran.base_resolution() == {"given": tip, "used": tip, "how": "ancestor"}


def test_a_push_to_the_default_branch_is_compared_with_before(
    project: Project, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    after = project.push("main", [CLEAN], "tidy summarise()")
    checkout = project.runner_checkout("main")
    payload = {"ref": "refs/heads/main", "before": project.base, "after": after,
               "repository": {"default_branch": "main"}}  # fmt: skip
    on_github(monkeypatch, project.tmp, "push", payload, "refs/heads/main")
    ran = gate(run_cli, checkout)
    assert ran.row == ("human_review", 8)
    assert ran.base_resolution() == {
        "given": project.base, "used": project.base, "how": "ancestor",
    }  # fmt: skip
