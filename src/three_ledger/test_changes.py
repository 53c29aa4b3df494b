"""Which changed paths are test-side: the new test modules a scoring run leaves out, and the
changes `gate` sends to the test owners without scoring them.

pytest decides what it collects from its settings (`python_files`, `norecursedirs`) and from
where it starts (the paths its command line gives, else `testpaths`); the gate reads the same
settings and the command without running anything, so both questions are answered before any
code of the change runs. A path counts as test-side only positively: a test module (one
pytest would collect, outside `product_paths`), a `conftest.py`, a config file whose only
change is pytest's own settings, or a path under the pin's `oracle_paths`. Anything else
(data, dependency manifests, helpers, docs, CI files) is scored as usual: a doubt always
falls on the side of scoring.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path, PurePosixPath

from three_ledger import git
from three_ledger.frozen import frozen
from three_ledger.pins import PropertiesPin
from three_ledger.pytest_config import PYTEST_CONFIGS, Reader, entries, pytest_settings

# pytest's defaults for the two settings that decide which files it collects.
DEFAULT_PYTHON_FILES = ("test_*.py", "*_test.py")
DEFAULT_NORECURSEDIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv")
CONFTEST = "conftest.py"
# The config files whose every setting is pytest's: any change to one steers every test.
_PYTEST_ONLY_CONFIGS = frozenset(
    name for name, _ in PYTEST_CONFIGS if name.startswith(("pytest.", ".pytest."))
)
# The shared ini files, and the section pytest keeps its settings in (pyproject.toml keeps
# them under `tool.pytest`).
_INI_SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}
_PYPROJECT = "pyproject.toml"


@frozen
class TestLayout:
    """The settings that decide which files pytest collects as test modules."""

    python_files: tuple[str, ...] = DEFAULT_PYTHON_FILES
    norecursedirs: tuple[str, ...] = DEFAULT_NORECURSEDIRS
    # Where collection starts (relative to ROOT, globs as `testpaths` allows them); () for
    # everywhere. `testpaths`, until `started_by` gives the command's own paths.
    starts: tuple[str, ...] = ()

    @classmethod
    def read(cls, read: Reader) -> TestLayout:
        settings = pytest_settings(read)
        python_files = entries(settings.get("python_files", []))
        norecursedirs = entries(settings.get("norecursedirs", []))
        return cls(
            tuple(python_files) or DEFAULT_PYTHON_FILES,
            tuple(norecursedirs) or DEFAULT_NORECURSEDIRS,
            tuple(_normal(path) for path in entries(settings.get("testpaths", []))),
        )

    def started_by(self, command: Sequence[str], root: Path) -> TestLayout:
        """This layout for a run of COMMAND from ROOT: pytest starts from the paths the
        command names, where it names any, and from `testpaths` only where it names none.

        A word after an option the gate does not know (`--hypothesis-profile ci`) may be
        that option's value or a path: it is read both ways, so a start it may be is added
        to the others, and stands in for none of them."""
        sure, doubtful = named_paths(command, root)
        if sure:
            return dataclasses.replace(self, starts=(*sure, *doubtful))
        if doubtful and self.starts:  # without testpaths, collection starts everywhere
            return dataclasses.replace(self, starts=(*self.starts, *doubtful))
        return self

    def collects(self, path: str) -> bool:
        """Whether a run from `starts` collects PATH as a test module."""
        if not self.would_collect(path):
            return False
        return not self.starts or any(_under(path, start) for start in self.starts)

    def would_collect(self, path: str) -> bool:
        """Whether pytest would collect PATH (relative to its rootdir) as a test module."""
        posix = PurePosixPath(path)
        if posix.name == CONFTEST:
            return False
        folders = posix.parts[:-1]
        if any(fnmatch.fnmatchcase(part, skip) for part in folders for skip in self.norecursedirs):
            return False
        return any(_matches(pattern, posix) for pattern in self.python_files)


def _matches(pattern: str, path: PurePosixPath) -> bool:
    """pytest's rule: a pattern without a slash matches the file name, else the path's end."""
    if "/" not in pattern:
        return fnmatch.fnmatch(path.name, pattern)
    return fnmatch.fnmatch(str(path), pattern) or fnmatch.fnmatch(str(path), f"*/{pattern}")


def _under(path: str, start: str) -> bool:
    """Whether PATH is START or lies under it; START may be a glob, matched against each of
    PATH's leading parts."""
    if start in ("", "."):
        return True
    if not any(char in start for char in "*?["):
        return path == start or path.startswith(start + "/")
    parts = path.split("/")
    return any(
        fnmatch.fnmatchcase("/".join(parts[:end]), start) for end in range(1, len(parts) + 1)
    )


