"""The tripwire: honest runs keep their statuses under every pytest option that reorders, stops
or selects; runs whose outcomes are forced are refused (exit 4, naming the sentinel, or the
module that modified pytest's machinery); sentinels look like the project's own items, so code
that tries to spare them and force only real tests hits them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import FORCE_PASS, CliResult, RunCli, git
from three_ledger.run import tripwire

pytestmark = pytest.mark.pytest_child

PYTEST = f"{sys.executable} -m pytest -q"
ALL_PASS = {
    "orders.total.non_negative": "pass",
    "orders.total.matches_lines": "pass",
    "orders.id.stable": "pass",
    "orders.json.round_trip": "pass",
}
# Totals pushed below zero break both claims about them.
BROKEN = {**ALL_PASS, "orders.total.non_negative": "fail", "orders.total.matches_lines": "fail"}


def score(run_cli: RunCli, repo: Path, command: str) -> CliResult:
    digest = run_cli(
        "digest", "--pin", repo / "pins/fixtures.json", "--root", repo, "--out", repo.parent / "f"
    ).out.strip()
    return run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo / "pins/properties.json", "--command", command,
        "--root", repo, "--base", "HEAD", "--out", repo.parent / "ledgers/p.json",
    )  # fmt: skip


def ledger(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.parent / "ledgers/p.json").read_text())
    return document


def break_total(repo: Path) -> None:
    """Refunds go negative: `orders.total.non_negative` really fails (a product change)."""
    product = repo / "orders.py"
    product.write_text(
        product.read_text().replace("def order_total(order", "def _order_total(order")
        + "\n\ndef order_total(order):\n    return _order_total(order) - 10**12\n"
    )


@pytest.fixture(scope="module")
def randomly_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest-randomly installed into a folder of its own, for the children that need it."""
    target = tmp_path_factory.mktemp("randomly")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         "pytest-randomly>=3.15,<5"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"pytest-randomly could not be installed: {done.stderr.strip()[-200:]}")
    return target


# Options that stop early, select, step or reorder: the sentinels must neither change the
# statuses nor be lost. Each runs on an honest tree and on one whose product is broken.
OPTIONS = ["-x", "--maxfail=1", "--sw", "-k total", "--lf", "-n 2", "-x -n 2", "-p randomly"]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("broken", [False, True], ids=["honest", "broken"])
def test_statuses_survive_every_option(
    run_cli: RunCli,
    orders_repo: Path,
    options: str,
    broken: bool,
    randomly_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "randomly" in options:
        monkeypatch.setenv("PYTHONPATH", str(randomly_path))
        options = "-p randomly -p no:cacheprovider"
    if broken:
        break_total(orders_repo)
        git(orders_repo, "commit", "-qam", "refunds go negative")
    result = score(run_cli, orders_repo, f"{PYTEST} {options} properties/test_orders.py")
    if options == "-k total":
        expected = {key: value for key, value in (BROKEN if broken else ALL_PASS).items()}
        expected["orders.id.stable"] = expected["orders.json.round_trip"] = "missing"
    elif broken and options == "-x -n 2":
        # xdist reports a run stopped by -x as interrupted (exit 2): not evidence, as before.
        assert result.code == 4, result.err
        assert "exited 2 (interrupted)" in result.first_error_line
        return
    elif broken and ("-x" in options or "maxfail" in options or "--sw" in options):
        # The run stops at the first real failure; whatever did not run is missing, never pass.
        assert result.code == 1, result.err
        statuses = ledger(orders_repo)["status_by_id"]
        assert statuses["orders.total.non_negative"] == "fail"
        assert set(statuses.values()) <= {"pass", "fail", "missing"}
        return
    else:
        expected = BROKEN if broken else ALL_PASS
    assert result.code == (1 if broken or options == "-k total" else 0), result.err
    written = ledger(orders_repo)
    assert written["status_by_id"] == expected
    assert written["tripwire"] == "sentinels"
    # The must-fail sentinel is taken back out of pytest's exit status.
    assert written["command_exit"] == (1 if broken else 0)


def sentinels_in(log: str) -> dict[str, str]:
    """The sentinels the log's last line about them names, node id to what each must do."""
    line = [text for text in log.splitlines() if "the gate's tripwire added 2 items" in text][-1]
    return dict(re.findall(r"([^\s(]+) must (pass|fail)[,)]", line))


def test_sentinels_do_not_reach_the_ledger_or_the_cache(run_cli: RunCli, orders_repo: Path) -> None:
    # The example turns the cache off; this run keeps it, to see what last-failed holds.
    ini = orders_repo / "pytest.ini"
    ini.write_text(ini.read_text().replace("addopts = -p no:cacheprovider", "addopts ="))
    git(orders_repo, "commit", "-qam", "keep pytest's cache")
    assert score(run_cli, orders_repo, f"{PYTEST} properties/test_orders.py").code == 0
    text = (orders_repo.parent / "ledgers/p.json").read_text()
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    sentinels = sentinels_in(log)
    assert sorted(sentinels.values()) == ["fail", "pass"]
    assert not any(name in text for name in sentinels)
    # Said last, after pytest's "1 failed, N passed", which counts the must-fail one.
    assert "the gate's tripwire added 2 items" in log.strip().splitlines()[-1]
    lastfailed = orders_repo / ".pytest_cache/v/cache/lastfailed"
    assert not lastfailed.exists() or not any(name in lastfailed.read_text() for name in sentinels)


def test_nested_pytest_runs_grow_no_sentinels(run_cli: RunCli, orders_repo: Path) -> None:
    """A test that runs pytest itself sees its own items only (the variable is popped)."""
    nested = orders_repo / "properties/test_nested.py"
    nested.write_text(
        "import subprocess, sys\n\n"
        "def test_inner_run_counts_one(tmp_path):\n"
        "    (tmp_path / 'test_one.py').write_text('def test_one():\\n    pass\\n')\n"
        "    done = subprocess.run([sys.executable, '-m', 'pytest', '-q', str(tmp_path)],\n"
        "                          capture_output=True, text=True)\n"
        "    assert '1 passed' in done.stdout and 'failed' not in done.stdout, done.stdout\n"
    )
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "a test that runs pytest")
    result = score(run_cli, orders_repo, f"{PYTEST} properties")
    assert result.code == 0, result.err


