"""The `three-ledger-check-pins` hook, run by the real pre-commit on a temporary repository.

`pre-commit try-repo` installs this checkout (with its uncommitted changes) into a hook
environment of its own, as a user's `pre-commit install` would from a tagged release.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EXAMPLE, git

ROOT = Path(__file__).resolve().parents[2]
HOOK = "three-ledger-check-pins"


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    return repo


def try_repo(
    project: Path, home: Path, *, all_files: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PRE_COMMIT_ALLOW_NO_CONFIG", None)
    which = ["--all-files"] if all_files else []
    return subprocess.run(
        [str(Path(sys.executable).parent / "pre-commit"), "try-repo", str(ROOT), HOOK,
         *which, "--verbose"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_hook_passes_on_good_pins(project: Path, pre_commit_home: Path) -> None:
    done = try_repo(project, pre_commit_home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "three-ledger check-pins" in done.stdout
    assert "Passed" in done.stdout
    assert "check-pins: 4 pin(s) in pins are valid" in done.stdout


def test_the_hook_fails_on_a_broken_pin(project: Path, pre_commit_home: Path) -> None:
    pin = project / "pins" / "properties.json"
    document = json.loads(pin.read_text(encoding="utf-8"))
    document["fixture_pins"].append("fixpin-nowhere")
    pin.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    git(project, "add", "-A")
    done = try_repo(project, pre_commit_home)
    assert done.returncode == 1
    assert "Failed" in done.stdout
    assert "'fixpin-nowhere' names no valid fixture pin in the folder" in done.stdout


def test_the_hook_runs_on_a_commit_that_only_deletes_a_pinned_fixture(
    project: Path, pre_commit_home: Path
) -> None:
    git(project, "commit", "-qm", "base")
    git(project, "rm", "-q", "fixtures/orders_min.json")
    done = try_repo(project, pre_commit_home, all_files=False)
    assert "Skipped" not in done.stdout
    assert done.returncode == 1, done.stdout
    assert "fixtures/orders_min.json" in done.stdout
