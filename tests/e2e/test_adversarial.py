"""Changes written to get past the gate, each caught, each test naming what catches it: a row
of the merge table (SPEC 4.5) or a refusal of a command.

Every ledger comes from the real commands run over a copy of examples/orders in a real git
repository. `test_an_honest_change_passes` is the control: the same flow, without the trick,
ends in `review`, so each rejection below is the trick's doing.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE, CliResult, RunCli, git, write_json
from helpers.github_runner import runner_commands

pytestmark = pytest.mark.pytest_child

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider properties/test_orders.py"
FLAKY_ID = "orders.boundary.timeout"
# In the base, a test that is not a property and always fails: a tempting flake to declare.
COLD_CACHE_TEST = '''

def test_cache_warm() -> None:
    """Not a property: a performance check that the cache is warm."""
    assert False, "cache is cold"
'''
COLD_CACHE_FLAKE = {
    "test_id": "orders.cache.warm",
    "test": "properties/test_orders.py::test_cache_warm",
    "review_by": "2099-12-31",
}


def later(days: int) -> str:
    return (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days)).isoformat()


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with a reviewed flake pin, committed: the base every change is judged against."""
    repo = tmp_path_factory.mktemp("base") / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    tests = repo / "properties/test_orders.py"
    tests.write_text(tests.read_text() + COLD_CACHE_TEST)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "orders, properties, pins")
    flakes = json.loads((repo / "pins/flakes.json").read_text())
    flakes["flakes"][0].update(
        accepted_revision=git(repo, "rev-parse", "HEAD"), review_by=later(90)
    )
    write_json(repo / "pins/flakes.json", flakes)
    git(repo, "commit", "-q", "-am", "flake pin: orders.boundary.timeout, reviewed")
    return repo


@dataclass(frozen=True)
class Gate:
    """A private copy of the base repository, and the CI steps run over it."""

    repo: Path
    ledgers: Path
    base: str
    run_cli: RunCli

    def cli(self, *argv: str | Path) -> CliResult:
        return self.run_cli(*argv)

    def digest(self, out: str = "f.json", pin: str = "pins/fixtures.json") -> CliResult:
        return self.cli("digest", "--pin", self.repo / pin, "--root", self.repo,
                        "--out", self.ledgers / out)  # fmt: skip

    def properties(
        self,
        out: str = "p.json",
        fixture: str = "f.json",
        pin: str = "pins/fixtures.json",
        command: str = PYTEST,
    ) -> CliResult:
        digest = json.loads((self.ledgers / fixture).read_text())["digest"]
        return self.properties_expecting(digest, out, pin, command)

    def properties_expecting(
        self,
        digest: str,
        out: str = "p.json",
        pin: str = "pins/fixtures.json",
        command: str = PYTEST,
    ) -> CliResult:
        return self.cli(
            "properties", "--pin", self.repo / pin, "--expect-digest", digest,
            "--properties", self.repo / "pins/properties.json", "--command", command,
            "--root", self.repo, "--base", self.base, "--out", self.ledgers / out,
            "--flake-pin", self.repo / "pins/flakes.json",
        )  # fmt: skip

    def observe(self, test_id: str, *extra: str | Path, out: str = "fl.json") -> CliResult:
        return self.cli(
            "flake-observe", "--fixture-ledger", self.ledgers / "f.json",
            "--property-ledger", self.ledgers / "p.json",
            "--flake-pin", self.repo / "pins/flakes.json", "--test-id", test_id,
            "--root", self.repo, "--out", self.ledgers / out, *extra,
        )  # fmt: skip

    def merge(self, *extra: str | Path, dual_pin: str | None = "d.json") -> dict[str, Any]:
        """Run merge with every check it offers; return the decision after checking its exit."""
        out = self.ledgers / "decision.json"
        dual: list[str | Path] = ["--dual-pin", self.ledgers / dual_pin] if dual_pin else []
        result = self.cli(
            "merge", "--fixture-ledger", self.ledgers / "f.json",
            "--property-ledger", self.ledgers / "p.json", *dual,
            "--flake-pin", self.repo / "pins/flakes.json",
            "--pin", self.repo / "pins/fixtures.json", "--root", self.repo,
            "--pins-dir", self.repo / "pins", "--base", self.base,
            "--out", out, *extra,
        )  # fmt: skip
        decision: dict[str, Any] = json.loads(out.read_text())
        assert result.code == (1 if decision["posture"] == "reject" else 0), result.err
        return decision

    def edit(self, relative: str, old: str, new: str) -> None:
        path = self.repo / relative
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))

    def as_base(self, message: str) -> Gate:
        """What is here, committed as the reviewed base the next patch is compared with."""
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", message)
        return dataclasses.replace(self, base=git(self.repo, "rev-parse", "HEAD"))

    def attacked(self, code: str, command: str = PYTEST) -> CliResult:
        """`properties` on the base (the control, which must pass), then on the broken product
        with CODE appended to it."""
        assert self.digest().code == 0
        assert self.properties(command=command).code == 0, "the control"
        break_the_product(self)
        with (self.repo / "orders.py").open("a") as product:
            product.write(code)
        return self.properties(command=command)


