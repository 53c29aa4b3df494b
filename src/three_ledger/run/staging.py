"""How the test child gets the plugin: copied, by path, under a module name fresh for each run.

The project under test must not be able to stand in for the gate's plugin. A file in ROOT
named like the plugin, an installed distribution, or a `pytest11` entry point of the
patch's own could otherwise shadow it. So each run copies the plugin's modules into a private
folder as a package whose name is random, puts that folder on the child's PYTHONPATH, names
it in PYTEST_PLUGINS, and blocks an installed copy of the entry point. The child's
environment then needs pytest, not three-ledger.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# The plugin and everything it imports: standard library and pytest only, and relative
# imports among themselves, so that the copy imports the copy.
PLUGIN_SIDE_MODULES = (
    "hooks.py",
    "wire.py",
    "socket_guard.py",
    "tripwire.py",
    "harness.py",
    "collect.py",
    "shard.py",
    "reads.py",
)
# The name the `pytest11` entry point registers (SPEC 6), blocked in the gate's runs.
ENTRY_POINT_MODULE = "three_ledger.pytest_plugin"


@dataclass(frozen=True)
class StagedPlugin:
    """A private copy of the plugin: the folder for PYTHONPATH and the module to load."""

    folder: Path
    module: str


def stage_plugin(private: Path, source: Path | None = None) -> StagedPlugin:
    """Copy the plugin's modules under PRIVATE as a package with a random name.

    SOURCE is the folder they come from: this package's own unless a test gives another.
    """
    package = f"_three_ledger_{os.urandom(8).hex()}"
    folder = private / "plugin"
    target = folder / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text('"""three-ledger\'s plugin, staged for one run."""\n')
    source = source or Path(__file__).resolve().parent.parent / "plugin"
    for name in PLUGIN_SIDE_MODULES:
        # copy2 keeps the modification time, which the bytecode's header is checked against.
        shutil.copy2(source / name, target / name)
        _copy_bytecode(source / name, target / name)
    return StagedPlugin(folder, f"{package}.hooks")


def _copy_bytecode(source: Path, target: Path) -> None:
    """The bytecode installed with SOURCE, if any, beside TARGET: the child need not compile.

    Python checks it against the copy's size and time as for any module, and names the copy
    in its code; a child of another Python version looks for a file of its own and compiles.
    """
    cached = Path(importlib.util.cache_from_source(os.fspath(source)))
    if cached.is_file():
        copied = Path(importlib.util.cache_from_source(os.fspath(target)))
        copied.parent.mkdir(exist_ok=True)
        shutil.copyfile(cached, copied)


def plugin_environment(inherited: Mapping[str, str], staged: StagedPlugin) -> dict[str, str]:
    """INHERITED with the staged plugin loadable and loaded, and any installed copy blocked."""
    env = dict(inherited)
    paths = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    env["PYTHONPATH"] = os.pathsep.join([str(staged.folder), *paths])
    plugins = [
        name.strip()
        for name in env.get("PYTEST_PLUGINS", "").split(",")
        if name.strip() and name.strip() != ENTRY_POINT_MODULE
    ]
    env["PYTEST_PLUGINS"] = ",".join([*plugins, staged.module])
    addopts = env.get("PYTEST_ADDOPTS", "")
    env["PYTEST_ADDOPTS"] = f"{addopts} -p no:{ENTRY_POINT_MODULE}".strip()
    return env
