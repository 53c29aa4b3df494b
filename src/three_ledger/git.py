"""Every git question the gate asks (work tree, base revision, what moved), through one wrapper.

All paths given to and returned from this module are POSIX paths relative to ROOT, which may
be a subfolder of the work tree; git itself always runs in ROOT.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from three_ledger.errors import Refused
from three_ledger.runner import Captured, ChildHung, run_captured

if TYPE_CHECKING:
    from three_ledger.base_resolution import BaseChoice

CANNOT_TELL = "cannot tell whether oracles moved"
# No git question the gate asks takes long; one that does is a hung git (a lock, a prompt,
# a network filesystem), reported as a failure rather than waited for.
GIT_TIMEOUT_S = float(os.environ.get("THREE_LEDGER_GIT_TIMEOUT_S", "120"))


class GitHung(Refused):
    """git did not answer within GIT_TIMEOUT_S; `properties` reports it as exit 4."""


# These would point git at another repository than the one containing ROOT (they are set,
# for example, when the gate runs inside a git hook), or would clash with literal pathspecs.
_IGNORED_GIT_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
    "GIT_LITERAL_PATHSPECS",
)

# pytest's cache appears whenever tests run; it is never an oracle edit. Bytecode is no cache
# here: the gate's runs keep theirs outside the tree, and bytecode that is tracked, or new and
# not ignored, is part of the change (refused before a run: bytecode.py).
_CACHE_FOLDERS = frozenset({".pytest_cache"})


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _IGNORED_GIT_VARIABLES}
    env["LC_ALL"] = "C"
    # A read-only question must not take the index lock a concurrent `git` may need.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # `refs/replace` would let a change substitute the bytes git reports for the base.
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    # Never stop to ask for a password or a passphrase: there is nobody to answer.
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _run_git(cwd: Path, args: Sequence[str], stdin: bytes | None = None) -> Captured:
    """Run git in CWD; a git that cannot start or does not finish is refused here."""
    if not cwd.is_dir():
        raise Refused(f"cannot run git in {cwd}: no such folder")
    # Literal pathspecs: oracle and fixture paths are file names, never glob patterns.
    command = ["git", "-c", "core.quotepath=off", "--literal-pathspecs", *args]
    try:
        return run_captured(command, cwd=cwd, env=_git_env(), timeout_s=GIT_TIMEOUT_S, stdin=stdin)
    except ChildHung as hung:
        raise GitHung(
            f"git hung in {cwd}: {hung}; set THREE_LEDGER_GIT_TIMEOUT_S to wait longer"
        ) from None
    except FileNotFoundError:
        raise Refused("git is not installed or not on PATH: the gate needs it") from None
    except OSError as err:
        raise Refused(f"cannot run git in {cwd}: {err.strerror}") from None


def _failure(cwd: Path, args: Sequence[str], done: Captured) -> Refused:
    stderr = done.stderr.decode("utf-8", "replace").strip()
    first_line = stderr.splitlines()[0] if stderr else "(no message)"
    return Refused(f"git {args[0]} failed in {cwd} (exit {done.returncode}): {first_line}")


def _git_bytes(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = _run_git(cwd, args, stdin)
    if done.returncode != 0:
        raise _failure(cwd, args, done)
    return done.stdout


def _decode(raw: bytes) -> str:
    # surrogateescape keeps a non-UTF-8 name usable as a file name, as os.fsdecode does.
    return raw.decode("utf-8", "surrogateescape")


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    return _decode(_git_bytes(cwd, *args, stdin=stdin))


def _nul_split(output: str) -> list[str]:
    return [item for item in output.split("\0") if item]


def work_tree_top(root: Path) -> Path:
    """The top folder of the git work tree that contains ROOT."""
    done = _run_git(root, ["rev-parse", "--show-toplevel"])
    top = _decode(done.stdout).rstrip("\n")
    if done.returncode != 0 or not top:
        reason = done.stderr.decode("utf-8", "replace").strip()
        raise Refused(
            f"ROOT {root} is not inside a git work tree: {CANNOT_TELL}",
            reason.splitlines()[:1],
        )
    return Path(top)


def base_choice(explicit: str | None, env: Mapping[str, str]) -> BaseChoice:
    """The base revision to resolve, from the command line, the environment or the CI event."""
    from three_ledger.base_resolution import choose_base

    try:
        choice = choose_base(explicit, env)
    except Refused as err:
        raise Refused(f"{err.message}; {CANNOT_TELL}") from None
    if choice is None:
        raise Refused(f"no base revision: give --base REV or set THREE_LEDGER_BASE; {CANNOT_TELL}")
    return choice


def _commit_id(root: Path, rev: str) -> str | None:
    """The full commit id REV names, or None when it names no commit."""
    # A revision that looks like an option would be read as one by git.
    if not rev or rev.startswith("-"):
        return None
    args = ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]
    done = _run_git(root, args)
    if done.returncode == 1:
        return None
    if done.returncode != 0:
        raise _failure(root, args, done)
    return _decode(done.stdout).strip()


def resolve_commit(root: Path, rev: str) -> str:
    """The full commit id of REV."""
    commit = _commit_id(root, rev)
    if commit is not None:
        return commit
    raise Refused(f"revision {rev!r} does not resolve to a commit in {root}")


def resolve_base(root: Path, explicit: str | None, env: Mapping[str, str]) -> str:
    """The full commit id of the base revision the oracles are compared with (SPEC 4.2 step 3)."""
    from three_ledger.base_resolution import missing_base_advice

    choice = base_choice(explicit, env)
    work_tree_top(root)
    commit = _commit_id(root, choice.revision)
    if commit is not None:
        return commit
    message = f"base revision {choice.revision!r} does not resolve to a commit in {root} "
    message += f"(from {choice.source})"
    advice = missing_base_advice(choice, is_shallow(root))
    raise Refused(f"{message}{'; ' + advice if advice else ''}: {CANNOT_TELL}")


def is_shallow(root: Path) -> bool:
    """Whether the repository holding ROOT is a shallow clone (history cut at some depth)."""
    done = _run_git(root, ["rev-parse", "--is-shallow-repository"])
    return done.returncode == 0 and _decode(done.stdout).strip() == "true"


def head_revision(root: Path) -> str:
    """The full commit id of HEAD."""
    return resolve_commit(root, "HEAD")


def _refuse_option_like(rev: str) -> None:
    if rev.startswith("-"):
        raise Refused(f"revision {rev!r} does not resolve to a commit in this repository")


def _is_cache(path: str) -> bool:
    return not _CACHE_FOLDERS.isdisjoint(path.split("/"))


def changed_paths(root: Path, base: str, pathspecs: Sequence[str]) -> list[str]:
    """Paths under PATHSPECS that differ from BASE in the work tree, or are new and not ignored."""
    if not pathspecs:
        return []
    _refuse_option_like(base)
    # Diffing BASE against the work tree covers committed, staged, unstaged and deleted files.
    diff = ["diff", "--name-only", "-z", "--no-renames", "--relative", "--no-color"]
    tracked = _git(root, *diff, "--no-ext-diff", base, "--", *pathspecs)
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *pathspecs)
    paths = set(_nul_split(tracked)) | set(_nul_split(untracked))
    return sorted(path for path in paths if not _is_cache(path))


def changed_since(root: Path, base: str, path: Path) -> list[str]:
    """What differs from BASE under PATH (a pin file or the pins folder), relative to the top.

    The one rule behind "a pin changed against the base" (merge row 4, flake-observe
    precondition 6): committed, staged, unstaged, deleted or new-and-not-ignored all count.
    PATH is as the command line gave it; one outside the work tree is refused.
    """
    top = work_tree_top(root)
    base_commit = resolve_commit(top, base)
    return changed_paths(top, base_commit, [inside_work_tree(path, top)])


def inside_work_tree(path: Path, top: Path) -> str:
    """PATH relative to the work tree TOP (`.` for TOP itself); refused when outside it."""
    try:
        relative = path.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        raise Refused(
            f"{path} lies outside the git work tree {top}: "
            "cannot tell whether it changed against the base"
        ) from None
    return relative or "."


def is_ancestor_or_same(root: Path, ancestor: str, descendant: str) -> bool:
    """Whether ANCESTOR is DESCENDANT or one of its ancestors; False when ANCESTOR is unknown."""
    ancestor_id = _commit_id(root, ancestor)
    if ancestor_id is None:
        return False
    args = ["merge-base", "--is-ancestor", ancestor_id, resolve_commit(root, descendant)]
    done = _run_git(root, args)
    if done.returncode not in (0, 1):
        raise _failure(root, args, done)
    return done.returncode == 0


def blob_ids_at(root: Path, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """Blob id at REV of each of PATHS that is a file there, in one `ls-tree` call."""
    _refuse_option_like(rev)
    wanted = set(paths)
    # Listing the top folders keeps the command line short whatever the number of paths.
    tops = sorted({path.split("/", 1)[0] for path in wanted})
    listing = _git(root, "ls-tree", "-r", "-z", rev, "--", *tops)
    blob_ids: dict[str, str] = {}
    for record in _nul_split(listing):
        meta, _, path = record.partition("\t")
        _mode, kind, object_id = meta.split(" ")
        if kind == "blob" and path in wanted:
            blob_ids[path] = object_id
    return blob_ids


def working_blob_ids(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """Blob id of the raw bytes of each of PATHS that is a regular file under ROOT."""
    present = [p for p in paths if (root / p).is_file() and not (root / p).is_symlink()]
    # --stdin-paths reads one name per line; absolute names read the same in every git version.
    by_line = [p for p in present if "\n" not in p]
    blob_ids: dict[str, str] = {}
    if by_line:
        names = b"".join(os.fsencode((root / p).absolute()) + b"\n" for p in by_line)
        ids = _git(root, "hash-object", "--no-filters", "--stdin-paths", stdin=names).split()
        blob_ids.update(zip(by_line, ids, strict=True))
    for path in (p for p in present if "\n" in p):
        blob_ids[path] = _git(root, "hash-object", "--no-filters", "--", path).strip()
    return blob_ids


def paths_differing_from(root: Path, rev: str, paths: Sequence[str]) -> list[str]:
    """Those of PATHS whose working bytes differ from REV's (absent on one side only counts)."""
    wanted = sorted(set(paths))
    if not wanted:
        return []
    at_rev = blob_ids_at(root, rev, wanted)
    in_work_tree = working_blob_ids(root, wanted)
    return [path for path in wanted if at_rev.get(path) != in_work_tree.get(path)]