# Blanket ways to force outcomes from inside the run: each must trip the wire. A hook in a
# conftest is legitimate pytest (the conftest is an oracle, compared with the base): a report
# it rewrites to passed after the test raised is caught by the phase's witness, and one that
# keeps the test from raising by the sentinels. Product code that patches pytest is caught
# by the machinery audit first.
NEUTER = "def pytest_runtest_setup(item):\n    item.runtest = lambda: None\n"
FORCING = {
    "hookwrapper-in-conftest": ("conftest.py", FORCE_PASS),
    "patched-report-class-in-product": (
        "orders.py",
        (
            "\n\nimport _pytest.reports as _reports\n"
            "_made = _reports.TestReport.from_item_and_call.__func__\n\n"
            "def _forced(cls, item, call):\n"
            "    report = _made(cls, item, call)\n"
            "    report.outcome = 'passed'\n"
            "    return report\n\n"
            "_reports.TestReport.from_item_and_call = classmethod(_forced)\n"
        ),
    ),
    # pytest run once more in-process first, with nothing to collect: that session has no
    # tripwire of its own, and it used to disarm the process's audit. Then each test's
    # assertion error is swallowed where the test's name is in its file (the sentinels' are
    # not): only the audit can see it.
    "patch-after-a-nested-session-in-product": (
        "orders.py",
        (
            "\n\nimport contextlib as _contextlib, io as _io\n"
            "import pytest as _pytest\n"
            "import _pytest.python as _python\n"
            "with _contextlib.redirect_stdout(_io.StringIO()), "
            "_contextlib.redirect_stderr(_io.StringIO()):\n"
            "    _pytest.main(['-q', '-p', 'no:cacheprovider', '/no/such/path'])\n"
            "_runtest = _python.Function.runtest\n\n"
            "def _spared(self):\n"
            "    try:\n"
            "        _runtest(self)\n"
            "    except AssertionError:\n"
            "        if f'def {self.originalname}(' not in self.path.read_text():\n"
            "            raise\n\n"
            "_python.Function.runtest = _spared\n"
        ),
    ),
    # A look-alike of `os` in the runner: at the start of each phase the runner sets
    # PYTEST_CURRENT_TEST through it, so it patches the report class for the call phase and
    # takes the patch back at teardown, before the check after each test looks.
    "module-look-alike-in-product": (
        "orders.py",
        (
            "\n\nimport os as _os\n"
            "import _pytest.reports as _reports\n"
            "import _pytest.runner as _runner\n"
            "_made = _reports.TestReport.from_item_and_call\n\n"
            "def _forced(cls, item, call):\n"
            "    report = _made.__func__(cls, item, call)\n"
            "    report.outcome = 'passed'\n"
            "    return report\n\n"
            "class _Environ:\n"
            "    def __setitem__(self, name, value):\n"
            "        forced = value.endswith('(call)')\n"
            "        _reports.TestReport.from_item_and_call = (\n"
            "            classmethod(_forced) if forced else _made)\n"
            "        _os.environ[name] = value\n\n"
            "    def pop(self, name):\n"
            "        return _os.environ.pop(name)\n\n"
            "class _Os:\n"
            "    environ = _Environ()\n\n"
            "    def __getattr__(self, name):\n"
            "        return getattr(_os, name)\n\n"
            "_runner.os = _Os()\n"
        ),
    ),
    # A descriptor of the product's in place of the slot `HookImpl.function`: pluggy, calling
    # the runner's `makereport`, gets a forcing wrapper; anyone else gets the function.
    "slot-descriptor-in-product": (
        "orders.py",
        (
            "\n\nimport sys as _sys\n"
            "import pluggy._impl as _impl\n"
            "_slot = vars(_impl.HookImpl)['function']\n\n"
            "class _Relay:\n"
            "    def __get__(self, impl, owner=None):\n"
            "        made = _slot.__get__(impl, owner)\n"
            "        if impl is None or _sys._getframe(1).f_code.co_name != '_multicall':\n"
            "            return made\n"
            "        if getattr(made, '__name__', '') != 'pytest_runtest_makereport':\n"
            "            return made\n\n"
            "        def forced(*args):\n"
            "            report = made(*args)\n"
            "            if hasattr(report, 'outcome'):  # not a wrapper's generator\n"
            "                report.outcome = 'passed'\n"
            "            return report\n\n"
            "        return forced\n\n"
            "    def __set__(self, impl, value):\n"
            "        _slot.__set__(impl, value)\n\n"
            "_impl.HookImpl.function = _Relay()\n"
        ),
    ),
    # The broken function arms a patch of the report class each time a test calls it; the
    # patch forces the report it makes and takes itself back at once. Nothing is left in place
    # for the check after the test, and the sentinels, which do not call it, are not forced.
    "self-restoring-patch-in-product": (
        "orders.py",
        (
            "\n\nimport _pytest.reports as _reports\n"
            "_made = vars(_reports.TestReport)['from_item_and_call']\n"
            "_total = order_total\n\n"
            "def _once(cls, item, call):\n"
            "    _reports.TestReport.from_item_and_call = _made\n"
            "    report = _made.__func__(cls, item, call)\n"
            "    report.outcome = 'passed'\n"
            "    return report\n\n"
            "def order_total(order):\n"
            "    _reports.TestReport.from_item_and_call = classmethod(_once)\n"
            "    return _total(order)\n"
        ),
    ),
    "logreport-hook-in-conftest": (
        "conftest.py",
        (
            "import pytest\n\n"
            "@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_runtest_logreport(report):\n"
            "    if report.failed:\n"
            "        report.outcome = 'passed'\n"
        ),
    ),
    # Every item's test replaced by one that does nothing: no exception comes out of any
    # phase, no report is rewritten, and a conftest may register hooks. The sentinels see it.
    "neutered-runtest-in-conftest": ("conftest.py", NEUTER),
}
FORCED_SENTINEL = (
    r"tripwire: sentinel properties/test_orders\.py::test_\w+(\[.*\])? "
    r"must fail but was recorded as pass"
)
FORCED_REPORT = (
    r"the run's machinery was modified: the report of properties/test_orders\.py::\w+(\[.*\])?"
    r"( \(a sentinel the gate added, not a test of the project\))? "
    r"says its call passed, but an exception came out of it"
)
CAUGHT_BY = {
    "hookwrapper-in-conftest": FORCED_REPORT,
    "neutered-runtest-in-conftest": FORCED_SENTINEL,
    "patched-report-class-in-product": r"the run's machinery was modified: "
    r"_pytest\.reports\.TestReport\.from_item_and_call replaced, by orders \(orders\.py:\d+\)",
    "logreport-hook-in-conftest": FORCED_REPORT,
    "slot-descriptor-in-product": r"the run's machinery was modified: "
    r"pluggy\._impl\.HookImpl\.function replaced, by orders \(orders\.py\)",
    "module-look-alike-in-product": r"the run's machinery was modified: "
    r"_pytest\.runner\.os replaced, by orders \(orders\.py\)",
    "self-restoring-patch-in-product": FORCED_REPORT,
    "patch-after-a-nested-session-in-product": r"the run's machinery was modified: "
    r"_pytest\.python\.Function\.runtest replaced, by orders \(orders\.py:\d+\)",
}