@pytest.fixture
def gate(base_repo: Path, tmp_path: Path, run_cli: RunCli) -> Gate:
    repo = tmp_path / "repo"
    shutil.copytree(base_repo, repo)
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    return Gate(repo, ledgers, git(repo, "rev-parse", "HEAD"), run_cli)


@pytest.fixture
def flaky_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-listed flaky test misses its budget on this run."""
    monkeypatch.setenv("ORDERS_SUMMARY_BUDGET_MS", "0")


def score_one_pin(gate: Gate) -> None:
    """The CI steps up to merge with one fixture pin: the dual-pin step is recorded as not run."""
    assert gate.digest().code == 0
    gate.properties()
    gate.cli("dual-pin", "--not-run", "--out", gate.ledgers / "d.json")


def score_both_pins(gate: Gate) -> None:
    """The CI steps up to merge: both fixture pins scored, then compared."""
    for suffix, pin in (("", "pins/fixtures.json"), ("_b", "pins/fixtures_b.json")):
        assert gate.digest(f"f{suffix}.json", pin).code == 0
        gate.properties(f"p{suffix}.json", f"f{suffix}.json", pin)
    gate.cli("dual-pin", "--left", gate.ledgers / "p.json", "--right", gate.ledgers / "p_b.json",
             "--out", gate.ledgers / "d.json")  # fmt: skip


def break_the_product(gate: Gate) -> None:
    """A patch that really breaks `orders.total.non_negative`: refunds go negative."""
    gate.edit("orders.py", "def order_total(order", "def _order_total(order")
    with (gate.repo / "orders.py").open("a") as product:
        product.write("\n\ndef order_total(order):\n    return _order_total(order) - 10**12\n")


# --- the control ----------------------------------------------------------------------------------


def test_an_honest_change_passes(gate: Gate) -> None:
    with (gate.repo / "orders.py").open("a") as product:
        product.write("\n# A harmless comment.\n")
    score_both_pins(gate)
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("review", 9)


def test_the_broken_product_alone_is_row_7(gate: Gate) -> None:
    """What the tricks below try to hide: the property miss stands (row 7)."""
    break_the_product(gate)
    score_one_pin(gate)
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 7)
    assert "orders.total.non_negative is fail" in decision["reason"]


# --- oracle edits: row 5 --------------------------------------------------------------------------


def test_a_test_edited_to_always_pass_is_row_5(gate: Gate) -> None:
    break_the_product(gate)
    gate.edit("properties/test_orders.py", "assert order_total(order) >= 0", "assert True")
    git(gate.repo, "commit", "-qam", "fix the flaky total check")  # committed or not: the same
    score_one_pin(gate)
    prop = json.loads((gate.ledgers / "p.json").read_text())
    assert prop["status_by_id"]["orders.total.non_negative"] == "pass"  # the edit worked...
    assert prop["oracle_changes"] == ["properties/test_orders.py"]
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 5)  # ...and is caught
    assert "properties/test_orders.py" in decision["reason"]


SKIP_EVERYTHING = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="flaky on CI"))
"""


def test_a_conftest_under_an_oracle_path_that_skips_everything_is_row_5(gate: Gate) -> None:
    break_the_product(gate)
    (gate.repo / "properties/conftest.py").write_text(SKIP_EVERYTHING)  # untracked, not ignored
    assert gate.digest().code == 0
    result = gate.properties()
    assert result.code == 5, result.err
    gate.cli("dual-pin", "--not-run", "--out", gate.ledgers / "d.json")
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 5)
    assert "properties/conftest.py" in decision["reason"]


def with_oracle_paths(gate: Gate, oracle_paths: list[str], message: str) -> Gate:
    """The gate on a new base whose reviewed properties pin has these oracle paths."""
    pin = json.loads((gate.repo / "pins/properties.json").read_text())
    pin["oracle_paths"] = oracle_paths
    write_json(gate.repo / "pins/properties.json", pin)
    git(gate.repo, "commit", "-qam", message)
    return Gate(gate.repo, gate.ledgers, git(gate.repo, "rev-parse", "HEAD"), gate.run_cli)


def test_a_conftest_outside_the_oracle_paths_is_measured_and_row_5(gate: Gate) -> None:
    """The pin's oracle paths miss the root conftest; the measured harness does not."""
    gate = with_oracle_paths(gate, ["properties", "tests"], "oracle paths: the default")
    break_the_product(gate)
    (gate.repo / "conftest.py").write_text(SKIP_EVERYTHING)
    assert gate.digest().code == 0
    assert gate.properties().code == 5
    prop = json.loads((gate.ledgers / "p.json").read_text())
    assert prop["oracle_change_reasons"] == {"conftest.py": "conftest"}
    gate.cli("dual-pin", "--not-run", "--out", gate.ledgers / "d.json")
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 5)
    assert "conftest.py" in decision["reason"]


def test_an_oracle_file_whose_name_is_not_utf8_is_row_5(gate: Gate) -> None:
    """Found here: this once crashed `properties` (exit 70) after the run, instead of exit 5."""
    with open(os.path.join(os.fsencode(gate.repo / "properties"), b"conftest\xff.py"), "w"):
        pass
    assert gate.digest().code == 0
    assert gate.properties().code == 5
    assert json.loads((gate.ledgers / "p.json").read_text())["oracle_changes"] == [
        "properties/conftest\\xff.py"
    ]
    decision = gate.merge(dual_pin=None)
    assert (decision["posture"], decision["row"]) == ("reject", 5)


