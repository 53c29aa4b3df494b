"""`three-ledger draft-pin`: print a first fixture pin for an existing fixtures folder (SPEC 4.7).

The draft is printed, never written: only a person's review turns it into a pin.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from three_ledger import git, jsonio
from three_ledger.digest import REGULAR_FILE, hash_files, is_real_directory, walk_entries
from three_ledger.errors import GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.hints import shown_path
from three_ledger.paths import casefold_twins, path_problem, printable

# How many paths a warning names before it only counts.
_NAMED = 5
REVIEW_NOTE = (
    "this is a draft, not a pin: it becomes a pin only after a person has read every path "
    "and committed it in a commit of its own"
)


def draft_pin(
    *, fixtures_dir: str, root: Path, pin_id: str, with_digest: bool, tracked_only: bool = False
) -> int:
    try:
        folder = _checked_folder(fixtures_dir, root)
        untracked = _untracked(root, folder, required=tracked_only)
        left_out = untracked if tracked_only else GitStates((), ())
        document = draft_document(
            folder, root, pin_id, with_digest=with_digest, leave_out=left_out.all()
        )
    except GateError as exc:
        exc.notes.append(REVIEW_NOTE)
        raise
    sys.stdout.write(jsonio.dumps(document))
    count = len(document["files"])
    print(f"three-ledger: drafted a fixture pin of {count} files", file=sys.stderr)
    for line in _git_warnings(shown_path(root / folder), untracked, tracked_only):
        print(f"three-ledger: {line}", file=sys.stderr)
    print(f"three-ledger: {REVIEW_NOTE}", file=sys.stderr)
    return ExitCode.OK


def draft_document(
    fixtures_dir: str,
    root: Path,
    pin_id: str,
    *,
    with_digest: bool,
    leave_out: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A fixture pin listing every regular file under ROOT/fixtures_dir, keys as in SPEC 3.1.

    Paths in LEAVE_OUT (files git does not track, with --tracked-only) are not listed.
    """
    _refuse_bad_pin_id(pin_id)
    folder = _checked_folder(fixtures_dir, root)
    files, offenders = survey(root, folder, leave_out)
    if offenders:
        raise Refused(
            f"{folder}: {len(offenders)} entries cannot be pinned (digest would refuse them)",
            offenders,
        )
    if not files:
        raise Refused(f"{folder}: holds no file, and a fixture pin lists at least one")
    document: dict[str, Any] = {"pin_id": pin_id, "algorithm": "sha256", "fixtures_dir": folder}
    if with_digest:
        document["digest"] = hash_files(root, files).digest
    document["files"] = files
    return document


def _checked_folder(fixtures_dir: str, root: Path) -> str:
    folder = fixtures_dir.rstrip("/") or fixtures_dir
    problem = path_problem(folder)
    if problem is not None:
        raise Refused(f"--fixtures-dir {fixtures_dir!r} {problem}")
    if not is_real_directory(root, folder):
        raise Refused(f"{folder}: fixtures folder is missing or not a plain folder under {root}")
    return folder


def survey(
    root: Path, folder: str, leave_out: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """The pinnable files under ROOT/folder in digest order, and every offender, sorted."""
    files: list[str] = []
    offenders: list[str] = []
    for shown, kind in walk_entries(root / folder, folder):
        if shown in leave_out:
            continue
        if kind != REGULAR_FILE:
            offenders.append(f"{printable(shown)}: {kind}")
        elif (problem := path_problem(shown)) is not None:
            offenders.append(f"{printable(shown)}: {problem}")
        else:
            files.append(shown)
    offenders.extend(
        f"{first} and {second}: differ only in case (one file on a case-insensitive filesystem)"
        for first, second in casefold_twins(sorted(files))
    )
    return sorted(files), sorted(offenders)


@dataclass(frozen=True)
class GitStates:
    """The files under the folder that git does not track: ignored, and merely untracked."""

    ignored: tuple[str, ...]
    untracked: tuple[str, ...]

    def all(self) -> frozenset[str]:
        return frozenset((*self.ignored, *self.untracked))


def _untracked(root: Path, folder: str, *, required: bool) -> GitStates:
    """What git does not track under ROOT/folder; empty outside git, unless REQUIRED."""
    try:
        return GitStates(
            tuple(git.untracked_files(root, folder, ignored=True)),
            tuple(git.untracked_files(root, folder, ignored=False)),
        )
    except Refused as exc:
        if required:
            raise Refused(f"--tracked-only needs git: {exc.message}", exc.details) from None
        return GitStates((), ())


def _git_warnings(folder: str, states: GitStates, tracked_only: bool) -> list[str]:
    """What a clean checkout (CI) will not have, and so a pin must not list."""
    if tracked_only:
        count = len(states.all())
        return [f"left out {count} files git does not track (--tracked-only)"] if count else []
    lines = []
    if states.ignored:
        lines.append(
            f"warning: {_files(states.ignored)} ignored by git ({_named(states.ignored)}): a "
            "clean checkout, as in CI, will not have them and digest will refuse this pin "
            f"there; draft with --tracked-only, or remove them: `git clean -X -- {folder}`"
        )
    if states.untracked:
        lines.append(
            f"warning: {_files(states.untracked)} untracked ({_named(states.untracked)}): "
            "commit them with the pin, or draft with --tracked-only"
        )
    return lines


def _files(paths: Sequence[str]) -> str:
    return "1 drafted file is" if len(paths) == 1 else f"{len(paths)} drafted files are"


def _named(paths: Sequence[str]) -> str:
    more = len(paths) - _NAMED
    return ", ".join(paths[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def _refuse_bad_pin_id(pin_id: str) -> None:
    # The pattern comes from the shipped schema, so the draft and the pin loader cannot disagree.
    pattern = jsonio.load_schema("fixture-pin")["properties"]["pin_id"]["pattern"]
    if re.fullmatch(pattern, pin_id) is None:
        raise Refused(f"--pin-id {pin_id!r} is not a valid pin id: it must match {pattern}")