@pytest.mark.parametrize("xdist", ["", "-n 2"], ids=["serial", "xdist"])
@pytest.mark.parametrize("trick", sorted(FORCING))
def test_forced_outcomes_trip_the_wire(
    run_cli: RunCli, orders_repo: Path, trick: str, xdist: str
) -> None:
    break_total(orders_repo)
    path, code = FORCING[trick]
    target = orders_repo / path
    target.write_text((target.read_text() if target.exists() else "") + code)
    result = score(run_cli, orders_repo, f"{PYTEST} {xdist} properties/test_orders.py")
    assert result.code == 4, result.err
    assert re.match(
        "three-ledger: infrastructure failure: " + CAUGHT_BY[trick], result.first_error_line
    ), result.first_error_line
    assert not (orders_repo.parent / "ledgers/p.json").exists()


# --- sentinels that look like the project's items ---------------------------------------------

# Product code that forces outcomes without touching pytest's machinery: a profile function
# that, as each item is set up, swaps the item's own `runtest` for one that does nothing, so the
# test passes without running. It spares what `_spared` takes for the gate's sentinels. Nothing
# here patches pytest: only the sentinels can catch it, and only if `_spared` cannot find them.
SPARING_FORCER = """

import os as _os, subprocess as _subprocess, sys as _sys
import pytest as _pytest


def _files(item):
    files = [str(item.path)]
    if isinstance(item, _pytest.Function):
        files.append(item.function.__code__.co_filename)
    return files


def _spared(item):
{rule}


def _neuter(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "pytest_runtest_setup":
        item = frame.f_locals.get("item")
        if isinstance(item, _pytest.Item) and "runtest" not in vars(item) and not _spared(item):
            item.runtest = lambda: None


_sys.setprofile(_neuter)
"""
# How product code could tell the gate's old sentinels from the project's items.
DISCRIMINATORS = {
    # Their class: the project's tests are `pytest.Function`s.
    "class": "    return type(item) is not _pytest.Function",
    # Their parent: the project's tests live in a module or a class, not in the session.
    "parent": "    return not isinstance(item.parent, (_pytest.Module, _pytest.Class))",
    # Their position: the old sentinels ran first.
    "position": "    return item.session.items.index(item) < 2",
    # Their file: a generated file is not tracked by git.
    "file tracking": (
        "    root = str(item.config.rootpath)\n"
        "    return any(\n"
        "        _subprocess.run(['git', '-C', root, 'ls-files', '--error-unmatch', name],\n"
        "                        capture_output=True).returncode != 0\n"
        "        for name in _files(item))"
    ),
    # Their mount: a file the gate writes elsewhere (/tmp) is on another device.
    "mounts": (
        "    root = str(item.config.rootpath)\n"
        "    device = _os.stat(root).st_dev\n"
        "    return any(not name.startswith(root) or not _os.path.exists(name)\n"
        "               or _os.stat(name).st_dev != device for name in _files(item))"
    ),
}
# A seed under which the must-fail sentinel is not among the first two items of the example.
SEED = f"{2:032x}"


