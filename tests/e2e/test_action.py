"""The composite Action (`action.yml`), run step by step under a simulated GitHub runner.

The runner's files are real: the event payload at GITHUB_EVENT_PATH, GITHUB_OUTPUT per step,
GITHUB_STEP_SUMMARY. The install step really builds three-ledger from this checkout into a
virtual environment of its own, and the project's tests run under a Python that has pytest
but not three-ledger, as in a project that never installed it.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

from helpers import git
from helpers.github_runner import ActionRun, Event, Runner, runner_environment
from three_ledger.demo import repository as demo
from three_ledger.demo.scenarios import SCENARIOS, Scenario

ACTION_PATH = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ACTION_PATH / "action.yml").read_text(encoding="utf-8"))
LEDGER_NAMES = re.compile(r"^(fixture|property)-[ab]\.json$|^dual-pin\.json$|^flake-\d+\.json$")


@pytest.fixture(scope="module")
def project_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with pytest and without three-ledger: the project's own environment.

    pytest and what it requires are copied, file by file as their wheels installed them,
    from this environment: the same pytest, with no network and no three-ledger.
    """
    venv = tmp_path_factory.mktemp("project") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    for name in _requirements("pytest"):
        _copy_distribution(name, Path(site))
    absent = subprocess.run([str(python), "-c", "import three_ledger"], capture_output=True)
    assert absent.returncode != 0, "the project's Python must not have three-ledger"
    return python


def _requirements(name: str) -> set[str]:
    """NAME and every distribution it requires outside extras, recursively."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for requirement in metadata.requires(current) or []:
            wanted = Requirement(requirement)
            if wanted.marker is None or wanted.marker.evaluate({"extra": ""}):
                pending.append(wanted.name)
    return seen


def _copy_distribution(name: str, site: Path) -> None:
    distribution = metadata.distribution(name)
    for file in distribution.files or []:
        source = Path(str(distribution.locate_file(file)))
        if source.is_file() and ".." not in file.parts:
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One RUNNER_TEMP for the module: the gate's virtual environment is built once, then reused."""
    return tmp_path_factory.mktemp("runner-temp")


