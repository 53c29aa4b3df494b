"""The scratch copy `vet` mutates: ROOT copied into a private folder, never the user's tree.

The user's tree is only read, once, by the copy. Folders that hold nothing a test reads
and can be large (`.git`, caches) are left out. A virtual environment inside ROOT (a folder
with a `pyvenv.cfg`) is linked rather than copied, so that `.venv/bin/python` still works
from the copy without copying every installed package; the children vet starts write no
bytecode, so nothing lands in it.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from three_ledger.errors import InfraFailure

# Version control and caches: copying them costs time and tells the tests nothing.
SKIPPED_FOLDERS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    | {".tox", ".nox"}
)


def copy_tree(root: Path, target: Path) -> None:
    """Copy ROOT to TARGET (links stay links; special files and caches are left out)."""
    root = root.resolve()
    venvs: list[str] = []
    try:
        shutil.copytree(root, target, symlinks=True, ignore=_ignore(root, target, venvs))
        for relative in venvs:
            (target / relative).symlink_to(root / relative, target_is_directory=True)
    except (shutil.Error, OSError) as error:
        raise InfraFailure(f"cannot copy {root} to a scratch folder: {_first(error)}") from None


def _first(error: BaseException) -> str:
    """shutil.Error carries a list of (source, target, reason); name the first."""
    if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list):
        source, _, reason = error.args[0][0]
        return f"{source}: {reason}"
    return str(error)


def _ignore(
    root: Path, target: Path, venvs: list[str]
) -> Callable[[str, list[str]], Iterable[str]]:
    private = target.resolve().parent

    def ignored(folder: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode) or stat.S_ISREG(mode):
                continue
            if not stat.S_ISDIR(mode) or name in SKIPPED_FOLDERS:
                skipped.add(name)  # a FIFO or socket would block or fail the copy
            elif path.resolve() == private:
                skipped.add(name)  # the scratch folder itself, where TMPDIR lies inside ROOT
            elif (path / "pyvenv.cfg").is_file():
                skipped.add(name)
                venvs.append(str(path.relative_to(root)))
        return skipped

    return ignored


def remove_side_by_side(folder: Path) -> None:
    """Empty FOLDER, its entries (the scratch copies, the bytecode) removed side by side:
    most of the time goes to waiting on the file system. What cannot be removed is left for
    the caller's own cleanup, which says why."""
    entries = list(folder.iterdir())
    with ThreadPoolExecutor(max_workers=max(1, min(4, len(entries)))) as pool:
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                pool.submit(shutil.rmtree, entry, ignore_errors=True)


def write_files(tree: Path, contents: Mapping[str, bytes]) -> None:
    """Overwrite each file under TREE in place (its mode and inode stay)."""
    for path, data in contents.items():
        with open(tree / path, "wb") as stream:
            stream.write(data)


def read_files(tree: Path, paths: Iterable[str]) -> dict[str, bytes]:
    return {path: (tree / path).read_bytes() for path in paths}


def command_for_copy(command: Sequence[str], root: Path) -> list[str]:
    """COMMAND as it must read when run in the copy of ROOT instead of ROOT itself.

    A program named by a relative path outside ROOT (`../venv/bin/python`) is made
    absolute; one inside ROOT (`.venv/bin/python`, `./run-tests`) stays relative, and so
    runs from the copy.
    """
    program = command[0]
    if "/" not in program or os.path.isabs(program):
        return list(command)
    target = Path(os.path.normpath(root.absolute() / program))
    if target.is_relative_to(root.absolute()):
        return list(command)
    return [str(target), *command[1:]]
