"""Exact Clopper-Pearson intervals, checked against reference values computed elsewhere."""

from __future__ import annotations

import pytest

from three_ledger.flake.stats import beta_quantile, clopper_pearson, incomplete_beta

# Reference bounds from SciPy 1.17 (`scipy.stats.beta.ppf`, an implementation independent
# of this one: Boost's incomplete-beta inverse), computed once on a development machine:
#   two-sided at 95 %: lower = beta.ppf(0.025, k, n-k+1), upper = beta.ppf(0.975, k+1, n-k)
#   one-sided at 95 %: lower = beta.ppf(0.05, k, n-k+1),  upper = beta.ppf(0.95, k+1, n-k)
# 0/20 one-sided (13.91 %) and 12/12 two-sided (73.54 %) also have the closed forms
# 1 - 0.05**(1/20) and 0.025**(1/12).
TWO_SIDED = {
    (2, 12): (0.020862525460092384, 0.48413774868596704),
    (3, 40): (0.01574217985104153, 0.20386474873289895),
}
ONE_SIDED_UPPER = {(0, 20): 0.13910834066826516, (2, 12): 0.43810543511531136}
ONE_SIDED_LOWER = {(12, 12): 0.7790778080544442, (3, 40): 0.020753601475701208}
TOLERANCE = 1e-9


@pytest.mark.parametrize(("failed", "runs"), sorted(TWO_SIDED))
def test_mixed_counts_get_the_two_sided_interval(failed: int, runs: int) -> None:
    interval = clopper_pearson(failed, runs, 0.95)
    low, high = TWO_SIDED[(failed, runs)]
    assert interval.low == pytest.approx(low, abs=TOLERANCE)
    assert interval.high == pytest.approx(high, abs=TOLERANCE)
    assert not interval.one_sided


def test_none_failed_gives_the_one_sided_upper_bound() -> None:
    interval = clopper_pearson(0, 20, 0.95)
    assert interval.high == pytest.approx(ONE_SIDED_UPPER[(0, 20)], abs=TOLERANCE)
    assert interval.low == 0.0
    assert interval.one_sided
    assert interval.describe() == "0 of 20 failed: failure rate <= 13.9 % (one-sided, 95 %)"


def test_every_run_failed_gives_the_one_sided_lower_bound() -> None:
    interval = clopper_pearson(12, 12, 0.95)
    assert interval.low == pytest.approx(ONE_SIDED_LOWER[(12, 12)], abs=TOLERANCE)
    assert interval.high == 1.0
    assert interval.describe() == "12 of 12 failed: failure rate >= 77.9 % (one-sided, 95 %)"


def test_the_two_sided_bound_of_an_all_same_count_is_the_closed_form() -> None:
    # 12/12 two-sided at 95 %: the lower end is 0.025**(1/12), as the 97.5 % one-sided bound.
    assert clopper_pearson(12, 12, 0.975).low == pytest.approx(0.7353515306029488, abs=TOLERANCE)
    assert clopper_pearson(0, 20, 0.975).high == pytest.approx(0.1684334709830853, abs=TOLERANCE)


def test_one_sided_bounds_of_mixed_counts() -> None:
    high = beta_quantile(0.95, 2 + 1, 12 - 2)
    assert high == pytest.approx(ONE_SIDED_UPPER[(2, 12)], abs=TOLERANCE)
    low = beta_quantile(0.05, 3, 40 - 3 + 1)
    assert low == pytest.approx(ONE_SIDED_LOWER[(3, 40)], abs=TOLERANCE)


def test_a_mixed_interval_says_two_sided_and_its_level() -> None:
    text = clopper_pearson(2, 12, 0.95).describe()
    assert text == "2 of 12 failed: failure rate 2.1 % to 48.4 % (two-sided, 95 %)"
    assert clopper_pearson(3, 40, 0.9).describe().endswith("(two-sided, 90 %)")


def test_the_incomplete_beta_at_its_ends_and_by_symmetry() -> None:
    assert incomplete_beta(0.0, 2, 3) == 0.0
    assert incomplete_beta(1.0, 2, 3) == 1.0
    # I_x(1, 1) = x; I_x(a, b) = 1 - I_{1-x}(b, a).
    assert incomplete_beta(0.3, 1, 1) == pytest.approx(0.3, abs=1e-12)
    assert incomplete_beta(0.8, 2, 5) == pytest.approx(1 - incomplete_beta(0.2, 5, 2), abs=1e-12)


@pytest.mark.parametrize(("failed", "runs"), [(-1, 3), (4, 3), (0, 0)])
def test_a_count_that_is_no_count_is_refused(failed: int, runs: int) -> None:
    with pytest.raises(ValueError, match="is not a count"):
        clopper_pearson(failed, runs, 0.95)