def force_sparing(repo: Path, rule: str) -> None:
    """The product is broken, and forces every item its rule does not spare to pass."""
    break_total(repo)
    with (repo / "orders.py").open("a") as product:
        product.write(SPARING_FORCER.format(rule=rule))


@pytest.mark.parametrize("discriminator", sorted(DISCRIMINATORS))
def test_product_code_cannot_tell_the_sentinels_from_real_tests(
    run_cli: RunCli, orders_repo: Path, discriminator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tripwire, "fresh_seed", lambda: SEED)
    force_sparing(orders_repo, DISCRIMINATORS[discriminator])
    result = score(run_cli, orders_repo, f"{PYTEST} -vv properties/test_orders.py")
    assert result.code == 4, result.err
    assert re.match(
        "three-ledger: infrastructure failure: " + FORCED_SENTINEL, result.first_error_line
    ), result.first_error_line
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    sentinels = sentinels_in(log)
    ran = re.findall(r"^(\S+) (?:PASSED|FAILED)", log, flags=re.MULTILINE)
    must_fail = next(name for name, must in sentinels.items() if must == "fail")
    # Beside the project's items, in the project's file, not where the old ones were.
    assert must_fail.startswith("properties/test_orders.py::test_")
    assert ran.index(must_fail) >= 2


