"""`three-ledger draft-pin`: print a first fixture pin for an existing fixtures folder (SPEC 4.7).

The draft is printed, never written: only a person's review turns it into a pin.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from three_ledger import jsonio
from three_ledger.digest import REGULAR_FILE, hash_files, is_real_directory, walk_entries
from three_ledger.errors import GateError, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.paths import casefold_twins, path_problem, printable

REVIEW_NOTE = (
    "this is a draft, not a pin: it becomes a pin only after a person has read every path "
    "and committed it in a commit of its own"
)


def draft_pin(*, fixtures_dir: str, root: Path, pin_id: str, with_digest: bool) -> int:
    try:
        document = draft_document(fixtures_dir, root, pin_id, with_digest=with_digest)
    except GateError as exc:
        exc.notes.append(REVIEW_NOTE)
        raise
    sys.stdout.write(jsonio.dumps(document))
    count = len(document["files"])
    print(f"three-ledger: drafted a fixture pin of {count} files", file=sys.stderr)
    print(f"three-ledger: {REVIEW_NOTE}", file=sys.stderr)
    return ExitCode.OK


def draft_document(
    fixtures_dir: str, root: Path, pin_id: str, *, with_digest: bool
) -> dict[str, Any]:
    """A fixture pin listing every regular file under ROOT/fixtures_dir, keys as in SPEC 3.1."""
    _refuse_bad_pin_id(pin_id)
    folder = fixtures_dir.rstrip("/") or fixtures_dir
    problem = path_problem(folder)
    if problem is not None:
        raise Refused(f"--fixtures-dir {fixtures_dir!r} {problem}")
    if not is_real_directory(root, folder):
        raise Refused(f"{folder}: fixtures folder is missing or not a plain folder under {root}")
    files, offenders = survey(root, folder)
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


def survey(root: Path, folder: str) -> tuple[list[str], list[str]]:
    """The pinnable files under ROOT/folder in digest order, and every offender, sorted."""
    files: list[str] = []
    offenders: list[str] = []
    for shown, kind in walk_entries(root / folder, folder):
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


def _refuse_bad_pin_id(pin_id: str) -> None:
    # The pattern comes from the shipped schema, so the draft and the pin loader cannot disagree.
    pattern = jsonio.load_schema("fixture-pin")["properties"]["pin_id"]["pattern"]
    if re.fullmatch(pattern, pin_id) is None:
        raise Refused(f"--pin-id {pin_id!r} is not a valid pin id: it must match {pattern}")
