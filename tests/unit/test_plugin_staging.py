"""The staged plugin: a private copy under a random name, with the installed bytecode staged in
the run's private bytecode folder, where the child's Python looks for it."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

from three_ledger.pins import FixturePin
from three_ledger.run.child import Child, child_environment
from three_ledger.run.staging import (
    PLUGIN_FOLDER,
    StagedPlugin,
    bytecode_under,
    plugin_environment,
    stage_plugin,
)
from three_ledger.vocabulary import Enforcement


def installed_copy(folder: Path, *, compiled: bool) -> Path:
    """The plugin folder's modules in FOLDER, byte-compiled as an install would, or not."""
    folder.mkdir()
    for module in PLUGIN_FOLDER.glob("*.py"):
        shutil.copy2(module, folder / module.name)
        if compiled:
            py_compile.compile(str(folder / module.name), doraise=True)
    return folder


def imported_from(staged: StagedPlugin, module: str) -> str:
    """How a child Python loads MODULE from the staged plugin, as `python -v` reports it, with
    the run's bytecode folder as its pycache prefix and writing off (what it reads is staged)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(staged.folder),
        "PYTHONPYCACHEPREFIX": str(staged.bytecode),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-v", "-c", f"import {module}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return "\n".join(line for line in done.stderr.splitlines() if "wire" in line)


def test_the_installed_bytecode_is_staged_under_the_prefix_and_used_by_the_child(
    tmp_path: Path,
) -> None:
    source = installed_copy(tmp_path / "installed", compiled=True)
    staged = stage_plugin(tmp_path / "private", source)
    package = staged.module.rpartition(".")[0]
    assert package.startswith("_three_ledger_")
    wire = bytecode_under(staged.bytecode, staged.folder / package / "wire.py")
    assert wire.is_file()
    loaded = imported_from(staged, f"{package}.wire")
    assert f"# code object from '{wire}'" in loaded
    # Nothing beside the copy: a child with a prefix never looks there.
    assert not (staged.folder / package / "__pycache__").exists()


def test_without_installed_bytecode_the_child_compiles_the_copy(tmp_path: Path) -> None:
    source = installed_copy(tmp_path / "installed", compiled=False)
    staged = stage_plugin(tmp_path / "private", source)
    package = staged.module.rpartition(".")[0]
    assert list(staged.bytecode.rglob("*.pyc")) == []
    loaded = imported_from(staged, f"{package}.wire")
    # Compiled from the copied source: python -v names the source, not a cached file.
    assert f"# code object from {staged.folder / package / 'wire.py'}\n" in loaded + "\n"
    assert str(staged.bytecode) not in loaded


def test_bytecode_under_is_where_a_child_with_that_prefix_looks(tmp_path: Path) -> None:
    prefix, source = tmp_path / "bytecode", tmp_path / "some where" / "module.py"
    done = subprocess.run(
        [sys.executable, "-X", f"pycache_prefix={prefix}", "-c",
         "import importlib.util, sys; print(importlib.util.cache_from_source(sys.argv[1]))",
         str(source)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert Path(done.stdout.strip()) == bytecode_under(prefix, source)


def test_the_child_keeps_its_bytecode_in_the_private_folder_and_writes_it(
    tmp_path: Path,
) -> None:
    staged = stage_plugin(tmp_path / "private")
    child = Child(
        command=["pytest"],
        root=tmp_path,
        fixture_pin=FixturePin(
            source=tmp_path / "pin.json", pin_id="fixpin-x", fixtures_dir="fixtures",
            digest=None, description=None, files=("fixtures/a.json",),
        ),
        enforcement=Enforcement.NONE,
        timeout_s=1.0,
        log_path=tmp_path / "log",
        plugin=staged,
        results_path=tmp_path / "results.jsonl",
    )  # fmt: skip
    inherited = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path)}
    env = child_environment(child, inherited)
    assert env["PYTHONPYCACHEPREFIX"] == str(staged.bytecode)
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert staged.bytecode.is_relative_to(tmp_path / "private")


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
