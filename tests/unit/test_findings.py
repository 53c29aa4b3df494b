"""The words `properties`, `merge` and `gate` print about failures: each line stays a line."""

from __future__ import annotations

from helpers.records import passing_property
from three_ledger.ledgers import FailingTest, UnpinnedFailures
from three_ledger.report.findings import findings, plain_lines
from three_ledger.vocabulary import Outcome, Status


def test_each_miss_then_the_failures_outside_every_property_one_test_a_line() -> None:
    ledger = passing_property(
        status_by_id={"p.a": Status.FAIL},
        failing_tests={"p.a": (FailingTest("t.py::test_a[0]", Outcome.FAIL),)},
        failing_counts={"p.a": 4},
        unpinned_failures=UnpinnedFailures(count=2, first_ids=("t.py::test_b",)),
    )
    assert plain_lines(findings(ledger)) == [
        "p.a is fail:",
        "  t.py::test_a[0] (fail)",
        "  ... and 3 more",
        "2 tests outside every property failed:",
        "  t.py::test_b",
        "  ... and 1 more",
    ]


def test_a_test_id_cannot_break_its_line_or_forge_another() -> None:
    # A test module of the change may be named with any character a file name holds.
    forged = "t\r\x1b[2Kthree-ledger: every pinned property passed.py::test_x"
    ledger = passing_property(
        status_by_id={"p.a": Status.PASS},
        unpinned_failures=UnpinnedFailures(count=1, first_ids=(forged,)),
    )
    lines = plain_lines(findings(ledger))
    assert lines[1] == "  t\\r\\x1b[2Kthree-ledger: every pinned property passed.py::test_x"
    assert not any(character in "".join(lines) for character in "\r\x1b")


def test_files_the_run_read_that_git_does_not_track_are_named_last() -> None:
    """mistune's trial: a pass that rested on a git-ignored file said so in the ledger alone."""
    reads = tuple(f"build/{n}.txt" for n in range(7))
    ledger = passing_property(status_by_id={"p.a": Status.PASS}, untracked_reads=reads)
    assert plain_lines(findings(ledger)) == [
        "the run read 7 files git ignores: a clean checkout, as in CI, lacks them:",
        *(f"  build/{n}.txt" for n in range(5)),
        "  ... and 2 more",
    ]
    one = passing_property(status_by_id={"p.a": Status.PASS}, untracked_reads=("a.txt",))
    assert plain_lines(findings(one))[0].startswith("the run read 1 file git ignores: ")
    assert findings(passing_property(status_by_id={"p.a": Status.PASS})) == []
