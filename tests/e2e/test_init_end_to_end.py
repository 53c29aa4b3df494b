"""`init` on a fresh repository with no pins, end to end: the drafts, moved into `pins/` and
committed on their own with no edit, let `gate --base <that commit>` on an unchanged HEAD
reach `human_review` (row 8: one fixture pin) with every property scored. A one-folder layout
(the example, without its pins) and the markdown-it-py-like one with two data folders.
The workflows it drafts pass the linters for their kind."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import CI_VARIABLES, EXAMPLE, RunCli, git
from helpers.markdown_project import PORT_FOLDER, SPEC_FOLDER, fresh_repository, write_project

pytestmark = pytest.mark.pytest_child

COMMAND = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
BIN = Path(sys.executable).parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (*CI_VARIABLES, "PYTEST_ADDOPTS"):
        monkeypatch.delenv(key, raising=False)


def orders_without_pins(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "pins"))
    (root / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    fresh_repository(root)
    return root


def markdown_project(root: Path) -> Path:
    write_project(root)
    fresh_repository(root)
    return root


def adopt(run_cli: RunCli, repo: Path, *extra: str) -> str:
    """init, then the workflow in a commit of its own, then the drafts moved into pins/ with no
    edit and committed on their own, as init's next steps say. The pins commit's id."""
    result = run_cli("init", "--root", repo, "--command", COMMAND, *extra)
    assert result.code == 0, result.out + result.err
    git(repo, "add", ".github")
    git(repo, "commit", "-q", "-m", "ci: the gate's workflow")
    (repo / "pins.draft").rename(repo / "pins")
    git(repo, "add", "pins")
    git(repo, "commit", "-q", "-m", "pins: the reviewed fixture, properties and flake pins")
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "pins/fixtures.json", "pins/flakes.json", "pins/properties.json",
    ]  # fmt: skip
    return git(repo, "rev-parse", "HEAD")


def gate(run_cli: RunCli, repo: Path, base: str, out: Path) -> tuple[str, dict[str, Any]]:
    result = run_cli(
        "gate", "--pins-dir", repo / "pins", "--root", repo, "--command", COMMAND,
        "--base", base, "--out-dir", out,
    )  # fmt: skip
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert result.code == 0, result.out + result.err
    return result.out, decision


def every_property_passes(repo: Path, out: Path) -> dict[str, str]:
    ledger = json.loads((out / "property-a.json").read_text(encoding="utf-8"))
    pinned = json.loads((repo / "pins/properties.json").read_text(encoding="utf-8"))
    assert set(ledger["status_by_id"]) == {prop["id"] for prop in pinned["properties"]}
    assert set(ledger["status_by_id"].values()) == {"pass"}
    assert not ledger["oracle_moved"]
    statuses: dict[str, str] = ledger["status_by_id"]
    return statuses


def test_a_one_folder_layout_reaches_human_review_with_every_property_scored(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = orders_without_pins(tmp_path / "orders")
    base = adopt(run_cli, repo)
    fixtures = json.loads((repo / "pins/fixtures.json").read_text(encoding="utf-8"))
    assert fixtures["fixtures_dirs"] == ["fixtures"]
    assert fixtures["files"] == ["fixtures/orders_boundary.json", "fixtures/orders_min.json"]
    properties = json.loads((repo / "pins/properties.json").read_text(encoding="utf-8"))
    assert properties["product_paths"] == ["orders.py"]
    assert [prop["test"] for prop in properties["properties"]] == ["properties/test_orders.py"]
    printed, decision = gate(run_cli, repo, base, tmp_path / "gate")
    assert (decision["posture"], decision["row"]) == ("human_review", 8), printed
    assert every_property_passes(repo, tmp_path / "gate") == {"properties.test_orders": "pass"}


def test_the_two_folder_layout_reaches_human_review_with_every_property_scored(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = markdown_project(tmp_path / "mdit")
    base = adopt(run_cli, repo)
    fixtures = json.loads((repo / "pins/fixtures.json").read_text(encoding="utf-8"))
    assert fixtures["fixtures_dirs"] == [SPEC_FOLDER, PORT_FOLDER]
    printed, decision = gate(run_cli, repo, base, tmp_path / "gate")
    assert (decision["posture"], decision["row"]) == ("human_review", 8), printed
    assert every_property_passes(repo, tmp_path / "gate") == {
        "test_api.test_render": "pass",
        "test_port.test_fixtures": "pass",
        "test_spec": "pass",
    }
    ledger = json.loads((tmp_path / "gate/property-a.json").read_text(encoding="utf-8"))
    assert ledger["tests_matched"] == {
        "test_api.test_render": 1,
        "test_port.test_fixtures": 2,
        "test_spec": 4,
    }
    assert ledger["oracle_model"] == "closed"


# --- the workflows it drafts, linted -------------------------------------------------------------


def tool(name: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not (BIN / name).exists():
        pytest.skip(f"{name} is not installed in {BIN}")
    # actionlint runs shellcheck from PATH: the one the test extra installs beside it.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [str(BIN / name), *map(str, args)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The GitHub and the GitLab workflow init drafts for the markdown project."""
    from three_ledger.cli import main

    found = {}
    for ci in ("github", "gitlab"):
        repo = markdown_project(tmp_path_factory.mktemp(ci) / "mdit")
        package = f"git+https://git.example.org/tools/three-ledger@{COMMIT}"
        code = main(["init", "--root", str(repo), "--command", COMMAND, "--ci", ci,
                     "--package", package])  # fmt: skip
        assert code == 0
        found[ci] = repo
    return found


