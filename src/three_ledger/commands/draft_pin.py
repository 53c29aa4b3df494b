"""`three-ledger draft-pin`: print a first fixture pin for an existing fixtures folder (SPEC 4.7).

The draft is printed, never written: only a person's review turns it into a pin.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from three_ledger import git, jsonio
from three_ledger.digest import hash_files, is_real_directory, walk_entries
from three_ledger.errors import GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.file_kinds import REGULAR_FILE
from three_ledger.frozen import frozen
from three_ledger.hints import shown_path
from three_ledger.paths import casefold_twins, path_problem, printable
from three_ledger.pins import folder_overlaps
from three_ledger.test_changes import CONFTEST, layout_in_tree

# How many paths a warning names before it only counts.
_NAMED = 5
REVIEW_NOTE = (
    "this is a draft, not a pin: it becomes a pin only after a person has read every path "
    "and committed it in a commit of its own"
)


def draft_pin(
    *,
    fixtures_dirs: Sequence[str],
    root: Path,
    pin_id: str,
    with_digest: bool,
    tracked_only: bool = False,
) -> int:
    try:
        folders = checked_folders(fixtures_dirs, root)
        untracked = untracked_states(root, folders, required=tracked_only)
        left_out = untracked if tracked_only else GitStates((), ())
        document = draft_document(
            folders, root, pin_id, with_digest=with_digest, leave_out=left_out.all()
        )
    except GateError as exc:
        exc.notes.append(REVIEW_NOTE)
        raise
    sys.stdout.write(jsonio.dumps(document))
    count = len(document["files"])
    files = "1 file" if count == 1 else f"{count} files"
    print(f"three-ledger: drafted a fixture pin of {files}", file=sys.stderr)
    for line in git_warnings(root, folders, untracked, tracked_only):
        print(f"three-ledger: {line}", file=sys.stderr)
    warning = test_code_warning(root, document["files"])
    if warning is not None:
        print(f"three-ledger: {warning}", file=sys.stderr)
    print(f"three-ledger: {REVIEW_NOTE}", file=sys.stderr)
    return ExitCode.OK


def draft_document(
    folders: Sequence[str],
    root: Path,
    pin_id: str,
    *,
    with_digest: bool,
    leave_out: frozenset[str] = frozenset(),
    listed: bool | None = None,
) -> dict[str, Any]:
    """A fixture pin listing every regular file under each of ROOT/FOLDERS, keys as in SPEC
    3.1: one folder as `fixtures_dir`, several (or LISTED) as `fixtures_dirs`.

    Paths in LEAVE_OUT (files git does not track, with --tracked-only) are not listed.
    """
    _refuse_bad_pin_id(pin_id)
    folders = checked_folders(folders, root)
    files: list[str] = []
    for folder in folders:
        found, offenders = survey(root, folder, leave_out)
        if offenders:
            raise Refused(
                f"{folder}: {len(offenders)} entries cannot be pinned (digest would refuse them)",
                offenders,
            )
        if not found:
            raise Refused(f"{folder}: holds no file to pin; leave the folder out of the pin")
        files += found
    document: dict[str, Any] = {"pin_id": pin_id, "algorithm": "sha256"}
    if listed or (listed is None and len(folders) > 1):
        document["fixtures_dirs"] = list(folders)
    else:
        document["fixtures_dir"] = folders[0]
    files.sort()
    if with_digest:
        document["digest"] = hash_files(root, files).digest
    document["files"] = files
    return document


def checked_folders(given: Sequence[str], root: Path) -> tuple[str, ...]:
    """Each --fixtures-dir as a pin writes it, refused unless it follows the path rules, is a
    plain folder under ROOT and neither holds nor lies in another."""
    folders = tuple(_checked_folder(folder, root) for folder in given)
    for inner, outer in folder_overlaps(folders):
        raise Refused(
            f"--fixtures-dir {folders[inner]!r} overlaps --fixtures-dir {folders[outer]!r}: "
            "each folder of a pin is closed on its own, so no folder may hold another"
        )
    return folders


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


@frozen
class GitStates:
    """The files under the folder that git does not track: ignored, and merely untracked."""

    ignored: tuple[str, ...]
    untracked: tuple[str, ...]

    def all(self) -> frozenset[str]:
        return frozenset((*self.ignored, *self.untracked))


def untracked_states(root: Path, folders: Sequence[str], *, required: bool) -> GitStates:
    """What git does not track under each of ROOT/FOLDERS; empty outside git, unless REQUIRED."""
    try:
        return GitStates(
            tuple(p for f in folders for p in git.untracked_files(root, f, ignored=True)),
            tuple(p for f in folders for p in git.untracked_files(root, f, ignored=False)),
        )
    except Refused as exc:
        if required:
            raise Refused(f"--tracked-only needs git: {exc.message}", exc.details) from None
        return GitStates((), ())


def git_warnings(
    root: Path, folders: Sequence[str], states: GitStates, tracked_only: bool
) -> list[str]:
    """What a clean checkout (CI) will not have, and so a pin must not list."""
    folder = " ".join(shown_path(root / each) for each in folders)
    if tracked_only:
        count = len(states.all())
        files = "file" if count == 1 else "files"
        return [f"left out {count} {files} git does not track (--tracked-only)"] if count else []
    lines = []
    if states.ignored:
        lines.append(
            f"warning: {_files(states.ignored)} ignored by git ({_named(states.ignored)}): a "
            "clean checkout, as in CI, will not have them and digest will refuse this pin "
            f"there; draft with --tracked-only, or remove them: `git clean -fX -- {folder}`"
        )
    if states.untracked:
        lines.append(
            f"warning: {_files(states.untracked)} untracked ({_named(states.untracked)}): "
            "commit them with the pin, or draft with --tracked-only"
        )
    return lines


def test_code_warning(root: Path, files: Sequence[str]) -> str | None:
    """A warning naming the drafted files that are test code: the modules pytest would collect
    under ROOT's pytest settings, and `conftest.py` files. Pinned, they are fixture bytes, and
    an edit to one moves the digest: the gate rejects it (row 1) where, outside the pin, it
    would go to the test owners as a test change. None when the draft holds no test code."""
    layout = layout_in_tree(root)
    code = [
        path for path in files if PurePosixPath(path).name == CONFTEST or layout.would_collect(path)
    ]
    if not code:
        return None
    return (
        f"warning: {_files(code)} test code by pytest's settings, a conftest.py or a module "
        f"its python_files match ({_named(code)}): pinned, an edit to one moves the fixture "
        "digest and the gate rejects the change (row 1), where a change to tests outside the "
        "pin goes to their owners; draft folders that hold data only (a sample named like a "
        "test that your conftest keeps pytest from collecting is data: then ignore this)"
    )


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
