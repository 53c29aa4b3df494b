"""The composite Action (`action.yml`), run step by step under a simulated GitHub runner.

The runner's files are real: the event payload at GITHUB_EVENT_PATH, GITHUB_OUTPUT per step,
GITHUB_STEP_SUMMARY. The install step really installs three-ledger's locked dependencies and
builds it from this checkout into a virtual environment of its own, and the project's tests
run under a Python that has pytest but not three-ledger, as in a project that never installed
it. The sharded modes run as the jobs of one workflow run would: each in a clone of its own,
sharing only the artifacts.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
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
from three_ledger.report.step_summary import text

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


def pytest_command(python: Path | str) -> str:
    return shlex.join([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                       "properties/test_orders.py"])  # fmt: skip


def run_action(
    tmp_path: Path,
    workspace: Path,
    event: Event,
    python: Path,
    temp: Path,
    inputs: Mapping[str, str] | None = None,
    artifacts: Path | None = None,
) -> ActionRun:
    runner = Runner(
        ACTION_PATH, workspace, tmp_path / "runner", runner_environment(), temp, artifacts
    )
    run = runner.run({"command": pytest_command(python), **(inputs or {})}, event)
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
    assert [step.outcome for step in run.steps] == [
        "success", "success", "skipped", "skipped", "failure", "success"
    ]  # fmt: skip
    assert run.step("gate").exit_code == 1
    assert run.outputs == {
        "posture": "reject",
        "row": "7",
        "decision-path": "three-ledger/decision.json",
    }
    gate_log = run.step("gate").output
    assert f"gate: base {base[:12]} (from pull_request.base.sha in GITHUB_EVENT_PATH)" in gate_log
    # The posture line, the annotation and the summary's headline name the failing test.
    failing = "properties/test_orders.py::test_total_matches_lines[orders_boundary.json]"
    reason = f"property miss stands: orders.total.matches_lines is fail (failing: {failing})"
    assert f"posture: reject (row 7): {reason}\n" in gate_log
    assert f"::error title=three-ledger reject (row 7)::{reason}\n" in gate_log
    headline = run.summary.splitlines()[0]
    assert headline.startswith("### ❌ three-ledger gate: reject (row 7): property miss stands")
    assert text(failing) in headline
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


def test_the_selftest_mode_catches_every_plant_and_keeps_the_ledgers(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    """The scheduled job of docs/ci.md: plants in a scratch clone, this checkout only read."""
    workspace, _ = workspace_for(tmp_path, scenario("clean-one-pin"))
    head = git(workspace, "rev-parse", "HEAD")
    payload = {"schedule": "17 3 * * *", "repository": {"default_branch": "main"}}
    event = Event("schedule", payload, "refs/heads/main")
    run = run_action(tmp_path, workspace, event, project_python, runner_temp, {"mode": "selftest"})
    assert not run.failed, run.log()
    kept = run.artifacts / "three-ledger-selftest"
    ledger = json.loads((kept / "selftest.json").read_text(encoding="utf-8"))
    outcomes = {plant["plant"]: plant["outcome"] for plant in ledger["plants"]}
    assert outcomes["broken-product"] == "caught"
    assert "escaped" not in outcomes.values(), outcomes
    assert (kept / "kept" / "runs").is_dir()
    # selftest only reads the checkout: the same HEAD, nothing tracked changed.
    assert git(workspace, "rev-parse", "HEAD") == head
    assert git(workspace, "status", "--porcelain", "--untracked-files=no") == ""


# --- the sharded flow: plan, shard K in a matrix, combine -------------------------------------


def clone(source: Path, target: Path) -> Path:
    """A job's checkout of the same commit: a clone, as actions/checkout makes one."""
    git(source.parent, "clone", "-q", str(source), str(target))
    return target


def pull_request(base: str) -> Event:
    payload = {"pull_request": {"number": 12, "base": {"sha": base, "ref": "main"}}}
    return Event("pull_request", payload, "refs/pull/12/merge")


