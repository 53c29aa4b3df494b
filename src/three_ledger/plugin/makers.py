"""Who changed pytest's machinery, and whether that code may: the trust rule of the machinery
audit (`machinery.py`).

A change is made by code in some file. These may change pytest's machinery: the gate's own
plugin; pytest and pluggy themselves (pytest's `legacypath` plugin adds properties to its
classes at configure time); the installed pytest plugins, that is the distributions behind the
run's `pytest11` entry points and the modules outside the project registered as plugins
(pytest-subtests patches `TestCaseFunction`, xdist registers plugins of its own); the run's
launcher (`__main__`, an xdist worker's bootstrap); and the project's modules that pytest
itself registered as plugins (conftests, `-p` and `pytest_plugins` modules), which the gate
compares with the base as harness files. Nothing else may: not the product, not a test module,
not a helper they import, and not the standard library's generic tools standing in for code (a
`functools.partial`, a `unittest.mock` object). A file is the project's when it lies under ROOT
outside the interpreter's own environment (a `.venv` in the checkout is installation).

Standard library and pytest only (a plugin-side module; see run/staging.py).
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import types
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from .frozen import frozen
from .harness import entry_point_tops

# One frame of a stack, kept after the frame is gone: module name, file, line.
FrameInfo = tuple[str, str, int]

_OWN_FOLDER = os.path.dirname(os.path.abspath(__file__))
_SITE_FOLDERS = frozenset({"site-packages", "dist-packages"})
# The code that starts a run where pytest's entry point is not on the stack: a script that
# runs as `__main__`, an xdist worker's bootstrap.
_LAUNCHERS = frozenset({"__main__", "__channelexec__"})


@frozen
class Maker:
    """The code that made a change: its module, its file, and that file as shown (relative to
    ROOT where it lies under it)."""

    module: str
    file: str
    shown: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.shown if self.line is None else f"{self.shown}:{self.line}"
        return f"{self.module} ({where})"


def _entry_points() -> frozenset[types.CodeType]:
    """The code of pytest's entry points: `main` and `console_main`, and from pytest 9 the
    `_main` and `_console_main` they call."""
    config = sys.modules[pytest.main.__module__]  # `_pytest.config`, loaded with pytest
    names = ("main", "console_main", "_main", "_console_main")
    functions = (getattr(config, name, None) for name in names)
    return frozenset(f.__code__ for f in functions if isinstance(f, types.FunctionType))


# Taken at import, before any of the project's code runs: what calls pytest's entry point is
# the run's command (`python -m pytest`, `coverage run -m pytest`, a script the pin names).
_ENTRY_POINTS = _entry_points()


def stack(frame: types.FrameType | None, limit: int = 64) -> tuple[FrameInfo, ...]:
    """FRAME and its callers, innermost first, as plain values, up to pytest's entry point:
    the command beyond it made nothing that pytest, between the two, did not make itself."""
    found: list[FrameInfo] = []
    while frame is not None and len(found) < limit:
        module = frame.f_globals.get("__name__")
        name = module if isinstance(module, str) else "?"
        found.append((name, frame.f_code.co_filename, frame.f_lineno))
        if frame.f_code in _ENTRY_POINTS:
            break
        frame = frame.f_back
    return tuple(found)


@functools.cache
def _folder_of(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    return os.path.dirname(os.path.realpath(file)) if isinstance(file, str) else None


def _machinery_folders() -> tuple[str, ...]:
    """The folders of pytest, _pytest and pluggy."""
    folders = (_folder_of(name) for name in ("pytest", "_pytest", "pluggy"))
    return tuple(folder + os.sep for folder in folders if folder)


def _standard_library() -> tuple[str, ...]:
    """The folder of the standard library's Python code: the one `os` was loaded from, which
    is `sysconfig`'s `stdlib` path, without importing `sysconfig` and its build data (some
    2 ms of every run). Its compiled modules (`platstdlib`, `lib-dynload`) run no frames of
    their own, and a value of theirs is judged by the Python module that exports it."""
    return (os.path.dirname(os.path.realpath(os.__file__)) + os.sep,)


def _environment() -> tuple[str, ...]:
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    return tuple(os.path.realpath(prefix) + os.sep for prefix in prefixes)


class Trust:
    """Judges makers for one run: which files are the project's, which plugins are installed."""

    def __init__(self, config: pytest.Config, roots: Iterable[str]) -> None:
        self.config = config
        self.roots = tuple(dict.fromkeys(os.path.realpath(root) + os.sep for root in roots))
        self.machinery = _machinery_folders()
        self.stdlib = _standard_library()
        self.environment = _environment()
        self._reals: dict[str, str] = {}
        self._distributions_seen = -1
        self._entry_point_tops: frozenset[str] = frozenset()
        self._file_tops: frozenset[str] | None = None

    # --- files -----------------------------------------------------------------------------

    def _real(self, path: str) -> str:
        real = self._reals.get(path)
        if real is None:
            real = self._reals[path] = os.path.realpath(path)
        return real

    def is_project(self, path: str) -> bool:
        real = self._real(path)
        if not real.startswith(self.roots) or real.startswith(self.environment):
            return False
        return _SITE_FOLDERS.isdisjoint(real.split(os.sep))

    def is_machinery(self, path: str) -> bool:
        """Whether PATH is pytest's, pluggy's or this plugin's own code."""
        real = self._real(path)
        return real.startswith((*self.machinery, _OWN_FOLDER + os.sep))

    def _passes_through(self, module: str, path: str) -> bool:
        """Frames the walk looks past: generated code, the standard library, pytest, pluggy
        and this plugin (which make changes only on someone's behalf)."""
        if path.startswith("<"):  # `<string>`, `<frozen ...>`: code made from text
            return True
        real = self._real(path)
        if real.startswith((*self.machinery, _OWN_FOLDER + os.sep)):
            return True
        return real.startswith(self.stdlib) and _SITE_FOLDERS.isdisjoint(real.split(os.sep))

    def shown(self, path: str) -> str:
        real = self._real(path)
        for root in self.roots:
            if real.startswith(root):
                return real[len(root) :]
        return path

    # --- makers ----------------------------------------------------------------------------

    def frame_maker(self, frames: tuple[FrameInfo, ...]) -> Maker | None:
        """The innermost frame of FRAMES that is not pytest, pluggy, this plugin, the
        standard library or generated code; None when there is none (pytest did it itself)."""
        for module, path, line in frames:
            if not self._passes_through(module, path):
                return Maker(module, path, self.shown(path), line)
        return None

    def value_maker(self, value: object) -> Maker:
        """Where VALUE, a callable or a module put in place of another, was defined: of what
        using it runs (`runs`), the first part that may not change the machinery, if any."""
        if isinstance(value, types.ModuleType):  # its own file, not the module type's
            file = getattr(value, "__file__", None) or f"<{value.__name__}>"
            return Maker(value.__name__, file, self.shown(file))
        makers = [self._defined(part) for part in runs(value)]
        return next((m for m in makers if not self.may_change(m, value=True)), makers[0])

    def _defined(self, value: object) -> Maker:
        """Where VALUE was defined: a function by its code, anything else by its class."""
        if type(value) is types.FunctionType:
            code = value.__code__
            file = code.co_filename
            return Maker(str(value.__module__), file, self.shown(file), code.co_firstlineno)
        kind = value if isinstance(value, type) else type(value)
        module = getattr(kind, "__module__", None) or "?"
        file = getattr(sys.modules.get(module), "__file__", None) or f"<{module}>"
        return Maker(module, file, self.shown(file))

    def may_change(self, maker: Maker | None, *, value: bool = False) -> bool:
        """Whether MAKER may change pytest's machinery. For a VALUE (a callable put in place),
        pytest's and pluggy's own code may; for a frame, they were looked past already."""
        if maker is None:
            return True
        if maker.module in _LAUNCHERS:
            return self._launcher(maker)
        path = maker.file
        if path.startswith("<"):
            return False
        real = self._real(path)
        if real.startswith(_OWN_FOLDER + os.sep):
            return True
        if value and real.startswith(self.machinery):
            return True
        if self.is_project(path):
            return real in self._project_plugin_files()
        if value and real.startswith(self.stdlib) and _SITE_FOLDERS.isdisjoint(real.split(os.sep)):
            return False  # a partial, a mock: the standard library stands in for someone's code
        return self._is_installed_plugin(maker.module.split(".", 1)[0])

    def _launcher(self, maker: Maker) -> bool:
        path = maker.file
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        if maker.module == "__main__" and isinstance(main, str):
            return self._real(path) == self._real(main)
        # xdist's worker bootstrap runs as `__channelexec__`, sent by execnet as text.
        return maker.module == "__channelexec__" and not self.is_project(path)

    def _registered_modules(self) -> Iterator[types.ModuleType]:
        for plugin in self.config.pluginmanager.get_plugins():
            if isinstance(plugin, types.ModuleType):
                yield plugin

    def _project_plugin_files(self) -> frozenset[str]:
        """Files under ROOT that pytest registered as plugins: conftests, -p modules."""
        files = (getattr(module, "__file__", None) for module in self._registered_modules())
        return frozenset(
            self._real(file) for file in files if isinstance(file, str) and self.is_project(file)
        )

    def _is_installed_plugin(self, top: str) -> bool:
        """Whether TOP is a top-level package of an installed pytest plugin (never the
        project's, nor pytest or pluggy): a module an entry point names, one registered as a
        plugin from outside the project, or one its distribution's files install. The files
        are read only for a TOP the first two do not name: a distribution lists them in its
        RECORD, which costs more to parse than the rest of the run's judging together."""
        if top in _MACHINERY_TOPS:
            return False
        distributions = self.config.pluginmanager.list_plugin_distinfo()
        if len(distributions) != self._distributions_seen:
            # Entry points load before the plugin; reading their files once is enough.
            self._distributions_seen = len(distributions)
            self._entry_point_tops = frozenset().union(
                *(entry_point_tops(d) for _, d in distributions)
            )
            self._file_tops = None
        if top in self._entry_point_tops or top in self._registered_tops():
            return True
        if self._file_tops is None:
            self._file_tops = frozenset().union(*(_file_top_levels(d) for _, d in distributions))
        return top in self._file_tops or top in _installed_entry_point_tops()

    def _registered_tops(self) -> set[str]:
        tops = set()
        for module in self._registered_modules():
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and not self.is_project(file):
                tops.add(module.__name__.split(".", 1)[0])
        return tops


