"""The pytest plugin: records one worst-of outcome per test item and enforces the network ban.

The gate loads a private copy of it in each run (``run/staging.py``); the ``pytest11`` entry
point loads it for people who run pytest with the plugin directly. Either way it imports only
the standard library and pytest, and does nothing unless ``THREE_LEDGER_*`` variables are set.
"""

from __future__ import annotations

import os
from json.encoder import encode_basestring_ascii as _json_string
from typing import IO

import pytest

# Relative: the gate runs a private copy of this package under a random name
# (run/staging.py), and the copy must import the copy.
from . import baseline_slice, harness, order, reads, shard
from .collect import register_collection_recorder, skip_reason
from .presence import record_presence
from .socket_guard import install_socket_guard_if_banned
from .wire import (
    ID_KEY,
    MAIN_WORKER,
    OUTCOME_KEY,
    PROPERTY_IDS_KEY,
    PROPERTY_KEY,
    PROPERTY_MARKER,
    PROPERTY_MARKER_HELP,
    RESULTS_ENV,
    SEVERITY,
    SKIP_REASON_KEY,
    WORKER_KEY,
    XFAIL_KEY,
    Outcome,
    tripwire_may_arm,
)

# The tripwire (with `machinery`, `makers` and `sentinels`) arms at its import, before any
# conftest, so it is imported here; but only where it may be asked for, since a collection
# run never arms it and its import is most of the plugin's (some 25 million instructions).
if tripwire_may_arm():
    from . import tripwire as _tripwire
else:
    _tripwire = None  # type: ignore[assignment]  # checked before each use


# The plugin's records are plain classes with slots: a dataclass compiles its methods when it
# is defined, a cost every test child would pay at its start.
class _ItemRecord:
    """What the controller knows about one item while its reports arrive."""

    __slots__ = ("outcome", "property_ids", "skip_reason", "worker", "xfail")

    def __init__(self, worker: str = MAIN_WORKER) -> None:
        self.outcome = Outcome.PASS
        self.property_ids: list[str] = []
        self.skip_reason: str | None = None
        # Whether its `fail` is expected: every failing report of it was an xfail.
        self.xfail = False
        # The process that ran it: the line order per worker is the order its tests ran.
        self.worker = worker


class _Recorder:
    """The open results file and the items whose line is not yet written."""

    __slots__ = ("pending", "stream")

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.pending: dict[str, _ItemRecord] = {}


_recorder_key = pytest.StashKey[_Recorder]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", PROPERTY_MARKER_HELP)
    install_socket_guard_if_banned()
    shard.install(config)
    baseline_slice.install(config)
    order.install(config)
    if _tripwire is not None:
        _tripwire.install(config)
    harness.install(config)
    reads.configure(config)  # which pinned files each item opens, when `vet` asks
    # xdist workers only forward reports; the controller alone owns the results file.
    if not hasattr(config, "workerinput"):
        _start_recording(config)
        register_collection_recorder(config)


def _start_recording(config: pytest.Config) -> None:
    # Popped, so that pytest runs nested in this one (pytester, a test's subprocess) do not
    # write their own items into the gate's results; workers do not need it either.
    results_path = os.environ.pop(RESULTS_ENV, None)
    if not results_path:
        return
    # Append: a command that runs pytest twice must not erase the first run's evidence.
    stream = open(results_path, "a", encoding="utf-8")  # noqa: SIM115 - closed at unconfigure
    recorder = config.stash[_recorder_key] = _Recorder(stream=stream)
    config.pluginmanager.register(_ResultsWriter(recorder), "three_ledger.results_writer")


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.stash.get(_recorder_key, None)
    if recorder is not None:
        recorder.stream.close()


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    # Called for every registration, and at this module's own for every one before it.
    if _tripwire is not None:
        _tripwire.plugin_registered(plugin, manager)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    # Before setup, so that even the report of a skip or a setup error carries the ids. The
    # markers of the item and of each parent, closest first, as `iter_markers` walks them,
    # without its three generators: this runs for every item.
    node: pytest.Item | pytest.Collector | None = item
    while node is not None:
        for marker in node.own_markers:
            if getattr(marker, "name", None) == PROPERTY_MARKER:
                for property_id in marker.args:
                    entry = (PROPERTY_KEY, property_id)
                    if entry not in item.user_properties:
                        item.user_properties.append(entry)
        node = node.parent