def sharded_run(
    tmp_path: Path, name: str, python: Path, temp: Path, shards: list[int]
) -> tuple[ActionRun, Path]:
    """The matrix workflow of docs/ci.md: a plan job, a job per shard in SHARDS (of 2), a
    combine job; each with a clone of its own and one artifacts folder between them."""
    source, base = workspace_for(tmp_path, scenario(name))
    artifacts = tmp_path / "artifacts"
    event = pull_request(base)

    def job(job_name: str, inputs: dict[str, str]) -> ActionRun:
        workspace = clone(source, tmp_path / job_name)
        return run_action(tmp_path / f"runner-{job_name}", workspace, event, python, temp,
                          inputs, artifacts)  # fmt: skip

    plan = job("plan", {"mode": "plan", "shards": "2"})
    assert not plan.failed, plan.log()
    assert {path.name for path in (artifacts / "three-ledger-plan").iterdir()} == {
        "fixture.json", "shard-plan.json", "collect.log"
    }  # fmt: skip
    for index in shards:
        job(f"shard{index}", {"mode": "shard", "shard": str(index)})
        assert (artifacts / f"three-ledger-shard-{index}" / f"shard-{index}.json").is_file()
    return job("combine", {"mode": "combine"}), artifacts


def test_a_sharded_run_decides_in_the_combine_job(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    run, artifacts = sharded_run(tmp_path, "clean-two-pins", project_python, runner_temp, [0, 1])
    assert not run.failed
    # One fixture pin scored, no dual-pin ledger: a person reviews (row 8), every property scored.
    assert run.outputs == {
        "posture": "human_review",
        "row": "8",
        "decision-path": "three-ledger/decision.json",
    }
    assert run.summary.startswith("### 🟡 three-ledger merge: human_review (row 8)")
    decision = (artifacts / "three-ledger" / "property.json").read_text(encoding="utf-8")
    assert '"total": 2' in decision
    for prop_id in ("orders.<wbr>total.<wbr>non\\_<wbr>negative", "orders.<wbr>id.<wbr>stable"):
        assert re.search(rf"\| ✅ \| <code>{re.escape(prop_id)}</code> \| pass, \d tests? \|",
                         run.summary), prop_id  # fmt: skip
    assert (artifacts / "three-ledger" / "verdict.xml").is_file()


def test_a_lost_shard_is_a_reject(tmp_path: Path, project_python: Path, runner_temp: Path) -> None:
    run, _ = sharded_run(tmp_path, "clean-two-pins", project_python, runner_temp, [0])
    assert run.step("gate").outcome == "failure"
    assert "three-ledger: combine exited 2" in run.step("gate").output
    assert (run.outputs["posture"], run.outputs["row"]) == ("reject", "2")


def test_a_sharded_pin_edit_mixed_with_code_is_row_4(
    tmp_path: Path, project_python: Path, runner_temp: Path
) -> None:
    """combine's merge binds the pins and the base: the pin edit is named, not scored."""
    run, _ = sharded_run(tmp_path, "flake-pin-mutated", project_python, runner_temp, [0, 1])
    assert (run.outputs["posture"], run.outputs["row"]) == ("reject", "4")
    said = re.search(
        r"^merge: reject \(row 4\): pin mutation: pins added, changed or removed "
        r"against [0-9a-f]{40}: pins/flakes\.json$",
        run.step("gate").output,
        re.M,
    )
    assert said is not None, run.step("gate").output
    assert run.summary.startswith("### ❌ three-ledger merge: reject (row 4): pin mutation")


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"mode": "matrix"}, "the mode input is gate, plan, shard, combine or selftest"),
        ({"mode": "plan"}, "mode plan needs shards: how many slices"),
        ({"mode": "plan", "shards": "-1"}, "mode plan needs shards: how many slices"),
        ({"mode": "shard", "shard": "01"}, "mode shard needs shard: the slice's index"),
        ({"mode": "gate", "command": ""}, "the command input is empty"),
    ],
)
def test_a_mode_without_what_it_needs_is_a_usage_error(
    tmp_path: Path, inputs: dict[str, str], message: str
) -> None:
    runner = Runner(ACTION_PATH, tmp_path, tmp_path / "runner", runner_environment())
    run = runner.run({"command": "python -m pytest", **inputs}, pull_request("0" * 40))
    assert run.step("mode").exit_code == 64
    assert f"::error title=three-ledger::{message}" in run.step("mode").output
    # Nothing is installed, run or uploaded.
    assert [step.outcome for step in run.steps[1:]] == ["skipped"] * 5
    assert not run.artifacts.exists()


