"""Exact Clopper-Pearson intervals for a count of failures, standard library only.

The bounds are quantiles of the beta distribution. The regularised incomplete beta function
is evaluated by its continued fraction (modified Lentz), and its quantile found by bisection:
the function rises monotonically in x, so bisection cannot miss.
"""

from __future__ import annotations

import math

from three_ledger.frozen import frozen

# Bisection halves [0, 1] this many times: far below the printed precision.
_BISECTIONS = 60
_FRACTION_TERMS = 300
_TINY = 1e-300
_EPSILON = 1e-15


def incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The continued fraction converges fast for x below the mean; above it, use the symmetry.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(x, a, b) / a
    return 1.0 - front * _continued_fraction(1.0 - x, b, a) / b


def _continued_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b), by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    value = d
    for m in range(1, _FRACTION_TERMS + 1):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            value *= c * d
        if abs(c * d - 1.0) < _EPSILON:
            break
    return value


def beta_quantile(q: float, a: float, b: float) -> float:
    """The x with I_x(a, b) = q."""
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if incomplete_beta(middle, a, b) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@frozen
class Interval:
    """A bound or two on a failure rate: `failed` of `runs`, at `level` (0.95)."""

    failed: int
    runs: int
    level: float
    low: float
    high: float
    # One-sided: only one end is a bound (an all-same result); the other is 0 or 1 exactly.
    one_sided: bool

    def describe(self) -> str:
        """`0 of 20 failed: failure rate <= 13.9 % (one-sided, 95 %)` and the like."""
        counted = f"{self.failed} of {self.runs} failed"
        level = f"{_percent(self.level)} %"
        if self.one_sided and self.failed == 0:
            return f"{counted}: failure rate <= {_percent(self.high)} % (one-sided, {level})"
        if self.one_sided:
            return f"{counted}: failure rate >= {_percent(self.low)} % (one-sided, {level})"
        return (
            f"{counted}: failure rate {_percent(self.low)} % to {_percent(self.high)} % "
            f"(two-sided, {level})"
        )


def _percent(rate: float) -> str:
    """A rate in percent, one decimal; a whole level (0.95) without one."""
    shown = f"{rate * 100:.1f}"
    return shown.removesuffix(".0")


def clopper_pearson(failed: int, runs: int, level: float) -> Interval:
    """The exact interval on the failure rate. All-same counts (none or every run failed)
    give the one-sided bound at LEVEL; mixed counts the two-sided interval at LEVEL."""
    if runs <= 0 or not 0 <= failed <= runs:
        raise ValueError(f"{failed} of {runs} is not a count")
    alpha = 1.0 - level
    if failed == 0:
        return Interval(failed, runs, level, 0.0, 1.0 - alpha ** (1.0 / runs), one_sided=True)
    if failed == runs:
        return Interval(failed, runs, level, alpha ** (1.0 / runs), 1.0, one_sided=True)
    low = beta_quantile(alpha / 2, failed, runs - failed + 1)
    high = beta_quantile(1.0 - alpha / 2, failed + 1, runs - failed)
    return Interval(failed, runs, level, low, high, one_sided=False)