# --- fixture tricks: digest refusal, row 1, a stale ledger ----------------------------------------


def test_a_fixture_replaced_by_a_link_to_the_same_bytes_elsewhere_is_refused(
    gate: Gate, tmp_path: Path
) -> None:
    assert gate.digest().code == 0  # the fixture ledger CI wrote before the swap
    elsewhere = tmp_path / "elsewhere.json"
    fixture = gate.repo / "fixtures/orders_min.json"
    shutil.copyfile(fixture, elsewhere)
    fixture.unlink()
    fixture.symlink_to(elsewhere)
    refused = gate.digest("f_after.json")  # caught by: digest refusal (exit 2)
    assert refused.code == 2
    assert "fixtures/orders_min.json: is a symbolic link" in refused.first_error_line
    assert not (gate.ledgers / "f_after.json").exists()
    digest = json.loads((gate.ledgers / "f.json").read_text())["digest"]
    assert gate.properties_expecting(digest).code == 2  # the same refusal, before any test runs
    # Evidence from before the swap does not carry it: merge recomputes the tree (row 1).
    write_json(gate.ledgers / "p.json", {"kind": "property"})
    decision = gate.merge(dual_pin=None)
    assert (decision["posture"], decision["row"]) == ("reject", 1)
    assert "is a symbolic link" in decision["reason"]


def test_an_old_passing_ledger_left_at_out_is_removed_on_refusal(gate: Gate) -> None:
    score_one_pin(gate)  # yesterday's passing ledgers, still on the runner's disk
    old_digest = json.loads((gate.ledgers / "f.json").read_text())["digest"]
    gate.edit("fixtures/orders_boundary.json", "0", "1")  # today's change moves a fixture
    digest = gate.digest()
    assert digest.code == 2  # caught by: digest refusal, and the stale ledger goes with it
    assert f"removed the stale file at {gate.ledgers / 'f.json'}" in digest.err
    props = gate.properties_expecting(old_digest)
    assert props.code == 2
    assert f"removed the stale file at {gate.ledgers / 'p.json'}" in props.err
    # A CI script that ignores both exits and merges anyway: no ledger, no score (row 1).
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 1)


# --- forged and replayed ledgers: rows 3 and 2, dual-pin refusal ----------------------------------


def test_a_forged_property_ledger_sharing_the_fixture_clock_is_row_3(gate: Gate) -> None:
    break_the_product(gate)
    score_one_pin(gate)
    fixture = json.loads((gate.ledgers / "f.json").read_text())
    forged = json.loads((gate.ledgers / "p.json").read_text())
    forged["status_by_id"] = dict.fromkeys(forged["status_by_id"], "pass")
    forged["recorded_at"] = fixture["recorded_at"]  # copied, as a hasty forger would
    assert forged["fixture_digest"] == fixture["digest"]  # the digest matches
    write_json(gate.ledgers / "p.json", forged)
    decision = gate.merge()
    assert (decision["posture"], decision["row"]) == ("reject", 3)
    assert "share recorded_at" in decision["reason"]


def test_a_property_ledger_replayed_as_the_second_pin_is_refused(gate: Gate) -> None:
    assert gate.digest().code == 0
    assert gate.properties().code == 0
    scored = json.loads((gate.ledgers / "p.json").read_text())
    restamped = {"recorded_at": "2026-01-01T00:00:00.000000Z", "ledger_id": "e" * 32}
    replays = {
        "copied": scored,
        "restamped": {**scored, **restamped},
        "renamed": {**scored, **restamped, "pin_id": "fixpin-orders-b"},
    }
    for name, replay in replays.items():
        right = write_json(gate.ledgers / f"{name}.json", replay)
        out = gate.ledgers / "d.json"
        result = gate.cli(
            "dual-pin", "--left", gate.ledgers / "p.json", "--right", right, "--out", out
        )
        assert result.code == 2, name  # caught by: dual-pin refusal (exit 2), nothing written
        assert not (gate.ledgers / "d.json").exists()


# --- flake pin mutations: row 4 -------------------------------------------------------------------


def test_a_flake_id_appended_to_the_pin_is_row_4(gate: Gate) -> None:
    flakes = json.loads((gate.repo / "pins/flakes.json").read_text())
    flakes["flakes"].append({**COLD_CACHE_FLAKE, "accepted_revision": gate.base})
    write_json(gate.repo / "pins/flakes.json", flakes)
    score_one_pin(gate)
    assert json.loads((gate.ledgers / "p.json").read_text())["flake_results"][
        "orders.cache.warm"
    ] == ("fail")
    refused = gate.observe("orders.cache.warm", "--base", gate.base)
    assert refused.code == 3  # flake-observe, given the base, already refuses it
    assert "pins/flakes.json" in refused.first_error_line
    assert gate.observe("orders.cache.warm").code == 0  # ...but not without it
    decision = gate.merge("--flake-ledger", gate.ledgers / "fl.json")
    assert (decision["posture"], decision["row"]) == ("reject", 4)
    assert "pin mutation" in decision["reason"]
    assert "pins/flakes.json" in decision["reason"]


