"""unittest is machinery too: a unittest-style test's outcome is made by `TestCase.run` and
its asserts, so product code that replaces them forces outcomes as a patch of pytest does.

pytest imports unittest only once a test module does, after the product may have run; the
audit imports it first and watches its modules and classes as it watches pytest's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import CliResult, RunCli, git
from helpers.scoring import PYTEST, ledger, score
from helpers.suites import make_suite, prop, properties_pin

pytestmark = pytest.mark.pytest_child

SUITE = """
import unittest

import product


class TestMinimum(unittest.TestCase):
    maxDiff = None

    def test_minimum(self):
        self.assertEqual(product.minimum(), "minimum")

    def test_minimum_is_text(self):
        self.assertTrue(product.minimum() == "minimum")
"""

HONEST = 'def minimum():\n    return "minimum"\n'
BROKEN = 'def minimum():\n    return "maximum"\n'
MODIFIED = "three-ledger: infrastructure failure: the run's machinery was modified: "


def scored(run_cli: RunCli, tmp_path: Path, product: str) -> CliResult:
    """The suite at its base with the honest product, then PRODUCT committed over it, scored."""
    pin = properties_pin([prop("suite.minimum", "tests/test_suite.py::TestMinimum")])
    repo = make_suite(tmp_path / "suite", pin, SUITE, ini="[pytest]\npythonpath = .\n")
    (repo / "product.py").write_text(HONEST)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the product")
    (repo / "product.py").write_text(product)
    git(repo, "commit", "-qam", "a change to the product")
    return score(run_cli, repo, "--base", "HEAD~1", command=f"{PYTEST} tests")


def statuses(tmp_path: Path) -> dict[str, str]:
    return dict(ledger(tmp_path / "suite")["status_by_id"])


def test_an_honest_product_passes_and_a_broken_one_fails(run_cli: RunCli, tmp_path: Path) -> None:
    honest = scored(run_cli, tmp_path / "honest", HONEST + "\n# a comment\n")
    assert honest.code == 0, honest.err
    assert statuses(tmp_path / "honest") == {"suite.minimum": "pass"}
    broken = scored(run_cli, tmp_path / "broken", BROKEN)
    assert broken.code == 1, broken.err
    assert statuses(tmp_path / "broken") == {"suite.minimum": "fail"}


# Each over the broken product: without the audit of unittest, each of them passed.
SABOTAGE = {
    # A class attribute set: no audit event, found by comparing TestCase's namespace.
    "asserts replaced": (
        (
            "import unittest\n"
            "unittest.TestCase.assertEqual = lambda *args, **kwargs: None\n"
            "unittest.TestCase.assertTrue = lambda *args, **kwargs: None\n"
        ),
        "unittest.case.TestCase.assertEqual replaced, by product (product.py:2)",
    ),
    # An audit event (`object.__setattr__` of `__code__`), judged by the code on the stack.
    "code swapped": (
        (
            "import unittest.case\n"
            "def _nothing(self, *args, **kwargs):\n    pass\n"
            "unittest.case.TestCase.assertEqual.__code__ = _nothing.__code__\n"
            "unittest.case.TestCase.assertTrue.__code__ = _nothing.__code__\n"
        ),
        "unittest.case.TestCase.assertEqual.__code__ set, by product (product.py:4)",
    ),
    # What makes every unittest-style outcome: the run, told to take failures for passes.
    "run replaced": (
        (
            "import unittest\n"
            "_run = unittest.TestCase.run\n"
            "def _quiet(self, result=None):\n"
            "    result.addFailure = lambda test, error: None\n"
            "    return _run(self, result)\n"
            "unittest.TestCase.run = _quiet\n"
        ),
        "unittest.case.TestCase.run replaced, by product (product.py:3)",
    ),
}


@pytest.mark.parametrize("sabotage", sorted(SABOTAGE))
def test_product_code_that_patches_unittest_is_caught(
    run_cli: RunCli, tmp_path: Path, sabotage: str
) -> None:
    code, finding = SABOTAGE[sabotage]
    result = scored(run_cli, tmp_path, code + BROKEN)
    assert result.code == 4, result.err
    assert MODIFIED in result.err
    assert finding in result.err
    assert not (tmp_path / "ledgers/p.json").exists()


# Where a test or a conftest imports unittest's own submodules: the import system binds them
# on the `unittest` package, a name it did not hold at load. click's suite, which imports
# `unittest.mock`, was refused (`unittest.mock added, by unittest.mock`).
MOCKING = """
from unittest import mock

import product


def test_minimum_through_a_mock():
    with mock.patch.object(product, "minimum", return_value="minimum"):
        assert product.minimum() == "minimum"
"""


@pytest.mark.parametrize("where", ["tests/test_mocking.py", "tests/conftest.py"])
def test_importing_unittest_mock_is_no_finding(run_cli: RunCli, tmp_path: Path, where: str) -> None:
    pin = properties_pin([prop("suite.minimum", "tests/test_suite.py::TestMinimum")])
    repo = make_suite(tmp_path / "suite", pin, SUITE, ini="[pytest]\npythonpath = .\n")
    (repo / "product.py").write_text(HONEST)
    (repo / where).write_text(
        MOCKING if where.endswith("test_mocking.py") else "import unittest.mock\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the product, and a test through a mock")
    result = score(run_cli, repo, "--base", "HEAD", command=f"{PYTEST} tests")
    assert result.code == 0, result.err
    assert statuses(tmp_path) == {"suite.minimum": "pass"}


def test_a_module_of_the_product_put_in_place_of_a_submodule_is_still_found(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """Only a name the package did not hold, bound to the real submodule of that name."""
    code = "import sys, unittest\nunittest.case = sys.modules[__name__]\n"
    result = scored(run_cli, tmp_path, code + BROKEN)
    assert result.code == 4, result.err
    assert "unittest.case replaced, by product" in result.err