def file_at(root: Path, rev: str, path: str) -> bytes | None:
    """The bytes of PATH at REV, or None when REV has no file there."""
    blob_id = blob_ids_at(root, rev, [path]).get(path)
    return None if blob_id is None else _git_bytes(root, "cat-file", "blob", blob_id)


def untracked_files(root: Path, folder: str, *, ignored: bool) -> list[str]:
    """Files under ROOT/FOLDER that git does not track: the ignored ones, or the others.

    Relative to ROOT, sorted. Refused when ROOT is not in a git work tree.
    """
    which = ["--ignored"] if ignored else []
    listing = _git(root, "ls-files", "-z", "--others", "--exclude-standard", *which, "--", folder)
    return sorted(_nul_split(listing))


def tracked_files(root: Path, folder: str) -> list[str]:
    """Files under ROOT/FOLDER that git tracks, relative to ROOT, sorted."""
    return sorted(set(_nul_split(_git(root, "ls-files", "-z", "--", folder))))


def is_tracked(root: Path, path: Path) -> bool:
    """Whether git tracks PATH (staged or committed) in the work tree that contains ROOT."""
    done = _run_git(root, ["ls-files", "-z", "--error-unmatch", "--", os.fspath(path)])
    # Exit 1: not tracked; 128: PATH lies outside the work tree (or ROOT is in none).
    return done.returncode == 0 and bool(done.stdout)


def files_at(root: Path, rev: str) -> list[str]:
    """Every file path under ROOT at REV."""
    _refuse_option_like(rev)
    return _nul_split(_git(root, "ls-tree", "-r", "-z", "--name-only", rev))


def work_tree_files(root: Path) -> list[str]:
    """Every file path under ROOT that git tracks, or that is new and not ignored."""
    return _nul_split(_git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))


def tracked_among(root: Path, paths: Sequence[Path]) -> list[Path]:
    """Those of PATHS (relative to ROOT) that git tracks."""
    if not paths:
        return []
    listed = _git(root, "ls-files", "-z", "--", *(p.as_posix() for p in paths))
    return [Path(item) for item in _nul_split(listed)]
