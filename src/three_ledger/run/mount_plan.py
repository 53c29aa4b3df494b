"""The mount layer of one run: what the child may write, what stays visible, what is hidden.

The whole filesystem becomes read-only for the child, as bubblewrap's `--ro-bind / /`. The
exceptions are a private tmpfs over `/tmp` (and `/dev/shm`), a private empty HOME inside it,
an empty tmpfs over each of the properties pin's `writable_paths`, and the gate's own folders
the child writes (its records, the JUnit report's folder). What the run needs from the real
`/tmp` (ROOT, the gate's private folder, an environment on PATH) stays visible there,
read-only. The runner's file-command folders and the ledger's folder are hidden. This module
only plans: the trampoline (`trampoline.py`) carries the steps out inside the namespace.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.paths import is_under, printable

TMP = "/tmp"
SHARED_MEMORY = "/dev/shm"
# The private HOME, a folder of the private /tmp.
HOME_NAME = "three-ledger-home"
# Files through which a GitHub job step steers the steps after it, or writes the summary a
# reviewer reads as the gate's own words.
FILE_COMMAND_VARIABLES = (
    "GITHUB_OUTPUT",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
    "GITHUB_STEP_SUMMARY",
)
# One step of the plan, as the trampoline reads it from JSON.
Step = list[str | list[str]]


class NoMountLayer(Exception):
    """This run cannot get the mount layer; the message says why."""


@frozen
class RunFiles:
    """What a run's mount layer is planned from."""

    root: Path
    # The gate's private folder of the run: the staged plugin and hook, read-only for the child.
    private: Path
    # Folders the child must write: the plugin's records, the JUnit report's folder.
    writable: tuple[Path, ...]
    # The properties pin's `writable_paths`, relative to ROOT.
    writable_paths: tuple[str, ...]
    # The ledger and its log: their folder is hidden from the child.
    outputs: tuple[Path, ...]
    command: Sequence[str]
    # The child's environment: PATH, PYTHONPATH and VIRTUAL_ENV say what it needs to see.
    env: Mapping[str, str]
    # Other files the gate hands the child to read (a shard's slice).
    readable: tuple[Path, ...] = ()


@frozen
class MountPlan:
    """The trampoline's steps, the child's HOME and TMPDIR, and whether the runner's
    file-command folders are out of the child's sight."""

    steps: tuple[Step, ...]
    home: str
    tmp: str
    # Why a file-command folder stays visible (read-only); None: every one is hidden.
    file_commands_problem: str | None


def plan_mounts(files: RunFiles, gate_env: Mapping[str, str] = os.environ) -> MountPlan:
    """The mount layer for FILES; NoMountLayer where this run cannot have one."""
    tmp = os.path.realpath(TMP)
    if not os.path.isdir(tmp):
        raise NoMountLayer(f"there is no {TMP} folder to make private")
    root = os.path.realpath(files.root)
    if _holds(root, tmp):
        raise NoMountLayer(f"ROOT {root} holds {tmp}, which the run gets a private copy of")
    writable = [os.path.realpath(folder) for folder in files.writable]
    needed = [path for path in _needed(files) if os.path.exists(path)]
    kept = _kept_under(tmp, [root, os.path.realpath(files.private), *writable, *needed])
    home = _fresh_name(tmp, HOME_NAME, kept)
    steps: list[Step] = [["read_only", "/"], ["private_tmp", tmp, kept]]
    if os.path.isdir(SHARED_MEMORY) and not os.path.islink(SHARED_MEMORY):
        steps.append(["tmpfs", SHARED_MEMORY])
    steps += [["tmpfs", os.path.join(root, entry)] for entry in files.writable_paths]
    steps += [["writable", folder] for folder in writable]
    # What must stay in the child's sight, or is out of it already (an emptied folder).
    visible = [root, os.path.realpath(files.private), *writable]
    visible += [os.path.join(root, entry) for entry in files.writable_paths]
    hidden, problem = _file_command_folders(gate_env, visible)
    hidden += [
        folder
        for folder in {os.path.realpath(output.parent) for output in files.outputs}
        if not any(_holds(folder, path) for path in visible)
    ]
    steps += [["hide", folder] for folder in sorted(set(hidden))]
    steps.append(["mkdir", home])
    return MountPlan(tuple(steps), home, tmp, problem)


