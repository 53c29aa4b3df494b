"""The CI files, checked with the real linters from the test extra.

action.yml: zizmor (injection, pinning), check-jsonschema's vendored GitHub Actions schema,
shellcheck on each `run:` script, and actionlint on the documented workflow, which uses the
Action as a local action so that actionlint checks its inputs and outputs against action.yml.
templates/three-ledger.yml: the vendored GitLab CI schema (header and jobs) and shellcheck.
.pre-commit-hooks.yaml: pre-commit's own manifest check. Each linter is also shown a broken
copy, so that a linter that checks nothing cannot pass for one that approves.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import git

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ACTION = ROOT / "action.yml"
TEMPLATE = ROOT / "templates" / "three-ledger.yml"
CI_DOC = ROOT / "docs" / "ci.md"


def tool(name: str, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [str(BIN / name), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def yaml_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", markdown.read_text(encoding="utf-8"), re.S)


def documented_workflow() -> str:
    return next(block for block in yaml_blocks(CI_DOC) if block.startswith("name: three-ledger"))


def selftest_workflow() -> str:
    return next(
        block for block in yaml_blocks(CI_DOC) if block.startswith("name: three-ledger selftest")
    )


def action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return loaded


# --- zizmor -------------------------------------------------------------------------------


def test_zizmor_finds_nothing_in_the_action_or_the_documented_workflow(tmp_path: Path) -> None:
    workflow = tmp_path / ".github" / "workflows" / "gate.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(documented_workflow(), encoding="utf-8")
    done = tool("zizmor", "--offline", "--no-progress", ACTION, workflow)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr or "0 high" in done.stdout


def test_zizmor_and_actionlint_accept_the_scheduled_selftest(tmp_path: Path) -> None:
    workflow = tmp_path / ".github" / "workflows" / "selftest.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(selftest_workflow(), encoding="utf-8")
    done = tool("zizmor", "--offline", "--no-progress", workflow)
    assert done.returncode == 0, done.stdout + done.stderr
    git(tmp_path, "init", "-q")
    linted = tool("actionlint", "-verbose", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    schema = "vendor.github-workflows"
    assert tool("check-jsonschema", "--builtin-schema", schema, workflow).returncode == 0


def test_zizmor_flags_an_input_pasted_into_a_script(tmp_path: Path) -> None:
    broken = ACTION.read_text(encoding="utf-8").replace(
        '"$tl" gate --pins-dir "$TL_PINS_DIR"', '"$tl" gate --pins-dir "${{ inputs.pins-dir }}"'
    )
    assert broken != ACTION.read_text(encoding="utf-8")
    (tmp_path / "action.yml").write_text(broken, encoding="utf-8")
    done = tool("zizmor", "--offline", "--no-progress", tmp_path / "action.yml")
    assert done.returncode != 0
    assert "template-injection" in done.stdout


# --- check-jsonschema ---------------------------------------------------------------------


def test_the_action_matches_the_github_actions_schema(tmp_path: Path) -> None:
    assert (
        tool("check-jsonschema", "--builtin-schema", "vendor.github-actions", ACTION).returncode
        == 0
    )
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("using: composite", "using: compost"))
    assert (
        tool("check-jsonschema", "--builtin-schema", "vendor.github-actions", broken).returncode
        == 1
    )


def test_the_documented_workflow_matches_the_github_workflows_schema(tmp_path: Path) -> None:
    workflow = tmp_path / "gate.yml"
    workflow.write_text(documented_workflow(), encoding="utf-8")
    done = tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", workflow)
    assert done.returncode == 0, done.stdout


def split_documents(path: Path, folder: Path) -> list[Path]:
    """A component file is a `spec:` header and the jobs, two YAML documents."""
    documents = path.read_text(encoding="utf-8").split("\n---\n")
    paths = []
    for index, document in enumerate(documents):
        paths.append(folder / f"document{index}.yml")
        paths[-1].write_text(document, encoding="utf-8")
    return paths


def test_the_gitlab_component_matches_the_gitlab_ci_schema(tmp_path: Path) -> None:
    header, jobs = split_documents(TEMPLATE, tmp_path)
    assert "spec" in yaml.safe_load(header.read_text())
    assert "inputs" in yaml.safe_load(header.read_text())["spec"]
    done = tool("check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", header, jobs)
    assert done.returncode == 0, done.stdout
    jobs.write_text(jobs.read_text().replace("  allow_failure: false", "  allow_failure: sure"))
    assert tool("check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", jobs).returncode == 1


def test_the_component_reads_every_input_it_declares() -> None:
    header, _, jobs = TEMPLATE.read_text(encoding="utf-8").partition("\n---\n")
    declared = set(yaml.safe_load(header)["spec"]["inputs"])
    used = set(re.findall(r"\$\[\[ inputs\.([a-z-]+) \]\]", jobs))
    assert declared == used
    assert "$[[" not in yaml.safe_load(jobs)["three-ledger"]["script"][0]


# --- shellcheck -----------------------------------------------------------------------------


def scripts() -> list[tuple[str, str]]:
    found = [(step["name"], step["run"]) for step in action()["runs"]["steps"] if "run" in step]
    jobs = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8").partition("\n---\n")[2])
    found += [("GitLab component", line) for line in jobs["three-ledger"]["script"]]
    return found


@pytest.mark.parametrize(("name", "script"), scripts(), ids=[name for name, _ in scripts()])
def test_every_script_passes_shellcheck(tmp_path: Path, name: str, script: str) -> None:
    path = tmp_path / "step.sh"
    path.write_text("#!/usr/bin/env bash\n" + script, encoding="utf-8")
    done = tool("shellcheck", "--severity=style", path)
    assert done.returncode == 0, done.stdout


def test_shellcheck_flags_an_unquoted_variable(tmp_path: Path) -> None:
    path = tmp_path / "step.sh"
    path.write_text("#!/usr/bin/env bash\nrm -f $RUNNER_TEMP/x\n", encoding="utf-8")
    assert tool("shellcheck", path).returncode == 1


# --- actionlint -----------------------------------------------------------------------------


def workflow_repository(tmp_path: Path, workflow: str) -> Path:
    """A repository holding the Action and a workflow that uses it as `./`."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    git(repo, "init", "-q")
    shutil.copy(ACTION, repo / "action.yml")
    local = re.sub(r"uses: your-org/three-ledger@[0-9a-f]{40}.*", "uses: ./", workflow)
    assert "uses: ./" in local
    (repo / ".github" / "workflows" / "gate.yml").write_text(local, encoding="utf-8")
    return repo


