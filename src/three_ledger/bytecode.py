"""Compiled code the test child must not load: what counts as bytecode or native code, and the
refusals before a run.

The child writes no bytecode (`run/child.py`), but Python still reads what the tree holds.
Four kinds are refused before anything runs: bytecode that is new or changed against the
base; native code (an extension module, a shared library) that is; a `.pyc` outside
`__pycache__` wherever the child imports from, which Python imports without its source;
and an unchecked-hash `.pyc` in any `__pycache__` under ROOT, which Python loads without
comparing it with its source (PEP 552), ignored by git or not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.pytest_config import entries, pytest_settings

BYTECODE_SUFFIXES = (".pyc", ".pyo")
# Native code: an extension module (`orders.cpython-311-x86_64-linux-gnu.so`, `.abi3.so`,
# `.pyd`), which Python imports ahead of `orders.py` in the same folder, or a library ctypes
# loads (`libfast.so.1` too).
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
_VERSIONED_LIBRARY = re.compile(r"\.so(?:\.[0-9]+)+$")
# Python 3 imports a `.pyc` without its source; it never reads a `.pyo`.
SOURCELESS_SUFFIX = ".pyc"
PYCACHE = "__pycache__"
# Never walked into: version control, and Python's own bytecode folders (only listed).
_NOT_WALKED = frozenset({".git", ".hg", ".svn", PYCACHE})
# A `.pyc` starts with 16 bytes: a magic number ending in CR LF, 32 bits of flags, then the
# source's mtime and size, or its hash. Flags 0b01 (PEP 552): hash-based, and Python does not
# check the hash against the source (unless it runs with --check-hash-based-pycs always).
PYC_HEADER_BYTES = 16
UNCHECKED_HASH_FLAGS = 0b01
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_REMEDY = "delete it (`git rm` where git tracks it)"


def is_bytecode(path: str) -> bool:
    """Whether PATH (relative, POSIX) names a bytecode file."""
    return PurePosixPath(path).suffix in BYTECODE_SUFFIXES


def is_native_code(path: str) -> bool:
    """Whether PATH (relative, POSIX) names an extension module or a shared library."""
    name = PurePosixPath(path).name
    return name.endswith(NATIVE_SUFFIXES) or _VERSIONED_LIBRARY.search(name) is not None


def is_compiled(path: str) -> bool:
    """Whether PATH names code no reviewer reads: bytecode or native code."""
    return is_bytecode(path) or is_native_code(path)


def in_bytecode_cache(path: str) -> bool:
    """Whether PATH (relative, POSIX) is bytecode or lies in a `__pycache__` folder."""
    return is_bytecode(path) or PYCACHE in PurePosixPath(path).parts[:-1]


def refuse_new_compiled(base: str, differing: Mapping[str, str | None]) -> None:
    """Refused when a bytecode or native-code file differs from BASE and is present in the tree.

    DIFFERING maps each path that differs from the base (tracked, or untracked and not
    ignored) to its blob id in the tree, None where it was deleted: deleted code loads
    nothing.
    """
    present = sorted(path for path, blob in differing.items() if blob)
    for kind, compiled, why in _COMPILED_KINDS:
        found = [path for path in present if compiled(path)]
        if found:
            raise _refusal(
                f"{kind} new or changed against the base {base[:12]}",
                dict.fromkeys(found, ""),
                why,
            )


# Each kind of compiled code refused in the change, the first found named: what it is,
# which paths are of it, and why it is refused with what to do.
_COMPILED_KINDS = (
    (
        "bytecode",
        is_bytecode,
        (
            "Python or pytest could load it in place of its source; "
            f"{_REMEDY}, and let git ignore `__pycache__/` and `*.pyc`"
        ),
    ),
    (
        "native code",
        is_native_code,
        (
            "Python imports an extension module ahead of the `.py` module of its name, and "
            "ctypes loads a library, so the run would execute code no reviewer reads; "
            f"{_REMEDY}, build it in the job from reviewed source, and let git ignore it"
        ),
    ),
)


def refuse_bytecode_in_tree(root: Path, env: Mapping[str, str]) -> None:
    """Refused when bytecode under ROOT, ignored by git or not, could be loaded in place of its
    source: a `.pyc` outside `__pycache__` in a folder the child imports from, or an
    unchecked-hash `.pyc` in a `__pycache__` folder.

    ENV is the environment the child inherits (its PYTHONPATH).
    """
    found = tree_bytecode(root, env)
    if found.sourceless:
        raise _refusal(
            f"bytecode outside {PYCACHE} where the test child imports from",
            {path: f"outside {PYCACHE} under {where}" for path, where in found.sourceless.items()},
            f"Python imports such a file without its source, in place of the module; {_REMEDY}",
        )
    if found.unchecked:
        raise _refusal(
            "unchecked-hash bytecode under ROOT",
            dict.fromkeys(found.unchecked, ""),
            "Python loads such a file in place of its source without comparing the two, so the "
            f"run would execute code other than the source under review; {_REMEDY}",
        )


def _refusal(what: str, found: Mapping[str, str], why: str) -> Refused:
    """One headline naming the first file and why it is refused, then every file on its own
    line, each with where it was found (FOUND's values, when there is something to say)."""
    shown = [f"{path} ({where})" if where else path for path, where in found.items()]
    more = f" (and {len(shown) - 1} more)" if len(shown) > 1 else ""
    details = shown if len(shown) > 1 else []
    return Refused(f"{what}: {shown[0]}{more}: {why}", details)


@frozen
class TreeBytecode:
    """Bytecode in the tree that Python could load in place of its source; paths relative to
    ROOT, sorted, ignored by git or not."""

    # Each `.pyc` outside `__pycache__` under a folder of `import_folders`, with that folder.
    sourceless: dict[str, str]
    # Each unchecked-hash `.pyc` in a `__pycache__` folder under ROOT.
    unchecked: list[str]


def tree_bytecode(root: Path, env: Mapping[str, str]) -> TreeBytecode:
    """What one walk of each import folder finds; ROOT's walk also reads the header of every
    `.pyc` in its `__pycache__` folders (16 bytes each), and nothing else is read."""
    sourceless: dict[str, str] = {}
    unchecked: list[str] = []
    top = os.path.abspath(root)
    for folder, where in import_folders(root, env).items():
        # ROOT comes first, and holds every other folder but one inside a virtual environment.
        # Paths are strings here: a tree may hold many thousands of `.pyc` files.
        for path, cached in _bytecode_under(str(folder), caches=str(folder) == top):
            if not cached:
                sourceless.setdefault(_shown(path, top), where)
            elif is_unchecked_hash(path):
                unchecked.append(_shown(path, top))
    return TreeBytecode(dict(sorted(sourceless.items())), sorted(unchecked))


def _shown(path: str, top: str) -> str:
    return Path(os.path.relpath(path, top)).as_posix()


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


def _bytecode_under(folder: str, *, caches: bool) -> Iterator[tuple[str, bool]]:
    """Every `.pyc` under FOLDER outside `__pycache__` (False), and with CACHES, every `.pyc`
    directly in a `__pycache__` folder (True). Links are not followed, but for a `__pycache__`
    folder that is one: Python follows it. A virtual environment (a folder holding
    `pyvenv.cfg`) is left out: its site folder is trusted."""
    for here, dirs, names in os.walk(folder):
        if caches and PYCACHE in dirs:
            yield from ((path, True) for path in _cache_files(os.path.join(here, PYCACHE)))
        dirs[:] = [
            name
            for name in dirs
            if name not in _NOT_WALKED
            and not os.path.isfile(os.path.join(here, name, "pyvenv.cfg"))
        ]
        for name in names:
            if name.endswith(SOURCELESS_SUFFIX):
                yield os.path.join(here, name), False


def _cache_files(cache: str) -> list[str]:
    """The `.pyc` files of a `__pycache__` folder; none where it cannot be listed (nor can
    Python list it)."""
    try:
        with os.scandir(cache) as entries:
            return [entry.path for entry in entries if entry.name.endswith(SOURCELESS_SUFFIX)]
    except OSError:
        return []


def is_unchecked_hash(path: str | Path) -> bool:
    """Whether PATH starts like a `.pyc` whose flags say unchecked-hash (PEP 552).

    Links are followed and FIFOs are not waited on; a file that cannot be read, or is too
    short to be a `.pyc`, is one Python cannot load either.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return False
    try:
        header = os.read(fd, PYC_HEADER_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(header) != PYC_HEADER_BYTES or header[2:4] != b"\r\n":
        return False
    return int.from_bytes(header[4:8], "little") == UNCHECKED_HASH_FLAGS


def pytest_pythonpath(root: Path) -> list[str]:
    """The `pythonpath` entries of the pytest config file in ROOT, the first that pytest reads;
    none where there is no such file or it cannot be read (pytest then refuses to start)."""
    return entries(pytest_settings(lambda name: _read_file(root / name)).get("pythonpath", []))


def _read_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None