def _holds(folder: str, path: str) -> bool:
    """Whether PATH is FOLDER or lies under it (both real, absolute)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _needed(files: RunFiles) -> list[str]:
    """What the child's command needs to see: its program, PATH, PYTHONPATH, VIRTUAL_ENV."""
    folders = [entry for entry in files.env.get("PATH", "").split(os.pathsep) if entry]
    if files.command and os.sep in files.command[0]:
        folders.append(os.path.dirname(os.path.join(files.root, files.command[0])))
    needed = [_environment_of(folder) for folder in folders if os.path.isabs(folder)]
    needed += [os.path.realpath(path) for path in files.readable]
    needed += [
        os.path.realpath(os.path.join(files.root, entry))
        for entry in files.env.get("PYTHONPATH", "").split(os.pathsep)
        if entry
    ]
    if files.env.get("VIRTUAL_ENV"):
        needed.append(os.path.realpath(files.env["VIRTUAL_ENV"]))
    return needed + _linked_from(files.root)


def _linked_from(root: Path) -> list[str]:
    """Where the links directly in ROOT lead (a `node_modules` or `.venv` kept elsewhere)."""
    try:
        with os.scandir(root) as entries:
            return [os.path.realpath(entry.path) for entry in entries if entry.is_symlink()]
    except OSError:
        return []


def _environment_of(folder: str) -> str:
    """FOLDER, or the virtual environment whose `bin` it is (its interpreter needs the rest)."""
    real = os.path.realpath(folder)
    parent = os.path.dirname(real)
    return parent if os.path.isfile(os.path.join(parent, "pyvenv.cfg")) else real


def _kept_under(tmp: str, paths: Iterable[str]) -> list[str]:
    """The PATHS strictly under TMP, relative to it, outermost only (a kept folder keeps what
    it holds), sorted. TMP itself is never kept whole: the run would share it."""
    inside = sorted({path[len(tmp) + 1 :] for path in paths if path.startswith(tmp + "/")})
    kept: list[str] = []
    for relative in inside:
        if not any(is_under(relative, outer) for outer in kept):
            kept.append(relative)
    return kept


def _fresh_name(tmp: str, name: str, kept: Sequence[str]) -> str:
    taken = {relative.split("/", 1)[0] for relative in kept}
    while name in taken:
        name += "_"
    return os.path.join(tmp, name)


def _file_command_folders(
    gate_env: Mapping[str, str], visible: Sequence[str]
) -> tuple[list[str], str | None]:
    """The folders of the runner's file-command files, to hide; and why one cannot be."""
    hidden: list[str] = []
    problem = None
    for variable in FILE_COMMAND_VARIABLES:
        value = gate_env.get(variable, "")
        if not value or not os.path.isabs(value):
            continue
        folder = os.path.realpath(os.path.dirname(value))
        holding = next((path for path in visible if _holds(folder, path)), None)
        if holding is not None:
            problem = (
                f"${variable} lies in {folder}, which holds {holding}: the run must see it, so "
                "the file stays visible (read-only)"
            )
        elif folder != "/":
            hidden.append(folder)
    return hidden, problem


# --- writable_paths ---------------------------------------------------------------------------


def refuse_writable_overlaps(
    source: Path,
    writable_paths: Sequence[str],
    fixtures_dirs: tuple[str, ...],
    oracle_paths: Sequence[str],
    oracle_files: Iterable[str] = (),
) -> None:
    """Refuse (exit 2) a `writable_paths` entry that holds or lies under the pinned fixtures, an
    `oracle_paths` entry, or a file known before the run to be an oracle (ORACLE_FILES)."""
    for index, entry in enumerate(writable_paths):
        where = f"{source}: $.writable_paths[{index}]: {entry!r}"
        for guarded, what in [
            *((folder, "the pinned fixtures' folder") for folder in fixtures_dirs),
            *((path, "oracle_paths entry") for path in oracle_paths),
        ]:
            guarded = guarded.removesuffix("/")
            if entry == guarded or is_under(entry, guarded) or is_under(guarded, entry):
                raise Refused(
                    f"{where} overlaps {what} {guarded!r}: a folder the run may write is "
                    "emptied for the run, and never what judges it"
                )
        for path in oracle_files:
            if is_under(path, entry):
                raise Refused(
                    f"{where} holds {path!r}, an oracle of the run: a folder the run may write "
                    "is emptied for the run, and never what judges it"
                )


def known_oracle_files(root: Path, writable_paths: Sequence[str]) -> list[str]:
    """The files git tracks under the entries that steer a pytest run before it starts:
    conftests, and the modules pytest would collect as tests."""
    from three_ledger import git
    from three_ledger.test_changes import CONFTEST, layout_in_tree

    layout = layout_in_tree(root)
    try:
        tracked = [path for entry in writable_paths for path in git.tracked_files(root, entry)]
    except git.GitHung:
        raise
    except Refused:  # not in a git work tree: nothing is tracked
        return []
    return [
        path
        for path in tracked
        if path.rsplit("/", 1)[-1] == CONFTEST or layout.would_collect(path)
    ]


