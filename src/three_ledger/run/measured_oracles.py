"""Measured oracles: every file that steered a run is compared with the base, not only the
paths the properties pin names.

The oracle set is the pin's `oracle_paths`, plus what the run itself showed: every harness file
under ROOT (config file, conftests, plugins, `__main__`, shadowing modules, test-side modules),
every test module that produced a result for a pinned property or flake entry, and, where such
a module lives in a folder of tests (`tests/`, `test/`, `testing/`), that whole folder; each
whatever its suffix. A `.pth` file in a site folder under ROOT that differs from the base joins
them: Python runs its import lines when any interpreter using that folder starts.

Some of these are known only once the run is over, so the comparison is in two steps: what
differs from the base is snapshotted before the command starts (`before_run`); afterwards the
measured files are compared with the base and with that snapshot (`measured_changes`). A
measured file whose bytes changed during the run is an infrastructure failure: a helper must
not be able to weaken itself for the run and restore its bytes at the end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from three_ledger import git
from three_ledger.errors import InfraFailure, Refused
from three_ledger.frozen import frozen
from three_ledger.ledgers import Harness
from three_ledger.pins import PropertiesPin
from three_ledger.plugin.wire import TEST_FOLDERS
from three_ledger.results import TestResult

# Never read by the run: its bytecode lives in a private folder, pytest's cache is off-limits.
_CACHE_FOLDERS = frozenset({"__pycache__", ".pytest_cache"})
# The folders `site` makes site folders of, where it runs every `.pth` file at start-up.
SITE_FOLDERS = frozenset({"site-packages", "dist-packages"})
# Where a shared config file keeps pytest's settings: only that part is an oracle.
_PYTEST_SECTIONS = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}
# Config files shared with other tools: a change outside pytest's section moves no oracle.
_SHARED_CONFIGS = frozenset({"pyproject.toml", *_PYTEST_SECTIONS})


@frozen
class BeforeRun:
    """Each path that differed from the base when the command started, and its blob id then
    (None where the file was deleted)."""

    base: str
    differing: Mapping[str, str | None]


def before_run(root: Path, base: str, changed: Sequence[str] | None = None) -> BeforeRun:
    """What differs from BASE now; CHANGED is every such path, where git was asked already."""
    paths = git.changed_paths(root, base, ["."]) if changed is None else changed
    present = git.working_blob_ids(root, paths)
    return BeforeRun(base, {path: present.get(path) for path in paths})


def measured_changes(
    root: Path,
    before: BeforeRun,
    harness: Harness,
    scored_results: Iterable[TestResult],
    fixture_files: Iterable[str] = (),
) -> dict[str, str]:
    """Each measured oracle file that differs from the base, with why it counts.

    The pinned fixtures (FIXTURE_FILES) a folder of tests holds are left out: the fixture pin
    binds their bytes, and the digest was checked before the run.
    InfraFailure when one changed while the command ran.
    """
    candidates = harness_files(root, harness)
    candidates.update(_result_modules(harness.rootdir, scored_results))
    for path in before.differing:
        if PurePosixPath(path).name == ".gitattributes":
            candidates[path] = ".gitattributes"
        elif is_site_startup_file(path):
            candidates[path] = "a .pth file in a site folder: Python runs it at start-up"
    pinned = frozenset(fixture_files)
    files = {
        path: why
        for path, why in _expand_folders(root, before.base, candidates).items()
        if path not in pinned
    }
    changes = _compare(root, before, files)
    config_file = harness.config_file
    if config_file in changes and _same_pytest_section(root, before.base, str(config_file)):
        del changes[str(config_file)]
    return changes


@frozen
class ClosedWorld:
    """The closed oracle set's verdict: what moved, and what ignored files the run read."""

    changes: dict[str, str]
    # Files git ignores that the run read: no patch can deliver them, so none moves an oracle.
    untracked_reads: tuple[str, ...]