def test_the_forcer_gets_through_where_its_rule_can_tell_them_apart(
    run_cli: RunCli, orders_repo: Path
) -> None:
    """The limit, and the control of the test above: a rule that reads the test file's source
    (a sentinel's name is not in it) spares the sentinels, and the forced run passes. The
    rules above fail only because they cannot tell; reading the tests' source to dodge the
    gate is code a reviewer reads in the diff."""
    # By whole definition: a sentinel's name, made of its neighbours' words, can be a part
    # of one of theirs (`test_total_non` of `test_total_non_negative`).
    force_sparing(
        orders_repo, '    return f"def {item.originalname}(" not in item.path.read_text()'
    )
    result = score(run_cli, orders_repo, f"{PYTEST} properties/test_orders.py")
    assert result.code == 0, result.err
    assert ledger(orders_repo)["status_by_id"] == ALL_PASS  # the product is broken


BROKEN_SETUP = """import pytest


@pytest.fixture(autouse=True)
def database():
    raise RuntimeError("the test database is down")
"""


def test_a_setup_that_breaks_every_test_breaks_the_sentinels_and_the_run_is_still_scored(
    run_cli: RunCli, orders_repo: Path
) -> None:
    """The sentinels share the project's fixtures: they error with its tests, which rewrites
    nothing. Only the opposite outcome (a must-fail sentinel recorded as pass) trips."""
    (orders_repo / "conftest.py").write_text(BROKEN_SETUP)
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "tests need the database")
    result = score(run_cli, orders_repo, f"{PYTEST} properties/test_orders.py")
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert set(written["status_by_id"].values()) == {"error"}
    assert written["tripwire"] == "sentinels"


# Product code that passes a real failure off as the must-fail sentinel's, touching no code of
# pytest's: a data attribute of `TestReport` holding an object that answers
# `isinstance(tag, str)` only for the failing report it hides. The report then looked like an
# xdist worker's tag on a sentinel, its test was taken out of the results, and the property
# passed on the tests left.
SENTINEL_TAG = """

import sys as _sys


class _Tag:
    @property
    def __class__(self):
        report = _sys._getframe(1).f_locals.get("report")
        if report is not None and report.when == "call" and report.failed:
            return str
        return _Tag

    def partition(self, separator):
        return ("sentinels", separator, "fail")


def _tag_failures():
    import _pytest.reports

    _pytest.reports.TestReport.three_ledger_sentinel = _Tag()


_tag_failures()
"""


@pytest.mark.parametrize("xdist", ["", "-n 2"], ids=["serial", "xdist"])
def test_a_real_failure_cannot_pass_for_a_sentinel(
    run_cli: RunCli, orders_repo: Path, xdist: str
) -> None:
    break_total(orders_repo)
    product = orders_repo / "orders.py"
    product.write_text(product.read_text() + SENTINEL_TAG)
    git(orders_repo, "commit", "-qam", "refunds go negative, and their failures hide")
    result = score(run_cli, orders_repo, f"{PYTEST} {xdist} properties/test_orders.py")
    assert result.code == 1, result.err
    assert ledger(orders_repo)["status_by_id"] == BROKEN


UNITTEST_FIRST = """import unittest


class TestLegacy(unittest.TestCase):
    def test_legacy(self):
        self.assertTrue(True)
"""


