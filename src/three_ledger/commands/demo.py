"""`three-ledger demo`: build the example repository and run the real workflow on each scenario.

Layout of the demo folder (kept with `--dir`):

    repo/                       the example repository; its last commit is the base
    scenarios/<name>/repo/      a git worktree of repo on branch scenario/<name>: the patch
    scenarios/<name>/ledgers/   every ledger the scenario's steps wrote, and merge.md
    scenarios/<name>/logs/      one log per step: the command line, then its output

Every step is `python -m three_ledger ...` in a child process, run in the scenario's
worktree, exactly as a CI job would run it.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from three_ledger.demo_scenarios import SCENARIOS, Expected, Scenario
from three_ledger.errors import InfraFailure, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import FixtureLedger, MergeDecision, read_ledger
from three_ledger.merge_table import Posture
from three_ledger.pins import utc_today

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

# The example's flake entry is stamped with a review_by this many days after today (UTC).
REVIEW_WINDOW_DAYS = 90
# Scenarios run side by side, each in its own worktree; most of a step's time is start-up.
WORKERS = 3
PROPERTIES_TIMEOUT_S = 120
PIN_A = "pins/fixtures.json"
PIN_B = "pins/fixtures_b.json"
PROPERTIES_PIN = "pins/properties.json"
FLAKE_PIN = "pins/flakes.json"
TEST_COMMAND = [sys.executable, "-m", "pytest", "-q", "properties/test_orders.py"]
# The table's step columns: (heading, step). A heading is short so the table fits 100 columns.
COLUMNS = (
    ("dig A", "digest A"),
    ("dig B", "digest B"),
    ("prop A", "properties A"),
    ("prop B", "properties B"),
    ("dual", "dual-pin"),
    ("flake", "flake-observe"),
    ("merge", "merge"),
)
_CACHES = frozenset({"__pycache__", ".pytest_cache"})
# Variables that would make the demo depend on the caller's setup, or write outside DIR.
_DROPPED_VARIABLES = ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "ORDERS_SUMMARY_BUDGET_MS")


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    exits: Mapping[str, int]
    actual: Expected | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.actual == self.scenario.expected


def demo(*, directory: Path | None, scenarios: Sequence[Scenario] = SCENARIOS) -> int:
    """Run every scenario; 0 when each ends in its expected posture and row, else 1.

    `scenarios` exists for the tests, which pass a scenario with a wrong expectation to
    prove a mismatch is caught; the command line always runs the full table.
    """
    _check_tools()
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="three-ledger-demo-") as temporary:
            return _run(Path(temporary), scenarios, kept=False)
    _claim(directory)
    return _run(directory, scenarios, kept=True)


def _check_tools() -> None:
    if shutil.which("git") is None:
        raise InfraFailure("demo: git is not on PATH: the demo builds a git repository")
    if importlib.util.find_spec("pytest") is None:
        raise InfraFailure("demo: pytest is not installed: the example's properties need it")


def _claim(directory: Path) -> None:
    """Refuse a DIR that exists and is not an empty folder; create it otherwise."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise Refused(f"{directory}: --dir must be an empty folder or not exist; left untouched")
    if directory.is_dir() and any(directory.iterdir()):
        raise Refused(f"{directory}: --dir is not empty; left untouched")
    directory.mkdir(parents=True, exist_ok=True)


def _run(top: Path, scenarios: Sequence[Scenario], *, kept: bool) -> int:
    top = top.resolve()
    repo = top / "repo"
    base = build_repository(repo)
    print(f"demo: example repository built, base commit {base[:12]}", flush=True)
    work = [(scenario, ScenarioPaths(top / "scenarios" / scenario.name)) for scenario in scenarios]
    for scenario, paths in work:
        prepare(repo, base, scenario, paths)
    outcomes = _run_all(work, base)
    return _report(outcomes, top if kept else None)


def _report(outcomes: Sequence[Outcome], kept: Path | None) -> int:
    print("\nExit of each step ('-': not run); posture and row of the merge table:\n")
    print(render_table(outcomes))
    print()
    for outcome in outcomes:
        line = f"{outcome.scenario.name}: {outcome.scenario.description}"
        print(textwrap.fill(line, width=100, initial_indent="  ", subsequent_indent="    "))
    if kept is not None:
        print(f"\ndemo: kept in {kept}: repo/ is the example repository;")
        print("demo: scenarios/<name>/ holds each scenario's worktree, ledgers and step logs")
    else:
        print("\ndemo: run with --dir DIR to keep the repository, ledgers and logs")
    failed = [outcome.scenario.name for outcome in outcomes if not outcome.as_expected]
    if failed:
        print(f"demo: {len(failed)} scenario(s) not as expected: {', '.join(failed)}")
        return ExitCode.REJECT
    print(f"demo: all {len(outcomes)} scenarios ended as expected")
    return ExitCode.OK