@pytest.mark.usefixtures("flaky_fails")
def test_review_by_pushed_to_2099_is_row_4_pin_mutation(gate: Gate) -> None:
    flakes = json.loads((gate.repo / "pins/flakes.json").read_text())
    flakes["flakes"][0]["review_by"] = later(-1)  # the base: the label has expired
    write_json(gate.repo / "pins/flakes.json", flakes)
    git(gate.repo, "commit", "-qam", "time passes")
    gate = Gate(gate.repo, gate.ledgers, git(gate.repo, "rev-parse", "HEAD"), gate.run_cli)
    flakes["flakes"][0]["review_by"] = "2099-12-31"  # the change: extend it quietly
    write_json(gate.repo / "pins/flakes.json", flakes)
    score_one_pin(gate)
    assert gate.observe(FLAKY_ID).code == 0  # without --base, the edited pin looks current
    decision = gate.merge("--flake-ledger", gate.ledgers / "fl.json")
    assert (decision["posture"], decision["row"]) == ("reject", 4)
    assert "pins/flakes.json" in decision["reason"]


# --- outside the default oracle paths -----------------------------------------------------------

PASS_EVERYTHING = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def test_a_root_conftest_that_passes_everything_trips_the_tripwire(gate: Gate) -> None:
    """A hookwrapper that reports every outcome as passed passes tests that raised, which the
    tripwire's witness of each phase sees (and the must-fail sentinel with them): no property
    ledger is written, and merge rejects the change for want of one."""
    break_the_product(gate)
    (gate.repo / "conftest.py").write_text(PASS_EVERYTHING)
    assert gate.digest().code == 0
    scored = gate.properties()
    assert scored.code == 4, scored.err
    forced = (
        r"the report of properties/test_orders\.py::test_\w+(\[.*\])?"
        r"( \(a sentinel the gate added, not a test of the project\))? says its call passed"
    )
    assert re.search(forced + ", but an exception came out of it", scored.first_error_line)
    assert not (gate.ledgers / "p.json").exists()
    decision = gate.merge(dual_pin=None)
    assert (decision["posture"], decision["row"]) == ("reject", 2)


# Loads the property tests from a copy of their source with the total check loosened: no file
# of the tests changes, the product does it in memory.
LOOSENING_FINDER = """

import importlib.machinery as _machinery
import importlib.util as _util
import sys as _sys


class _Loosen(_machinery.SourceFileLoader):
    def get_data(self, path):
        data = super().get_data(path)
        for check in (b"order_total(order) >= 0", b"order_total(order) == order"):
            data = data.replace(b"assert " + check, b"assert True or " + check)
        return data


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if not name.endswith("test_orders"):
            return None
        for finder in _sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.origin:
                loader = _Loosen(name, spec.origin)
                return _util.spec_from_file_location(name, spec.origin, loader=loader)
        return None


_sys.meta_path.insert(0, _Finder())
"""


@pytest.mark.parametrize("import_mode", ["prepend", "importlib"])
def test_a_finder_in_the_product_that_loosens_a_test_in_memory_is_found(
    gate: Gate, import_mode: str
) -> None:
    """sqlparse's trial: a finder the product puts first on `sys.meta_path` loaded the tests
    from their source with an assert loosened, no file of them changed, and a broken product
    was `review`. A test module that neither pytest's import hook nor Python's file loader
    loaded is a finding (exit 4)."""
    # The base: a test module that imports the product before the property tests load, as
    # one of a suite of many does (sqlparse's).
    (gate.repo / "properties/test_a_first.py").write_text(
        "import orders\n\n\ndef test_imported() -> None:\n    assert orders.order_total\n"
    )
    gate = gate.as_base("a first test module")
    command = (
        f"{sys.executable} -m pytest -q -p no:cacheprovider --import-mode={import_mode} "
        "properties/test_a_first.py properties/test_orders.py"
    )
    scored = gate.attacked(LOOSENING_FINDER, command)
    assert scored.code == 4, scored.err
    said = scored.first_error_line
    assert re.search(r"test module (properties\.)?test_orders was loaded by orders\._Loosen", said)
    assert not (gate.ledgers / "p.json").exists()


# While the tests import it, puts in the test module's place a module of its own, run from
# the tests' source with the total checks loosened, holding the real one's loader, spec and
# file: the import hands pytest what `sys.modules` holds when it ends.
MODULE_SWAP = """

import sys as _sys
import types as _types


def _swap_the_tests() -> None:
    for name in ("test_orders", "properties.test_orders"):
        real = _sys.modules.get(name)
        if real is None or not getattr(real, "__file__", None):
            continue
        with open(real.__file__, encoding="utf-8") as stream:
            source = stream.read()
        for check in ("order_total(order) >= 0", "order_total(order) == order"):
            source = source.replace("assert " + check, "assert True or " + check)
        fake = _types.ModuleType(name)
        for key in ("__file__", "__spec__", "__loader__", "__package__"):
            setattr(fake, key, getattr(real, key, None))
        _sys.modules[name] = fake
        exec(compile(source, real.__file__, "exec"), fake.__dict__)


_swap_the_tests()
"""


