"""The gate's side of the tripwire: name two sentinels for a run, then check what they recorded.

A pytest run gets one item that must pass and one that must fail (`plugin/tripwire.py`), with
names fresh for the run. If either is recorded with any other outcome, or not at all,
something in the run rewrote outcomes: the results are not evidence (exit 4). In `--junit-xml`
mode there is no plugin to add them, and the ledger says `tripwire: none`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from three_ledger.errors import InfraFailure
from three_ledger.plugin.wire import SENTINELS_ENV
from three_ledger.results import TestResult
from three_ledger.vocabulary import Outcome


@dataclass(frozen=True)
class Sentinels:
    must_pass: str
    must_fail: str

    @classmethod
    def fresh(cls) -> Sentinels:
        # Names like any test's, random for each run, so that no file can anticipate them.
        return cls(f"test_{os.urandom(6).hex()}", f"test_{os.urandom(6).hex()}")

    def environment(self) -> dict[str, str]:
        return {SENTINELS_ENV: f"{self.must_pass},{self.must_fail}"}


def checked_and_removed(
    results: Sequence[TestResult], sentinels: Sentinels, *, allow_empty: bool = False
) -> list[TestResult]:
    """RESULTS without the sentinels, once each is shown to have its required outcome.

    Nothing else recorded is refused, except with ALLOW_EMPTY (a shard's empty slice).
    """
    recorded = {result.id: result.outcome for result in results}
    for name, must in ((sentinels.must_pass, Outcome.PASS), (sentinels.must_fail, Outcome.FAIL)):
        seen = recorded.get(name)
        if seen is not must:
            found = "was not recorded" if seen is None else f"was recorded as {seen}"
            raise InfraFailure(
                f"tripwire: sentinel {name} must {must} but {found}: something in this run "
                "rewrites test outcomes, so no result of it is evidence"
            )
    gate_items = {sentinels.must_pass, sentinels.must_fail}
    own = [result for result in results if result.id not in gate_items]
    if not own and not allow_empty:
        raise InfraFailure("the run recorded no result besides the tripwire's sentinels")
    return own
