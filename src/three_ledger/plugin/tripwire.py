"""The tripwire: two sentinel items in every pytest run the gate scores, one that must pass and
one that must fail, and the audit of pytest's machinery (`machinery.py`). What both found goes
to the tripwire's record, which the gate reads after the run (run/tripwire.py).

The sentinels (`sentinels.py`) run through the same protocol and report hooks as the project's
tests and look like them, so code that rewrites outcomes rewrites theirs too. They must not
change what the user sees or what pytest counts: they run before anything that could stop the
session, and the must-fail item's failure is taken back out of `-x`/`--maxfail`, stepwise,
last-failed and the exit status. Standard library and pytest only (a plugin-side module; see
run/staging.py).
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, field
from typing import Any

import pytest

from . import harness, machinery, sentinels, shard
from .frozen import frozen
from .globs import glob_matches
from .makers import Trust, stack
from .wire import (
    FAILED_DIGESTS_KEY,
    FAILED_IDS_BUDGET,
    FAILED_IDS_KEY,
    FAILED_KEY,
    FIXTURES_DIRS_ENV,
    FIXTURES_ENV,
    MACHINERY_KEY,
    MADE_BY_KEY,
    MECHANISM_KEY,
    PIN_ID_ENV,
    PRODUCT_PATHS_ENV,
    ROOT_ENV,
    SENTINELS_KEY,
    TRIPWIRE_ENV,
    TRIPWIRE_SEED_ENV,
    failed_id_digest,
    tripwire_may_arm,
)

# How the controller hands the run's tripwire to each xdist worker it starts.
_WORKER_KEY = "three_ledger_tripwire"
# On a sentinel's reports in an xdist worker, "MECHANISM:MUST", for the controller (which never
# sees the items, only their serialised reports) to know them.
_REPORT_ATTRIBUTE = "three_ledger_sentinel"
_MECHANISMS = frozenset({sentinels.SENTINELS, sentinels.BASIC})
_MUSTS = frozenset({sentinels.PASS, sentinels.FAIL})


def _arm() -> machinery.Audit | None:
    """Arm the audit at import, before any conftest, where it may be asked for (an xdist
    worker's is disarmed at configure time when the gate did not ask)."""
    return machinery.start() if tripwire_may_arm() else None


# Process-wide on purpose, like reads.py's log: an audit hook cannot be removed, so the audit
# is armed at most once, here at import.
AUDIT = _arm()


class FixtureEnvironment:
    """The variables through which the tests find the pinned fixtures, as the gate set them.

    Taken when the plugin is imported, before any conftest or project module: product code
    that removes or changes one sends the tests to other data than the pin the run scores
    (popped, the example's tests fall back to `fixtures/`, pin A's folder, in pin B's run,
    and the dual-pin comparison agrees on a product that only breaks on pin B). Read from
    `os.environ`'s own dict, as bytes: a few dict lookups a test.
    """

    def __init__(self) -> None:
        self.kind = type(os.environ)
        data = os.environ._data  # type: ignore[attr-defined]  # bytes, as the C library has them
        names = (os.fsencode(name) for name in (FIXTURES_ENV, FIXTURES_DIRS_ENV, PIN_ID_ENV))
        self.expected = {key: data[key] for key in names if type(data.get(key)) is bytes}

    def folders(self) -> tuple[str, ...]:
        """The pinned fixture folders as the gate named them, each real and ending in a
        separator, for a prefix test of real paths."""
        named = self.expected.get(os.fsencode(FIXTURES_DIRS_ENV), b"")
        return tuple(
            os.path.join(os.path.realpath(folder), "")
            for folder in os.fsdecode(named).split(os.pathsep)
            if folder
        )

    def changed(self) -> str | None:
        """The first variable no longer as the gate set it, with what became of it."""
        environ = os.environ
        data = getattr(environ, "_data", None)
        if type(environ) is not self.kind or type(data) is not dict:
            return "os.environ replaced"
        for key, value in self.expected.items():
            now = data.get(key)
            if now is value or (type(now) is bytes and now == value):
                continue
            done = "removed from" if now is None else "changed in"
            return f"{os.fsdecode(key)} {done} the test process's environment"
        return None


FIXTURE_ENVIRONMENT = FixtureEnvironment()


@frozen
class Setup:
    """What the controller and its workers share: the record's path, the seed that places the
    sentinels (the same in every worker, whose collections must be equal), and ROOT."""

    record: str
    seed: str
    root: str
    # The pin's `product_paths` (a list, as xdist hands it to a worker): never test-side.
    product_paths: list[str] = field(default_factory=list)


def plugin_registered(plugin: object, manager: Any) -> None:
    """Judge a registration through pytest's register, by the code that called it."""
    audit = AUDIT
    if audit is None or not audit.armed:
        return
    audit.watch_hooks(manager)
    # Frame 0 is this function, 1 the hook implementation that called it, 2 pluggy.
    audit.registered(plugin, manager, stack(sys._getframe(2)))


def install(config: pytest.Config) -> None:
    """Register the tripwire when the gate asked for it (env, or xdist's workerinput)."""
    setup = _setup(config)
    audit = AUDIT
    if setup is None:
        # An xdist worker whose controller the gate did not ask for is not under the gate. A
        # session without a setup in a process that is (pytest run again in-process, by a
        # test through pytester or by the product itself, after the first session popped the
        # variables) gets no tripwire of its own, and leaves the process's audit armed: it
        # disarmed it, and the product's one call of `pytest.main` let it patch pytest unseen.
        if audit is not None and hasattr(config, "workerinput"):
            audit.disarm()
        return
    if audit is None:  # armed too late to see what happened before; still checks from here
        audit = machinery.start()
        audit.watch_hooks(config.pluginmanager)
    record = Record(setup.record)
    tripwire = Tripwire(config, setup, audit, record)
    roots = [setup.root, str(config.rootpath)]
    audit.bind(Trust(config, roots), tripwire.found)
    config.pluginmanager.register(tripwire, "three_ledger.plugin.tripwire")


# What a loader of the project's test modules may hold of its own: Python's file loader its
# name and path; pytest's import hook its state, never a method of its own in place of its
# class's, which the machinery audit watches.
_FILE_LOADER_STATE = frozenset({"name", "path"})
_HOOK_METHODS = frozenset({"find_spec", "create_module", "exec_module", "get_data", "get_code"})


def loaded_otherwise(
    items: list[pytest.Item], ran_from: Callable[[object, str], bool] | None = None
) -> list[str]:
    """The test modules of ITEMS that neither pytest's assertion-rewriting import hook nor
    Python's own file loader loaded, each said once: a finder the product put first on
    `sys.meta_path` can load a test module from source other than its file's (an assert
    loosened in memory), and no file then differs from the base.

    With RAN_FROM (the machinery audit's record of what those loaders ran), also each test
    module that is not the very module one of them ran its file's code into: product code
    imported by the test module can put a module of its own in `sys.modules` while the
    import is under way, with the loader, spec and file of the real one, and the import
    hands pytest whatever `sys.modules` holds when it ends (the red team's third round)."""
    # pytest's own class, as its module holds it (the machinery audit watches the binding);
    # never imported here: the plugin imports pytest's public names alone.
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    hook_class = getattr(rewrite, "AssertionRewritingHook", None)
    found: list[str] = []
    said: list[str] = []
    last: object = None
    last_module: object = None
    for item in items:
        # Items come in runs of one parent (a module, a class): its module is asked once a
        # run. By identity alone: `id()` is an audit event, which costs every item the hooks'
        # floor, and a set would ask the objects their hash.
        if item.parent is last:
            continue
        last = item.parent
        try:
            module = getattr(item, "module", None)
        except Exception:  # noqa: BLE001 - a collector that cannot say: not a Python module
            continue
        if module is None or module is last_module:  # the classes of one module, in a run
            continue
        last_module = module
        loader = getattr(module, "__loader__", None)
        spec = getattr(module, "__spec__", None)
        kind = type(loader)
        if loader is getattr(spec, "loader", None) and (
            (
                kind is importlib.machinery.SourceFileLoader
                and vars(loader).keys() <= _FILE_LOADER_STATE
            )
            or (
                kind is hook_class
                and hook_class is not None
                and any(finder is loader for finder in sys.meta_path)
                and not vars(loader).keys() & _HOOK_METHODS
            )
        ):
            if ran_from is None or ran_from(module, str(item.path)):
                continue
            what = (
                f"test module {getattr(module, '__name__', '?')} is not the module its loader "
                f"ran {item.path} into: another was put in its place while it was imported, "
                "and the code that ran need not be its file's"
            )
        else:
            name = getattr(module, "__name__", "?")
            what = (
                f"test module {name} was loaded by {kind.__module__}.{kind.__qualname__}, not "
                "by pytest's import or Python's file loader: the code that ran need not be its "
                "file's"
            )
        if what not in said:
            said.append(what)
            found.append(what)
    return found


def _setup(config: pytest.Config) -> Setup | None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get(_WORKER_KEY)
        return Setup(**given) if isinstance(given, dict) else None
    # Popped, so that pytest runs nested in a test never grow sentinels of their own.
    record = os.environ.pop(TRIPWIRE_ENV, None)
    seed = os.environ.pop(TRIPWIRE_SEED_ENV, None) or os.urandom(16).hex()
    if not record:
        return None
    root = os.environ.get(ROOT_ENV) or str(config.rootpath)
    return Setup(record, seed, root, _product_paths(os.environ.pop(PRODUCT_PATHS_ENV, None)))


def _product_paths(given: str | None) -> list[str]:
    """The globs the gate handed over; none where it handed none (the inferred model)."""
    try:
        globs = json.loads(given or "[]")
    except ValueError:
        return []
    return [glob for glob in globs if isinstance(glob, str)] if isinstance(globs, list) else []


class Record:
    """The tripwire's record: JSON lines, each written at once by whichever process found it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line) + "\n").encode("utf-8")
        # One write to a file opened for appending: xdist's processes share the file.
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)


def _witness(when: str) -> Callable[[Tripwire, pytest.Item], Generator[None, None, None]]:
    """The tripwire's wrapper of the phase WHEN: whether an exception came out of it, as
    pytest's `CallInfo` will see it. pytest reports a phase that raised as failed or skipped,
    never as passed; a report that says passed after one was made by something else, such as
    a patch of the report path that takes itself back before the machinery's next check."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def wrapper(self: Tripwire, item: pytest.Item) -> Generator[None, None, None]:
        __tracebackhide__ = True
        self.raised = None
        try:
            return (yield)
        except BaseException:
            self.raised = (item.nodeid, when)
            raise

    wrapper.__name__ = wrapper.__qualname__ = f"pytest_runtest_{when}"
    return wrapper


class Tripwire:
    """The tripwire's hooks, in the controller and in each xdist worker."""

    def __init__(
        self, config: pytest.Config, setup: Setup, audit: machinery.Audit, record: Record
    ) -> None:
        self.config = config
        self.setup = setup
        self.audit = audit
        self.record = record
        self.worker = hasattr(config, "workerinput")
        # Whether this process is an xdist controller, which learns the sentinels from its
        # workers' reports (set at session start, once xdist has registered its DSession).
        self.learns = False
        self.musts: dict[str, str] = {}
        self.mechanism: str | None = None
        self.session: pytest.Session | None = None
        self.fixture_folders = FIXTURE_ENVIRONMENT.folders()
        self.findings: list[str] = []
        # (node id, phase) of the last phase an exception came out of, as the outermost
        # wrapper saw it; None once the next phase starts.
        self.raised: tuple[str, str] | None = None
        # The project's tests a report said failed, as every hook saw it (a dict of None).
        self.failed: dict[str, None] = {}

    def found(self, finding: machinery.Finding) -> None:
        self.findings.append(str(finding))
        maker = None if finding.maker is None else str(finding.maker)
        self.record.write({MACHINERY_KEY: finding.what, MADE_BY_KEY: maker})

    # Optional: the hook exists only where pytest-xdist is installed (and not disabled).
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = asdict(self.setup)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        manager = self.config.pluginmanager
        self.learns = not self.worker and manager.get_plugin("dsession") is not None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self) -> Iterator[None]:
        # Around collection (a wrapper: an xdist controller's DSession skips the rest): the
        # machinery as configured, then as collection left it.
        self.audit.check_all()
        yield
        self.audit.check_all()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # After every deselection and reordering (-k, -m, --lf, --sw, randomly, a shard's
        # slice), before xdist sends its workers' collections to compare. None in a run that
        # selected nothing: that stays pytest's "no tests collected" (exit 5), except in a
        # shard, whose empty slice is a valid run (shard.py).
        for what in loaded_otherwise(session.items, self.audit.ran_from):
            self.audit.found_outside(what)
        self.audit.watch_tests(session.items)
        self.audit.settle(every=True)
        self.audit.replaced_helpers(self._test_side)
        if not session.items and not self.config.stash.get(shard.SHARD_ACTIVE, False):
            return
        placed = sentinels.place(session, session.items, bytes.fromhex(self.setup.seed))
        self.musts, self.mechanism = placed.musts, placed.mechanism

    # The witness of each phase (`_witness`), outermost: tryfirst, and registered after the
    # initial conftests.
    pytest_runtest_setup = _witness("setup")
    pytest_runtest_call = _witness("call")
    pytest_runtest_teardown = _witness("teardown")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        """Every hook sees the must-fail item's failure; none of them counts it. Then the
        machinery is checked.

        Around the hooks, --maxfail is raised by one and stepwise is told to let one failure
        pass; after them, the session's failure count and the last-failed cache drop it.
        """
        must = self._must(report)
        if not (must == sentinels.FAIL and report.failed):
            results = yield
            self._check(report)
            return results
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
            results = yield
        finally:
            self.config.option.maxfail = maxfail
            if stepwise is not None:
                stepwise.skip = stepwise_skip
            if self.session is not None and self.session.testsfailed > 0:
                self.session.testsfailed -= 1
            lfplugin = self.config.pluginmanager.get_plugin("lfplugin")
            # pytest 9 keys last-failed by the report's structured id, pytest 8 by its node id.
            for key in (report.nodeid, getattr(report, "id", None)):
                getattr(lfplugin, "lastfailed", {}).pop(key, None)
        self._check(report)
        return results

    def _check(self, report: pytest.TestReport) -> None:
        """After every hook saw REPORT: a report that says passed for a phase an exception
        came out of. Once a test, after its teardown report, the machinery: a patch made
        during a test and left in place is found there. One applied and taken back within
        one test is not, unless it made such a report."""
        if self.raised is not None:
            self._check_witness(report, *self.raised)
        outcome: object = report.outcome
        if type(outcome) is str and outcome == "failed" and report.nodeid not in self.musts:
            self.failed[report.nodeid] = None
        if report.when == "teardown":
            self.audit.check_report()
            self._check_environment()

    def _check_environment(self) -> None:
        changed = FIXTURE_ENVIRONMENT.changed()
        if changed is not None:
            what = f"{changed}: the tests find the pinned fixtures through it"
            self.audit.found_outside(what)

    def _check_witness(self, report: pytest.TestReport, nodeid: str, when: str) -> None:
        """REPORT is the first one logged since the phase WHEN of NODEID raised, and so that
        phase's: pytest logs it as soon as it is made. It must not say passed. Nothing of it
        but its outcome is read, and that only as a plain string, which no subclass's `__eq__`
        can answer."""
        self.raised = None
        outcome: object = report.outcome  # typed a literal string; the project may set any
        if type(outcome) is not str or outcome == "passed":
            # A sentinel's name is made to look like the project's tests: say what it is.
            whose = ""
            if nodeid in self.musts:
                whose = " (a sentinel the gate added, not a test of the project)"
            what = (
                f"the report of {nodeid}{whose} says its {when} passed, but an exception came "
                "out of it"
            )
            self.audit.found_outside(what)

    def _must(self, report: pytest.TestReport) -> str | None:
        """What REPORT's item must do, if it is a sentinel; tags a worker's sentinel reports
        for the controller, and learns them there.

        Only an xdist controller learns, and only from a tag in the report's own attributes,
        where xdist puts what a worker sent: a tag found anywhere else (a class attribute of
        `TestReport`, an object that passes for a string) would let the product have a real
        test's failure taken for the must-fail sentinel's and left out of the results. The
        gate also refuses a session whose sentinels are not one that must pass and one that
        must fail (run/tripwire.py)."""
        must = self.musts.get(report.nodeid)
        if must is not None:
            if self.worker:
                setattr(report, _REPORT_ATTRIBUTE, f"{self.mechanism}:{must}")
            return must
        if not self.learns:
            return None
        tag = report.__dict__.get(_REPORT_ATTRIBUTE)
        if type(tag) is not str:
            return None
        mechanism, _, must = tag.partition(":")
        if mechanism not in _MECHANISMS or must not in _MUSTS:
            return None
        self.mechanism = mechanism
        self.musts[report.nodeid] = must
        return must

    def _test_side(self, path: str) -> bool:
        """Whether PATH is one of the project's test-side files, by the harness's rule: a
        conftest, a module in a folder named like tests, or one named as `python_files` says.
        Not a module beside a test module: tests kept beside the product (a root
        `test_smoke.py`) would make the product test-side (the red team's fourth round).
        Never one the pin's `product_paths` hold, nor one in a pinned fixture folder."""
        trust = self.audit.trust
        if trust is None or not trust.is_project(path):
            return False
        if os.path.realpath(path).startswith(self.fixture_folders):
            # Pinned bytes, samples the tests read, even where pytest imports one (Pygments'
            # `py3_test.py`): no helper of the tests' is theirs to replace.
            return False
        shown = trust.shown(path)
        if any(glob_matches(glob, shown) for glob in self.setup.product_paths):
            return False  # the pin says it is the product's (a package's `testing/` helpers)
        patterns = self.config.getini("python_files")
        return harness.is_test_side(shown, patterns, None)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        self.audit.replaced_helpers(self._test_side)
        self.audit.check_all()
        self._check_environment()
        if not self.worker:
            line: dict[str, object] = {
                SENTINELS_KEY: self.musts,
                MECHANISM_KEY: self.mechanism,
                FAILED_KEY: len(self.failed),
            }
            # Which ones, so that results rewritten to keep the count are refused too; beyond
            # the budget (some 50,000 failures, or fewer with long ids) a digest of each.
            if sum(map(len, self.failed)) <= FAILED_IDS_BUDGET:
                line[FAILED_IDS_KEY] = list(self.failed)
            else:
                line[FAILED_DIGESTS_KEY] = list(map(failed_id_digest, self.failed))
            self.record.write(line)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self) -> None:
        # After pytest's last line ("1 failed, 5773 passed"), which counts the must-fail
        # sentinel: said last, where a reader who took it for a broken suite looks (idna's
        # trial found it above the short summary, read as one more failure).
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if self.musts and reporter is not None and not self.worker:
            named = ", ".join(f"{nodeid} must {must}" for nodeid, must in self.musts.items())
            reporter.write_line(
                f"three-ledger: the gate's tripwire added {len(self.musts)} items ({named}); "
                "they are not your tests, and the failure of the one that must fail is not "
                "counted in the exit status"
            )
        # The session is over and its record written: nothing the audit guards is made after
        # this. Its references to pytest's objects (some 20,000) are dropped here, not at
        # interpreter exit, where they kept those objects alive into the last collections.
        self.audit.disarm()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for finding in self.findings:
            line = f"three-ledger: the run's machinery was modified: {finding}"
            terminalreporter.write_line(line)