def closed_changes(
    root: Path,
    before: BeforeRun,
    harness: Harness,
    uses: Mapping[str, str],
    properties_pin: PropertiesPin,
    fixture_files: Iterable[str],
    scored_results: Iterable[TestResult],
) -> ClosedWorld:
    """With `product_paths`: every file the run executed or read, but the product and the
    pinned fixtures, plus every file that configured it, compared with the base.

    A file that configured the run, or that pytest collected as a test module, is an oracle
    whatever `product_paths` says; `product_paths` covering one is refused (exit 2).
    InfraFailure when a measured file changed while the command ran.
    """
    explained = harness_files(root, harness)
    # What configured the run. The harness's name-based guesses (test-side and shadowing
    # modules) are not forced in: the measurement sees them if the run used them.
    configured = {
        path: why
        for path, why in explained.items()
        if not why.startswith(("test-side module", "module that"))
    }
    collected = _result_modules(harness.rootdir, scored_results)
    _refuse_product_oracles(properties_pin, configured, collected)
    pinned = set(fixture_files)
    # A measured file says how the run used it, or, where the harness knows more, what it is.
    candidates = {
        path: explained.get(path, f"{how} by the run")
        for path, how in uses.items()
        if not properties_pin.is_product(path) and path not in pinned
    }
    candidates.update(configured)
    candidates.update({path: why for path, why in collected.items() if not path.endswith("/")})
    untracked = git.ignored_among(root, [path for path in candidates if path not in configured])
    for path in untracked:
        del candidates[path]
    changes = _compare(root, before, candidates)
    for path in list(changes):
        if PurePosixPath(path).name in _SHARED_CONFIGS and _same_pytest_section(
            root, before.base, path
        ):
            del changes[path]
    return ClosedWorld(changes, tuple(sorted(untracked)))


def _refuse_product_oracles(
    pin: PropertiesPin, configured: Mapping[str, str], collected: Mapping[str, str]
) -> None:
    for path, why in {**configured, **collected}.items():
        if (
            not path.endswith("/")
            and pin.is_product(path)
            and (why == "conftest" or path in collected)
        ):
            kind = "a conftest" if why == "conftest" else "a collected test module"
            raise Refused(
                f"{pin.source}: $.product_paths covers {path}, {kind}: tests and conftests are "
                "oracles, never product; move it out of the folders product_paths names, or "
                "narrow the globs"
            )


def harness_files(root: Path, harness: Harness) -> dict[str, str]:
    """Each harness file under ROOT, whatever its suffix, with why it counts.

    The harness names the run's `__main__` and its plugins by a path relative to ROOT when they
    came from there (a sourceless `pytest.pyc` as well as a `pytest.py`), else by a label in
    angle brackets or a distribution, which names no file: comparing it finds nothing. A file
    a virtual environment inside ROOT installed (its `bin/pytest`, pytest's own plugins and
    modules in its site-packages, which the oracles inferred would take for modules that
    shadow pytest's) is the installation, trusted like any other, not the change.
    """
    files = harness.files_under_root()
    named = {harness.main: "the run's __main__"}
    named.update((plugin.source, f"pytest plugin {plugin.name}") for plugin in harness.plugins)
    for path, why in named.items():
        if not path.startswith("<"):
            files.setdefault(path, why)
    # pytest's own modules in such an environment shadow nothing: they are pytest.
    installed = _installed(root, list(files))
    return {path: why for path, why in files.items() if path not in installed}


def _installed(root: Path, paths: Sequence[str]) -> set[str]:
    """Those of PATHS (relative to ROOT) that a virtual environment inside ROOT installed:
    they lie in a folder holding a `pyvenv.cfg`, and git tracks neither them nor it. A change
    brings only files git tracks: a `pyvenv.cfg` it adds makes no folder an installation."""
    configs = {path: config for path in paths if (config := _venv_config(root, path)) is not None}
    if not configs:
        return set()
    asked = sorted({*configs, *configs.values()})
    tracked = {found.as_posix() for found in git.tracked_among(root, [Path(p) for p in asked])}
    return {path for path, config in configs.items() if not {path, config} & tracked}


def _venv_config(root: Path, path: str) -> str | None:
    """The `pyvenv.cfg` (relative to ROOT) of the folder above PATH that holds one, if any."""
    for parent in PurePosixPath(path).parents:
        if str(parent) != "." and (root / parent / "pyvenv.cfg").is_file():
            return f"{parent}/pyvenv.cfg"
    return None


def is_site_startup_file(path: str) -> bool:
    """Whether PATH (relative, POSIX) is a `.pth` file directly in a site folder."""
    posix = PurePosixPath(path)
    return posix.suffix == ".pth" and posix.parent.name in SITE_FOLDERS


