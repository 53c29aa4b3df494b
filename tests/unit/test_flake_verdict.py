"""flake-evidence's verdict from the counts of each rerun mode, and its early stop."""

from __future__ import annotations

import pytest

from three_ledger.flake.verdict import Reruns, Tally, decided, verdict
from three_ledger.vocabulary import FlakeVerdict, RerunMode


def _reruns(**counts: tuple[int, int]) -> Reruns:
    """Each mode's (runs, failed), by its name, after a prefix of three tests."""
    reruns = Reruns(prefix=3)
    for name, (runs, failed) in counts.items():
        reruns.modes[RerunMode(name)] = Tally(runs, failed)
    return reruns


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"original": (5, 5), "isolated": (5, 0)}, FlakeVerdict.ORDER_DEPENDENT_VICTIM),
        ({"original": (5, 0), "isolated": (5, 5)}, FlakeVerdict.ORDER_DEPENDENT_BRITTLE),
        ({"original": (5, 5), "isolated": (5, 5)}, FlakeVerdict.CONSISTENT_FAILURE),
        (
            {"original": (5, 5), "isolated": (5, 5), "reverse": (5, 5)},
            FlakeVerdict.CONSISTENT_FAILURE,
        ),
        (
            {"original": (5, 5), "isolated": (5, 5), "reverse": (5, 0)},
            FlakeVerdict.ORDER_DEPENDENT_BRITTLE,
        ),
        ({"original": (5, 0), "isolated": (5, 0)}, FlakeVerdict.NOT_REPRODUCED),
        ({"original": (5, 2), "isolated": (5, 0)}, FlakeVerdict.NON_DETERMINISTIC),
        (
            {"original": (5, 0), "isolated": (5, 0), "reverse": (5, 5)},
            FlakeVerdict.ORDER_DEPENDENT_VICTIM,
        ),
        ({"original": (1, 0)}, FlakeVerdict.NOT_REPRODUCED),
    ],
)
def test_the_modes_read_together(
    counts: dict[str, tuple[int, int]], expected: FlakeVerdict
) -> None:
    assert verdict(_reruns(**counts)) is expected


def test_a_broken_run_or_a_failing_prefix_is_infrastructure() -> None:
    broken = _reruns(original=(3, 1), isolated=(3, 0))
    broken.tally(RerunMode.ORIGINAL).broken = 1
    assert verdict(broken) is FlakeVerdict.INFRASTRUCTURE
    prefix = _reruns(original=(3, 3), isolated=(3, 0))
    prefix.prefix_failed = 2
    assert verdict(prefix) is FlakeVerdict.INFRASTRUCTURE
    prefix.prefix_failed = 1  # a third of the prefix: not most of it
    assert verdict(prefix) is FlakeVerdict.ORDER_DEPENDENT_VICTIM


def test_only_a_narrow_mixed_mode_stops_early() -> None:
    assert not decided(_reruns(original=(20, 0), isolated=(20, 20)).modes, 0.95)
    # 2 of 5: 5.3 % to 85.3 %, too wide; 6 of 20: 11.9 % to 54.3 %, narrow enough.
    assert not decided(_reruns(original=(5, 2)).modes, 0.95)
    assert decided(_reruns(original=(20, 6)).modes, 0.95)


def test_each_mode_records_its_bound() -> None:
    tally = Tally(runs=4, failed=0, broken=1)
    assert tally.record(0.95).bound == "0 of 3 failed: failure rate <= 63.2 % (one-sided, 95 %)"
    assert Tally(runs=1, broken=1).record(0.95).bound is None
    assert len(RerunMode) == 3
