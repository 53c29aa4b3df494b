"""`properties --junit-xml`: a report is evidence only when this run wrote it.

Before the command: the report path may not be tracked by git, nor be a folder, lie among
the fixtures or directly in ROOT (nor, as `outputs` checks, be a pin or another output); its
folder is emptied (`report_folder.py` says of what), and a probe file there reads the file
system's clock. After it: pytest must not have run (it has the plugin); the report must
exist, be a regular file with one link, and be created and modified after the probe, so that
neither a file left there nor a copy that kept an older file's times passes; the timestamps
the runner wrote inside must not predate the start either. Its statuses then stand for any
exit code the runner may give for failing tests, except the few that mean "the command could
not run" (`docs/runners.md` states the rule).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from three_ledger import git
from three_ledger.errors import InfraFailure, Refused
from three_ledger.frozen import frozen
from three_ledger.junit_report import MAX_JUNIT_BYTES, parse_report
from three_ledger.ledgers import FileEntry
from three_ledger.paths import is_under
from three_ledger.results import TestResult
from three_ledger.run import report_folder
from three_ledger.vocabulary import Outcome

# Runners write timestamps to the second, truncated (mocha-junit-reporter, jest-junit,
# gotestsum), from the same clock as the gate's: a suite that starts in the second the command
# started may be stamped up to a second before it. Twice that, for a clock read a little late.
TIMESTAMP_SLACK_NS = 2_000_000_000
# jest-junit stamps a test file that failed to load with the Unix epoch: no time at all.
_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)
# Codes that say the command did not run, from the namespace launcher (`network_namespace`)
# and from shells; a runner that happens to exit with one cannot be told apart.
RESERVED_EXITS = {
    125: "the sandbox's trampoline refused to run the command (a namespace was not made)",
    126: "the command could not be executed",
    127: "the command was not found",
}


@frozen
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


@frozen
class Start:
    """When the command started: by the machine's clock, which the runner's timestamps
    follow, and by the clock of the file system the report lands on, which stamps the report
    (read from a probe file made in the report's folder just before the command)."""

    wall_ns: int
    file_ns: int


def prepare(
    given: Path, root: Path, fixtures_dirs: tuple[str, ...], outputs: Iterable[Path]
) -> ReportPlace:
    """Refuse an unusable report path (exit 2), then empty the report's folder.

    The output guards (`outputs.refuse_unwritable`) have already kept it off the pins and
    the gate's other outputs; OUTPUTS (`--out`, `--log`) may not share its folder either.
    Returns the place, for `read_after_run` once the command exits.
    """
    place = ReportPlace(given, Path(os.path.abspath(given)), root)
    refuse_unusable(place, fixtures_dirs, outputs)
    return empty_folder(place)


def refuse_unusable(
    place: ReportPlace, fixtures_dirs: tuple[str, ...], outputs: Iterable[Path] = ()
) -> None:
    where = place.label
    if place.absolute.is_dir() and not place.absolute.is_symlink():
        raise Refused(f"--junit-xml {where} is a folder, not a report file")
    for folder in fixtures_dirs:
        if _inside_fixtures(place, folder):
            raise Refused(f"--junit-xml {where} lies in the fixtures folder {folder!r}")
    if git.is_tracked(place.root, place.absolute):
        raise Refused(
            f"--junit-xml {where} is tracked by git: a committed report is not evidence of "
            "this run; write the report to an untracked path (and list it in .gitignore)"
        )
    report_folder.refuse_shared_folder(where, place.absolute, place.root, outputs)


def _inside_fixtures(place: ReportPlace, fixtures_dir: str) -> bool:
    relative = place.ledger_path()
    return not relative.startswith("../") and is_under(relative, fixtures_dir)


def empty_folder(place: ReportPlace) -> ReportPlace:
    """Remove what an earlier run left in the report's folder, so that only this run can fill
    it; refused (exit 2, nothing removed) when the folder holds what the gate may not remove."""
    stale = report_folder.disposable_files(place.label, place.absolute, place.root)
    report_folder.remove(place.label, stale)
    return replace(place, removed_stale=place.absolute in stale)


def started(place: ReportPlace) -> Start:
    """The clocks every report of this run must not predate, read just before the command.

    The report's folder is made if missing (node's test runner does not make it), and a probe
    file there, removed at once, gives the file system's own clock: the report is stamped by
    it, to its granularity, and a network file system's clock may differ from the machine's.
    """
    folder = place.absolute.parent
    probe = folder / f".three-ledger-clock-{os.urandom(6).hex()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            status = os.fstat(descriptor)
        finally:
            os.close(descriptor)
            os.unlink(probe)
    except OSError as error:
        raise InfraFailure(
            f"{place.label}: cannot write in the report's folder before the run "
            f"({error.strerror}); no property ledger written"
        ) from None
    return Start(time.time_ns(), min(status.st_mtime_ns, status.st_ctime_ns))


def refuse_pytest(seen: Path, log_path: Path) -> None:
    """InfraFailure when pytest loaded the staged plugin during the run (`plugin/presence.py`).

    pytest is scored through its plugin, with the tripwire and the measured harness; its own
    `--junit-xml` report has neither.
    """
    try:
        lines = seen.read_text("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return
    except OSError as error:
        raise InfraFailure(f"{seen}: {error.strerror}; no property ledger written") from None
    raise InfraFailure(
        "pytest ran under --junit-xml: use the plugin (drop --junit-xml: the gate reads "
        "pytest's results through its plugin, with the tripwire and the harness it measures); "
        f"no property ledger written (log: {log_path})",
        [_pytest_seen(line) for line in lines[:3]],
    )


def _pytest_seen(line: str) -> str:
    try:
        record = json.loads(line)
        version, argv = str(record["pytest"]), [str(word) for word in record["argv"]]
    except (ValueError, KeyError, TypeError):
        return "pytest loaded the plugin"
    return f"pytest {version} loaded the plugin, with the arguments {argv}"


def read_after_run(
    place: ReportPlace, start: Start, exit_code: int, log_path: Path
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
    data = fresh_bytes(place, start, log_path)
    reading = parse_report(place.label, data, place.root)
    refuse_earlier_stamps(place.label, reading.timestamps, start)
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


def fresh_bytes(place: ReportPlace, start: Start, log_path: Path) -> bytes:
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
    _refuse_unfresh(label, status, start)
    return _read_same_file(label, place.absolute, status)


def _refuse_unfresh(label: str, status: os.stat_result, start: Start) -> None:
    if stat.S_ISLNK(status.st_mode):
        raise InfraFailure(f"{label}: a symbolic link, not a report this run wrote")
    if not stat.S_ISREG(status.st_mode):
        raise InfraFailure(f"{label}: not a regular file")
    if status.st_nlink != 1:
        raise InfraFailure(
            f"{label}: has {status.st_nlink} hard links, so it is not a report this run wrote"
        )
    # The change time cannot be set from user space: a file made or moved into place before
    # the probe keeps an earlier one. A copy made during the run (`cp -p old.xml`) has a new
    # change time but may keep the old modification time: that is refused too.
    if status.st_ctime_ns < start.file_ns:
        raise InfraFailure(
            f"{label}: created {_age(start.file_ns - status.st_ctime_ns)} before the command "
            "started, so it is not a report this run wrote"
        )
    if status.st_mtime_ns < start.file_ns:
        raise InfraFailure(
            f"{label}: dated {_age(start.file_ns - status.st_mtime_ns)} before the command "
            "started (a copy that kept an older file's times?), so it is not a report this run "
            "wrote"
        )
    if status.st_size > MAX_JUNIT_BYTES:
        raise InfraFailure(f"{label}: {status.st_size} bytes, over the 64 MiB limit")


def _age(nanoseconds: int) -> str:
    seconds = nanoseconds / 1e9
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.0f} s"


def refuse_earlier_stamps(label: str, stamps: Sequence[str], start: Start) -> None:
    """InfraFailure when a timestamp the runner wrote in the report predates the command.

    A stamp without a time zone is read both as local time and as UTC, and the later reading
    counts: pytest 7 writes local time without a zone, mocha-junit-reporter and jest-junit
    write UTC without one. Stamps that cannot be read, and the Unix epoch, say nothing.
    """
    earliest = start.wall_ns - TIMESTAMP_SLACK_NS
    for stamp in stamps:
        instant = stamp_ns(stamp)
        if instant is not None and instant < earliest:
            raise InfraFailure(
                f"{label}: its timestamp {stamp!r} is {_age(start.wall_ns - instant)} before "
                "the command started, so it is not a report this run wrote"
            )


def stamp_ns(stamp: str) -> int | None:
    """The latest instant STAMP (ISO 8601 or RFC 1123) can mean, in ns; None if it says none."""
    text = stamp.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    readings: list[datetime | None] = (
        [moment] if moment.tzinfo else [moment.replace(tzinfo=UTC), _local(moment)]
    )
    if readings[0] == _NO_TIME:
        return None
    return max(int(reading.timestamp() * 1e9) for reading in readings if reading is not None)


def _local(moment: datetime) -> datetime | None:
    try:
        return moment.astimezone()
    except (OverflowError, OSError, ValueError):  # a year the platform's clock cannot place
        return None


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