def _result_modules(rootdir: str, results: Iterable[TestResult]) -> dict[str, str]:
    """The test module of each result (whatever its suffix), and the folder of tests it lives
    in, if any."""
    found: dict[str, str] = {}
    # Thousands of results share a few modules: each module is looked at once.
    for module in dict.fromkeys(result.id.split("::", 1)[0] for result in results):
        path = PurePosixPath(rootdir, module) if rootdir not in (".", "") else PurePosixPath(module)
        found[str(path)] = f"test module {path} (it scored a pinned id)"
        for depth, part in enumerate(path.parts[:-1]):
            if part in TEST_FOLDERS:
                folder = PurePosixPath(*path.parts[: depth + 1])
                found[f"{folder}/"] = f"folder of tests {folder}/ (it holds {path})"
                break
    return found


def _expand_folders(root: Path, base: str, candidates: dict[str, str]) -> dict[str, str]:
    """Files for CANDIDATES: a folder (trailing /) becomes its files at head and at base."""
    folders = {path: why for path, why in candidates.items() if path.endswith("/")}
    files = {path: why for path, why in candidates.items() if not path.endswith("/")}
    if not folders:
        return files
    at_base = git.files_at(root, base)
    for folder, why in folders.items():
        inside = [p for p in at_base if p.startswith(folder)]
        inside += _files_under(root, folder)
        for path in inside:
            files.setdefault(path, why)
    return files


def _files_under(root: Path, folder: str) -> list[str]:
    found: list[str] = []
    for current, dirs, names in os.walk(root / folder):
        dirs[:] = [d for d in dirs if d not in _CACHE_FOLDERS]
        found.extend((Path(current) / name).relative_to(root).as_posix() for name in names)
    return found


def _compare(root: Path, before: BeforeRun, files: Mapping[str, str]) -> dict[str, str]:
    paths = sorted(files)
    at_base = git.blob_ids_at(root, before.base, paths)
    now = git.working_blob_ids(root, paths)
    changes: dict[str, str] = {}
    moved_during_run = []
    for path in paths:
        base_id, now_id = at_base.get(path), now.get(path)
        if path in before.differing:
            if now_id != before.differing[path]:
                moved_during_run.append(path)
        elif base_id is not None and now_id != base_id:
            moved_during_run.append(path)
        if now_id != base_id:
            changes[path] = files[path]
    if moved_during_run:
        raise InfraFailure(
            "oracle files changed while the command ran: "
            + ", ".join(moved_during_run)
            + "; a run that edits what judges it is not evidence"
        )
    return changes


def _same_pytest_section(root: Path, base: str, config_file: str) -> bool:
    """For a shared config file, whether only its non-pytest parts differ from the base."""
    name = PurePosixPath(config_file).name
    if name != "pyproject.toml" and name not in _PYTEST_SECTIONS:
        return False
    before = git.file_at(root, base, config_file)
    try:
        after = (root / config_file).read_bytes()
    except OSError:
        return False
    if before is None:
        return False
    return _pytest_section(name, before) == _pytest_section(name, after)


def _pytest_section(name: str, data: bytes) -> str:
    """pytest's part of a shared config file, as canonical JSON; the raw bytes if unparsable."""
    # Imported here: only a change to the config file pytest read needs them.
    import configparser
    import tomllib

    try:
        text = data.decode("utf-8")
        if name == "pyproject.toml":
            section = tomllib.loads(text).get("tool", {}).get("pytest")
        else:
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            wanted = _PYTEST_SECTIONS[name]
            section = dict(parser[wanted]) if parser.has_section(wanted) else None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error):
        return data.hex()
    return json.dumps(section, sort_keys=True)


def unmatched_oracle_paths(root: Path, base: str, oracle_paths: Iterable[str]) -> list[str]:
    """Explicit `oracle_paths` entries naming nothing at the base and nothing in the tree."""
    at_base = git.files_at(root, base)
    unmatched = []
    for entry in oracle_paths:
        prefix = entry.rstrip("/") + "/"
        exists_now = os.path.lexists(root / entry)
        existed = any(path == entry or path.startswith(prefix) for path in at_base)
        if not exists_now and not existed:
            unmatched.append(entry)
    return unmatched