def test_test_modules_each_loader_runs_are_no_finding(gate: Gate) -> None:
    """The control under `--import-mode=importlib`, which runs a test module outside the
    import system; the attack below has its controls in the default mode and under
    `--assert=plain`."""
    command = (
        f"{sys.executable} -m pytest -q -p no:cacheprovider --import-mode=importlib properties"
    )
    assert gate.digest().code == 0
    scored = gate.properties(command=command)
    assert scored.code == 0, scored.err


@pytest.mark.parametrize("options", ["", "--assert=plain"])
def test_a_test_module_swapped_while_it_is_imported_is_found(gate: Gate, options: str) -> None:
    """The red team's third round: product code the tests import put a module of its own in
    `sys.modules` in place of the test module being imported, run from the tests' source
    with its asserts loosened, the real one's loader, spec and file on it: every property
    passed on the broken product. A test module pytest holds that no file loader ran its
    file's code into is a finding (exit 4), whichever loader ran the real one."""
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider {options} properties"
    scored = gate.attacked(MODULE_SWAP, command)
    assert scored.code == 4, scored.err
    said = scored.first_error_line
    assert re.search(
        r"test module (properties\.)?test_orders is not the module its loader ran \S*"
        r"properties/test_orders\.py into",
        said,
    ), said
    assert not (gate.ledgers / "p.json").exists()


# A helper in a folder named like tests, which the property tests assert through: a function,
# and a class's method (mistune's `BaseTestCase.assert_case`).
CHECKS = """\
def non_negative(total):
    return total >= 0


class Checks:
    def non_negative(self, total):
        return total >= 0
"""
# Once a test runs the product, loosens the helper the tests assert through, HOW: a function
# of the product's in its place, a mock in its place, or the product's code in the helper's.
HELPER_LOOSENER = """

import sys as _sys
from unittest import mock as _mock


def _loosen_the_helper():
    checks = _sys.modules.get("testing.checks")
    tests = _sys.modules.get("test_orders") or _sys.modules.get("properties.test_orders")
    if checks is None or tests is None:
        return
    if _HOW == "function":
        tests.non_negative = lambda total: True
    elif _HOW == "method":
        checks.Checks.non_negative = lambda self, total: True
    elif _HOW == "mock":
        checks.Checks.non_negative = _mock.Mock(return_value=True)
    else:
        checks.Checks.non_negative.__code__ = (lambda self, total: True).__code__


_real_total = order_total


def order_total(order):
    _loosen_the_helper()
    return _real_total(order)
"""


def with_checks(gate: Gate, how: str) -> Gate:
    """The base: the non-negative test asserts through `testing/checks.py`."""
    (gate.repo / "testing").mkdir()
    (gate.repo / "testing/checks.py").write_text(CHECKS)
    call = (
        "non_negative(order_total(order))"
        if how == "function"
        else "Checks().non_negative(order_total(order))"
    )
    gate.edit(
        "properties/test_orders.py",
        '        assert order_total(order) >= 0, order["id"]',
        f'        assert {call}, order["id"]',
    )
    gate.edit(
        "properties/test_orders.py",
        "from orders import ",
        "from testing.checks import Checks, non_negative\nfrom orders import ",
    )
    return gate.as_base("the tests assert through a helper")


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("function", r"test_orders\.non_negative, which a test-side module held, was replaced"),
        ("method", r"testing\.checks\.Checks\.non_negative, which a test-side module held, was"),
        ("mock", r"testing\.checks\.Checks\.non_negative, which a test-side module held, was"),
        ("code", r"non_negative\.__code__ set, by orders \(orders\.py:"),
    ],
)
def test_a_helper_the_product_replaces_once_the_tests_run_is_found(
    gate: Gate, how: str, said: str
) -> None:
    """mistune's trial: product code wrapped the tests' `BaseTestCase.assert_case` (in
    `tests/__init__.py`), no file of the tests changed, and every property passed on a broken
    product. The red team's fourth round did it with a mock and by swapping the helper's
    code. A function or class a test-side module held once its import ended, replaced by
    anything but the tests' own code or pytest, or given other code by the product, is a
    finding (exit 4)."""
    scored = with_checks(gate, how).attacked(f"\n_HOW = {how!r}\n{HELPER_LOOSENER}")
    assert scored.code == 4, scored.err
    assert re.search(said, scored.first_error_line), scored.first_error_line
    assert not (gate.ledgers / "p.json").exists()


# Called by a test module collected after the property tests: gives their non-negative test
# the code of one that passes, once their import has ended and before collection has.
EARLY_CODE_SWAP = """

import sys as _sys


def warm_up() -> None:
    tests = _sys.modules.get("test_orders") or _sys.modules.get("properties.test_orders")
    if tests is not None:
        def _passes(orders):
            return None

        tests.test_total_non_negative.__code__ = _passes.__code__
"""