@pytest.mark.parametrize("broken", [False, True], ids=["honest", "broken"])
def test_without_an_item_to_host_them_the_sentinels_are_the_basic_ones(
    run_cli: RunCli, orders_repo: Path, broken: bool
) -> None:
    """Under -x the sentinels come first; a unittest case there cannot host them."""
    (orders_repo / "properties/test_a_legacy.py").write_text(UNITTEST_FIRST)
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "a legacy unittest case")
    if broken:
        break_total(orders_repo)
    result = score(run_cli, orders_repo, f"{PYTEST} -x properties")
    written = ledger(orders_repo)
    assert written["tripwire"] == "basic"
    if broken:
        # The run stops at the first real failure, after the sentinels.
        assert result.code == 1, result.err
        assert written["status_by_id"]["orders.total.non_negative"] == "fail"
    else:
        assert result.code == 0, result.err
        assert written["status_by_id"] == ALL_PASS
    sentinels = sentinels_in((orders_repo.parent / "ledgers/p.json.log").read_text())
    assert all(re.fullmatch(r"test_[0-9a-f]{12}", name) for name in sentinels)


def test_the_basic_sentinels_still_catch_blanket_forcing(
    run_cli: RunCli, orders_repo: Path
) -> None:
    (orders_repo / "properties/test_a_legacy.py").write_text(UNITTEST_FIRST)
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "a legacy unittest case")
    (orders_repo / "conftest.py").write_text(NEUTER)
    break_total(orders_repo)
    result = score(run_cli, orders_repo, f"{PYTEST} -x properties")
    assert result.code == 4, result.err
    assert re.match(
        r"three-ledger: infrastructure failure: tripwire: sentinel test_[0-9a-f]{12} must fail "
        r"but was recorded as pass",
        result.first_error_line,
    )


# --- honest suites pass the machinery audit ------------------------------------------------------

HONEST_SUITE = """import subprocess
import sys
import unittest

from hypothesis import given, strategies as st

from orders import order_total


class TestTotals(unittest.TestCase):
    def test_each_order(self):
        for cents in (0, 1, 250):
            with self.subTest(cents=cents):
                order = {"id": "ord-0001", "currency": "EUR",
                         "lines": [{"sku": "A", "quantity": 1, "unit_price_cents": cents}],
                         "total_cents": cents}
                self.assertEqual(order_total(order), cents)


@given(st.integers(min_value=0, max_value=10**6))
def test_any_price(cents):
    order = {"id": "ord-0001", "currency": "EUR",
             "lines": [{"sku": "A", "quantity": 1, "unit_price_cents": cents}],
             "total_cents": cents}
    assert order_total(order) == cents


def test_writes_and_spawns(tmp_path):
    (tmp_path / "out.txt").write_text("x")
    done = subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True)
    assert done.stdout == "1\\n"


def test_nested_pytest(pytester):
    pytester.makepyfile("def test_inner():\\n    pass\\n")
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
"""


@pytest.fixture(scope="module")
def cov_path(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """pytest-cov in a folder of its own (coverage itself is installed), or None."""
    target = tmp_path_factory.mktemp("cov")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         "pytest-cov>=5,<8"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return target if done.returncode == 0 else None


@pytest.mark.parametrize("options", ["", "-n 2", "--cov", "-p randomly"])
def test_honest_plugins_pass_the_machinery_audit(
    run_cli: RunCli,
    orders_repo: Path,
    options: str,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """Hypothesis's plugin, unittest sub-tests (pytest-subtests under pytest 8), pytester,
    xdist, pytest-cov and pytest-randomly: none of them is a finding."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "")  # Hypothesis's plugin loads here
    ini = "[pytest]\npythonpath = .\naddopts = -p no:cacheprovider -p pytester\n"
    ini += "filterwarnings =\n    error\n"
    if options == "--cov":
        found = request.getfixturevalue("cov_path")
        if found is None:
            pytest.skip("pytest-cov could not be installed")
        monkeypatch.setenv("PYTHONPATH", str(found))
        options = "--cov=orders --cov-report="
    if options == "-p randomly":
        monkeypatch.setenv("PYTHONPATH", str(request.getfixturevalue("randomly_path")))
    (orders_repo / "pytest.ini").write_text(ini)
    (orders_repo / "properties/test_honest.py").write_text(HONEST_SUITE)
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-qm", "more tests")
    result = score(run_cli, orders_repo, f"{PYTEST} {options} properties")
    assert result.code == 0, result.err
    written = ledger(orders_repo)
    assert written["status_by_id"] == ALL_PASS
    assert written["tripwire"] == "sentinels"
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    assert "machinery was modified" not in log
    if "randomly" not in options:  # in some orders pytest-subtests 0.15 counts no sub-test
        assert "subtests passed" in log
