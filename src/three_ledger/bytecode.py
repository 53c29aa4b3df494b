"""Bytecode the test child must not load: what counts as bytecode, and the refusals before a run.

The child keeps its own bytecode in a private folder (`run/child.py`), so neither Python nor
pytest reads a `__pycache__` in the tree. Two kinds are still refused before anything runs:
bytecode that is new or changed against the base (a command that drops the private folder, a
tox environment say, would read it again), and a `.pyc` outside `__pycache__` wherever the
child imports from: Python imports such a file without its source, prefix or not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from three_ledger.errors import Refused
from three_ledger.pytest_config import entries, pytest_settings

BYTECODE_SUFFIXES = (".pyc", ".pyo")
# Python 3 imports a `.pyc` without its source; it never reads a `.pyo`.
SOURCELESS_SUFFIX = ".pyc"
PYCACHE = "__pycache__"
# Never walked for sourceless bytecode: version control, and Python's own bytecode folders.
_NOT_WALKED = frozenset({".git", ".hg", ".svn", PYCACHE})
_REMEDY = "delete it (`git rm` where git tracks it)"


def is_bytecode(path: str) -> bool:
    """Whether PATH (relative, POSIX) names a bytecode file."""
    return PurePosixPath(path).suffix in BYTECODE_SUFFIXES


def in_bytecode_cache(path: str) -> bool:
    """Whether PATH (relative, POSIX) is bytecode or lies in a `__pycache__` folder."""
    return is_bytecode(path) or PYCACHE in PurePosixPath(path).parts[:-1]


def refuse_new_bytecode(base: str, differing: Mapping[str, str | None]) -> None:
    """Refused when a bytecode file differs from BASE and is present in the tree.

    DIFFERING maps each path that differs from the base (tracked, or untracked and not
    ignored) to its blob id in the tree, None where it was deleted: deleted bytecode loads
    nothing.
    """
    found = sorted(path for path, blob in differing.items() if blob and is_bytecode(path))
    if found:
        raise _refusal(
            f"bytecode new or changed against the base {base[:12]}",
            dict.fromkeys(found, ""),
            "Python or pytest could load it in place of its source; "
            f"{_REMEDY}, and let git ignore `__pycache__/` and `*.pyc`",
        )


def refuse_sourceless_bytecode(root: Path, env: Mapping[str, str]) -> None:
    """Refused when a `.pyc` lies outside `__pycache__` in a folder the child imports from.

    ENV is the environment the child inherits (its PYTHONPATH).
    """
    found = sourceless_bytecode(root, env)
    if found:
        raise _refusal(
            f"bytecode outside {PYCACHE} where the test child imports from",
            {path: f"outside {PYCACHE} under {where}" for path, where in found.items()},
            f"Python imports such a file without its source, in place of the module; {_REMEDY}",
        )


def _refusal(what: str, found: Mapping[str, str], why: str) -> Refused:
    """One headline naming the first file and why it is refused, then every file on its own
    line, each with where it was found (FOUND's values, when there is something to say)."""
    shown = [f"{path} ({where})" if where else path for path, where in found.items()]
    more = f" (and {len(shown) - 1} more)" if len(shown) > 1 else ""
    details = shown if len(shown) > 1 else []
    return Refused(f"{what}: {shown[0]}{more}: {why}", details)


def sourceless_bytecode(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Each `.pyc` outside `__pycache__` under a folder of `import_folders`, relative to ROOT,
    with the folder it was found under, ignored by git or not."""
    found: dict[str, str] = {}
    top = Path(os.path.abspath(root))
    for folder, where in import_folders(root, env).items():
        for path in _sourceless_under(folder):
            found.setdefault(path.relative_to(top).as_posix(), where)
    return dict(sorted(found.items()))


def import_folders(root: Path, env: Mapping[str, str]) -> dict[Path, str]:
    """The folders under ROOT that the test child's `sys.path` may hold, known before it runs.

    ROOT itself (`python -m pytest` puts it first; it is pytest's rootdir when its config file
    lies there), the `pythonpath` entries of that config file, and the PYTHONPATH entries the
    child inherits (relative ones are relative to ROOT, where the child starts). Each with what
    put it there.
    """
    top = Path(os.path.abspath(root))
    folders = {top: "ROOT"}
    for entry in pytest_pythonpath(top):
        folders.setdefault(Path(os.path.abspath(top / entry)), f"pytest's pythonpath {entry}")
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        folders.setdefault(Path(os.path.abspath(top / entry)), f"PYTHONPATH entry {entry or '.'}")
    return {
        folder: where
        for folder, where in folders.items()
        if folder.is_relative_to(top) and folder.is_dir()
    }


def _sourceless_under(folder: Path) -> Iterator[Path]:
    """Every `.pyc` under FOLDER outside `__pycache__`; links are not followed, and a virtual
    environment (a folder holding `pyvenv.cfg`) is left out: its site folder is trusted."""
    for current, dirs, names in os.walk(folder):
        here = Path(current)
        dirs[:] = [
            name
            for name in dirs
            if name not in _NOT_WALKED and not (here / name / "pyvenv.cfg").is_file()
        ]
        for name in names:
            if name.endswith(SOURCELESS_SUFFIX):
                yield here / name


def pytest_pythonpath(root: Path) -> list[str]:
    """The `pythonpath` entries of the pytest config file in ROOT, the first that pytest reads;
    none where there is no such file or it cannot be read (pytest then refuses to start)."""
    return entries(pytest_settings(lambda name: _read_file(root / name)).get("pythonpath", []))


def _read_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None
