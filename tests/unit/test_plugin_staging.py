"""The staged plugin: a private copy under a random name, with the installed bytecode."""

from __future__ import annotations

import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

from three_ledger.run import staging as plugin_staging
from three_ledger.run.staging import PLUGIN_SIDE_MODULES, plugin_environment, stage_plugin

PACKAGE = Path(plugin_staging.__file__).resolve().parent.parent / "plugin"


def installed_copy(folder: Path, *, compiled: bool) -> Path:
    """The plugin-side modules in FOLDER, byte-compiled as an install would, or not."""
    folder.mkdir()
    for name in PLUGIN_SIDE_MODULES:
        shutil.copy2(PACKAGE / name, folder / name)
        if compiled:
            py_compile.compile(str(folder / name), doraise=True)
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