class _ResultsWriter:
    """Hooks that turn the reports reaching the controller into results lines.

    A plugin object rather than module hooks because `pytest_runtest_logreport` is not given the
    config, and the state must live with it (`config.stash`, where unconfigure closes the
    file), not in a module global. It holds the recorder itself: these hooks run for every
    report, and a stash lookup is a call.
    """

    def __init__(self, recorder: _Recorder) -> None:
        self.recorder = recorder

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        pending = self.recorder.pending
        nodeid = report.nodeid  # a property that builds it, in pytest 9
        record = pending.get(nodeid)
        if record is None:
            record = pending[nodeid] = _ItemRecord(worker=_worker(report))
        outcome = report_outcome(report)
        if SEVERITY[outcome] > SEVERITY[record.outcome]:
            record.outcome = outcome
            record.xfail = outcome is Outcome.FAIL and report.skipped
        elif outcome is Outcome.FAIL and record.outcome is Outcome.FAIL and not report.skipped:
            record.xfail = False
        if outcome is Outcome.SKIP and record.skip_reason is None:
            record.skip_reason = skip_reason(report)
        for name, value in report.user_properties:
            if name == PROPERTY_KEY and isinstance(value, str) and value not in record.property_ids:
                record.property_ids.append(value)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # A module (or folder) that failed to collect has no item to report. Run alone, pytest
        # then stops (exit 2), and the gate refuses the run; under xdist it goes on without
        # it (exit 1), and the tests in it would vanish from the results unseen. So it is one
        # result of its own, an error under the collector's id: a property whose selector
        # names it errs, and outside every property it is a failure the ledger lists.
        if report.failed:
            nodeid = report.nodeid or "."
            line = results_line(nodeid, [], Outcome.ERROR, _worker(report), None)
            self.recorder.stream.write(line)
            self.recorder.stream.flush()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        # logfinish follows the teardown report, in-process and as xdist forwards it.
        if nodeid in self.recorder.pending:
            _write_line(self.recorder, nodeid)

    def pytest_sessionfinish(self) -> None:
        # Items whose logfinish never came (an xdist worker crashed mid-test) still get a line.
        recorder = self.recorder
        for nodeid in list(recorder.pending):
            _write_line(recorder, nodeid)


def _write_line(recorder: _Recorder, nodeid: str) -> None:
    record = recorder.pending.pop(nodeid)
    skip_reason = record.skip_reason if record.outcome is Outcome.SKIP else None
    recorder.stream.write(
        results_line(
            nodeid, record.property_ids, record.outcome, record.worker, skip_reason, record.xfail
        )
    )
    # Flushed per line, so a run killed later still leaves this item's evidence on disk.
    recorder.stream.flush()


def results_line(
    nodeid: str,
    property_ids: list[str],
    outcome: Outcome,
    worker: str,
    skip_reason: str | None,
    xfail: bool = False,
) -> str:
    """One results line, the text `json.dumps` makes of it, with its newline.

    Made from `json`'s own string encoder rather than by `json.dumps`: this runs once per test,
    and `json.dumps` builds an encoder for every call, about 5 µs of the 7 µs the plugin's
    writing took per test. The property ids are sorted: marker order depends on decorator
    stacking and says nothing.
    """
    ids = ", ".join(map(_json_string, sorted(property_ids)))
    line = (
        f"{{{_KEYS[ID_KEY]}: {_json_string(nodeid)}, {_KEYS[PROPERTY_IDS_KEY]}: [{ids}], "
        f"{_KEYS[OUTCOME_KEY]}: {_json_string(outcome)}, "
        f"{_KEYS[WORKER_KEY]}: {_json_string(worker)}"
    )
    if skip_reason is not None:
        line += f", {_KEYS[SKIP_REASON_KEY]}: {_json_string(skip_reason)}"
    if xfail:
        line += f", {_KEYS[XFAIL_KEY]}: true"
    return line + "}\n"


_KEYS = {
    key: _json_string(key)
    for key in (ID_KEY, PROPERTY_IDS_KEY, OUTCOME_KEY, WORKER_KEY, SKIP_REASON_KEY, XFAIL_KEY)
}


def _worker(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The xdist worker a report came from, or main: the controller sets `node` on each report
    a worker sends. Read from the report's own attributes, where xdist puts it: a `node` put
    on the `TestReport` class would otherwise name a worker for every report of a serial
    run, and reorder the run as `flake-evidence` reads it."""
    node = report.__dict__.get("node")
    workerinput = getattr(node, "workerinput", None)
    workerid = workerinput.get("workerid") if type(workerinput) is dict else None
    return workerid if type(workerid) is str else MAIN_WORKER


def report_outcome(report: pytest.TestReport) -> Outcome:
    """Map one report (setup, call, teardown or sub-test) to pass, fail, error or skip."""
    if hasattr(report, "wasxfail"):
        # An expected failure is still a failure; an unexpected pass means the oracle is wrong.
        return Outcome.FAIL if report.skipped else Outcome.ERROR
    if report.passed:
        return Outcome.PASS
    if report.skipped:
        return Outcome.SKIP
    # A strict xpass reaches us only as this failed call; pytest gives it no other mark.
    if isinstance(report.longrepr, str) and report.longrepr.startswith("[XPASS(strict)]"):
        return Outcome.ERROR
    return Outcome.FAIL if report.when == "call" else Outcome.ERROR


# At import as well as at configure: PYTEST_PLUGINS and entry points are imported before any
# conftest.py, so a conftest that touches the network at import is caught too.
install_socket_guard_if_banned()
# At import too, for the same reason: under --junit-xml, no conftest can hide that pytest ran.
record_presence(pytest.__version__)
