"""The words for how a test ended and what a property scored, and their severity order.

Standard library only: the pytest plugin imports this module inside every test run.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Outcome(enum.StrEnum):
    """How one test item ended, over all its reports (SPEC 6)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


class Status(enum.StrEnum):
    """A pinned property's status in a property ledger: an outcome, or `missing`."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"
    # The property's selectors and markers matched no result.
    MISSING = "missing"


# Higher is worse: error > fail > skip > pass (SPEC 4.2 step 7).
SEVERITY = {Outcome.PASS: 0, Outcome.SKIP: 1, Outcome.FAIL: 2, Outcome.ERROR: 3}


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """The worst outcome (error > fail > skip > pass); `pass` when there is none."""
    return max(outcomes, key=SEVERITY.__getitem__, default=Outcome.PASS)


def status_of(outcomes: Iterable[Outcome]) -> Status:
    """A property's status from the outcomes of every result it matches: `missing` if none."""
    matched = list(outcomes)
    return Status(worst(matched)) if matched else Status.MISSING
