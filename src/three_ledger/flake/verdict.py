"""`flake-evidence`'s judgement, pure: what the reruns of one candidate say, and when to stop.

Each mode (original order, alone, reversed order) counts its runs, its failures (fail or
error; a skip is no failure) and its broken runs. The verdict reads the modes together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from three_ledger.flake.stats import clopper_pearson
from three_ledger.other_ledgers import ModeTally
from three_ledger.vocabulary import FlakeVerdict, RerunMode

# A mixed mode is narrow enough once its two-sided interval is at most this wide.
NARROW = 0.5
# More than this share of the prefix failing in the original order is an infrastructure sign.
PREFIX_FAILING = 0.5


@dataclass
class Tally:
    """One mode's counts so far."""

    runs: int = 0
    failed: int = 0
    broken: int = 0

    @property
    def passed(self) -> int:
        return self.runs - self.failed - self.broken

    def mixed(self) -> bool:
        return self.failed > 0 and self.passed > 0

    def counted(self) -> int:
        """Runs that reached the candidate (a broken run says nothing of it)."""
        return self.runs - self.broken

    def record(self, confidence: float) -> ModeTally:
        counted = self.counted()
        bound = None
        if counted:
            bound = clopper_pearson(self.failed, counted, confidence).describe()
        return ModeTally(self.runs, self.failed, self.broken, bound)


@dataclass
class Reruns:
    """Every mode's tally of one candidate, and what the prefix did in the original order."""

    modes: dict[RerunMode, Tally] = field(default_factory=dict)
    # The most prefix tests that failed in one original-order run, and the prefix's length.
    prefix_failed: int = 0
    prefix: int = 0

    def tally(self, mode: RerunMode) -> Tally:
        return self.modes.setdefault(mode, Tally())


def verdict(reruns: Reruns) -> FlakeVerdict:
    """The verdict the tallies support (section "Verdicts" of docs/commands.md)."""
    tallies = reruns.modes
    if any(tally.broken for tally in tallies.values()) or _prefix_broke(reruns):
        return FlakeVerdict.INFRASTRUCTURE
    if any(tally.mixed() for tally in tallies.values()):
        return FlakeVerdict.NON_DETERMINISTIC
    fails = {mode: tally.failed > 0 for mode, tally in tallies.items() if tally.runs}
    alone = fails.get(RerunMode.ISOLATED)
    in_order = fails.get(RerunMode.ORIGINAL)
    if in_order is None or alone is None:
        return FlakeVerdict.NOT_REPRODUCED
    if in_order and alone:
        reversed_tally = tallies.get(RerunMode.REVERSE)
        if reversed_tally is not None and reversed_tally.runs and not reversed_tally.failed:
            # Fails in order and alone, passes after the same tests reversed: a test it needs
            # ran after it in order and runs before it now.
            return FlakeVerdict.ORDER_DEPENDENT_BRITTLE
        return FlakeVerdict.CONSISTENT_FAILURE
    if in_order:
        return FlakeVerdict.ORDER_DEPENDENT_VICTIM
    if alone:
        return FlakeVerdict.ORDER_DEPENDENT_BRITTLE
    if fails.get(RerunMode.REVERSE, False):
        # Passes in order and alone, fails after the same tests reversed: a polluter that
        # ran after it in order runs before it now.
        return FlakeVerdict.ORDER_DEPENDENT_VICTIM
    return FlakeVerdict.NOT_REPRODUCED


def _prefix_broke(reruns: Reruns) -> bool:
    return reruns.prefix > 0 and reruns.prefix_failed > PREFIX_FAILING * reruns.prefix


def decided(tallies: Mapping[RerunMode, Tally], confidence: float) -> bool:
    """Whether reruns may stop before their count: a mode saw both outcomes and its interval
    is narrow enough. An all-same result never stops early (a flake hides in it)."""
    for tally in tallies.values():
        counted = tally.counted()
        if tally.mixed():
            interval = clopper_pearson(tally.failed, counted, confidence)
            if interval.high - interval.low <= NARROW:
                return True
    return False
