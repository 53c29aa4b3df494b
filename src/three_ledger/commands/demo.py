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

import importlib.util
import shlex
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from three_ledger.demo import flake_check, vet_check
from three_ledger.demo.repository import (
    ScenarioPaths,
    build_repository,
    example_project,
    prepare,
)
from three_ledger.demo.scenarios import SCENARIOS, Scenario
from three_ledger.demo.table import progress_line, render_table
from three_ledger.demo.workflow import ScenarioResult, run_scenario
from three_ledger.errors import InfraFailure, Refused
from three_ledger.exit_codes import ExitCode

# Scenarios run side by side, each in its own worktree; most of a step's time is start-up.
WORKERS = 3


def demo(
    *, directory: Path | None, scenarios: Sequence[Scenario] = SCENARIOS, vet: bool = True
) -> int:
    """Run every scenario and the vet check; 0 when each ends as expected, else 1.

    `scenarios` and `vet` exist for the tests, which pass a scenario with a wrong expectation
    to prove a mismatch is caught; the command line always runs the full table and vet.
    """
    _check_tools()
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="three-ledger-demo-") as temporary:
            return _run(Path(temporary), scenarios, kept=False, vet=vet)
    _claim(directory)
    return _run(directory, scenarios, kept=True, vet=vet)


def _check_tools() -> None:
    """Everything the demo needs but the gate does not, checked before anything is made."""
    if shutil.which("git") is None:
        raise InfraFailure("demo: git is not on PATH: the demo builds a git repository")
    if importlib.util.find_spec("pytest") is None:
        # The gate itself never needs pytest; the example's tests, run by this Python, do.
        raise InfraFailure(
            "demo: the example's tests need pytest, which this environment lacks: run "
            f"{shlex.quote(sys.executable)} -m pip install pytest, or install three-ledger with "
            "its demo extra (pip install 'PATH[demo]', PATH the wheel or checkout it came from)"
        )
    example_project()


def _claim(directory: Path) -> None:
    """Refuse a DIR that exists and is not an empty folder; create it otherwise."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise Refused(f"{directory}: --dir must be an empty folder or not exist; left untouched")
    if directory.is_dir() and any(directory.iterdir()):
        raise Refused(f"{directory}: --dir is not empty; left untouched")
    directory.mkdir(parents=True, exist_ok=True)


def _run(top: Path, scenarios: Sequence[Scenario], *, kept: bool, vet: bool) -> int:
    top = top.resolve()
    repo = top / "repo"
    base = build_repository(repo)
    print(f"demo: example repository built, base commit {base[:12]}", flush=True)
    work = [(scenario, ScenarioPaths(top / "scenarios" / scenario.name)) for scenario in scenarios]
    for scenario, paths in work:
        prepare(repo, base, scenario, paths)
    with ThreadPoolExecutor(max_workers=1) as beside:
        checked = None
        if vet:
            # Beside the table, not in it: vet is evidence for the reviewer of a pin change.
            vet_paths = ScenarioPaths(top / "scenarios" / vet_check.NAME)
            vet_check.prepare_vet_check(repo, base, vet_paths)
            checked = beside.submit(vet_check.run_vet_check, vet_paths)
        results = _run_all(work, base)
        vetted = None if checked is None else checked.result()
    evidence = None
    if vet:
        # flake-evidence, for the people who edit the flake pin, runs last and alone: its
        # budget is wall-clock seconds, and reruns that share the machine with the table
        # would get fewer of them than the verdicts need.
        flake_folder = top / "scenarios" / flake_check.NAME
        flake_check.build(flake_folder)
        print(
            f"demo: {flake_check.NAME}: two tests rerun, {flake_check.BUDGET_S} s budget",
            flush=True,
        )
        evidence = flake_check.run_flake_check(flake_folder)
    return _report(results, vetted, top if kept else None, evidence)


def _report(
    results: Sequence[ScenarioResult],
    vetted: vet_check.VetOutcome | None,
    kept: Path | None,
    evidence: flake_check.FlakeOutcome | None = None,
) -> int:
    print("\nExit of each step ('-': not run); posture and row of the merge table:\n")
    print(render_table(results))
    print()
    for result in results:
        line = f"{result.scenario.name}: {result.scenario.description}"
        print(textwrap.fill(line, width=100, initial_indent="  ", subsequent_indent="    "))
    vet_failed = vetted is not None and not _report_vet(vetted)
    flake_failed = evidence is not None and not _report_flake(evidence)
    if kept is not None:
        print(f"\ndemo: kept in {kept}: repo/ is the example repository;")
        print("demo: scenarios/<name>/ holds each scenario's worktree, ledgers and step logs")
    else:
        print("\ndemo: run with --dir DIR to keep the repository, ledgers and logs")
    failed = [result.scenario.name for result in results if not result.as_expected]
    failed += [vet_check.NAME] if vet_failed else []
    failed += [flake_check.NAME] if flake_failed else []
    if failed:
        print(f"demo: {len(failed)} scenario(s) not as expected: {', '.join(failed)}")
        return ExitCode.SCENARIO_FAILED
    caught = ", and vet caught the ceremony property" if vetted is not None else ""
    print(f"demo: all {len(results)} scenarios ended as expected{caught}")
    return ExitCode.OK


def _report_vet(outcome: vet_check.VetOutcome) -> bool:
    """Print the vet check's lines; True when it ended as expected."""
    print("\nvet, beside the table (evidence for the reviewer of a pin change):\n")
    line = f"{vet_check.NAME}: {vet_check.DESCRIPTION}"
    print(textwrap.fill(line, width=100, initial_indent="  ", subsequent_indent="    "))
    for property_line in outcome.lines:
        print(f"    {property_line}")
    verdict = "as expected" if outcome.as_expected else "FAIL, expected exit 1 naming it alone"
    print(f"{vet_check.NAME}: vet exit {outcome.exit_code}, {verdict} ({outcome.seconds:.1f} s)")
    return outcome.as_expected


def _report_flake(outcome: flake_check.FlakeOutcome) -> bool:
    """Print flake-evidence's report; True when it ended as expected."""
    print("\nflake-evidence, beside the table (evidence for the people who edit the flake pin):\n")
    line = f"{flake_check.NAME}: {flake_check.DESCRIPTION}"
    print(textwrap.fill(line, width=100, initial_indent="  ", subsequent_indent="    "))
    for evidence_line in outcome.lines:
        print(f"    {evidence_line}")
    verdict = "as expected" if outcome.as_expected else "FAIL, expected the two verdicts"
    print(f"{flake_check.NAME}: exit {outcome.exit_code}, {verdict} ({outcome.seconds:.1f} s)")
    return outcome.as_expected


def _run_all(work: Sequence[tuple[Scenario, ScenarioPaths]], base: str) -> list[ScenarioResult]:
    """Run the scenarios side by side; print one line as each finishes; keep table order."""
    by_name: dict[str, ScenarioResult] = {}
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    try:
        futures = [pool.submit(run_scenario, scenario, paths, base) for scenario, paths in work]
        for done, future in enumerate(as_completed(futures), start=1):
            result = future.result()
            by_name[result.scenario.name] = result
            print(f"[{done}/{len(work)}] {progress_line(result)}", flush=True)
    finally:
        # On Ctrl-C the running steps get the signal too; scenarios not started never start.
        pool.shutdown(wait=True, cancel_futures=True)
    return [by_name[scenario.name] for scenario, _ in work]