def prepare_writable_paths(root: Path, writable_paths: Sequence[str]) -> None:
    """Each entry as a real folder under ROOT, made where missing: the mount point of its
    tmpfs. Refused (exit 2) where a link or a file stands in the way."""
    for entry in writable_paths:
        folder = root
        for part in entry.split("/"):
            folder = folder / part
            if folder.is_symlink():
                raise Refused(
                    f"writable_paths entry {entry!r}: {folder} is a link; name the folder itself"
                )
            if folder.exists() and not folder.is_dir():
                raise Refused(f"writable_paths entry {entry!r}: {folder} is not a folder")
        try:
            (root / entry).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise Refused(f"writable_paths entry {entry!r}: cannot make it: {error}") from None


def refuse_writable_holding(
    root: Path, writable_paths: Sequence[str], needed: Sequence[tuple[str, Path]]
) -> None:
    """Refuse an entry whose tmpfs would hide a folder the gate needs the child to write or
    see (the JUnit report's folder, the gate's private folder): its files would vanish."""
    real_root = Path(os.path.realpath(root))
    for entry in writable_paths:
        folder = real_root / entry
        for label, path in needed:
            if Path(os.path.realpath(path)).is_relative_to(folder):
                raise Refused(
                    f"writable_paths entry {entry!r} holds {label} {path}: the child's tmpfs "
                    "there would hide it from the gate"
                )


# --- what a read-only write looks like in the log ---------------------------------------------

# How programs name a file they could not write on a read-only filesystem: Python, coreutils
# (`mkdir`, `touch`, `cp`, ...), the shells, Node, and Go's `os` errors (esbuild's `open
# /abs/path: read-only file system`). Compiled where first needed.
_READ_ONLY_WRITE = (
    rb"Read-only file system: '(?P<python>[^'\n]{1,4096})'"
    rb"|cannot [a-z ]{1,30} (?:\xe2\x80\x98|['\"])(?P<coreutils>[^\n]{1,4096}?)"
    rb"(?:\xe2\x80\x99|['\"]): Read-only file system"
    rb"|(?:sh|bash): (?:[0-9]+: |line [0-9]+: )?(?:cannot create )?(?P<shell>[^:\n]{1,4096}): "
    rb"Read-only file system"
    rb"|EROFS: read-only file system, [a-z]+ '(?P<node>[^'\n]{1,4096})'"
    rb"|(?:open|mkdir|remove|rename|symlink|link|chmod|truncate) "
    rb"(?P<go>/[^\n]{1,4096}?): read-only file system"
)
# How much of the log is searched, from its end: a flood of output is not read whole.
_SEARCHED_BYTES = 8 * 1024 * 1024


@functools.cache
def _read_only_write() -> re.Pattern[bytes]:
    return re.compile(_READ_ONLY_WRITE)


def read_only_writes(log_path: Path, limit: int = 5) -> list[str]:
    """The paths the run failed to write because the sandbox keeps them read-only, as its
    log names them, first ones first."""
    try:
        with log_path.open("rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - _SEARCHED_BYTES))
            tail = log.read(_SEARCHED_BYTES)
    except OSError:
        return []
    found = dict.fromkeys(
        next(path for path in match.groups() if path is not None)
        for match in _read_only_write().finditer(tail)
    )
    return [os.fsdecode(path) for path in list(found)[:limit]]


def read_only_hints(log_path: Path, root: Path) -> list[str]:
    """One line per path the run could not write, saying what the sandbox allows. Each path
    comes from the run's output: shown escaped, it cannot forge a line of the gate's."""
    top = os.path.realpath(root)
    hints = []
    for path in read_only_writes(log_path):
        full = os.path.realpath(os.path.join(top, path))
        if _holds(top, full):
            relative = printable(os.path.relpath(full, top))
            hints.append(
                f"the run tried to write {relative}, which the sandbox keeps read-only: a test "
                "that writes into ROOT fails; if the run must write there, list its folder "
                "under writable_paths in the properties pin"
            )
        else:
            hints.append(
                f"the run tried to write {printable(path)}, which the sandbox keeps read-only: "
                "the run may write only its private /tmp (TMPDIR), its HOME and the pin's "
                "writable_paths"
            )
    return hints
