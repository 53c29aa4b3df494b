"""`properties --junit-xml`: a report is evidence only when this run wrote it.

Before the command: the report path may not be tracked by git, nor be a folder or lie among
the fixtures (nor, as `outputs` checks, be a pin or another output); whatever file sits
there is removed. After it: the report must exist, be a regular file with one link, and be
no older than the run. Its statuses then stand for any exit code the runner may give for
failing tests, except the few that mean "the command could not run" (`docs/runners.md`
states the rule).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from three_ledger import git
from three_ledger.errors import InfraFailure, Refused
from three_ledger.junit_report import MAX_JUNIT_BYTES, parse_report
from three_ledger.ledgers import FileEntry
from three_ledger.paths import is_under
from three_ledger.results import TestResult
from three_ledger.vocabulary import Outcome

# File systems stamp files with a coarse clock, some to the second or two: allow that much.
TIMESTAMP_SLACK_NS = 2_000_000_000
# Codes that say the command did not run, from the namespace launcher (`network_namespace`)
# and from shells; a runner that happens to exit with one cannot be told apart.
RESERVED_EXITS = {
    125: "the network namespace launcher refused to run the command",
    126: "the command could not be executed",
    127: "the command was not found",
}


@dataclass(frozen=True)
class ReportPlace:
    """Where the report is expected: `given` as typed, `absolute` from the current directory."""

    given: Path
    absolute: Path
    root: Path
    # A file sat there before the run and was removed: said when no report follows.
    removed_stale: bool = False

    @property
    def label(self) -> str:
        """`JUnit XML /abs/path`, and where the path exists under --root instead, that too."""
        label = f"JUnit XML {self.absolute}"
        beside_root = Path(os.path.abspath(self.root / self.given))
        if not self.given.is_absolute() and beside_root != self.absolute and _exists(beside_root):
            label += (
                f" (not {beside_root}, which exists: --junit-xml is relative to the "
                "current directory, not to --root)"
            )
        return label

    def ledger_path(self) -> str:
        """The report's path relative to ROOT, as the ledger records it."""
        return Path(os.path.relpath(self.absolute, os.path.abspath(self.root))).as_posix()


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def prepare(given: Path, root: Path, fixtures_dir: str) -> ReportPlace:
    """Refuse an unusable report path (exit 2), then remove any file already there.

    The output guards (`outputs.refuse_unwritable`) have already kept it off the pins and
    the gate's other outputs. Returns the place, for `read_after_run` once the command exits.
    """
    place = ReportPlace(given, Path(os.path.abspath(given)), root)
    refuse_unusable(place, fixtures_dir)
    return remove_stale(place)


def refuse_unusable(place: ReportPlace, fixtures_dir: str) -> None:
    where = place.label
    if place.absolute.is_dir() and not place.absolute.is_symlink():
        raise Refused(f"--junit-xml {where} is a folder, not a report file")
    if _inside_fixtures(place, fixtures_dir):
        raise Refused(f"--junit-xml {where} lies in the fixtures folder {fixtures_dir!r}")
    if git.is_tracked(place.root, place.absolute):
        raise Refused(
            f"--junit-xml {where} is tracked by git: a committed report is not evidence of "
            "this run; write the report to an untracked path (and list it in .gitignore)"
        )


def _inside_fixtures(place: ReportPlace, fixtures_dir: str) -> bool:
    relative = place.ledger_path()
    return not relative.startswith("../") and is_under(relative, fixtures_dir)


def remove_stale(place: ReportPlace) -> ReportPlace:
    """Remove what an earlier run left at the report path, so that only this run can fill it."""
    try:
        os.unlink(place.absolute)
    except FileNotFoundError:
        return place
    except OSError as error:
        raise InfraFailure(
            f"{place.label}: cannot remove the file left there before the run "
            f"({error.strerror}); no property ledger written"
        ) from None
    return replace(place, removed_stale=True)


def started_at() -> int:
    """The clock reading every report of this run must not predate."""
    return time.time_ns()


def read_after_run(
    place: ReportPlace, started_ns: int, exit_code: int, log_path: Path
) -> tuple[list[TestResult], FileEntry]:
    """The results of a report this run wrote, and its ledger entry; else InfraFailure.

    Any exit code with a fresh, valid report means the runner ran (mocha exits with the
    number of failures), except RESERVED_EXITS.
    """
    if exit_code in RESERVED_EXITS:
        raise InfraFailure(
            f"the command exited {exit_code}: {RESERVED_EXITS[exit_code]}, or so the code "
            "says; with --junit-xml this code is an infrastructure failure whatever the report "
            f"holds; no property ledger written (log: {log_path})"
        )
    data = fresh_bytes(place, started_ns, log_path)
    reading = parse_report(place.label, data, place.root)
    for warning in reading.warnings:
        print(f"three-ledger: warning: {warning}", file=sys.stderr)
    if exit_code != 0 and not _any_failure(reading.results):
        print(
            f"three-ledger: note: the command exited {exit_code} but its report holds no "
            "failing testcase; the statuses come from the report (log: "
            f"{log_path})",
            file=sys.stderr,
        )
    digest = hashlib.sha256(data).hexdigest()
    return reading.results, FileEntry(place.ledger_path(), len(data), digest)


def _any_failure(results: list[TestResult]) -> bool:
    return any(result.outcome in (Outcome.FAIL, Outcome.ERROR) for result in results)


def fresh_bytes(place: ReportPlace, started_ns: int, log_path: Path) -> bytes:
    """The bytes of the report, once it is shown to be a regular file written by this run."""
    label = place.label
    try:
        status = os.lstat(place.absolute)
    except FileNotFoundError:
        stale = " (the file an earlier run left there was removed before the command)"
        raise InfraFailure(
            f"{label}: missing after the command{stale if place.removed_stale else ''}: the "
            "runner wrote no report (did it stop before its reporter ran, or write elsewhere?"
            f" log: {log_path})"
        ) from None
    except OSError as error:
        raise InfraFailure(f"{label}: {error.strerror}, so no results could be read") from None
    _refuse_unfresh(label, status, started_ns)
    return _read_same_file(label, place.absolute, status)


def _refuse_unfresh(label: str, status: os.stat_result, started_ns: int) -> None:
    if stat.S_ISLNK(status.st_mode):
        raise InfraFailure(f"{label}: a symbolic link, not a report this run wrote")
    if not stat.S_ISREG(status.st_mode):
        raise InfraFailure(f"{label}: not a regular file")
    if status.st_nlink != 1:
        raise InfraFailure(
            f"{label}: has {status.st_nlink} hard links, so it is not a report this run wrote"
        )
    oldest = min(status.st_mtime_ns, status.st_ctime_ns)
    if oldest < started_ns - TIMESTAMP_SLACK_NS:
        age_s = (started_ns - oldest) / 1e9
        raise InfraFailure(
            f"{label}: dated {age_s:.0f} s before the command started, so it is not a "
            "report this run wrote"
        )
    if status.st_size > MAX_JUNIT_BYTES:
        raise InfraFailure(f"{label}: {status.st_size} bytes, over the 64 MiB limit")


def _read_same_file(label: str, path: Path, checked: os.stat_result) -> bytes:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InfraFailure(f"{label}: {error.strerror}, so no results could be read") from None
    with os.fdopen(descriptor, "rb") as stream:
        opened = os.fstat(stream.fileno())
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise InfraFailure(f"{label}: replaced while it was being read")
        data = stream.read(MAX_JUNIT_BYTES + 1)
    if len(data) > MAX_JUNIT_BYTES:
        raise InfraFailure(f"{label}: over the 64 MiB limit")
    return data
