"""The staged plugin: a private copy under a random name, with the installed bytecode."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

from three_ledger.run.staging import PLUGIN_FOLDER, plugin_environment, stage_plugin


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