def workspace_for(tmp_path: Path, scenario: Scenario) -> tuple[Path, str]:
    """The checkout a workflow would have: the demo's example with the scenario's patch."""
    repo = tmp_path / "workspace"
    base = demo.build_repository(repo)
    for edit in scenario.edits:
        edit.apply(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", scenario.description)
    return repo, base


def scenario(name: str) -> Scenario:
    return next(item for item in SCENARIOS if item.name == name)


def run_action(
    tmp_path: Path, workspace: Path, event: Event, python: Path, temp: Path
) -> ActionRun:
    runner = Runner(ACTION_PATH, workspace, tmp_path / "runner", runner_environment(), temp)
    command = shlex.join([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "properties/test_orders.py"])  # fmt: skip
    run = runner.run({"command": command}, event)
    print(run.log())
    return run


def written_ledgers(workspace: Path) -> set[str]:
    return {
        path.name
        for path in (workspace / "three-ledger").iterdir()
        if LEDGER_NAMES.match(path.name)
    }


def test_a_reject_on_a_pull_request(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    workspace, base = workspace_for(tmp_path, scenario("property-broken"))
    payload = {"pull_request": {"number": 12, "base": {"sha": base, "ref": "main"}}}
    run = run_action(
        tmp_path,
        workspace,
        Event("pull_request", payload, "refs/pull/12/merge"),
        project_python,
        runner_temp,
    )
    assert [step.outcome for step in run.steps] == ["success", "failure", "success"]
    assert run.step("gate").exit_code == 1
    assert run.outputs == {
        "posture": "reject",
        "row": "7",
        "decision-path": "three-ledger/decision.json",
    }
    gate_log = run.step("gate").output
    assert f"gate: base {base[:12]} (from pull_request.base.sha in GITHUB_EVENT_PATH)" in gate_log
    assert "::error title=three-ledger reject (row 7)::property miss stands" in gate_log
    assert run.summary.startswith("### ❌ three-ledger gate: reject (row 7): property miss stands")
    assert "**What to do next:** Fix the code so that every property below holds." in run.summary
    artifact = run.artifacts / "three-ledger"
    ledgers = written_ledgers(workspace)
    assert ledgers == {"fixture-a.json", "fixture-b.json", "property-a.json", "property-b.json",
                       "dual-pin.json"}  # fmt: skip
    for name in [*ledgers, "decision.json", "summary.md", "verdict.xml", "property-a.log"]:
        assert (artifact / name).read_bytes() == (workspace / "three-ledger" / name).read_bytes()


def test_a_review_in_the_merge_queue(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    workspace, base = workspace_for(tmp_path, scenario("clean-two-pins"))
    # In a merge queue GITHUB_BASE_REF is empty: the base comes from the payload alone.
    payload = {"merge_group": {"base_sha": base, "head_sha": git(workspace, "rev-parse", "HEAD"),
                               "base_ref": "refs/heads/main"}}  # fmt: skip
    run = run_action(
        tmp_path,
        workspace,
        Event("merge_group", payload, "refs/heads/gh-readonly-queue/main/pr-12-0123abc"),
        project_python,
        runner_temp,
    )
    assert not run.failed
    assert run.outputs == {
        "posture": "review",
        "row": "9",
        "decision-path": "three-ledger/decision.json",
    }
    assert "(from merge_group.base_sha in GITHUB_EVENT_PATH)" in run.step("gate").output
    assert run.summary.startswith("### 🔎 three-ledger gate: review (row 9): a person reads the")
    row = "| ✅ | <code>orders.<wbr>total.<wbr>non\\_<wbr>negative</code> | pass, 2 tests |"
    assert row in run.summary
    artifact = run.artifacts / "three-ledger"
    assert written_ledgers(workspace) <= {path.name for path in artifact.iterdir()}
    assert len(written_ledgers(workspace)) == 5


def test_a_push_whose_default_branch_is_not_fetched_is_a_reject_saying_how_to_fetch_it(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    """A push to a branch is compared with the default branch, which must be in the clone."""
    workspace, _ = workspace_for(tmp_path, scenario("clean-one-pin"))
    payload = {"ref": "refs/heads/feature", "before": "0" * 40,
               "after": git(workspace, "rev-parse", "HEAD"),
               "repository": {"default_branch": "main"}}  # fmt: skip
    event = Event("push", payload, "refs/heads/feature")
    run = run_action(tmp_path, workspace, event, project_python, runner_temp)
    assert run.step("gate").outcome == "failure"
    assert run.outputs["posture"] == "reject"
    assert run.outputs["row"] == "0"
    assert "base revision 'refs/remotes/origin/main' does not resolve" in run.summary
    fetch = "fetch it first: git fetch origin +refs/heads/main:refs/remotes/origin/main"
    assert "::error title=three-ledger reject (row 0)::" in run.step("gate").output
    assert fetch in run.step("gate").output
    # The decision is an artifact even though nothing was scored.
    assert (run.artifacts / "three-ledger" / "decision.json").is_file()


# --- the action's metadata --------------------------------------------------------------------


def steps_by_id() -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in ACTION["runs"]["steps"] if "id" in step}


def test_every_output_references_a_step_that_writes_it() -> None:
    steps = steps_by_id()
    for name, spec in ACTION["outputs"].items():
        match = re.fullmatch(r"\$\{\{ steps\.([a-z-]+)\.outputs\.([a-z-]+) \}\}", spec["value"])
        assert match is not None, f"output {name} is not a step output"
        step_id, output = match.groups()
        script = steps[step_id]["run"]
        assert re.search(rf'echo "{re.escape(output)}=', script), f"{step_id} never writes {output}"
        assert '>> "$GITHUB_OUTPUT"' in script


def test_inputs_reach_scripts_only_through_env() -> None:
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            for value in step.get("env", {}).values():
                assert re.fullmatch(r"\$\{\{ [a-z._-]+ \}\}", str(value)), value


def test_the_artifact_upload_is_pinned_by_commit_and_runs_even_on_reject() -> None:
    uploads = [step for step in ACTION["runs"]["steps"] if "uses" in step]
    assert len(uploads) == 1
    assert re.fullmatch(r"actions/upload-artifact@[0-9a-f]{40}", uploads[0]["uses"])
    assert uploads[0]["if"] == "always()"
    assert uploads[0]["with"]["if-no-files-found"] == "error"
