"""Tests for run/junit_evidence.py's clocks: a report is this run's by its file times and by
the timestamps its runner wrote (real files, and the reports real runners wrote)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers import REPO
from three_ledger.errors import InfraFailure
from three_ledger.junit_report import parse_report
from three_ledger.run.junit_evidence import (
    TIMESTAMP_SLACK_NS,
    ReportPlace,
    Start,
    fresh_bytes,
    refuse_earlier_stamps,
    stamp_ns,
    started,
)

DATA = REPO / "tests" / "data" / "junit"
# When tests/data/junit/suites/capture.sh ran the runners, in UTC.
CAPTURED = datetime(2026, 11, 30, 15, 26, 0, tzinfo=UTC)


def ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1e9)


def test_every_stamp_a_recorded_runner_wrote_is_read_as_the_minutes_they_ran() -> None:
    stamps = [
        stamp
        for path in sorted(DATA.glob("*.xml"))
        # Refused as a whole: node's tally counts a failure it did not write (no stamps).
        if path.name != "node-test-own-failure-junit.xml"
        for stamp in parse_report(path.name, path.read_bytes()).timestamps
    ]
    assert len(stamps) == 36  # mocha-junit-reporter, jest-junit, vitest, xunit, gotestsum
    instants = [stamp_ns(stamp) for stamp in stamps]
    # jest-junit's stamp for a file that did not load is the Unix epoch: no time at all.
    assert instants.count(None) == 1
    for stamp, instant in zip(stamps, instants, strict=True):
        if instant is not None:
            assert 0 <= instant - ns(CAPTURED) < 120 * 10**9, stamp


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-11-30T15:27:19Z", datetime(2026, 11, 30, 15, 27, 19, tzinfo=UTC)),
        ("2026-11-30T15:27:19.323Z", datetime(2026, 11, 30, 15, 27, 19, 323000, tzinfo=UTC)),
        ("2026-11-30T17:27:19+02:00", datetime(2026, 11, 30, 15, 27, 19, tzinfo=UTC)),
        ("Mon, 30 Nov 2026 15:26:48 GMT", datetime(2026, 11, 30, 15, 26, 48, tzinfo=UTC)),
        ("1970-01-01T00:00:00", None),
        ("1970-01-01T00:00:00Z", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_stamp_readings(stamp: str, expected: datetime | None) -> None:
    assert stamp_ns(stamp) == (None if expected is None else ns(expected))


def test_a_stamp_without_a_zone_counts_at_the_later_of_local_time_and_utc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # East of Greenwich, mocha-junit-reporter's UTC stamp read as local time would be hours
    # early, and an honest report refused.
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert stamp_ns("2026-11-30T15:27:19") == ns(datetime(2026, 11, 30, 15, 27, 19, tzinfo=UTC))
        monkeypatch.setenv("TZ", "America/New_York")
        time.tzset()
        assert stamp_ns("2026-11-30T10:27:19") == ns(datetime(2026, 11, 30, 15, 27, 19, tzinfo=UTC))
    finally:
        monkeypatch.undo()
        time.tzset()


def test_stamps_within_the_slack_pass_and_earlier_ones_are_named() -> None:
    start = Start(wall_ns=ns(datetime(2026, 11, 30, 15, 27, 20, 500000, tzinfo=UTC)), file_ns=0)
    assert TIMESTAMP_SLACK_NS == 2 * 10**9
    # Truncated to the second, a suite that started with the command reads up to 1 s early.
    refuse_earlier_stamps("r.xml", ["2026-11-30T15:27:19Z", "1970-01-01T00:00:00", "?"], start)
    with pytest.raises(InfraFailure) as refused:
        refuse_earlier_stamps("r.xml", ["2026-11-30T15:27:20Z", "2026-11-30T15:27:18Z"], start)
    assert refused.value.message == (
        "r.xml: its timestamp '2026-11-30T15:27:18Z' is 2.500 s before the command started, so "
        "it is not a report this run wrote"
    )


def place(tmp_path: Path) -> ReportPlace:
    report = tmp_path / "reports" / "junit.xml"
    return ReportPlace(report, report, tmp_path)


def test_the_file_clock_is_read_in_the_report_folder_and_leaves_nothing(tmp_path: Path) -> None:
    report = place(tmp_path)
    before = time.time_ns()
    start = started(report)
    assert list(report.absolute.parent.iterdir()) == []  # made, and the probe removed
    assert before <= start.wall_ns <= time.time_ns()
    report.absolute.write_text("<testsuites/>")
    status = os.stat(report.absolute)
    assert start.file_ns <= min(status.st_mtime_ns, status.st_ctime_ns)
    assert fresh_bytes(report, start, tmp_path / "log") == b"<testsuites/>"


def test_a_file_created_before_the_command_started_is_refused(tmp_path: Path) -> None:
    report = place(tmp_path)
    report.absolute.parent.mkdir()
    report.absolute.write_text("<testsuites/>")
    made = os.stat(report.absolute).st_ctime_ns
    # As if the command had started after the file was made: its change time gives it away,
    # whatever its modification time says.
    os.utime(report.absolute, ns=(made + 10**9, made + 10**9))
    start = Start(wall_ns=time.time_ns(), file_ns=os.stat(report.absolute).st_ctime_ns + 5 * 10**8)
    with pytest.raises(InfraFailure) as refused:
        fresh_bytes(report, start, tmp_path / "log")
    assert refused.value.message == (
        f"JUnit XML {report.absolute}: created 0.500 s before the command started, so it is not "
        "a report this run wrote"
    )