def test_a_tests_code_swapped_before_collection_ends_is_found(gate: Gate) -> None:
    """The red team's fourth round: the swap made while collection went on, before the
    tripwire kept the test functions, went unseen (`review`)."""
    (gate.repo / "properties/test_zz_warm.py").write_text(
        "import orders\n\nif hasattr(orders, 'warm_up'):\n    orders.warm_up()\n\n\n"
        "def test_warm() -> None:\n    assert orders\n"
    )
    gate = gate.as_base("a test module that warms the product up")
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider properties"
    scored = gate.attacked(EARLY_CODE_SWAP, command)
    assert scored.code == 4, scored.err
    assert re.search(
        r"test_total_non_negative\.__code__ set, by orders \(orders\.py:", scored.first_error_line
    ), scored.first_error_line


def test_a_product_beside_a_test_module_is_not_test_side(gate: Gate) -> None:
    """The red team's fourth round: with a root `test_smoke.py` beside `orders.py`, the first
    version took every module beside a test module for test-side, the product included, and
    its replacement of the helper went unseen (`review`)."""
    gate = with_checks(gate, "method")
    (gate.repo / "test_smoke.py").write_text(
        "import orders\n\n\ndef test_smoke():\n    assert orders\n"
    )
    gate = gate.as_base("a smoke test beside the product")
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider properties test_smoke.py"
    scored = gate.attacked(f"\n_HOW = 'method'\n{HELPER_LOOSENER}", command)
    assert scored.code == 4, scored.err
    assert "Checks.non_negative, which a test-side module held, was replaced, by orders" in (
        scored.first_error_line
    )


# A package of the product's that ships helpers for its users' tests, and sets one to its
# strict version once it is first used.
ORDERLIB = """\
import sys


def _strict(left, right):
    return left == right


def configure():
    sys.modules["orderlib.testing"].same_total = _strict
"""


def test_a_product_packages_own_testing_folder_is_not_test_side(gate: Gate) -> None:
    """The fifth red team: `orderlib/testing/`, helpers the product ships (numpy.testing's
    pattern) and `product_paths` holds, was test-side by its folder's name, so the product's
    own replacement of one, made once a test first used the package, was a finding. What
    the pin calls product is the product's wherever it lies."""
    (gate.repo / "orderlib/testing").mkdir(parents=True)
    (gate.repo / "orderlib/__init__.py").write_text(ORDERLIB)
    (gate.repo / "orderlib/testing/__init__.py").write_text(
        "def same_total(left, right):\n    return left == right\n"
    )
    (gate.repo / "properties/test_lib.py").write_text(
        "from orderlib import configure\nfrom orderlib.testing import same_total\n\n\n"
        "def test_same_total() -> None:\n    configure()\n    assert same_total(1, 1)\n"
    )
    pin = json.loads((gate.repo / "pins/properties.json").read_text())
    pin["product_paths"].append("orderlib/**")
    write_json(gate.repo / "pins/properties.json", pin)
    gate = gate.as_base("a package of the product's, with helpers for tests")
    assert gate.digest().code == 0
    scored = gate.properties(command=f"{PYTEST} properties/test_lib.py")
    assert scored.code == 0, scored.err
    # Without the pin's word, the folder's name makes it the tests': the same is a finding.
    pin["product_paths"].remove("orderlib/**")
    write_json(gate.repo / "pins/properties.json", pin)
    gate = gate.as_base("the package is no longer declared product")
    scored = gate.properties(command=f"{PYTEST} properties/test_lib.py")
    assert scored.code == 4
    assert "orderlib.testing.same_total, which a test-side module held, was replaced" in (
        scored.err
    )


# A pinned sample that pytest imports (named like a test module): once the test module is
# imported, it loosens the helper the test module bound.
IMPORTED_SAMPLE = """\
import sys

_tests = sys.modules.get("test_orders") or sys.modules.get("properties.test_orders")
if _tests is not None:
    _tests.non_negative = lambda total: True
"""


def test_a_pinned_sample_pytest_imports_may_not_replace_a_helper(gate: Gate) -> None:
    """Pygments' trial: `tests/examplefiles/python/py3_test.py`, a lexer sample that pytest
    also imports, was changed with its pin to wrap the tests' `runtest`; the pin owners saw
    "fixture files changed with their pin", and the next change broke a lexer unseen. A
    module in a pinned fixture folder is the fixture ledger's bytes, never test-side."""
    gate = with_checks(gate, "function")
    (gate.repo / "fixtures/sample_test.py").write_text(IMPORTED_SAMPLE)
    pin = json.loads((gate.repo / "pins/fixtures.json").read_text())
    pin["files"].append("fixtures/sample_test.py")
    del pin["digest"]
    write_json(gate.repo / "pins/fixtures.json", pin)
    gate = gate.as_base("a Python sample among the fixtures, pinned")
    assert gate.digest().code == 0
    break_the_product(gate)
    scored = gate.properties(command=f"{PYTEST} fixtures/sample_test.py")
    assert scored.code == 4, scored.err
    assert "test_orders.non_negative, which a test-side module held, was replaced" in scored.err
    assert "fixtures/sample_test.py" in scored.err