def test_actionlint_accepts_the_documented_workflow_and_the_action(tmp_path: Path) -> None:
    repo = workflow_repository(tmp_path, documented_workflow())
    done = tool("actionlint", "-verbose", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Found total 0 errors" in done.stderr
    assert 'Rule "shellcheck" was disabled' not in done.stderr


def test_actionlint_checks_inputs_and_outputs_against_action_yml(tmp_path: Path) -> None:
    workflow = documented_workflow().replace("command: python", "comand: python")
    workflow += '      - run: echo "${{ steps.gate.outputs.verdict }}"\n'
    repo = workflow_repository(tmp_path, workflow)
    done = tool("actionlint", cwd=repo)
    assert done.returncode == 1
    assert 'input "comand" is not defined in action "three-ledger gate"' in done.stdout
    assert 'property "verdict" is not defined' in done.stdout


# --- pre-commit manifest ----------------------------------------------------------------------


def test_the_pre_commit_manifest_is_valid() -> None:
    manifest = ROOT / ".pre-commit-hooks.yaml"
    done = tool("pre-commit", "validate-manifest", manifest)
    assert done.returncode == 0, done.stdout + done.stderr
    (hook,) = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    assert hook["files"] == "^pins/"
    assert hook["pass_filenames"] is False
    assert hook["entry"] == "three-ledger check-pins"
