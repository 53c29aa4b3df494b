"""The demo's example repository: built from the shipped example, one worktree per scenario.

Every git call goes through the runner with a timeout, like the gate's own.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import three_ledger
from three_ledger.demo.scenarios import Scenario
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.pins import utc_today
from three_ledger.runner import ChildHung, run_captured

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# The example's flake entry is stamped with a review_by this many days after today (UTC).
REVIEW_WINDOW_DAYS = 90
GIT_TIMEOUT_S = 60.0
PIN_A = "pins/fixtures.json"
PROPERTIES_PIN = "pins/properties.json"
FLAKE_PIN = "pins/flakes.json"
_CACHES = frozenset({"__pycache__", ".pytest_cache"})
# Variables that would make the demo depend on the caller's setup, or write outside DIR.
_DROPPED_VARIABLES = ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "ORDERS_SUMMARY_BUDGET_MS")


@frozen
class ScenarioPaths:
    folder: Path

    @property
    def worktree(self) -> Path:
        return self.folder / "repo"

    @property
    def ledgers(self) -> Path:
        return self.folder / "ledgers"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"


def build_repository(repo: Path) -> str:
    """Copy the packaged example into REPO with two commits; return the base (the second).

    The first commit holds the product code, fixtures and property tests; the second holds
    the pins, as a reviewed pin commit would. The flake pin is stamped here so that it is
    valid in this repository: accepted_revision names the first commit, review_by lies
    REVIEW_WINDOW_DAYS after today. This sets up the example; the gate never writes a pin.
    """
    example = example_project()
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    for entry in example.iterdir():
        if entry.name != "pins":
            _copy_tree(entry, repo / entry.name)
    _commit(repo, "orders: product code, fixtures and property tests")
    first = _git(repo, "rev-parse", "HEAD")
    _copy_tree(example / "pins", repo / "pins")
    _stamp_flake_pin(repo / FLAKE_PIN, first, utc_today())
    _commit(repo, "pins: reviewed fixture, properties and flake pins")
    return _git(repo, "rev-parse", "HEAD")


def example_project() -> Traversable:
    """The example project: three_ledger/example in an installed wheel, else the checkout's.

    An editable install puts the checkout's src/ on sys.path and copies no data, so the
    example is then read where it lives, examples/orders beside src/.
    """
    return locate_example(
        resources.files("three_ledger"), Path(three_ledger.__file__).resolve().parents[2]
    )


def locate_example(package: Traversable, source_root: Path) -> Traversable:
    """PACKAGE/example, else SOURCE_ROOT/examples/orders; missing from both is exit 4."""
    shipped = package / "example"
    if shipped.is_dir():
        return shipped
    checkout = source_root / "examples" / "orders"
    if checkout.is_dir():
        return checkout
    raise InfraFailure(
        f"demo: the example project is not in this installation ({shipped} is missing): "
        "reinstall three-ledger from its repository or from a wheel built there"
    )


def _copy_tree(source: Traversable, target: Path) -> None:
    # Traversable, not Path: the example may sit inside a zip file.
    if source.name in _CACHES or source.name.endswith(".pyc"):
        return
    if source.is_dir():
        target.mkdir()
        for entry in source.iterdir():
            _copy_tree(entry, target / entry.name)
    else:
        target.write_bytes(source.read_bytes())


def _stamp_flake_pin(path: Path, accepted_revision: str, today: datetime.date) -> None:
    pin = json.loads(path.read_text(encoding="utf-8"))
    review_by = (today + datetime.timedelta(days=REVIEW_WINDOW_DAYS)).isoformat()
    for entry in pin["flakes"]:
        entry["accepted_revision"] = accepted_revision
        entry["review_by"] = review_by
    path.write_text(json.dumps(pin, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def prepare(repo: Path, base: str, scenario: Scenario, paths: ScenarioPaths) -> None:
    """Check the base out in the scenario's worktree, apply the patch, commit it."""
    message = f"{scenario.name}: {scenario.description}"
    check_out_patch(repo, base, f"scenario/{scenario.name}", scenario.edits, message, paths)


class Patch(Protocol):
    """One edit of a patch (scenarios.py's Replace, Write, ...)."""

    def apply(self, root: Path) -> None: ...


def check_out_patch(
    repo: Path, base: str, branch: str, edits: Sequence[Patch], message: str, paths: ScenarioPaths
) -> None:
    """Check BASE out on BRANCH in the worktree of PATHS, apply EDITS, commit them."""
    _git(repo, "worktree", "add", "-q", "-b", branch, str(paths.worktree), base)
    for edit in edits:
        edit.apply(paths.worktree)
    _commit(paths.worktree, message)
    paths.ledgers.mkdir()
    paths.logs.mkdir()


def _commit(worktree: Path, message: str) -> None:
    _git(worktree, "add", "-A")
    _git(worktree, "commit", "-q", "--allow-empty", "-m", message)


def demo_environment() -> dict[str, str]:
    """The caller's environment without anything that would change what the demo shows."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in _DROPPED_VARIABLES
    }
    # The user's git configuration (hooks, signing, templates) stays out of the demo.
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="three-ledger demo",
        GIT_AUTHOR_EMAIL="demo@three-ledger.invalid",
        GIT_COMMITTER_NAME="three-ledger demo",
        GIT_COMMITTER_EMAIL="demo@three-ledger.invalid",
    )
    return env


def _git(cwd: Path, *args: str) -> str:
    try:
        done = run_captured(
            ["git", *args], cwd=cwd, env=demo_environment(), timeout_s=GIT_TIMEOUT_S
        )
    except ChildHung as hung:
        raise InfraFailure(f"demo: {hung}") from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace")
        message = stderr.strip().splitlines()[:1] or ["(no message)"]
        raise InfraFailure(f"demo: git {args[0]} failed in {cwd}: {message[0]}")
    return done.stdout.decode("utf-8", "surrogateescape").strip()
