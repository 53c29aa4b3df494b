"""Progress lines: one per event, a heartbeat after silence, none under --quiet."""

from __future__ import annotations

import io
import time

from three_ledger.progress import Progress


def test_a_step_says_it_started_and_nothing_more_when_it_is_quick() -> None:
    stream = io.StringIO()
    reporter = Progress("vet", stream)
    with reporter.running("run 1"):
        pass
    reporter.say("run 1: exit 0 in 0.1 s")
    assert stream.getvalue() == "vet: run 1 ...\nvet: run 1: exit 0 in 0.1 s\n"


def test_silence_longer_than_the_heartbeat_gets_a_line_of_its_own() -> None:
    stream = io.StringIO()
    reporter = Progress("gate", stream)
    reporter.heartbeat_s = 0.2
    with reporter.running("properties A"):
        time.sleep(0.5)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "gate: properties A ..."
    beats = [line for line in lines[1:] if line.startswith("gate: still running properties A (")]
    assert beats
    assert beats == lines[1:]


def test_a_line_stays_one_short_line() -> None:
    stream = io.StringIO()
    Progress("properties", stream).say("the command: python -c '\nimport os\n" + "x" * 300)
    (line,) = stream.getvalue().splitlines()
    assert line.startswith("properties: the command: python -c '\\nimport os\\nxxx")
    assert len(line) == 200
    assert line.endswith("…")


def test_quiet_says_nothing_not_even_a_heartbeat() -> None:
    stream = io.StringIO()
    reporter = Progress("vet", stream, quiet=True)
    reporter.heartbeat_s = 0.1
    with reporter.running("run 1"):
        time.sleep(0.3)
    reporter.say("run 1: exit 0")
    assert stream.getvalue() == ""