def test_a_helper_the_tests_replace_themselves_is_no_finding(gate: Gate) -> None:
    """The control: tests that swap the helper for a function of their own for the rest of
    the session, through `monkeypatch`, or with a mock they take back."""
    gate = with_checks(gate, "function")
    (gate.repo / "properties/test_swaps.py").write_text(
        "from unittest import mock\n\nfrom testing import checks\n\n\n"
        "def test_swaps_the_helper(monkeypatch):\n"
        "    monkeypatch.setattr(checks, 'non_negative', lambda total: total >= 0)\n"
        "    checks.Checks.non_negative = lambda self, total: total >= 0\n"
        "    with mock.patch.object(checks, 'non_negative', return_value=True):\n"
        "        assert checks.non_negative(-1)\n"
    )
    assert gate.digest().code == 0
    scored = gate.properties(
        command=f"{sys.executable} -m pytest -q -p no:cacheprovider properties"
    )
    assert scored.code == 0, scored.err


# At exit, turns the failures in the results file the plugin holds open into passes.
RESULTS_REWRITER = """

import atexit as _atexit
import os as _os


def _results_path():
    for fd in _os.listdir("/proc/self/fd"):
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("results.jsonl"):
            return target
    return None


_RESULTS = _results_path()


def _rewrite() -> None:
    if _RESULTS is None:
        return
    with open(_RESULTS, encoding="utf-8") as stream:
        lines = stream.readlines()
    # Only the property's own tests, by their names: the tripwire's sentinels are left be.
    mine = ("::test_total_non_negative[", "::test_total_matches_lines[")
    flipped = 0
    with open(_RESULTS, "w", encoding="utf-8") as stream:
        for line in lines:
            if any(name in line for name in mine) and '"outcome": "fail"' in line:
                line = line.replace('"outcome": "fail"', '"outcome": "pass"')
                flipped += 1
            stream.write(line)
        for number in range(flipped if _KEEP_COUNT else 0):
            made_up = f"properties/test_orders.py::test_cleanup_{number}"
            stream.write(
                f'{{"id": "{made_up}", "property_ids": [], "outcome": "fail", "worker": "main"}}\\n'
            )


_atexit.register(_rewrite)
"""


@pytest.mark.parametrize(
    ("keep_count", "said"),
    [
        (False, "of the project's tests failing, the results hold"),
        (True, "failing, the results do not hold it failing"),
    ],
    ids=["fewer", "count-kept"],
)
def test_results_rewritten_at_exit_are_refused_by_pytests_own_count(
    gate: Gate, keep_count: bool, said: str
) -> None:
    """Python-Markdown's trial: product code rewrote the results file at exit, and every
    property passed beside `command_exit: 1`. pytest's count of failing tests, in the
    tripwire's record, is more than the results then hold (exit 4). The red team's next step
    kept the count with failures under ids pytest never ran: the ids it reported tell."""
    break_the_product(gate)
    with (gate.repo / "orders.py").open("a") as product:
        product.write(f"\n_KEEP_COUNT = {keep_count}\n{RESULTS_REWRITER}")
    assert gate.digest().code == 0
    scored = gate.properties()
    assert scored.code == 4, scored.err
    assert said in scored.first_error_line
    assert not (gate.ledgers / "p.json").exists()


# Failing checks whose names the product makes a MiB long: five push pytest's failing ids
# past what the tripwire's record lists by name.
LONG_NAMED_FAILURES = """

for _number in range(5):
    _check = lambda: False  # noqa: E731
    _check.__name__ = f"check_{_number}_" + "x" * (1 << 20)
    CHECKS.append(_check)
"""


def test_results_rewritten_past_the_ids_budget_are_refused_by_their_digests(gate: Gate) -> None:
    """The fifth red team's rewrite: a test at the base parametrised over a registry the
    product owns, the product's checks given names a MiB long, so that the failing ids no
    longer fit the record and the count alone was checked; the property's failures then
    rewritten as passes, the count kept. Each failing id is recorded by its digest instead."""
    (gate.repo / "properties/test_checks.py").write_text(
        "import pytest\n\nimport orders\n\n\n"
        '@pytest.mark.parametrize("check", orders.CHECKS)\n'
        "def test_check(check) -> None:\n    assert check()\n"
    )
    with (gate.repo / "orders.py").open("a") as product:
        product.write("\n\ndef _holds():\n    return True\n\n\nCHECKS = [_holds]\n")
    gate = gate.as_base("a test over the product's own checks")
    both = f"{PYTEST} properties/test_checks.py"
    scored = gate.attacked(f"{LONG_NAMED_FAILURES}\n_KEEP_COUNT = True\n{RESULTS_REWRITER}", both)
    assert scored.code == 4, scored.err
    assert "are not failing in the results" in scored.first_error_line
    assert not (gate.ledgers / "p.json").exists()


# During the first test that calls it, gives the property's other tests the code of one that
# passes: no file of the tests changes, no loader is involved.
CODE_SWAP = """

import sys as _sys

_SWAPPED = []


def _passes(orders):
    return None


def _swap_tests() -> None:
    tests = _sys.modules.get("test_orders") or _sys.modules.get("properties.test_orders")
    if tests is None or _SWAPPED:
        return
    _SWAPPED.append(True)
    for name in ("test_total_non_negative", "test_total_matches_lines"):
        getattr(tests, name).__code__ = _passes.__code__
"""