def test_the_tests_dependencies_come_from_a_hash_pinned_lockfile(
    tmp_path: Path, runner_temp: Path
) -> None:
    """With `requirements`, the Action builds the tests' environment itself, after the gate,
    and the test command's `python` is that environment's."""
    workspace, base = workspace_for(tmp_path, scenario("clean-two-pins"))
    lockfile = Path(__file__).parents[1] / "data" / "action" / "requirements-test.txt"
    shutil.copy(lockfile, workspace / "requirements-test.txt")
    git(workspace, "add", "requirements-test.txt")
    git(workspace, "commit", "-q", "-m", "the tests' lockfile")
    inputs = {"requirements": "requirements-test.txt", "command": pytest_command("python")}
    run = run_action(tmp_path, workspace, pull_request(base), Path("python"), runner_temp, inputs)
    assert not run.failed
    assert (run.outputs["posture"], run.outputs["row"]) == ("review", "9")
    project = Path(run.step("install").outputs["project"])
    assert project.parent == runner_temp / "three-ledger"
    # The tests ran under the lockfile's pytest and nothing else: no plugin of another Python.
    ledger = json.loads((workspace / "three-ledger" / "property-a.json").read_text())
    locked = re.search(r"^pytest==(\S+)", lockfile.read_text(encoding="utf-8"), re.M)
    assert locked is not None
    assert ledger["harness"]["pytest"] == locked.group(1)
    assert ledger["harness"]["plugins"] == []


def test_a_lockfile_without_hashes_is_refused_before_anything_runs(
    tmp_path: Path, runner_temp: Path
) -> None:
    workspace, base = workspace_for(tmp_path, scenario("clean-two-pins"))
    (workspace / "requirements-test.txt").write_text("pytest==9.2.0\n", encoding="utf-8")
    inputs = {"requirements": "requirements-test.txt"}
    run = run_action(tmp_path, workspace, pull_request(base), Path("python"), runner_temp, inputs)
    assert run.step("install").outcome == "failure"
    assert "Hashes are required in --require-hashes mode" in run.step("install").output
    assert run.step("gate").outcome == "skipped"


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


def test_every_action_used_is_pinned_by_commit_with_its_version_beside_it() -> None:
    lines = (ACTION_PATH / "action.yml").read_text(encoding="utf-8").splitlines()
    uses = [line.strip() for line in lines if line.strip().startswith("uses:")]
    assert len(uses) == 3
    for line in uses:
        assert re.fullmatch(r"uses: actions/[a-z-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), line


def test_the_artifact_upload_runs_even_on_reject() -> None:
    (upload,) = [
        step for step in ACTION["runs"]["steps"] if "upload-artifact" in step.get("uses", "")
    ]
    assert upload["if"] == "always() && steps.mode.outputs.artifact != ''"
    assert upload["with"]["if-no-files-found"] == "error"


def test_the_gate_is_installed_from_hash_pinned_wheels_and_its_own_checkout() -> None:
    script = steps_by_id()["install"]["run"]
    locked = '--require-hashes --only-binary :all: -r "$GITHUB_ACTION_PATH/requirements/action.txt"'
    assert locked in script
    assert '--no-deps --no-build-isolation --no-index "$GITHUB_ACTION_PATH"' in script
    # The gate's environment is made before the tests' one.
    assert script.index('"$venv/bin/python" -m pip') < script.index('"$project/bin/python"')