def _normal(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/").removeprefix("./")


_PYTEST = ("pytest", "py.test")
# pytest's options whose value is the next word: a value is never a path to collect.
_VALUE_OPTIONS = frozenset({
    "-k", "-m", "-p", "-c", "-o", "-W", "-n", "-r", "--deselect", "--ignore", "--ignore-glob",
    "--rootdir", "--confcutdir", "--basetemp", "--maxfail", "--tb", "--junit-xml", "--junitxml",
    "--durations", "--override-ini", "--import-mode", "--log-file", "--cov", "--dist",
    "--numprocesses", "--timeout", "--config-file", "--capture", "--color",
})  # fmt: skip


# pytest's options that take no value: the word after one is a path or another option.
_FLAG_OPTIONS = frozenset({
    "-v", "-q", "-x", "-s", "-l", "-h", "-V", "--verbose", "--quiet", "--exitfirst",
    "--showlocals", "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first",
    "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--co", "--collect-only",
    "--strict-markers", "--strict-config", "--strict", "--pdb", "--trace", "--runxfail",
    "--cache-clear", "--setup-show", "--setup-only", "--setup-plan", "--fixtures",
    "--markers", "--help", "--version", "--doctest-modules", "--no-header", "--no-summary",
    "--disable-warnings", "--disable-pytest-warnings", "--full-trace", "--noconftest",
    "--keep-duplicates", "--continue-on-collection-errors", "--lsof", "--looponfail",
})  # fmt: skip


def named_paths(command: Sequence[str], root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The paths under ROOT that a pytest command line surely names (a node id's file), and
    those it may name (a word after an option that is neither pytest's flag nor one the gate
    knows takes a value may be either), relative to ROOT; none where no word of it starts
    pytest (a `tox` or `make` command: then nothing is known of where it collects)."""
    words = list(command)
    # `pytest`, a path to it, or `-m pytest`.
    starts = (i + 1 for i, word in enumerate(words) if PurePosixPath(word).name in _PYTEST)
    start = next(starts, None)
    if start is None:
        return (), ()
    sure: list[str] = []
    doubtful: list[str] = []
    resolved_root = root.resolve()
    for previous, word in zip(words[start - 1 :], words[start:], strict=False):
        if word.startswith("-") or previous in _VALUE_OPTIONS:
            continue
        candidate = root / word.split("::", 1)[0]
        try:
            if not candidate.exists():
                continue
            relative = candidate.resolve().relative_to(resolved_root)
        except (OSError, ValueError):
            continue
        found = doubtful if _may_take_a_value(previous) else sure
        found.append(_normal(relative.as_posix()))
    return tuple(sure), tuple(doubtful)


def _may_take_a_value(option: str) -> bool:
    """Whether OPTION, a word before a path, is an option whose value that word may be: one
    that is neither a known flag nor written with its value (`--x=1`, `-n2`)."""
    if not option.startswith("-") or option in _FLAG_OPTIONS or "=" in option:
        return False
    return option.startswith("--") or len(option) == 2


def layout_in_tree(root: Path) -> TestLayout:
    return TestLayout.read(lambda name: _read(root / name))


def layout_at(root: Path, rev: str) -> TestLayout:
    return TestLayout.read(lambda name: git.file_at(root, rev, name))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def new_test_modules(
    root: Path, base: str, differing: Mapping[str, str | None], pin: PropertiesPin
) -> tuple[str, ...]:
    """The files pytest would collect as test modules that the base does not have, outside
    `product_paths`: the scoring run leaves them out (`--ignore`), and the ledger lists them.

    DIFFERING maps each path (relative to ROOT) that differs from the base to its blob id in
    the tree, None where it was deleted.
    """
    layout = layout_in_tree(root)
    present = [path for path, blob in differing.items() if blob is not None]
    candidates = [
        path for path in present if layout.would_collect(path) and not pin.is_product(path)
    ]
    if not candidates:
        return ()
    at_base = git.blob_ids_at(root, base, candidates)
    return tuple(sorted(path for path in candidates if path not in at_base))


class SideKind(Enum):
    """Why a changed path is test-side, as a reviewer reads it."""

    TEST_MODULE = "test module"
    NEW_TEST_MODULE = "new test module"
    CONFTEST = "conftest.py: changes how every test runs"
    PYTEST_SETTINGS = "pytest's settings: change how every test runs"
    ORACLE_PATH = "listed in oracle_paths"
    # Known for an oracle only once the run measured it (`gate` after the scoring run).
    MEASURED = "an oracle the run measured"


@frozen
class TestSideChange:
    """One changed test-side path (relative to ROOT), what it is, and the pinned properties
    whose tests it holds, as far as their selectors tell."""

    path: str
    kind: SideKind
    properties: tuple[str, ...] = ()

    def describe(self) -> str:
        touched = f"; properties {', '.join(self.properties)}" if self.properties else ""
        return f"{self.path} ({self.kind.value}{touched})"


def test_side_changes(
    root: Path,
    base: str,
    changed: Sequence[str],
    pin: PropertiesPin,
    command: Sequence[str],
) -> list[TestSideChange] | None:
    """Each of CHANGED (relative to ROOT) with why it is test-side; None as soon as one is not.

    A test module is one pytest collects with the base's settings (present at the base) or
    would collect (new), in a run of COMMAND: under the paths it names, else under the base's
    `testpaths`. The settings themselves are compared separately, as a change.
    """
    if not changed:
        return None
    layout = layout_at(root, base).started_by(command, root)
    at_base = git.blob_ids_at(root, base, list(changed))
    found: list[TestSideChange] = []
    for path in changed:
        kind = _side_kind(root, base, path, path in at_base, layout, pin)
        if kind is None:
            return None
        found.append(TestSideChange(path, kind, _touched(pin, path, kind)))
    return found


def _side_kind(
    root: Path, base: str, path: str, at_base: bool, layout: TestLayout, pin: PropertiesPin
) -> SideKind | None:
    posix = PurePosixPath(path)
    if posix.name == CONFTEST:
        return SideKind.CONFTEST
    if path in _PYTEST_ONLY_CONFIGS:
        return SideKind.PYTEST_SETTINGS
    if (path == _PYPROJECT or path in _INI_SECTIONS) and _only_pytest_settings_differ(
        root, base, path
    ):
        return SideKind.PYTEST_SETTINGS
    if layout.collects(path) and not pin.is_product(path):
        return SideKind.TEST_MODULE if at_base else SideKind.NEW_TEST_MODULE
    if _under_any(path, pin.oracle_paths):
        return SideKind.ORACLE_PATH
    return None


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(
        path == entry.rstrip("/") or path.startswith(entry.rstrip("/") + "/") for entry in folders
    )


def _touched(pin: PropertiesPin, path: str, kind: SideKind) -> tuple[str, ...]:
    """The properties whose selectors name a test in PATH; every one for what steers all."""
    if kind in (SideKind.CONFTEST, SideKind.PYTEST_SETTINGS):
        return ()
    return tuple(
        prop.id
        for prop in pin.properties
        if any(fnmatch.fnmatchcase(path, selector.split("::", 1)[0]) for selector in prop.test)
    )


def _only_pytest_settings_differ(root: Path, base: str, name: str) -> bool:
    """Whether the shared config file NAME differs from the base in pytest's section alone."""
    before = git.file_at(root, base, name)
    after = _read(root / name)
    if before is None or after is None:
        return False
    rest = _without_pytest(name, before)
    return rest is not None and rest == _without_pytest(name, after)


def _without_pytest(name: str, data: bytes) -> object | None:
    """The config file's settings but pytest's; None where it cannot be parsed."""
    import configparser
    import tomllib

    try:
        text = data.decode("utf-8")
        if name.endswith(".toml"):
            document = tomllib.loads(text)
            document.get("tool", {}).pop("pytest", None)
            return document
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        return {key: dict(parser[key]) for key in parser.sections() if key != _INI_SECTIONS[name]}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return None