_MACHINERY_TOPS = frozenset({"pytest", "_pytest", "pluggy"})


def _file_top_levels(dist: Any) -> set[str]:
    """The top-level modules a distribution's files install."""
    tops = set()
    for file in dist.files or ():
        first = file.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".data", ".pth")) or first == "..":
            continue
        tops.add(first.removesuffix(".py"))
    return tops


# The wrappers whose own code only passes a call on (`runs`), by exact type: a subclass's may
# do anything.
WRAPPERS = frozenset({types.MethodType, staticmethod, classmethod, property})
# Deeper than any honest wrapping (a staticmethod can be made to wrap itself).
_DEPTH = 8


def runs(value: object, depth: int = _DEPTH) -> tuple[object, ...]:
    """What using VALUE runs, known by its type alone: the function of a method, classmethod
    or staticmethod, each accessor of a property; VALUE itself otherwise. An object that only
    carries a `__func__` or a `__code__` (pytest's own, say) runs its class's code."""
    kind = type(value)
    if kind not in WRAPPERS or not depth:
        return (value,)
    if kind is property:
        accessors = [value.fget, value.fset, value.fdel]  # type: ignore[attr-defined]
        parts = [runs(part, depth - 1) for part in accessors if part is not None]
        return tuple(itertools.chain.from_iterable(parts)) or (value,)
    return runs(value.__func__, depth - 1)  # type: ignore[attr-defined]


@functools.cache
def _installed_entry_point_tops() -> frozenset[str]:
    """The top-level package of every `pytest11` entry point installed in this environment,
    loaded by this session or not: pytest run again in-process (pytester) loads the plugins
    this session blocked (`-p no:NAME`), and their imports may patch pytest as they do at
    any start (Hypothesis's wraps `FixtureFunctionMarker.__call__`)."""
    from importlib import metadata

    try:
        entries = metadata.entry_points(group="pytest11")
    except Exception:  # noqa: BLE001 - broken metadata names no plugin; judging goes on
        return frozenset()
    return frozenset(entry.value.split(":", 1)[0].split(".", 1)[0] for entry in entries)
