"""`flake-evidence`'s budget: each candidate's share of what is left, by the reruns a round of
it takes."""

from __future__ import annotations

import time

import pytest

from three_ledger.commands.flake_evidence import Budget, Candidate, modes_of
from three_ledger.vocabulary import RerunMode


def candidate(prefix: tuple[str, ...]) -> Candidate:
    return Candidate(
        id="t.py::test_c", reason="failed", worker="main", prefix=prefix, property_ids=()
    )


def test_a_round_reverses_the_prefix_only_when_reversing_changes_it() -> None:
    assert modes_of(candidate(())) == [RerunMode.ORIGINAL, RerunMode.ISOLATED]
    assert modes_of(candidate(("t.py::test_a",))) == [RerunMode.ORIGINAL, RerunMode.ISOLATED]
    assert modes_of(candidate(("t.py::test_a", "t.py::test_b"))) == [
        RerunMode.ORIGINAL,
        RerunMode.ISOLATED,
        RerunMode.REVERSE,
    ]


def test_a_share_is_what_is_left_in_proportion_to_the_reruns_of_a_round() -> None:
    budget = Budget(20.0, started=time.monotonic())
    # Three modes first, then two: three fifths of the 20 s, then all that is left.
    assert budget.share([3, 2]).seconds == pytest.approx(12.0, abs=0.1)
    assert budget.share([2]).seconds == pytest.approx(20.0, abs=0.1)
    assert budget.share([2, 2, 2, 2]).seconds == pytest.approx(5.0, abs=0.1)


def test_a_spent_budget_shares_nothing() -> None:
    budget = Budget(1.0, started=time.monotonic() - 5)
    assert budget.spent()
    assert budget.share([3, 2]).seconds == 0.0
    assert budget.share([3, 2]).spent()


def test_a_rerun_starts_only_where_it_is_expected_to_end_within_the_share() -> None:
    """The red team's `flake-evidence` ran 67 s on a 60 s budget: its last rerun started with
    4 s left and took 11."""
    budget = Budget(60.0, started=time.monotonic() - 56)
    assert not budget.spent()
    assert budget.fits(3.0)
    assert not budget.fits(11.0)
