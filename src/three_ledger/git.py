"""Every git question the gate asks (work tree, base revision, what moved), through one wrapper.

All paths given to and returned from this module are POSIX paths relative to ROOT, which may
be a subfolder of the work tree; git itself always runs in ROOT.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from three_ledger.errors import Refused
from three_ledger.runner import Captured, ChildHung, run_captured

if TYPE_CHECKING:
    from three_ledger.base_resolution import BaseChoice, BaseResolution

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

# Where git looks for a short name, in its own order (gitrevisions(7)); a name spelled like
# HEAD or FETCH_HEAD is first looked for as itself.
_SHORT_NAME_RULES = (
    "refs/{}",
    "refs/tags/{}",
    "refs/heads/{}",
    "refs/remotes/{}",
    "refs/remotes/{}/HEAD",
)
_PSEUDO_REF = re.compile(r"[A-Z_]*HEAD")
_HEX = re.compile(r"[0-9a-fA-F]+")
# git reads at least four hex digits as an abbreviated object id.
_SHORTEST_ABBREVIATION = 4
# Where the name a revision starts with ends: `~N`, `^N`, `^{type}`, `:path`, `@{...}`.
_NAME_END = re.compile(r"[~^:]|@\{")


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _IGNORED_GIT_VARIABLES}
    env["LC_ALL"] = "C"
    # A read-only question must not take the index lock a concurrent `git` may need.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # `refs/replace` would let a change substitute the bytes git reports for the base.
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    # Never stop to ask for a password or a passphrase: there is nobody to answer.
    env["GIT_TERMINAL_PROMPT"] = "0"
    # Neither the machine's nor the user's configuration: an earlier step of the job (or a
    # test run without the sandbox) could have set a command git runs (`core.fsmonitor`, a
    # diff driver) or a setting that changes what git reports.
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    return env


def _checkout_of(folder: Path) -> Path:
    """The top of the checkout FOLDER lies in, as git finds it (the nearest `.git`)."""
    resolved = folder.resolve()
    for candidate in (resolved, *resolved.parents):
        if (candidate / ".git").exists():
            return candidate
    return resolved


def _run_git(cwd: Path, args: Sequence[str], stdin: bytes | None = None) -> Captured:
    """Run git in CWD; a git that cannot start or does not finish is refused here."""
    if not cwd.is_dir():
        raise Refused(f"cannot run git in {cwd}: no such folder")
    # Literal pathspecs: oracle and fixture paths are file names, never glob patterns. The
    # checkout the gate was asked to judge is trusted whoever owns it, as actions/checkout
    # trusts its workspace in the global configuration the gate does not read (a container
    # job's checkout belongs to the runner's user); git checks any other as usual.
    command = [
        "git",
        "-c",
        "core.quotepath=off",
        "-c",
        f"safe.directory={_checkout_of(cwd)}",
        "--literal-pathspecs",
        *args,
    ]
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
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
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


def resolve_base(root: Path, explicit: str | None, env: Mapping[str, str]) -> BaseResolution:
    """The base revision the oracles are compared with, resolved (SPEC 4.2 step 3)."""
    return resolve_base_and_head(root, explicit, env)[0]


def resolve_base_and_head(
    root: Path, explicit: str | None, env: Mapping[str, str]
) -> tuple[BaseResolution, str]:
    """`resolve_base`, and the full commit id of HEAD it was resolved against."""
    choice = base_choice(explicit, env)
    work_tree_top(root)
    try:
        head = head_revision(root)
        return resolve_choice(root, choice, head), head
    except GitHung:
        raise
    except Refused as err:
        raise Refused(f"{err.message}: {CANNOT_TELL}", err.details) from None


def resolve_base_commit(root: Path, rev: str) -> str:
    """The commit a base revision REV stands for: the one `properties` records as used."""
    from three_ledger.base_resolution import BaseChoice

    return resolve_choice(root, BaseChoice(rev, "")).used


def resolve_choice(root: Path, choice: BaseChoice, head: str | None = None) -> BaseResolution:
    """The chosen base by its full name, then its commit when HEAD descends from it, else
    HEAD's merge-base with it. A commit or a merge-base the clone lacks is refused with
    the fetch that brings it in; an ambiguous name is refused. HEAD is HEAD's commit id,
    where the caller has it."""
    from three_ledger.base_resolution import BaseResolution, missing_base_advice
    from three_ledger.vocabulary import BaseHow

    head = head or head_revision(root)
    spelled = spelled_in_full(root, choice.revision, len(head))
    if spelled == "HEAD":  # no other ref is named HEAD: spelled_in_full refuses the ambiguity
        commit: str | None = head
    else:
        commit = _commit_id(root, spelled) if spelled is not None else None
    origin = f" (from {choice.source})" if choice.source else ""
    if commit is None:
        advice = missing_base_advice(choice, is_shallow(root))
        raise Refused(
            f"base revision {choice.revision!r} does not resolve to a commit in {root}"
            f"{origin}{'; ' + advice if advice else ''}"
        )
    # One question answers both: the merge-base is the commit itself exactly when HEAD
    # descends from it.
    shared = commit if commit == head else merge_base(root, head, commit)
    if shared is None:
        raise _no_merge_base(root, choice, commit, head)
    how = BaseHow.ANCESTOR if shared == commit else BaseHow.MERGE_BASE
    return BaseResolution(choice.revision, shared, how)


def _no_merge_base(root: Path, choice: BaseChoice, commit: str, head: str) -> Refused:
    from three_ledger.base_resolution import missing_history_advice

    origin = f", from {choice.source}" if choice.source else ""
    advice = missing_history_advice(choice, is_shallow(root))
    return Refused(
        f"base revision {choice.revision!r} (commit {commit[:12]}{origin}) is not an ancestor "
        f"of HEAD {head[:12]} and shares no history with it in {root}: no merge-base"
        f"{'; ' + advice if advice else ''}"
    )


def spelled_in_full(root: Path, rev: str, id_length: int) -> str | None:
    """REV with the name it starts with written as the one ref it names in full
    (`origin/main~1`: `refs/remotes/origin/main~1`); REV itself when it starts with a full
    commit id, or with a name no ref has (git may still read it as an abbreviated id).

    None when REV starts with a full ref name (`refs/...`) that does not exist: git would
    then look further, and find `refs/heads/refs/...` or a tag. Refused when the name is
    ambiguous: two refs, or a ref and an abbreviated commit id, answer to it.
    """
    name, rest = _leading_name(rev)
    if not name or (_HEX.fullmatch(name) and len(name) == id_length):
        return rev
    if name.startswith("refs/"):
        return rev if _existing_refs(root, [name]) else None
    refs = _existing_refs(root, [rule.format(name) for rule in _SHORT_NAME_RULES])
    named = _pseudo_ref(name) + refs + _abbreviated_id(root, name)
    if len(named) > 1:
        listed = ", ".join(named[:-1]) + " and " + named[-1]
        raise Refused(
            f"base revision {rev!r} is ambiguous: {name!r} names {listed}; give the one you "
            "mean by its full name (refs/remotes/..., refs/heads/..., refs/tags/...) or a "
            "full commit id"
        )
    return refs[0] + rest if refs and len(named) == 1 else rev


def _pseudo_ref(name: str) -> list[str]:
    """NAME itself where git looks for it before any ref: HEAD, FETCH_HEAD, ORIG_HEAD."""
    return [name] if _PSEUDO_REF.fullmatch(name) else []


def _abbreviated_id(root: Path, name: str) -> list[str]:
    """NAME as an abbreviated object id, where it is one."""
    if not (_HEX.fullmatch(name) and len(name) >= _SHORTEST_ABBREVIATION):
        return []
    objects = _git(root, "rev-parse", f"--disambiguate={name}").split()
    return [f"the abbreviated object id {name}"] if objects else []


def _leading_name(rev: str) -> tuple[str, str]:
    """The name REV starts with (`@` is HEAD) and what follows it."""
    end = _NAME_END.search(rev)
    name = rev[: end.start()] if end else rev
    return ("HEAD" if name == "@" else name), rev[len(name) :]


def _existing_refs(root: Path, names: Sequence[str]) -> list[str]:
    """Those of NAMES that are refs, in the order given."""
    listed = _git(root, "for-each-ref", "--format=%(refname)", "--end-of-options", *names)
    present = set(listed.splitlines())
    return [name for name in names if name in present]


def merge_base(root: Path, first: str, second: str) -> str | None:
    """The best common ancestor of two commits, or None when their histories (as far as this
    clone holds them) never meet."""
    args = ["merge-base", "--end-of-options", first, second]
    done = _run_git(root, args)
    if done.returncode == 1 and not done.stdout.strip():
        return None
    if done.returncode != 0:
        raise _failure(root, args, done)
    return _decode(done.stdout).strip()


def _descends_from(root: Path, descendant: str, ancestor: str) -> bool:
    """Whether the commit ANCESTOR is DESCENDANT or one of its ancestors (both full ids)."""
    args = ["merge-base", "--is-ancestor", "--end-of-options", ancestor, descendant]
    done = _run_git(root, args)
    if done.returncode not in (0, 1):
        raise _failure(root, args, done)
    return done.returncode == 0


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
    """Paths under PATHSPECS that differ from BASE in the work tree, or are new and not ignored.

    But for the files of an untracked virtual environment (a folder below ROOT whose
    `pyvenv.cfg` git does not track): the job made it, as `adopting.md` has a `.venv` made in
    the checkout, and no change brings an untracked file. Its tracked files still count.
    """
    return changed_and_untracked(root, base, pathspecs)[0]


def changed_and_untracked(
    root: Path, base: str, pathspecs: Sequence[str]
) -> tuple[list[str], list[str]]:
    """`changed_paths`, and those of them git does not track."""
    if not pathspecs:
        return [], []
    _refuse_option_like(base)
    # Diffing BASE against the work tree covers committed, staged, unstaged and deleted files.
    diff = ["diff", "--name-only", "-z", "--no-renames", "--relative", "--no-color"]
    tracked = _git(root, *diff, "--no-ext-diff", base, "--", *pathspecs)
    untracked = _nul_split(
        _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *pathspecs)
    )
    venvs = tuple(path.removesuffix(_VENV_CONFIG) for path in untracked if _is_venv_config(path))
    new = [path for path in untracked if not path.startswith(venvs)] if venvs else untracked
    paths = set(_nul_split(tracked)).union(new)
    changed = sorted(path for path in paths if not _is_cache(path))
    return changed, sorted(path for path in new if not _is_cache(path))


_VENV_CONFIG = "pyvenv.cfg"


def _is_venv_config(path: str) -> bool:
    """A `pyvenv.cfg` in a folder below ROOT; one at ROOT would make all of it an installation."""
    return path.endswith(f"/{_VENV_CONFIG}")


def under_pathspecs(paths: Iterable[str], pathspecs: Sequence[str]) -> list[str]:
    """The PATHS that literal PATHSPECS select, as `changed_paths` would have git select them:
    a pathspec is a clean path relative to ROOT (as pins hold them), and selects itself and
    everything under it; with a trailing '/', only what is under it."""
    exact = {spec for spec in pathspecs if not spec.endswith("/")}
    folders = tuple(spec if spec.endswith("/") else spec + "/" for spec in pathspecs)
    return sorted(path for path in paths if path in exact or path.startswith(folders))


def changed_since(root: Path, base: str, path: Path) -> list[str]:
    """What differs from BASE under PATH (a pin file or the pins folder), relative to the top.

    The one rule behind "a pin changed against the base" (merge row 4, flake-observe
    precondition 6): committed, staged, unstaged, deleted or new-and-not-ignored all count.
    PATH is as the command line gave it; one outside the work tree is refused.
    """
    top = work_tree_top(root)
    base_commit = resolve_base_commit(top, base)
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
    return _descends_from(root, resolve_commit(root, descendant), ancestor_id)


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


def working_blob_ids(root: Path, paths: Sequence[str], *, raw: bool = False) -> dict[str, str]:
    """The blob id `git add` would give each of PATHS that is a regular file under ROOT; with
    RAW, the id of its bytes as they are.

    Through the filters the attributes name, as `git diff` compares: a checkout that turns
    LF into CRLF (`eol=crlf`), or a Git LFS pointer into its file, leaves a file whose raw
    bytes differ from its blob, and a raw comparison would take every such file for one
    changed (and, where `git diff` listed it unchanged before a run, for one the run edited).
    """
    present = [p for p in paths if (root / p).is_file() and not (root / p).is_symlink()]
    filters = ["--no-filters"] if raw else []
    # --stdin-paths reads one name per line; absolute names read the same in every git version.
    by_line = [p for p in present if "\n" not in p]
    blob_ids: dict[str, str] = {}
    if by_line:
        names = b"".join(os.fsencode((root / p).absolute()) + b"\n" for p in by_line)
        ids = _git(root, "hash-object", *filters, "--stdin-paths", stdin=names).split()
        blob_ids.update(zip(by_line, ids, strict=True))
    for path in (p for p in present if "\n" in p):
        blob_ids[path] = _git(root, "hash-object", *filters, "--", path).strip()
    return blob_ids


def paths_differing_from(root: Path, rev: str, paths: Sequence[str]) -> list[str]:
    """Those of PATHS whose working bytes differ from REV's (absent on one side only counts).

    Raw bytes, unfiltered: the fixture digest is taken over them, so a fixture that a checkout
    turned to CRLF is one that moved.
    """
    wanted = sorted(set(paths))
    if not wanted:
        return []
    at_rev = blob_ids_at(root, rev, wanted)
    in_work_tree = working_blob_ids(root, wanted, raw=True)
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


def ignored_among(root: Path, paths: Sequence[str]) -> set[str]:
    """Those of PATHS (relative to ROOT) that git does not track and ignores."""
    found: set[str] = set()
    listing = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--"]
    wanted = sorted(set(paths))
    # In slices: the paths are command-line arguments (literal pathspecs).
    for start in range(0, len(wanted), 500):
        found.update(_nul_split(_git(root, *listing, *wanted[start : start + 500])))
    # A folder among PATHS lists the ignored files under it; only PATHS themselves are asked.
    return found & set(wanted)
