"""The tripwire: two items the gate adds to every pytest run, one that must pass, one that must
fail. Their recorded outcomes prove the run's reports were not forced.

They run through the same protocol and report hooks as the project's tests, so code that
rewrites outcomes (a hookwrapper, a patched report class) rewrites theirs too. They must not
change what the user sees or what pytest counts: they run first, and the must-fail item's
failure is taken back out of `-x`/`--maxfail`, stepwise, last-failed and the exit status.
Standard library and pytest only (a plugin-side module; see run/staging.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from . import shard
from .wire import SENTINELS_ENV

# How the names reach xdist workers: the controller pops the variable (so that pytest runs
# nested in a test never grow sentinels) and hands the names over in `workerinput`.
_WORKER_KEY = "three_ledger_sentinels"
MUST_FAIL_MESSAGE = "three-ledger tripwire: this item must fail, and its failure is not counted"


class Sentinel(pytest.Item):
    """One tripwire item; `must` is "pass" or "fail"."""

    def __init__(self, *, must: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.must = must

    def runtest(self) -> None:
        if self.must == "fail":
            pytest.fail(MUST_FAIL_MESSAGE, pytrace=False)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"three-ledger tripwire (must {self.must})"


def sentinel_names(config: pytest.Config) -> tuple[str, str] | None:
    """(must-pass name, must-fail name), taken from the environment once per process."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get(_WORKER_KEY)
    else:
        given = os.environ.pop(SENTINELS_ENV, None)
    if not given:
        return None
    must_pass, _, must_fail = given.partition(",")
    return must_pass, must_fail


class SentinelItems:
    """Registered in the controller and in each xdist worker when the gate asked for it."""

    def __init__(self, config: pytest.Config, names: tuple[str, str]) -> None:
        self.config = config
        self.must_pass, self.must_fail = names
        self.session: pytest.Session | None = None

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # xdist: the controller hands the names to each worker it starts.
        node.workerinput[_WORKER_KEY] = f"{self.must_pass},{self.must_fail}"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, items: list[pytest.Item]
    ) -> None:
        # Last, so after every deselection (-k, -m, --lf, --sw) and reordering; first in the
        # run, so that -x or --maxfail cannot stop the run before they have run. None in a
        # run that selected nothing: that stays pytest's "no tests collected" (exit 5), except
        # in a shard, whose empty slice is a valid run (shard.py).
        if not items and not self.config.stash.get(shard.SHARD_ACTIVE, False):
            return
        sentinels = [
            Sentinel.from_parent(session, name=self.must_pass, nodeid=self.must_pass, must="pass"),
            Sentinel.from_parent(session, name=self.must_fail, nodeid=self.must_fail, must="fail"),
        ]
        items[:0] = sentinels

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Iterator[None]:
        """Every hook sees the must-fail item's failure; none of them counts it.

        Around the hooks, --maxfail is raised by one and stepwise is told to let one failure
        pass; after them, the session's failure count and the last-failed cache drop it.
        """
        if not (report.nodeid == self.must_fail and report.failed):
            yield
            return
        maxfail = self.config.option.maxfail
        stepwise = self.config.pluginmanager.get_plugin("stepwiseplugin")
        stepwise_skip = getattr(stepwise, "skip", None)
        if maxfail:
            self.config.option.maxfail = maxfail + 1
        if stepwise is not None:
            stepwise.skip = True
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and hasattr(dsession, "countfailures"):
            # xdist counts failures for --maxfail after the hooks: count this one out now.
            dsession.countfailures -= 1
        try:
            yield
        finally:
            self.config.option.maxfail = maxfail
            if stepwise is not None:
                stepwise.skip = stepwise_skip
            if self.session is not None and self.session.testsfailed > 0:
                self.session.testsfailed -= 1
            lfplugin = self.config.pluginmanager.get_plugin("lfplugin")
            getattr(lfplugin, "lastfailed", {}).pop(report.nodeid, None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(
            f"three-ledger: the gate's tripwire added 2 items ({self.must_pass} must pass, "
            f"{self.must_fail} must fail); they are not your tests and their failure is not "
            "counted in the exit status"
        )


def install(config: pytest.Config) -> None:
    """Register the tripwire when the gate named its sentinels."""
    names = sentinel_names(config)
    if names is not None:
        config.pluginmanager.register(
            SentinelItems(config, names), "three_ledger.plugin.tripwire.sentinels"
        )
