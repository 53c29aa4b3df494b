"""How a refusal says what to do: where the fixtures folder really is, what git makes of a
file the pin does not list. Each hint is best effort: when it cannot tell, it says nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from three_ledger import git
from three_ledger.bytecode import in_bytecode_cache
from three_ledger.errors import Refused

# How many paths a hint names before it only counts.
_NAMED = 5


def shown_path(path: Path) -> str:
    """PATH as the user would type it from the current folder."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive, on Windows
        return str(path)


def root_hint(root: Path, fixtures_dir: str, pin_source: Path) -> str | None:
    """Where FIXTURES_DIR does exist when it is missing under ROOT: the --root to give."""
    current = root.resolve()
    for candidate in _root_candidates(root, pin_source):
        folder = candidate / fixtures_dir
        if candidate != current and folder.is_dir() and not folder.is_symlink():
            where = shown_path(candidate)
            return (
                f"{fixtures_dir}/ exists under {where}: pinned paths are relative to --root "
                f"(here {shown_path(root)}), so give --root {where} (or run from {where})"
            )
    return None


def _root_candidates(root: Path, pin_source: Path) -> Iterable[Path]:
    """The folders a user likely meant: around the pin file, the current one, ROOT's parents."""
    pin_folder = pin_source.resolve().parent
    seen: set[Path] = set()
    for candidate in (pin_folder.parent, pin_folder, Path.cwd(), *root.resolve().parents):
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def annotate_unpinned(
    root: Path, folders: Sequence[str], problems: Sequence[str]
) -> tuple[list[str], list[str]]:
    """PROBLEMS with `(ignored by git)` or `(untracked)` after each unpinned file git does not
    track, and notes saying how to clean them; unchanged when git cannot tell."""
    unpinned = [
        problem.split(": unpinned ", 1)[0] for problem in problems if ": unpinned " in problem
    ]
    if not unpinned:
        return list(problems), []
    try:
        ignored = {p for f in folders for p in git.untracked_files(root, f, ignored=True)}
        untracked = {p for f in folders for p in git.untracked_files(root, f, ignored=False)}
    except Refused:
        return list(problems), []
    annotated = [_annotated(problem, ignored, untracked) for problem in problems]
    where = " ".join(shown_path(root / folder) for folder in folders)
    notes = _clean_notes(
        where, [p for p in unpinned if p in ignored], [p for p in unpinned if p in untracked]
    )
    return annotated, notes


def _annotated(problem: str, ignored: set[str], untracked: set[str]) -> str:
    path = problem.split(": unpinned ", 1)[0]
    if path in ignored:
        return f"{problem} (ignored by git)"
    if path in untracked:
        return f"{problem} (untracked)"
    return problem


def _clean_notes(folder: str, ignored: Sequence[str], untracked: Sequence[str]) -> list[str]:
    notes = _bytecode_notes(folder, ignored, untracked)
    ignored = [path for path in ignored if not in_bytecode_cache(path)]
    untracked = [path for path in untracked if not in_bytecode_cache(path)]
    if ignored:
        them = "it" if len(ignored) == 1 else "them"
        notes.append(
            f"ignored by git: {_named(ignored)}; a clean checkout, as in CI, will not have "
            f"{them}, so no pin may list {them}: remove {them} with `git clean -fX -- {folder}` "
            "(-n in place of -f lists what goes)"
        )
    if untracked:
        them = "it" if len(untracked) == 1 else "them"
        notes.append(
            f"untracked: {_named(untracked)}; commit and pin {them}, or remove {them} with "
            f"`git clean -f -- {folder}` (-n in place of -f lists what goes)"
        )
    return notes


def _bytecode_notes(folder: str, ignored: Sequence[str], untracked: Sequence[str]) -> list[str]:
    """Where unpinned bytecode came from: not from three-ledger's test runs, which keep theirs
    in a private folder, but from a Python run outside them (a local pytest, an earlier step)."""
    origin = (
        "three-ledger's test runs keep their bytecode outside the tree, so a Python run outside "
        "them wrote it (a local pytest, an earlier step of the job) when it imported from "
        "this folder"
    )
    notes = []
    ignored = [path for path in ignored if in_bytecode_cache(path)]
    untracked = [path for path in untracked if in_bytecode_cache(path)]
    if ignored:
        notes.append(
            f"bytecode ignored by git: {_named(ignored)}; {origin}; no pin may list it: remove "
            f"it with `git clean -fX -- {folder}` (-n in place of -f lists what goes)"
        )
    if untracked:
        notes.append(
            f"untracked bytecode: {_named(untracked)}; {origin}; remove it with `git clean -f -- "
            f"{folder}` (-n in place of -f lists what goes), and let git ignore `__pycache__/`"
        )
    return notes


def _named(paths: Sequence[str]) -> str:
    more = len(paths) - _NAMED
    return ", ".join(paths[:_NAMED]) + (f" and {more} more" if more > 0 else "")
