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
from collections.abc import Mapping
from pathlib import Path

from three_ledger.frozen import frozen

# The name the `pytest11` entry point registers (SPEC 6), blocked in the gate's runs.
ENTRY_POINT_MODULE = "three_ledger.pytest_plugin"
# The folder that runs inside the test child: standard library and pytest only, and relative
# imports among its modules, so that the copy imports the copy (tests/unit/test_meta.py).
PLUGIN_FOLDER = Path(__file__).resolve().parent.parent / "plugin"
# Not copied: the package's own `__init__.py` (the copy gets one of its own), and the module
# the installed entry point loads, which names the installed package.
_NOT_STAGED = frozenset({"__init__.py", "entry_point.py"})


@frozen
class StagedPlugin:
    """A private copy of the plugin: the folder for PYTHONPATH and the module to load."""

    folder: Path
    module: str


def stage_plugin(private: Path, source: Path = PLUGIN_FOLDER) -> StagedPlugin:
    """Copy every module of the plugin folder under PRIVATE as a package with a random name.

    SOURCE is the folder they come from: this package's `plugin/` unless a test gives another.
    """
    package = f"_three_ledger_{os.urandom(8).hex()}"
    folder = private / "plugin"
    target = folder / package
    target.mkdir(parents=True)
    (target / "__init__.py").write_text('"""three-ledger\'s plugin, staged for one run."""\n')
    names = sorted(name for name in os.listdir(source) if name.endswith(".py"))
    for name in names:
        if name not in _NOT_STAGED:
            _copy_module(source, name, target, name)
    # `load` rather than `hooks`: pytest rewrites the module it is named, in every run.
    return StagedPlugin(folder, f"{package}.load")


def stage_measurement(private: Path, source: Path = PLUGIN_FOLDER) -> Path:
    """The folder to put first on the child's PYTHONPATH: the audit hook as `sitecustomize`.

    `site` imports it in every Python process of the run before any module of the project
    (`plugin/measure.py` says what it records).
    """
    folder = private / "measure"
    folder.mkdir(parents=True)
    _copy_module(source, "measure.py", folder, "sitecustomize.py")
    return folder


def _copy_module(source: Path, name: str, target: Path, as_name: str) -> None:
    """SOURCE/NAME copied to TARGET/AS_NAME with its modification time, and the bytecode
    installed with it, if any, beside the copy: the child need not compile.

    Python checks that bytecode against the copy's size and time as for any module, and names
    the copy in its code; a child of another Python version looks for a file of its own and
    compiles. Plain reads and writes, not `shutil.copy2`, whose permission and extended
    attribute calls were half the cost of staging every run (issue 25).
    """
    path = os.path.join(source, name)
    copy = os.path.join(target, as_name)
    with open(path, "rb") as module:
        status = os.fstat(module.fileno())
        text = module.read()
    with open(copy, "xb") as out:
        out.write(text)
    os.utime(copy, ns=(status.st_atime_ns, status.st_mtime_ns))
    try:
        with open(importlib.util.cache_from_source(path), "rb") as cached:
            code = cached.read()
    except FileNotFoundError:
        return
    copied = importlib.util.cache_from_source(copy)
    os.makedirs(os.path.dirname(copied), exist_ok=True)
    with open(copied, "wb") as out:
        out.write(code)


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
