"""The tripwire inside real pytest runs (plugin/tripwire.py, sentinels.py, machinery.py): where
the sentinels go and what they are, and what the machinery audit finds, read from the
tripwire's record."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.pytest_child


def child_env(**extra: str) -> dict[str, str]:
    """The outer environment without anything that would steer the inner pytest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "THREE_LEDGER_"))}
    env["PYTEST_PLUGINS"] = "three_ledger.plugin.hooks"
    env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest -p no:cacheprovider"
    env.update(extra)
    return env


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # An ini file of its own, so the inner run never picks up this project's configuration.
    (folder / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def run(
    folder: Path, *args: str, seed: int = 1
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """pytest in FOLDER under the tripwire; how it ended, and its record: the findings and the
    sentinels of its last session."""
    record = folder / "tripwire.jsonl"
    record.unlink(missing_ok=True)
    env = child_env(
        THREE_LEDGER_TRIPWIRE=str(record),
        THREE_LEDGER_TRIPWIRE_SEED=f"{seed:032x}",
        THREE_LEDGER_RESULTS=str(folder / "results.jsonl"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    lines = (
        [json.loads(text) for text in record.read_text().splitlines()] if record.exists() else []
    )
    findings = [f"{line['machinery']}, by {line['by']}" for line in lines if "machinery" in line]
    sessions = [line for line in lines if "sentinels" in line]
    last = sessions[-1] if sessions else {"sentinels": {}, "mechanism": None}
    return done, {"findings": findings, **last}


def order(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The node ids `--collect-only -q` listed, in run order."""
    return [line for line in done.stdout.splitlines() if "::" in line]


FLAT = """
import pytest

@pytest.mark.parametrize("n", range(4))
def test_total_is_even(n):
    assert (2 * n) % 2 == 0

def test_total_of_nothing():
    assert sum([]) == 0

def test_id_is_stable():
    assert "a" == "a"
"""


# --- the sentinels ---------------------------------------------------------------------------


def test_sentinels_are_the_projects_functions_in_its_modules(tmp_path: Path) -> None:
    folder = write(tmp_path, {"test_flat.py": FLAT, "conftest.py": DESCRIBING})
    done, record = run(folder, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert record["mechanism"] == "sentinels"
    described = json.loads((folder / "items.json").read_text())
    for nodeid in record["sentinels"]:
        # A pytest.Function of the project's module, in its file, named from its words.
        assert described[nodeid] == ["Function", "test_flat.py", str(folder / "test_flat.py")]
        name = nodeid.split("::")[1].split("[")[0]
        assert set(name.split("_")) <= {
            "test",
            "total",
            "is",
            "even",
            "of",
            "nothing",
            "id",
            "stable",
        }
    assert sorted(record["sentinels"].values()) == ["fail", "pass"]


# A conftest that writes, for each item of the run, its class, its parent's node id and the
# file its function was compiled from.
DESCRIBING = """
import json
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    described = {
        item.nodeid: [type(item).__name__, item.parent.nodeid, item.function.__code__.co_filename]
        for item in session.items
    }
    with open("items.json", "w") as stream:
        json.dump(described, stream)
"""


def test_a_parametrised_sentinel_takes_its_neighbours_parameters(tmp_path: Path) -> None:
    folder = write(tmp_path, {"test_flat.py": "import pytest\n" + PARAMETRISED_ONLY})
    done, record = run(folder, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    for nodeid in record["sentinels"]:
        assert re.fullmatch(r"test_flat\.py::test_\w+\[\d-(red|green)\]", nodeid), nodeid


PARAMETRISED_ONLY = """
@pytest.mark.parametrize("colour", ["red", "green"])
@pytest.mark.parametrize("n", [1, 2])
def test_colour_count(colour, n):
    assert n
"""


def test_a_sentinel_has_its_neighbours_parameters_and_fixtures_whatever_made_them(
    tmp_path: Path,
) -> None:
    """Sets from the module's `pytest_generate_tests` hook, with ids it makes, times an
    indirect parametrisation of a fixture: 120 items, most of them past the first few sets.
    Each sentinel has the parameters, the ids and the fixtures of the item beside it."""
    folder = write(tmp_path, {"test_sizes.py": GENERATED, "conftest.py": LISTING})
    for seed in (1, 2, 3):
        done, record = run(folder, "-q", seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        listed = json.loads((folder / "items.json").read_text())
        for nodeid in record["sentinels"]:
            at = [entry[0] for entry in listed].index(nodeid)
            beside = [listed[i] for i in (at - 1, at + 1) if 0 <= i < len(listed)]
            shown = [entry[1:] for entry in beside if entry[0] not in record["sentinels"]]
            assert listed[at][1:] in shown, (listed[at], beside)


GENERATED = """
import pytest

def pytest_generate_tests(metafunc):
    if "size" in metafunc.fixturenames:
        metafunc.parametrize("size", range(40), ids=lambda n: f"s{n}")

@pytest.fixture
def doubled(request):
    return request.param * 2

@pytest.mark.parametrize("doubled", [1, 2, 3], indirect=True)
def test_size_fits(size, doubled):
    assert size >= 0 and doubled > 0
"""
# A conftest that lists the run's items in order: node id, then what pytest resolved for each
# (its parameters' ids, its parameters, its fixtures).
LISTING = """
import json
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    listed = [
        [item.nodeid, item.callspec.id, repr(sorted(item.callspec.params.items())),
         sorted(item.fixturenames)]
        for item in session.items
    ]
    with open("items.json", "w") as stream:
        json.dump(listed, stream)
"""


def test_a_sentinel_never_takes_parameters_marked_to_skip(tmp_path: Path) -> None:
    source = """import pytest

@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.skip(reason="no"))])
def test_count_up(n):
    assert n
"""
    folder = write(tmp_path, {"test_marked.py": source})
    for seed in range(1, 7):
        done, record = run(folder, "-q", seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        assert all(nodeid.endswith("[1]") for nodeid in record["sentinels"]), record


def test_a_sentinel_beside_a_class_is_a_method_of_that_class(tmp_path: Path) -> None:
    source = "class TestTotals:\n    def test_sum_empty(self):\n        assert sum([]) == 0\n"
    folder = write(tmp_path, {"test_cls.py": source})
    done, record = run(folder, "-q")
    assert done.returncode == 0, done.stdout + done.stderr  # the sentinel's failure not counted
    assert all(
        nodeid.startswith("test_cls.py::TestTotals::test_") for nodeid in record["sentinels"]
    )


@pytest.mark.parametrize(("stop", "reach"), [("-x", 0), ("--maxfail=3", 2), ("--sw", 0)])
def test_sentinels_run_before_any_item_that_could_stop_the_session(
    tmp_path: Path, stop: str, reach: int
) -> None:
    folder = write(tmp_path, {"test_flat.py": FLAT})
    for seed in range(1, 9):
        done, record = run(folder, "--collect-only", "-q", stop, seed=seed)
        listed = order(done)
        positions = sorted(listed.index(nodeid) for nodeid in record["sentinels"])
        # At most REACH project items come before a sentinel: none of them can stop the run.
        assert positions[-1] <= reach + 1, (seed, listed)


def test_without_a_stop_option_the_sentinels_go_anywhere_in_the_run(tmp_path: Path) -> None:
    folder = write(tmp_path, {"test_flat.py": FLAT, "test_more.py": FLAT.replace("total", "sum")})
    seen: set[int] = set()
    for seed in range(1, 13):
        done, record = run(folder, "--collect-only", "-q", seed=seed)
        listed = order(done)
        seen.update(listed.index(nodeid) for nodeid in record["sentinels"])
    # 12 project items and 2 sentinels: positions all over the run, not the first few.
    assert max(seen) >= 9
    assert len(seen) >= 6


def test_xdist_workers_insert_the_same_sentinels(tmp_path: Path) -> None:
    folder = write(tmp_path, {"test_flat.py": FLAT, "test_more.py": FLAT.replace("total", "sum")})
    done, record = run(folder, "-q", "-n", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    results = {
        line["id"]: line["outcome"]
        for line in map(json.loads, (folder / "results.jsonl").read_text().splitlines())
    }
    assert {nodeid: results[nodeid] for nodeid in record["sentinels"]} == record["sentinels"]
    assert record["mechanism"] == "sentinels"


UNITTEST_ONLY = """import unittest


class TestTotals(unittest.TestCase):
    def test_a(self):
        pass
"""
SKIPPED_ONLY = """import pytest

pytestmark = pytest.mark.skipif(True, reason="not here")


def test_a():
    pass
"""


@pytest.mark.parametrize(
    "files",
    [{"test_unit.py": UNITTEST_ONLY}, {"test_skipped.py": SKIPPED_ONLY}],
    ids=["unittest only", "module skipped"],
)
def test_where_no_item_can_host_them_the_sentinels_are_basic(
    tmp_path: Path, files: dict[str, str]
) -> None:
    folder = write(tmp_path, files)
    done, record = run(folder, "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert record["mechanism"] == "basic"
    assert all(re.fullmatch(r"test_[0-9a-f]{12}", nodeid) for nodeid in record["sentinels"])


def test_a_skipped_module_never_hosts_a_sentinel(tmp_path: Path) -> None:
    skipped = "import pytest\npytestmark = pytest.mark.skip(reason='not here')\n" + FLAT
    folder = write(tmp_path, {"test_a_skipped.py": skipped, "test_b.py": FLAT})
    for seed in range(1, 6):
        done, record = run(folder, "-q", seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        assert all(nodeid.startswith("test_b.py::") for nodeid in record["sentinels"])


# --- the machinery audit -----------------------------------------------------------------------

# Finds the run's config on the stack of the import that loads the product.
FIND_CONFIG = """import sys


def _find():
    frame = sys._getframe(1)
    while frame is not None:
        if hasattr(frame.f_locals.get("config"), "pluginmanager"):
            return frame.f_locals["config"]
        frame = frame.f_back


_config = _find()
"""
# Product code the tests import, each changing pytest's machinery in one way. Harmless to the
# run (pytest keeps working), so that the record, not a crash, shows the finding.
TAMPERING = {
    "function code swapped": (
        """import sys
_show = sys.modules["_pytest.runner"].show_test_item
_show.__code__ = _show.__code__.replace()
""",
        r"_pytest\.runner\.show_test_item\.__code__ set, by product \(product\.py:3\)",
    ),
    "class bases reassigned": (
        """import sys
_reports = sys.modules["_pytest.reports"]
_reports.TestReport.__bases__ = (_reports.BaseReport,)
""",
        r"_pytest\.reports\.TestReport\.__bases__ set, by product \(product\.py:3\)",
    ),
    "instance class swapped": (
        """import sys
_report = sys.modules["_pytest.reports"].TestReport
class Forced(_report):
    pass
_made = object.__new__(_report)
_made.__class__ = Forced
""",
        r"the class of a _pytest\.reports\.TestReport object set to product\.Forced, by product.*",
    ),
    "module function replaced": (
        """import sys
_runner = sys.modules["_pytest.runner"]
_show = _runner.show_test_item
def show_test_item(item):
    return _show(item)
_runner.show_test_item = show_test_item
""",
        r"_pytest\.runner\.show_test_item replaced, by product \(product\.py:4\)",
    ),
    "module dict written directly": (
        """import sys
_runner = sys.modules["_pytest.runner"]
_show = _runner.show_test_item
def show_test_item(item):
    return _show(item)
vars(_runner)["show_test_item"] = show_test_item
""",
        r"_pytest\.runner\.show_test_item replaced, by product \(product\.py:4\)",
    ),
    "class dict written behind the audit": (
        """import gc, sys
_report = sys.modules["_pytest.reports"].TestReport
def _to_json(self):
    return super(_report, self)._to_json()
gc.get_referents(_report.__dict__)[0]["_to_json"] = _to_json
""",
        r"_pytest\.reports\.TestReport\._to_json added, by product \(product\.py:3\)",
    ),
    "standard library stand-in": (
        """import functools, sys
_runner = sys.modules["_pytest.runner"]
_runner.show_test_item = functools.partial(_runner.show_test_item)
""",
        r"_pytest\.runner\.show_test_item replaced, by functools .*",
    ),
    "hook function swapped": (
        FIND_CONFIG
        + """_impl = _config.pluginmanager.hook.pytest_runtest_makereport.get_hookimpls()[0]
_made = _impl.function
def makereport(*args, **kwargs):
    return _made(*args, **kwargs)
_impl.function = makereport
""",
        r"hook implementation pytest_runtest_makereport of \S+ replaced, by product .*",
    ),
    "hook added without register": (
        FIND_CONFIG
        + """_caller = _config.pluginmanager.hook.pytest_runtest_logreport
_impl = _caller.get_hookimpls()[0]
class Quiet:
    def pytest_runtest_logreport(self, report):
        pass
_options = dict(
    wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False,
    specname=None,
)
_quiet = Quiet()
_caller._add_hookimpl(type(_impl)(_quiet, "quiet", _quiet.pytest_runtest_logreport, _options))
""",
        r"hook implementation pytest_runtest_logreport of quiet added, by product .*",
    ),
    "plugin unregistered": (
        FIND_CONFIG + '_config.pluginmanager.unregister(name="logging-plugin")\n',
        r"hook implementation \w+ of logging-plugin removed, by None",
    ),
    "hook runner traced": (
        FIND_CONFIG
        + """def _before(name, impls, kwargs):
    pass
def _after(outcome, name, impls, kwargs):
    pass
_config.pluginmanager.add_hookcall_monitoring(_before, _after)
""",
        r"pluggy's hook runner replaced, by product .*",
    ),
}
USES_PRODUCT = "import product\n\ndef test_total():\n    assert product\n"


@pytest.mark.parametrize("change", sorted(TAMPERING))
def test_each_change_to_the_machinery_is_a_finding_naming_who_made_it(
    tmp_path: Path, change: str
) -> None:
    code, expected = TAMPERING[change]
    folder = write(tmp_path, {"product.py": code, "test_p.py": USES_PRODUCT})
    done, record = run(folder, "-q")
    assert any(re.fullmatch(expected, finding) for finding in record["findings"]), (
        record["findings"],
        done.stdout[-2000:],
    )
    assert "three-ledger: the run's machinery was modified: " in done.stdout


def test_a_patch_taken_back_before_the_session_ends_is_still_found(tmp_path: Path) -> None:
    product = (
        "import sys\n"
        "_runner = sys.modules['_pytest.runner']\n"
        "_show = _runner.show_test_item\n"
        "def show_test_item(item):\n    return _show(item)\n"
        "def patch():\n    _runner.show_test_item = show_test_item\n"
        "def restore():\n    _runner.show_test_item = _show\n"
    )
    tests = "import product\n\ndef test_a():\n    product.patch()\n\n"
    tests += "def test_b():\n    product.restore()\n"
    folder = write(tmp_path, {"product.py": product, "test_p.py": tests})
    _, record = run(folder, "-q", "-p", "no:randomly")
    assert record["findings"] == [
        "_pytest.runner.show_test_item replaced, by product (product.py:4)"
    ]


def test_in_an_xdist_worker_too(tmp_path: Path) -> None:
    code = TAMPERING["module function replaced"][0]
    only_in_workers = "import os\nif os.environ.get('PYTEST_XDIST_WORKER'):\n" + textwrap.indent(
        code, "    "
    )
    folder = write(tmp_path, {"product.py": only_in_workers, "test_p.py": USES_PRODUCT})
    _, record = run(folder, "-q", "-n", "2")
    assert any(
        re.fullmatch(r"_pytest\.runner\.show_test_item replaced, by product \(product\.py:\d+\)", f)
        for f in record["findings"]
    ), record["findings"]


# Product code a phase calls, which forces that phase's report once and takes its patch back
# as it makes the report: nothing is left in place for the check after the test to find.
SELF_RESTORING = """import sys
_reports = sys.modules["_pytest.reports"]
_made = vars(_reports.TestReport)["from_item_and_call"]

def _once(cls, item, call):
    _reports.TestReport.from_item_and_call = _made
    report = _made.__func__(cls, item, call)
    report.outcome = "passed"
    report.longrepr = None
    return report

def price():
    _reports.TestReport.from_item_and_call = classmethod(_once)
    return -1
"""
# The same broken product, reached from each phase of one test.
PHASES = {
    "setup": (
        "import pytest, product\n\n@pytest.fixture\ndef priced():\n"
        "    assert product.price() > 0\n\ndef test_price(priced):\n    pass\n"
    ),
    "call": "import product\n\ndef test_price():\n    assert product.price() > 0\n",
    "teardown": (
        "import pytest, product\n\n@pytest.fixture\ndef priced():\n    yield\n"
        "    assert product.price() > 0\n\ndef test_price(priced):\n    pass\n"
    ),
}


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_a_report_that_says_passed_after_its_phase_raised_is_a_finding(
    tmp_path: Path, phase: str
) -> None:
    folder = write(tmp_path, {"product.py": SELF_RESTORING, "test_p.py": PHASES[phase]})
    done, record = run(folder, "-q", "-p", "no:randomly")
    # The patch is gone before the machinery is compared: only the witness sees it. The
    # sentinels made beside the test share its fixture, so theirs may be forced too.
    expected = (
        f"the report of test_p.py::test_price says its {phase} passed, "
        "but an exception came out of it, by None"
    )
    assert expected in record["findings"], done.stdout[-2000:]
    # A sentinel's finding says what it is: its name is made to look like the project's.
    pattern = expected.replace(".", r"\.").replace(
        "test_price", r"test_price(\w+ \(a sentinel the gate added, not a test of the project\))?"
    )
    assert all(re.fullmatch(pattern, finding) for finding in record["findings"])


def test_a_forced_outcome_that_answers_the_witness_differently_is_still_found(
    tmp_path: Path,
) -> None:
    # A string that is "passed" to everyone but the witness.
    sly = SELF_RESTORING.replace(
        'report.outcome = "passed"',
        "report.outcome = _Sly('passed')",
    ) + (
        "\nclass _Sly(str):\n    def __eq__(self, other):\n"
        "        if sys._getframe(1).f_code.co_name == '_check_witness':\n"
        "            return False\n"
        "        return str.__eq__(self, other)\n\n"
        "    __hash__ = str.__hash__\n"
    )
    assert sly != SELF_RESTORING
    folder = write(tmp_path, {"product.py": sly, "test_p.py": PHASES["call"]})
    done, record = run(folder, "-q", "-p", "no:randomly")
    assert (
        "the report of test_p.py::test_price says its call passed, "
        "but an exception came out of it, by None"
    ) in record["findings"], done.stdout[-2000:]


# Every way pytest reports a phase that raised, and a pass that raised nothing after one that
# did: none is a finding.
HONEST_OUTCOMES = """
import unittest
import pytest

def test_skipped():
    pytest.skip("not here")

def test_import_skipped():
    pytest.importorskip("no_such_module_anywhere")

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False

@pytest.mark.xfail(reason="fixed since", strict=False)
def test_unexpected_pass():
    pass

@pytest.mark.xfail(reason="fixed since", strict=True)
def test_strict_unexpected_pass():
    pass

def test_imperative_xfail():
    pytest.xfail("not yet")

def test_failed():
    pytest.fail("no")

@pytest.fixture
def broken():
    raise RuntimeError("no fixture")

def test_setup_error(broken):
    pass

@pytest.fixture
def leaky():
    yield
    raise RuntimeError("no teardown")

def test_teardown_error(leaky):
    pass

def test_passes_after_the_errors():
    pass

class Case(unittest.TestCase):
    def test_unittest_fails(self):
        self.assertEqual(1, 2)

    def test_unittest_skips(self):
        self.skipTest("not here")

    def test_unittest_sub_tests(self):
        for n in range(2):
            with self.subTest(n=n):
                self.assertEqual(n, 0)
"""


def test_no_honest_outcome_after_a_raise_is_a_finding(tmp_path: Path) -> None:
    folder = write(tmp_path, {"test_p.py": HONEST_OUTCOMES})
    done, record = run(folder, "-q", "-p", "no:randomly")
    assert done.returncode == 1, done.stdout[-2000:]
    assert record["findings"] == [], done.stdout[-2000:]
    lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    outcomes = {line["id"].removeprefix("test_p.py::"): line["outcome"] for line in lines}
    assert {name: outcomes.get(name) for name in HONEST_EXPECTED} == HONEST_EXPECTED


def test_a_session_ended_from_inside_a_test_is_no_finding(tmp_path: Path) -> None:
    """`pytest.exit` raises out of the call, and pytest makes no report of it: the witness
    waits for a report that never comes, and no later one is taken for it. (Under xdist,
    `pytest.exit` in a test is an internal error of xdist's own, with or without the gate.)"""
    tests = (
        "import pytest\n\ndef test_a():\n    pass\n\n"
        "def test_b():\n    pytest.exit('enough', returncode=0)\n\n"
        "def test_c():\n    pass\n"
    )
    folder = write(tmp_path, {"test_p.py": tests})
    done, record = run(folder, "-q", "-p", "no:randomly")
    assert "Exit: enough" in done.stdout, done.stdout[-2000:]
    assert record["findings"] == [], done.stdout[-2000:]


# What the results file says of each (an expected failure is a failure, an unexpected pass
# an error: plugin/hooks.py's report_outcome).
HONEST_EXPECTED = {
    "test_skipped": "skip",
    "test_import_skipped": "skip",
    "test_expected_failure": "fail",
    "test_unexpected_pass": "error",
    "test_strict_unexpected_pass": "error",
    "test_imperative_xfail": "fail",
    "test_failed": "fail",
    "test_setup_error": "error",
    "test_teardown_error": "error",
    "test_passes_after_the_errors": "pass",
    "Case::test_unittest_fails": "fail",
    "Case::test_unittest_skips": "skip",
    "Case::test_unittest_sub_tests": "fail",
}


def test_a_class_given_get_after_its_object_was_put_in_place_is_found(tmp_path: Path) -> None:
    """At import the object is data on `TestReport`; the test then gives its class `__get__`,
    which no pytest namespace shows. The class is watched from the check that saw the object."""
    product = (
        "import sys\n"
        "_reports = sys.modules['_pytest.reports']\n"
        "class Outcome:\n    pass\n"
        "_reports.TestReport.spare = Outcome()\n"
        "def _get(self, report, owner=None):\n    return self\n"
        "def arm():\n    Outcome.__get__ = _get\n"
    )
    tests = "import product\n\ndef test_a():\n    product.arm()\n"
    folder = write(tmp_path, {"product.py": product, "test_p.py": tests})
    done, record = run(folder, "-q", "-p", "no:randomly")
    assert record["findings"] == ["product.Outcome.__get__ added, by product (product.py:6)"], (
        done.stdout[-2000:]
    )


# A helper of the project that registers a plugin, and a conftest that calls it.
HELPER = """
class Timings:
    def pytest_runtest_logreport(self, report):
        pass

def install(config):
    config.pluginmanager.register(Timings(), "timings")
"""


def test_a_conftest_registers_plugins_and_a_helper_it_calls_may_not(tmp_path: Path) -> None:
    """Registrations by the modules pytest registered (conftests, -p modules) are how pytest
    is extended; a module they merely import is the project's code like any other."""
    own = "class Timings:\n    def pytest_runtest_logreport(self, report):\n        pass\n\n"
    own += (
        "def pytest_configure(config):\n    config.pluginmanager.register(Timings(), 'timings')\n"
    )
    plain = "def test_a():\n    pass\n"
    folder = write(tmp_path / "own", {"conftest.py": own, "test_p.py": plain})
    _, record = run(folder, "-q")
    assert record["findings"] == []
    calls = "import helper\n\ndef pytest_configure(config):\n    helper.install(config)\n"
    files = {"conftest.py": calls, "helper.py": HELPER, "test_p.py": plain}
    folder = write(tmp_path / "helper", files)
    _, record = run(folder, "-q")
    assert record["findings"] == [
        "pytest_runtest_logreport of plugin timings registered, by helper (helper.py:7)"
    ]


def test_an_honest_run_has_no_finding_and_pytester_inside_it_neither(tmp_path: Path) -> None:
    tests = (
        "pytest_plugins = ['pytester']\n\n"
        "def test_inner(pytester):\n"
        "    pytester.makepyfile('def test_x():\\n    pass\\n')\n"
        "    pytester.runpytest_inprocess().assert_outcomes(passed=1)\n\n"
        "def test_monkeypatch_elsewhere(monkeypatch):\n"
        "    import os\n"
        "    monkeypatch.setattr(os, 'sep', '/')\n"
    )
    folder = write(tmp_path, {"test_p.py": tests})
    done, record = run(folder, "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert record["findings"] == []
    assert record["mechanism"] == "sentinels"
