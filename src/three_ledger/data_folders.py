"""Which folders of a project hold its test data, for `init` to draft a fixture pin of them.

A data folder holds files and no Python at any depth, and lies under a test folder (`tests`,
`test`, `testing`) or is named like one of data (`fixtures`, `testdata`, ...). Only the
outermost such folders count: `tests/test_port/fixtures` is one folder, not one per subfolder.
It is a guess for a person to review; `--fixtures-dir` replaces it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from three_ledger import git
from three_ledger.errors import Refused
from three_ledger.product_guess import TEST_FOLDERS

# Folder names that say "test data" wherever they lie.
DATA_NAMES = frozenset({"fixtures", "fixture", "testdata", "test_data", "test-data"})
# Never walked for files: caches and environments, which no pin should list.
_SKIPPED = frozenset({"__pycache__", "node_modules", "venv", "site-packages"})


def project_files(root: Path) -> list[str]:
    """The files of ROOT, relative to it: those git tracks or would add (not ignored) in a
    git work tree, else every file below ROOT but hidden folders and caches."""
    try:
        listed = git.work_tree_files(root)
    except Refused:  # not in a git work tree
        return _walked(root)
    return sorted(path for path in listed if (root / path).is_file() and _kept(path))


def _walked(root: Path) -> list[str]:
    found = []
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if _kept(name) and not _is_venv(Path(folder, name))]
        relative = Path(folder).relative_to(root)
        found += [(relative / name).as_posix() for name in files]
    return sorted(found)


def _kept(path: str) -> bool:
    return not any(part.startswith(".") or part in _SKIPPED for part in path.split("/"))


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def data_folders(files: Iterable[str]) -> list[str]:
    """The outermost folders holding FILES (paths relative to ROOT) that look like test data,
    sorted."""
    every = list(files)
    with_python = {folder for path in every if path.endswith(".py") for folder in _parents(path)}
    holding_files = {folder for path in every for folder in _parents(path)}
    candidates = {
        folder for folder in holding_files - with_python if _looks_like_data(PurePosixPath(folder))
    }
    return sorted(
        folder
        for folder in candidates
        if not any(parent in candidates for parent in _parents(folder + "/x")[1:])
    )


# A module that makes its folder code rather than data: a test module, a conftest, a package.
_CODE_MODULES = re.compile(r"^(test_.*|.*_test|conftest|__init__)\.py$")


def python_data_folders(files: Iterable[str], chosen: Iterable[str]) -> list[str]:
    """The outermost folders that look like test data but hold Python, none of it a test
    module, a conftest or a package's `__init__.py` (a formatter's cases are Python source):
    `data_folders` leaves them out, and `init` names them for a person to judge. None of them
    holds or lies in a CHOSEN folder. Sorted."""
    every = list(files)
    taken = list(chosen)
    code = {
        folder
        for path in every
        if _CODE_MODULES.match(PurePosixPath(path).name)
        for folder in _parents(path)
    }
    with_python = {folder for path in every if path.endswith(".py") for folder in _parents(path)}
    candidates = {
        folder
        for folder in with_python - code
        if _looks_like_data(PurePosixPath(folder))
        and not any(_overlap(folder, other) for other in taken)
    }
    return sorted(
        folder
        for folder in candidates
        if not any(parent in candidates for parent in _parents(folder + "/x")[1:])
    )


def data_packages(files: Iterable[str], chosen: Iterable[str]) -> list[str]:
    """The folders named like test data that are Python packages (an `__init__.py` of their
    own, mistune's `tests/fixtures` that loads its cases): neither `data_folders` nor
    `python_data_folders` takes them, since a package is code, and a folder drafted inside
    one would bind only part of the data. None lies in a CHOSEN folder. Sorted."""
    taken = list(chosen)
    return sorted(
        {
            folder
            for path in files
            if PurePosixPath(path).name == "__init__.py"
            and (folder := str(PurePosixPath(path).parent)) != "."
            and PurePosixPath(folder).name in DATA_NAMES
            and not any(folder == other or folder.startswith(other + "/") for other in taken)
        }
    )


def _overlap(one: str, other: str) -> bool:
    return one == other or one.startswith(other + "/") or other.startswith(one + "/")


def _parents(path: str) -> list[str]:
    """Every folder holding PATH, innermost first, ROOT itself left out."""
    parts = PurePosixPath(path).parts[:-1]
    return ["/".join(parts[:end]) for end in range(len(parts), 0, -1)]


def _looks_like_data(folder: PurePosixPath) -> bool:
    return folder.name in DATA_NAMES or bool(TEST_FOLDERS & set(folder.parts[:-1]))