def test_the_github_workflow_passes_actionlint_zizmor_and_the_schema(
    drafted: dict[str, Path],
) -> None:
    repo = drafted["github"]
    workflow = repo / ".github/workflows/three-ledger.yml"
    done = tool("actionlint", "-verbose", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'Rule "shellcheck" was disabled' not in done.stderr
    done = tool("zizmor", "--offline", "--no-progress", workflow, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    done = tool(
        "check-jsonschema", "--builtin-schema", "vendor.github-workflows", workflow, cwd=repo
    )
    assert done.returncode == 0, done.stdout


def test_the_gitlab_job_passes_the_schema_and_shellcheck(
    drafted: dict[str, Path], tmp_path: Path
) -> None:
    job = drafted["gitlab"] / ".gitlab/three-ledger.yml"
    done = tool("check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", job, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    script = yaml.safe_load(job.read_text(encoding="utf-8"))["three-ledger"]["script"][0]
    (tmp_path / "job.sh").write_text("#!/usr/bin/env bash\n" + script, encoding="utf-8")
    done = tool("shellcheck", "--severity=style", tmp_path / "job.sh", cwd=tmp_path)
    assert done.returncode == 0, done.stdout


def broken(text: str, old: str, new: str, folder: Path) -> Path:
    """The workflow with OLD replaced by NEW, in a git repository of its own."""
    assert old in text
    workflow = folder / ".github/workflows/three-ledger.yml"
    workflow.parent.mkdir(parents=True)
    git(folder, "init", "-q")
    workflow.write_text(text.replace(old, new), encoding="utf-8")
    return workflow


def test_each_linter_sees_a_broken_workflow(drafted: dict[str, Path], tmp_path: Path) -> None:
    """One that checks nothing cannot pass for one that approves."""
    text = (drafted["github"] / ".github/workflows/three-ledger.yml").read_text(encoding="utf-8")
    broken(text, '"$RUNNER_TEMP/three-ledger"', "$RUNNER_TEMP/three-ledger", tmp_path / "a")
    done = tool("actionlint", cwd=tmp_path / "a")
    assert done.returncode == 1
    assert "shellcheck reported issue" in done.stdout
    injected = broken(text, '"$TL_PINS_DIR"', '"${{ github.head_ref }}"', tmp_path / "b")
    done = tool("zizmor", "--offline", "--no-progress", injected, cwd=tmp_path / "b")
    assert done.returncode != 0
    assert "template-injection" in done.stdout
    invalid = broken(text, "timeout-minutes: 60", "timeout-minutes: soon", tmp_path / "c")
    done = tool(
        "check-jsonschema", "--builtin-schema", "vendor.github-workflows", invalid, cwd=tmp_path
    )
    assert done.returncode == 1