def test_a_test_whose_code_the_product_swaps_in_memory_is_found(gate: Gate) -> None:
    """The next step after a loader: product code that sets a collected test function's
    `__code__` once the run is under way. Every such set is an audit event; on a collected
    test function it is judged like a change to pytest's machinery (exit 4)."""
    break_the_product(gate)
    with (gate.repo / "orders.py").open("a") as product:
        product.write(CODE_SWAP)
        product.write(
            "\n\n_load_orders = load_orders\n\n\n"
            "def load_orders(path):\n    _swap_tests()\n    return _load_orders(path)\n"
        )
    assert gate.digest().code == 0
    scored = gate.properties()
    assert scored.code == 4, scored.err
    found = r"test_total_\w+\.__code__ set, by orders \(orders\.py:\d+\)"
    assert re.search(found, scored.err), scored.err
    assert not (gate.ledgers / "p.json").exists()


# --- workflow commands in what the gate prints ------------------------------------------------

# Printed by the product as the tests import it: a mask that hides "reject" in the job's log,
# a stop that drops every later command of the gate's, and the older form of a command.
PRINTED_COMMANDS = """

print("::add-mask::reject")
print("::stop-commands::f00d")
print("checked ##[error]forged")
"""
# A file the change adds whose name holds three commands, each on a line of its own.
FORGED_NAME = "build/test_x\n::add-mask::reject\n::notice title=three-ledger review::ok\n.py"


def test_the_test_commands_relayed_output_is_fenced_under_actions(
    gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fifth red team: under `-s`, what the product printed reached the job's log as
    workflow commands through `properties`, which relays the command's output to stdout."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    break_the_product(gate)
    with (gate.repo / "orders.py").open("a") as product:
        product.write(PRINTED_COMMANDS)
    assert gate.digest().code == 0
    scored = gate.properties(command=f"{PYTEST} -s")
    assert scored.code == 1, scored.err
    assert "::add-mask::reject" in scored.out  # relayed, as the command printed it
    assert [line.split("::")[1] for line in runner_commands(scored.out)] == ["stop-commands"]
    assert runner_commands(scored.err) == []


def test_file_names_the_gate_prints_are_no_workflow_commands(
    gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fifth red team: a new file named with lines that are workflow commands, printed as
    `gate`'s note on uncollected test files (stderr) and in `merge`'s posture line (stdout)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    break_the_product(gate)
    (gate.repo / "build").mkdir()
    (gate.repo / FORGED_NAME).write_text("")
    (gate.repo / "properties" / FORGED_NAME.replace("build/", "")).write_text("")
    git(gate.repo, "add", "-A")
    git(gate.repo, "commit", "-qm", "refunds go negative, and two odd names")
    out = gate.ledgers / "gate"
    ran = gate.cli(
        "gate", "--pins-dir", gate.repo / "pins", "--root", gate.repo, "--command", PYTEST,
        "--base", gate.base, "--out-dir", out,
    )  # fmt: skip
    assert ran.code == 1, ran.err
    assert "reject" in ran.out
    assert "test_x\\n::add-mask::reject" in ran.err
    # The gate's own annotations, and nothing else.
    assert all(line.startswith("::error ") for line in runner_commands(ran.out)), ran.out
    assert runner_commands(ran.err) == []
    score_one_pin(gate)
    merged = gate.cli(
        "merge", "--fixture-ledger", gate.ledgers / "f.json",
        "--property-ledger", gate.ledgers / "p.json", "--out", gate.ledgers / "decision.json",
    )  # fmt: skip
    assert merged.code == 1
    assert runner_commands(merged.out) == [merged.out.splitlines()[-1]]  # merge's `::error::`
    assert merged.out.splitlines()[-1].startswith("::error::")


def test_refusals_and_plan_reports_are_no_workflow_commands_under_actions(
    gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sixth red team: a refusal printed after the guard was taken down named an unpinned
    `fixtures/##[error]...` raw; `plan` printed test ids raw on stdout, where a JSON report
    must stay the same document."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    (gate.repo / "fixtures/##[error]forged by the change.json").write_text("{}")
    (gate.repo / "fixtures/a\r::add-mask::reject.json").write_text("{}")
    refused = gate.digest()
    assert refused.code == 2
    assert "unpinned file" in refused.err
    assert runner_commands(refused.err) == []
    for name in ("##[error]forged by the change.json", "a\r::add-mask::reject.json"):
        (gate.repo / "fixtures" / name).unlink()
    gate.edit(
        "properties/test_orders.py",
        "def test_total_non_negative(",
        '@pytest.mark.parametrize("note", ["##[error]forged", "\\r::add-mask::reject"])\n'
        "def test_noted(note: str) -> None:\n    assert note\n\n\ndef test_total_non_negative(",
    )
    pins = gate.repo / "pins"
    argv: list[str | Path] = [
        "plan", "--pin", pins / "fixtures.json", "--properties", pins / "properties.json",
        "--command", PYTEST, "--root", gate.repo,
    ]  # fmt: skip
    text = gate.cli(*argv)
    assert "forged" in text.out
    assert runner_commands(text.out + text.err) == []
    shown = gate.cli(*argv, "--json")
    assert runner_commands(shown.out) == []
    ids = json.dumps(json.loads(shown.out))
    assert "##[error]forged" in ids
