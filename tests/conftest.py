"""Fixtures shared by every test layer; plain helpers live in helpers.py."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from helpers import (
    EXAMPLE,
    QUICK_EXAMPLES,
    THOROUGH_EXAMPLES,
    CliResult,
    RunCli,
    git,
    keeping_in_sight,
    namespace_problem,
    sandbox_problem,
)
from helpers.example_run import Run, build_clean_run
from three_ledger.cli import main

# `--hypothesis-profile=quick` in make test and test-fast, `thorough` in make test-e2e.
settings.register_profile("quick", max_examples=QUICK_EXAMPLES)
settings.register_profile("thorough", max_examples=THOROUGH_EXAMPLES)

# The tests run as from an activated environment, the interpreter's folder first on PATH: a
# command that names this interpreter inside a shell string (`sh -c '.../python -m pytest'`)
# then finds it in the sandbox too, where a checkout under /tmp is otherwise out of sight.
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run `three-ledger` in-process and return its exit code, stdout and stderr."""

    def run(*argv: str | Path) -> CliResult:
        code = main([str(arg) for arg in argv])
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The whole chain on the example, once per worker: every property passes on both pins.

    Read-only: a test that edits evidence works on `clean_run.copy_to(...)`.
    """
    return build_clean_run(tmp_path_factory.mktemp("clean"))


@pytest.fixture
def work(clean_run: Run, tmp_path: Path) -> Run:
    """A private copy of the clean run that a test may change."""
    return clean_run.copy_to(tmp_path / "work")


@pytest.fixture
def orders_repo(tmp_path: Path) -> Path:
    """A copy of examples/orders in a fresh git repository with one commit."""
    repo = tmp_path / "orders"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base: reviewed pins and fixtures")
    return repo


@pytest.fixture
def needs_network_namespace() -> None:
    """Skip where the gate's own probe finds that no network namespace can be made."""
    problem = namespace_problem()
    if problem is not None:
        pytest.skip(f"no network namespace here: {problem}")


@pytest.fixture
def needs_mount_layer() -> None:
    """Skip where the gate's own probe finds that the sandbox's mount layer cannot be made."""
    problem = sandbox_problem("mount")
    if problem is not None:
        pytest.skip(f"no mount layer here: {problem}")


@pytest.fixture
def needs_pid_layer() -> None:
    """Skip where the gate's own probe finds that the sandbox's PID layer cannot be made."""
    problem = sandbox_problem("pid")
    if problem is not None:
        pytest.skip(f"no PID layer here: {problem}")


@pytest.fixture(autouse=True)
def coverage_data_stays_writable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `make test`, the folder of coverage's data files writable in the sandbox.

    Every Python child is measured (`patch = ["subprocess"]`), the pytest children that load
    the plugin included; inside the gate's sandbox the tree is read-only, and their data
    would be lost. Only for runs the gate starts in this process, and only under coverage.
    """
    import dataclasses

    import coverage

    from three_ledger.run import mount_plan, sandbox

    measuring = coverage.Coverage.current()
    if measuring is None:
        return
    folder = str(Path(measuring.config.data_file).resolve().parent)
    planned = mount_plan.plan_mounts

    def plan_mounts(*args: Any, **kwargs: Any) -> mount_plan.MountPlan:
        plan = planned(*args, **kwargs)
        steps = [keeping_in_sight(step, folder) for step in plan.steps]
        writable: mount_plan.Step = ["writable", folder]
        return dataclasses.replace(plan, steps=(*steps[:-1], writable, steps[-1]))

    monkeypatch.setattr(sandbox, "plan_mounts", plan_mounts)


@pytest.fixture(autouse=True)
def child_runs_without_hypothesis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs started by a test skip Hypothesis's pytest plugin.

    Its import costs every child about 0.5 s, and no suite a child runs uses it. Set per
    test, so that it reaches the test's children but never this run's own xdist workers.
    """
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{addopts} -p no:hypothesispytest".strip())


@pytest.fixture(autouse=True)
def vet_cache_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every test's `vet` (in process or a child) keeps its result cache in the test's own
    folder: never the user's cache, and never another test's results."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(autouse=True, scope="session")
def vet_cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Before any module's fixture runs `vet`: its result cache is never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield
