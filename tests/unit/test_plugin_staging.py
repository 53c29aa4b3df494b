"""The staged plugin: a private copy under a random name, with the installed bytecode."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from three_ledger.pins import FixturePin
from three_ledger.plugin.wire import PYTEST_SEEN_ENV, RESULTS_ENV
from three_ledger.run.child import Child, child_environment
from three_ledger.run.staging import PLUGIN_FOLDER, plugin_environment, stage_plugin
from three_ledger.vocabulary import Enforcement


def installed_copy(folder: Path, *, compiled: bool) -> Path:
    """The plugin folder's modules in FOLDER, byte-compiled as an install would, or not."""
    folder.mkdir()
    for module in PLUGIN_FOLDER.glob("*.py"):
        shutil.copy2(module, folder / module.name)
        if compiled:
            py_compile.compile(str(folder / module.name), doraise=True)
    return folder


def imported_from(staged_folder: Path, module: str) -> str:
    """How a child Python loads MODULE from STAGED_FOLDER, as `python -v` reports it."""
    env = {**os.environ, "PYTHONPATH": str(staged_folder), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-v", "-c", f"import {module}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return "\n".join(line for line in done.stderr.splitlines() if "wire" in line)


def test_the_installed_bytecode_is_staged_and_used_by_the_child(tmp_path: Path) -> None:
    source = installed_copy(tmp_path / "installed", compiled=True)
    staged = stage_plugin(tmp_path / "private", source)
    package = staged.module.rpartition(".")[0]
    assert package.startswith("_three_ledger_")
    loaded = imported_from(staged.folder, f"{package}.wire")
    assert f"code object from '{staged.folder / package / '__pycache__'}" in loaded


def test_without_installed_bytecode_the_child_compiles_the_copy(tmp_path: Path) -> None:
    source = installed_copy(tmp_path / "installed", compiled=False)
    staged = stage_plugin(tmp_path / "private", source)
    package = staged.module.rpartition(".")[0]
    assert not (staged.folder / package / "__pycache__").exists()
    loaded = imported_from(staged.folder, f"{package}.wire")
    # Compiled from the copied source: python -v names the source, not a cached file.
    assert f"# code object from {staged.folder / package / 'wire.py'}\n" in loaded + "\n"
    assert "__pycache__" not in loaded


def test_the_environment_loads_the_copy_and_blocks_an_installed_one(tmp_path: Path) -> None:
    staged = stage_plugin(tmp_path / "private")
    env = plugin_environment({"PYTHONPATH": "/elsewhere", "PYTEST_ADDOPTS": "-q"}, staged)
    assert env["PYTHONPATH"] == f"{staged.folder}{os.pathsep}/elsewhere"
    assert env["PYTEST_PLUGINS"] == staged.module
    assert env["PYTEST_ADDOPTS"] == "-q -p no:three_ledger.pytest_plugin"


def test_every_module_of_the_plugin_folder_is_staged_and_nothing_else(tmp_path: Path) -> None:
    staged = stage_plugin(tmp_path / "private")
    package = staged.folder / staged.module.rpartition(".")[0]
    copied = {path.name for path in package.glob("*.py")}
    modules = {path.name for path in PLUGIN_FOLDER.glob("*.py")}
    assert copied == modules - {"entry_point.py"}
    assert "hooks.py" in copied
    assert (package / "__init__.py").read_text() != (PLUGIN_FOLDER / "__init__.py").read_text()


def test_a_module_added_to_the_plugin_folder_is_staged_without_a_list(tmp_path: Path) -> None:
    source = installed_copy(tmp_path / "installed", compiled=False)
    (source / "added.py").write_text("VALUE = 1\n")
    staged = stage_plugin(tmp_path / "private", source)
    package = staged.module.rpartition(".")[0]
    assert (staged.folder / package / "added.py").read_text() == "VALUE = 1\n"


def test_under_junit_xml_the_staged_hooks_record_only_that_pytest_loaded_them(
    tmp_path: Path,
) -> None:
    staged = stage_plugin(tmp_path / "private")
    seen = tmp_path / "seen.jsonl"
    env = {**os.environ, "PYTHONPATH": str(staged.folder), PYTEST_SEEN_ENV: str(seen)}
    env.pop(RESULTS_ENV, None)
    command = [sys.executable, "-c", f"import {staged.module}", "--junit-xml=r.xml"]
    subprocess.run(command, env=env, check=True)
    subprocess.run(command, env=env, check=True)
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [line["argv"] for line in lines] == [["--junit-xml=r.xml"]] * 2
    assert lines[0]["pytest"] == pytest.__version__
    del env[PYTEST_SEEN_ENV]
    seen.unlink()
    subprocess.run(command, env=env, check=True)
    assert not seen.exists()


def test_a_junit_child_gets_no_results_file_and_others_no_presence_file(tmp_path: Path) -> None:
    pin = FixturePin.from_json(
        {"pin_id": "fixpin-a", "algorithm": "sha256", "files": ["fixtures/a.json"]},
        tmp_path / "pins/fixtures.json",
    )
    child = Child(
        command=["npm", "test"],
        root=tmp_path,
        fixture_pin=pin,
        enforcement=Enforcement.NONE,
        timeout_s=1,
        log_path=tmp_path / "log",
        plugin=stage_plugin(tmp_path / "private"),
        results_path=None,
        extra_env={PYTEST_SEEN_ENV: "/private/seen"},
    )
    inherited = {RESULTS_ENV: "/elsewhere/results", PYTEST_SEEN_ENV: "/elsewhere/seen"}
    junit = child_environment(child, tmp_path / "home", inherited)
    assert RESULTS_ENV not in junit
    assert junit[PYTEST_SEEN_ENV] == "/private/seen"
    plugin = child_environment(
        replace(child, results_path=tmp_path / "r", extra_env={}), tmp_path / "home", inherited
    )
    assert plugin[RESULTS_ENV] == str(tmp_path / "r")
    assert PYTEST_SEEN_ENV not in plugin


TRIPWIRE_MODULES = ("tripwire", "machinery", "makers", "sentinels")


@pytest.mark.parametrize(
    ("asked", "loaded"),
    [
        ({}, False),  # a collection (`plan`, `shard-plan`), or pytest outside the gate
        ({"THREE_LEDGER_TRIPWIRE": "record.jsonl"}, True),  # a run the gate scores
        ({"PYTEST_XDIST_WORKER": "gw0"}, True),  # a worker learns at configure time
    ],
)
def test_the_tripwire_is_imported_only_where_it_may_be_asked_for(
    tmp_path: Path, asked: dict[str, str], loaded: bool
) -> None:
    """Its import arms the audit before any conftest, so it happens with the hooks' import;
    where nothing can ask for it, its modules (most of the plugin's import) are not loaded."""
    staged = stage_plugin(tmp_path / "private")
    package = staged.module.rpartition(".")[0]
    names = ", ".join(repr(f"{package}.{name}") for name in TRIPWIRE_MODULES)
    code = f"import sys, {staged.module}\nprint([name in sys.modules for name in ({names})])"
    unasked = {
        k: v
        for k, v in os.environ.items()
        if k not in ("THREE_LEDGER_TRIPWIRE", "PYTEST_XDIST_WORKER")
    }
    env = {**unasked, **asked, "PYTHONPATH": str(staged.folder)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == repr([loaded] * len(TRIPWIRE_MODULES))


def test_the_module_pytest_is_named_gives_every_module_hook_of_hooks_py() -> None:
    from three_ledger.plugin import hooks, load

    defined = {
        name
        for name, value in vars(hooks).items()
        if name.startswith("pytest_") and callable(value) and value.__module__ == hooks.__name__
    }
    given = {name for name in vars(load) if name.startswith("pytest_")}
    assert defined == given
    assert all(getattr(load, name) is getattr(hooks, name) for name in given)


LOADERS = """
import sys


def test_loaders(request):
    package = next(n for n in sys.modules if n.startswith("_three_ledger_") and "." not in n)
    kinds = {name: type(sys.modules[f"{package}.{name}"].__loader__).__name__
             for name in ("load", "hooks")}
    # Only the module PYTEST_PLUGINS names is rewritten; hooks.py loads from its bytecode.
    assert kinds == {"load": "AssertionRewritingHook", "hooks": "SourceFileLoader"}
    assert request.config.pluginmanager.get_plugin(f"{package}.load") is not None
"""


@pytest.mark.pytest_child
def test_in_a_staged_run_pytest_rewrites_the_small_module_alone(tmp_path: Path) -> None:
    staged = stage_plugin(tmp_path / "private")
    assert staged.module.endswith(".load")
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_loaders.py").write_text(LOADERS)
    env = plugin_environment({**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, staged)
    env.pop(RESULTS_ENV, None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_loaders.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