def _run_all(work: Sequence[tuple[Scenario, ScenarioPaths]], base: str) -> list[Outcome]:
    """Run the scenarios side by side; print one line as each finishes; keep table order."""
    by_name: dict[str, Outcome] = {}
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    try:
        futures = [pool.submit(run_scenario, scenario, paths, base) for scenario, paths in work]
        for done, future in enumerate(as_completed(futures), start=1):
            outcome = future.result()
            by_name[outcome.scenario.name] = outcome
            print(f"[{done}/{len(work)}] {progress_line(outcome)}", flush=True)
    finally:
        # On Ctrl-C the running steps get the signal too; scenarios not started never start.
        pool.shutdown(wait=True, cancel_futures=True)
    return [by_name[scenario.name] for scenario, _ in work]


def progress_line(outcome: Outcome) -> str:
    actual = outcome.actual or "no merge decision"
    verdict = (
        "as expected" if outcome.as_expected else f"FAIL, expected {outcome.scenario.expected}"
    )
    return f"{outcome.scenario.name}: {actual}, {verdict} ({outcome.seconds:.1f} s)"


# --- the example repository -------------------------------------------------------------


def build_repository(repo: Path) -> str:
    """Copy the packaged example into REPO with two commits; return the base (the second).

    The first commit holds the product code, fixtures and property tests; the second holds
    the pins, as a reviewed pin commit would. The flake pin is stamped here so that it is
    valid in this repository: accepted_revision names the first commit, review_by lies
    REVIEW_WINDOW_DAYS after today. This sets up the example; the gate never writes a pin.
    """
    example = resources.files("three_ledger") / "example"
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
    branch = f"scenario/{scenario.name}"
    _git(repo, "worktree", "add", "-q", "-b", branch, str(paths.worktree), base)
    for edit in scenario.edits:
        edit.apply(paths.worktree)
    _commit(paths.worktree, f"{scenario.name}: {scenario.description}")
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
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=demo_environment(), capture_output=True, text=True
    )
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[:1] or ["(no message)"]
        raise InfraFailure(f"demo: git {args[0]} failed in {cwd}: {message[0]}")
    return done.stdout.strip()


# --- one scenario ---------------------------------------------------------------------------


@dataclass
class Steps:
    """Runs one scenario's steps in its worktree and keeps each step's exit code."""

    paths: ScenarioPaths
    env: Mapping[str, str]
    exits: dict[str, int] = field(default_factory=dict)

    def run(self, column: str, *args: str) -> int:
        command = [sys.executable, "-m", "three_ledger", *args]
        log = self.paths.logs / f"{len(self.exits) + 1}-{column.replace(' ', '-').lower()}.log"
        with log.open("w", encoding="utf-8") as stream:
            stream.write(f"$ {shlex.join(['three-ledger', *args])}\n\n")
            stream.flush()
            done = subprocess.run(
                command, cwd=self.paths.worktree, env=self.env, stdout=stream, stderr=stream
            )
        self.exits[column] = done.returncode
        return done.returncode

    def wrote(self, ledger: str) -> bool:
        return (self.paths.ledgers / ledger).is_file()


def ledger(name: str) -> str:
    """A ledger's path as the steps see it: beside the worktree, never inside a pin folder."""
    return f"../ledgers/{name}"


def run_scenario(scenario: Scenario, paths: ScenarioPaths, base: str) -> Outcome:
    """digest, properties, dual-pin, flake-observe, merge: the seed's order, each a child."""
    started = time.monotonic()
    steps = Steps(paths, {**demo_environment(), **scenario.env})
    sides = [("A", PIN_A), ("B", PIN_B)] if scenario.two_pins else [("A", PIN_A)]
    for side, pin in sides:
        _digest_and_score(steps, side, pin, base)
    _dual_pin(steps, scenario)
    if scenario.observe is not None and steps.wrote("property_a.json"):
        _flake_observe(steps, scenario.observe, base)
    _merge(steps, base)
    actual = read_decision(paths.ledgers / "merge.json")
    return Outcome(scenario, dict(steps.exits), actual, time.monotonic() - started)


def _digest_and_score(steps: Steps, side: str, pin: str, base: str) -> None:
    fixture, scored = f"fixture_{side.lower()}.json", f"property_{side.lower()}.json"
    steps.run(f"digest {side}", "digest", "--pin", pin, "--out", ledger(fixture), "--base", base)
    # No fixture ledger, no digest to insist on: the score is absent by rule.
    expect = _ledger_digest(steps.paths.ledgers / fixture)
    if expect is None:
        return
    steps.run(
        f"properties {side}",
        *("properties", "--pin", pin, "--expect-digest", expect),
        *("--properties", PROPERTIES_PIN, "--flake-pin", FLAKE_PIN, "--base", base),
        *("--timeout", str(PROPERTIES_TIMEOUT_S), "--command", shlex.join(TEST_COMMAND)),
        *("--out", ledger(scored)),
    )


def _ledger_digest(path: Path) -> str | None:
    """The digest a fixture ledger records, as `jq -r .digest` would read it in CI."""
    if not path.is_file():
        return None
    try:
        return read_ledger(path, FixtureLedger).record.digest
    except Refused:
        return None


def _dual_pin(steps: Steps, scenario: Scenario) -> None:
    out = ("--out", ledger("dual_pin.json"))
    if not scenario.two_pins:
        if steps.wrote("property_a.json"):
            steps.run("dual-pin", "dual-pin", "--not-run", *out)
        return
    if steps.wrote("property_a.json") and steps.wrote("property_b.json"):
        left, right = ledger("property_a.json"), ledger("property_b.json")
        steps.run("dual-pin", "dual-pin", "--left", left, "--right", right, *out)


def _flake_observe(steps: Steps, test_id: str, base: str) -> None:
    steps.run(
        "flake-observe",
        *("flake-observe", "--fixture-ledger", ledger("fixture_a.json")),
        *("--property-ledger", ledger("property_a.json"), "--flake-pin", FLAKE_PIN),
        *("--test-id", test_id, "--base", base, "--out", ledger("flake.json")),
    )


def _merge(steps: Steps, base: str) -> None:
    """Merge gets the fixture and property ledgers whether or not they were written (a
    missing one is a rejected score), and the dual-pin and flake ledgers that were."""
    optional = [
        ("--dual-pin", ledger("dual_pin.json")) if steps.wrote("dual_pin.json") else (),
        ("--flake-ledger", ledger("flake.json")) if steps.wrote("flake.json") else (),
    ]
    steps.run(
        "merge",
        *("merge", "--fixture-ledger", ledger("fixture_a.json")),
        *("--property-ledger", ledger("property_a.json")),
        *(flag for pair in optional for flag in pair),
        *("--flake-pin", FLAKE_PIN, "--pin", PIN_A, "--pins-dir", "pins", "--base", base),
        *("--out", ledger("merge.json"), "--summary-md", ledger("merge.md")),
    )


def read_decision(path: Path) -> Expected | None:
    """The posture and row of a merge decision, or None when there is no valid one."""
    if not path.is_file():
        return None
    try:
        decision = read_ledger(path, MergeDecision).record
    except Refused:
        return None
    return Expected(Posture(decision.posture), decision.row)


# --- the table ------------------------------------------------------------------------------


def render_table(outcomes: Sequence[Outcome]) -> str:
    """One row per scenario: each step's exit ('-' when not run), expected and actual posture."""
    header = ["scenario", *(heading for heading, _ in COLUMNS), "expected", "actual", "mark"]
    rows = [header, *(_row(outcome) for outcome in outcomes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(_aligned(row, widths) for row in rows)


def _row(outcome: Outcome) -> list[str]:
    exits = [str(outcome.exits.get(step, "-")) for _, step in COLUMNS]
    actual = _short(outcome.actual) if outcome.actual else "none"
    mark = "ok" if outcome.as_expected else "FAIL"
    return [outcome.scenario.name, *exits, _short(outcome.scenario.expected), actual, mark]


def _short(expected: Expected) -> str:
    return f"{expected.posture.value} {expected.row}"


def _aligned(row: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(_cells(row, widths)).rstrip()


def _cells(row: Sequence[str], widths: Sequence[int]) -> Iterator[str]:
    for index, (cell, width) in enumerate(zip(row, widths, strict=True)):
        exit_column = 1 <= index <= len(COLUMNS)
        yield cell.rjust(width) if exit_column else cell.ljust(width)
