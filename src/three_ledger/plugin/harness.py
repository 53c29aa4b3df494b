"""The measured harness: what steered this pytest run, reported to the gate.

pytest's config file, every conftest and plugin, the `__main__` file, `pythonpath` and
`addopts`, the modules under ROOT that shadow the standard library, pytest or another installed
distribution, and the test-side modules the run loaded. Files under ROOT are reported as
relative paths; anything else by distribution name and version, never by an absolute path.
The gate compares the files under ROOT with the base revision (measured_oracles.py).
Standard library and pytest only (a plugin-side module; see run/staging.py).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from .wire import HARNESS_ENV, OUTSIDE_ROOT, ROOT_ENV, the_tests_own

_WORKER_KEY = "three_ledger_harness"
_PYTEST_NAMES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig"})
_PYTEST_SOURCE = f"pytest {pytest.__version__}"
# Our own package (the staged copy has a random name): never part of what is measured.
_OWN_PACKAGE = __name__.rpartition(".")[0]


class HarnessRecorder:
    """Measures in the controller and in each xdist worker; the controller writes the file."""

    def __init__(self, config: pytest.Config, root: Path, out: str | None) -> None:
        self.config = config
        self.root = root
        self.out = out
        self.shadowing: dict[str, str] = {}
        self.from_workers: list[dict[str, Any]] = []
        # Taken at configure time, before any module of the project's is imported.
        self.args = tuple(config.args)

    # Optional, as are all xdist hooks: pytest-xdist may be absent or disabled.
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = str(self.root)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        # "Loaded before collection": what could have steered pytest before any test ran.
        self.shadowing = _shadowing_modules(self.root)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        measured = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if isinstance(measured, dict):
            self.from_workers.append(measured)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        measured = self.measure()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_WORKER_KEY] = measured
            return
        for other in self.from_workers:
            measured = _united(measured, other)
        if self.out:
            temporary = f"{self.out}.tmp"
            with open(temporary, "w", encoding="utf-8") as stream:
                json.dump(measured, stream, sort_keys=True)
            os.replace(temporary, self.out)

    def measure(self) -> dict[str, Any]:
        _real_folder.cache_clear()  # the folders as they are now, not as at collection
        config = self.config
        inipath = config.inipath
        return {
            "pytest": pytest.__version__,
            "rootdir": self.shown(config.rootpath),
            "config_file": None if inipath is None else self.shown(inipath),
            "main": self.shown_main(sys.modules.get("__main__")),
            "conftests": sorted(self.conftests()),
            "plugins": self.plugins(),
            "pythonpath": sorted(self.shown(Path(p)) for p in config.getini("pythonpath")),
            "addopts": _addopts(config),
            "shadowing": dict(sorted(self.shadowing.items())),
            "test_side_modules": sorted(self.test_side_modules()),
        }

    def conftests(self) -> set[str]:
        found = set()
        for plugin in self.config.pluginmanager.get_plugins():
            file = getattr(plugin, "__file__", None)
            if file and os.path.basename(file) == "conftest.py":
                found.add(self.shown(Path(file)))
        return found

    def plugins(self) -> list[dict[str, str]]:
        distributions = self.config.pluginmanager.list_plugin_distinfo()
        by_plugin = {id(plugin): dist for plugin, dist in distributions}
        # Top-level packages of the entry-point distributions: the plugins such a package
        # registers itself (xdist's, say) are named by it without scanning every install.
        known = _entry_point_packages(dist for _, dist in distributions)
        listed = {}
        for name, plugin in self.config.pluginmanager.list_name_plugin():
            if plugin is None or _is_own(plugin):
                continue
            dist = by_plugin.get(id(plugin))
            module = _module_of(plugin)
            file = getattr(module, "__file__", None)
            # A distribution names a plugin only when its file lies outside ROOT: an
            # editable install of the project's own plugin is a file of the change.
            if dist is not None and not (file and _under(Path(_realpath(file)), self.root)):
                source = _source_of(dist)
            else:
                source = self.shown_module(module, known)
            if source.startswith(_PYTEST_SOURCE) or source == "<builtin>":
                continue  # pytest's own plugins: its version is recorded once, in "pytest"
            listed[_plugin_name(name, plugin)] = source
        return [{"name": name, "source": source} for name, source in sorted(listed.items())]

    def test_side_modules(self) -> set[str]:
        patterns = self.config.getini("python_files")
        starts = self.collection_starts()
        found = set()
        root = str(self.root)
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if not file or not _file_under(file, root, self.root):
                continue
            relative = self.shown(Path(file))
            if is_test_side(relative, patterns, starts):
                found.add(relative)
        return found

    def collection_starts(self) -> tuple[str, ...] | None:
        """Where this run collected from, relative to ROOT: the paths pytest was given, or
        `testpaths` in their place (`config.args`). None for anywhere: no path given, or one
        that names no file (a `--pyargs` module)."""
        invoked = self.config.invocation_params.dir
        starts = []
        for arg in self.args:
            path = invoked / arg.split("::", 1)[0]
            if not os.path.exists(path):
                return None
            starts.append(self.shown(path))
        return tuple(starts) or None

    def shown_main(self, main: Any) -> str:
        spec = getattr(main, "__spec__", None)
        file = getattr(main, "__file__", None)
        if file and _under(Path(_realpath(file)), self.root):
            return self.shown(Path(file))
        if spec is not None:  # `python -m NAME`
            return _distribution_of(spec.name)
        return f"script {os.path.basename(file)}" if file else "<builtin>"

    def shown(self, path: Path) -> str:
        """PATH relative to ROOT (POSIX), or a marker: never an absolute path."""
        resolved = Path(_realpath(os.fspath(path)))
        if _under(resolved, self.root):
            return resolved.relative_to(self.root).as_posix() or "."
        return OUTSIDE_ROOT

    def shown_module(self, module: Any, known: Mapping[str, str]) -> str:
        file = getattr(module, "__file__", None)
        if not file:
            return "<builtin>"
        if _under(Path(_realpath(file)), self.root):
            return self.shown(Path(file))
        return _distribution_of(getattr(module, "__name__", ""), known)


def _is_own(plugin: object) -> bool:
    module = _module_of(plugin)
    name = getattr(module, "__name__", "") or ""
    return bool(_OWN_PACKAGE) and (name == _OWN_PACKAGE or name.startswith(_OWN_PACKAGE + "."))


def _module_of(plugin: object) -> Any:
    if hasattr(plugin, "__file__") or type(plugin).__name__ == "module":
        return plugin
    return sys.modules.get(type(plugin).__module__)


def _plugin_name(name: str, plugin: object) -> str:
    # Unnamed plugin objects are registered under their id(): name them by class instead.
    if name.isdigit():
        return f"{type(plugin).__module__}.{type(plugin).__qualname__}"
    return name


@functools.cache
def _source_of(dist: Any) -> str:
    """`NAME VERSION` of a distribution, as `dist.metadata` gives them.

    The two headers are read from the top of the metadata file: `dist.metadata` would parse
    the whole file with `email` (its import and parse, some 8 ms a run for pytest's plugins).
    """
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and not key[:1].isspace():
            headers.setdefault(key.strip().lower(), value.strip())
    if "name" in headers and "version" in headers:
        return f"{headers['name']} {headers['version']}"
    return f"{dist.metadata['name']} {dist.version}"


def _entry_point_packages(distributions: Iterable[Any]) -> dict[str, str]:
    """The top-level package of each pytest11 entry point, with its distribution's source."""
    known: dict[str, str] = {}
    for dist in distributions:
        for top in entry_point_tops(dist):
            known.setdefault(top, _source_of(dist))
    return known


def entry_point_tops(dist: Any) -> list[str]:
    """The top-level package of each of a distribution's pytest11 entry points (the tripwire's
    `makers.py` asks the same of the distributions it judges)."""
    return [
        entry.value.split(":", 1)[0].split(".", 1)[0]
        for entry in dist.entry_points
        if entry.group == "pytest11"
    ]


def _distribution_of(module_name: str, known: Mapping[str, str] | None = None) -> str:
    top = module_name.split(".", 1)[0]
    if top in _PYTEST_NAMES:
        return _PYTEST_SOURCE if top in ("pytest", "_pytest") else top
    if top in sys.stdlib_module_names or top == "__main__":
        return "python"
    if known and top in known:
        return known[top]
    return _installed_distribution(top) or f"<outside ROOT: {top}>"


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    # Slow (every installed distribution's file list): asked only for a plugin module
    # outside ROOT that came neither from an entry point nor from pytest itself.
    from importlib import metadata

    return dict(metadata.packages_distributions())


def _installed_distribution(top: str) -> str | None:
    from importlib import metadata

    try:
        names = _packages_distributions().get(top, [])
    except Exception:  # noqa: BLE001 - broken metadata must not break the run's evidence
        return None
    if not names:
        return None
    try:
        return f"{names[0]} {metadata.version(names[0])}"
    except metadata.PackageNotFoundError:
        return names[0]


def _shadowing_modules(root: Path) -> dict[str, str]:
    """Modules under ROOT, already imported, whose top-level name belongs to someone else."""
    _real_folder.cache_clear()
    shadows: dict[str, str] = {}
    # Scanned only once a module lies under ROOT: in most runs none of those loaded before
    # collection is a top-level one, and the scan reads every site folder.
    installed: frozenset[str] | None = None
    folder = str(root)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or ("." in name and not name.endswith(".__init__")):
            continue
        real = _realpath(os.fspath(file))
        if not _file_under(real, folder, root):
            continue
        if installed is None:
            installed = _installed_top_levels(root)
        top = name.split(".", 1)[0]
        why = _shadow_reason(top, installed)
        if why is not None:
            shadows[Path(real).relative_to(root).as_posix()] = why
    return shadows


def _shadow_reason(top: str, installed: frozenset[str]) -> str | None:
    if top in sys.stdlib_module_names:
        return f"shadows the standard library module {top}"
    if top in _PYTEST_NAMES:
        return f"shadows {top}, part of pytest"
    if top in installed:
        return f"shadows the installed module {top}"
    return None


def _installed_top_levels(root: Path) -> frozenset[str]:
    """Top-level names installed in site folders outside ROOT (a venv inside ROOT included)."""
    names: set[str] = set()
    for entry in sys.path:
        folder = Path(os.path.realpath(entry or "."))
        if not folder.name.endswith("-packages") or not folder.is_dir():
            continue
        with os.scandir(folder) as children:
            for child in children:
                if child.is_dir() and not child.name.endswith((".dist-info", ".egg-info")):
                    names.add(child.name)
                elif os.path.splitext(child.name)[1] in (".py", ".so", ".pyd"):
                    names.add(child.name.split(".", 1)[0])
    return frozenset(names)


def is_test_side(relative: str, patterns: list[str], starts: tuple[str, ...] | None) -> bool:
    """A conftest; a module in a folder named like tests; or one named as `python_files`
    says, where the run collected from (STARTS; anywhere for None): outside, pytest never
    took it for a test module, and it is the product's (a `python_files = *.py` beside
    `testpaths`, say)."""
    if the_tests_own(relative):
        return True
    name = relative.rsplit("/", 1)[-1]
    if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
        return False
    return starts is None or any(_within(relative, start) for start in starts)


def _within(relative: str, start: str) -> bool:
    return start == "." or relative == start or relative.startswith(start + "/")


def _realpath(file: str) -> str:
    """`os.path.realpath(FILE)`, its folder resolved once for every module that lies in it."""
    folder, name = os.path.split(os.path.abspath(file))
    if not name or name in (".", "..") or os.path.islink(file):
        return os.path.realpath(file)
    return os.path.join(_real_folder(folder), name)


@functools.cache
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


def _file_under(file: str, root: str, root_path: Path) -> bool:
    """`_under(Path(FILE), ROOT)`, on the string where Path would not change it (most files:
    an absolute path with no empty or `.` segment), without making a Path of each."""
    plain = file.startswith("/") and "//" not in file and "/./" not in file
    if plain and not file.endswith(("/", "/.")) and root != "/":
        return file == root or file.startswith(root + "/")
    return _under(Path(file), root_path)


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _addopts(config: pytest.Config) -> list[str]:
    from_ini = [str(option) for option in config.getini("addopts")]
    from_env = os.environ.get("PYTEST_ADDOPTS", "").split()
    # The gate's own blocking of an installed copy of this plugin is not the project's.
    own = {"-p", "no:three_ledger.pytest_plugin"}
    return from_ini + [option for option in from_env if option not in own]


def _united(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The measurements of the controller and a worker, as one."""
    united = dict(first)
    for key in ("conftests", "test_side_modules"):
        united[key] = sorted(set(first[key]) | set(second[key]))
    plugins = {item["name"]: item["source"] for item in [*first["plugins"], *second["plugins"]]}
    united["plugins"] = [{"name": n, "source": s} for n, s in sorted(plugins.items())]
    united["shadowing"] = dict(sorted({**first["shadowing"], **second["shadowing"]}.items()))
    return united


def install(config: pytest.Config) -> None:
    """Register the recorder when the gate asked for a measurement."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        root = workerinput.get(_WORKER_KEY)
        out = None
    else:
        root = os.environ.pop(ROOT_ENV, None)
        out = os.environ.pop(HARNESS_ENV, None)
    if root:
        recorder = HarnessRecorder(config, Path(os.path.realpath(root)), out)
        config.pluginmanager.register(recorder, "three_ledger.plugin.harness.recorder")
