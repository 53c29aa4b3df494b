"""`flake-observe`: the flake ledger is written only when all six preconditions hold (SPEC 4.4).

Every ledger here comes from the real commands run over a copy of examples/orders in a real
git repository; the example's `test_boundary_timeout` is the pre-listed flaky test, made to
fail (or pass) through its `ORDERS_SUMMARY_BUDGET_MS` budget.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE, RunCli, git, write_json
from three_ledger.cli import main

FLAKY_ID = "orders.boundary.timeout"
FLAKY_TEST = "properties/test_orders.py::test_boundary_timeout"
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider properties/test_orders.py"
# A budget no run can meet (the flaky test fails) and one every run meets (it passes).
ALWAYS_FAILS = "0"
ALWAYS_PASSES = "1000000000"


def utc_today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def flake_entry(test_id: str, test: str, accepted: str, review_by: datetime.date) -> dict[str, str]:
    return {
        "test_id": test_id,
        "test": test,
        "accepted_revision": accepted,
        "review_by": review_by.isoformat(),
    }


def cli(*argv: str | Path, expect: int = 0) -> None:
    """Run the real command line to build evidence; its output stays out of the test's capsys."""
    # Byte-backed, like a console: `properties` streams the child's output to stdout's buffer.
    out, err = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in argv])
    err.seek(0)
    assert code == expect, f"{argv[0]} exited {code}:\n{err.read()}"


@dataclass(frozen=True)
class Run:
    """A git repository of the example, its base commit, and a folder of real ledgers."""

    repo: Path
    ledgers: Path
    base: str

    def __truediv__(self, name: str) -> Path:
        return self.ledgers / name

    @property
    def flake_pin(self) -> Path:
        return self.repo / "pins" / "flakes.json"

    def other_pin(self, name: str) -> Path:
        """A flake pin of a test's own, in a folder apart from the ledgers (none go beside pins)."""
        folder = self.ledgers.parent / "other_pins"
        folder.mkdir(exist_ok=True)
        return folder / name

    def copy_to(self, where: Path) -> Run:
        shutil.copytree(self.repo.parent, where)
        return Run(where / self.repo.name, where / self.ledgers.name, self.base)

    def digest(self, out: str, pin: str = "pins/fixtures.json") -> None:
        cli("digest", "--pin", self.repo / pin, "--root", self.repo, "--out", self / out)

    def properties(
        self,
        out: str,
        fixture_ledger: str,
        *,
        pin: str = "pins/fixtures.json",
        budget_ms: str = ALWAYS_FAILS,
        flake_pin: Path | None = None,
        expect: int = 0,
    ) -> None:
        digest = json.loads((self / fixture_ledger).read_text())["digest"]
        argv: list[str | Path] = [
            "properties", "--pin", self.repo / pin, "--expect-digest", digest,
            "--properties", self.repo / "pins/properties.json", "--command", PYTEST,
            "--root", self.repo, "--base", self.base, "--out", self / out,
            "--flake-pin", flake_pin or self.flake_pin,
        ]  # fmt: skip
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ORDERS_SUMMARY_BUDGET_MS", budget_ms)
            cli(*argv, expect=expect)

    def flake_observe(self, out: str, fixture: str = "f_a.json", prop: str = "p_a.json") -> None:
        cli(*observe_argv(self, out, fixture, prop))

    def patch_product(self, patch: str) -> None:
        """The change under test: product code only, so no oracle moves."""
        product = self.repo / "orders.py"
        product.write_text(product.read_text() + patch)


def observe_argv(
    run: Run, out: str, fixture: str = "f_a.json", prop: str = "p_a.json", **flags: Any
) -> list[str | Path]:
    argv: list[str | Path] = [
        "flake-observe", "--fixture-ledger", run / fixture, "--property-ledger", run / prop,
        "--flake-pin", flags.pop("flake_pin", run.flake_pin),
        "--test-id", flags.pop("test_id", FLAKY_ID), "--out", run / out,
    ]  # fmt: skip
    for flag, value in flags.items():
        argv += [f"--{flag.replace('_', '-')}", value]
    return argv


def build_base_repo(where: Path) -> Run:
    """The example in git: a first commit, then the flake pin reviewed in its own commit."""
    repo = where / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fixtures, properties and pins")
    accepted = git(repo, "rev-parse", "HEAD")
    review_by = utc_today() + datetime.timedelta(days=365)
    flakes = [flake_entry(FLAKY_ID, FLAKY_TEST, accepted, review_by)]
    write_json(repo / "pins/flakes.json", {"pin_id": "flakepin-orders", "flakes": flakes})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "flake pin: orders.boundary.timeout, reviewed")
    return Run(repo, where / "ledgers", git(repo, "rev-parse", "HEAD"))


def build_clean_run(where: Path) -> Run:
    """Every property passes on both pins, the flaky test failed, and it was noted."""
    run = build_base_repo(where)
    run.digest("f_a.json")
    run.digest("f_b.json", pin="pins/fixtures_b.json")
    run.properties("p_a.json", "f_a.json")
    run.properties("p_b.json", "f_b.json", pin="pins/fixtures_b.json")
    cli(
        "dual-pin", "--left", run / "p_a.json", "--right", run / "p_b.json", "--out", run / "d.json"
    )
    cli("dual-pin", "--not-run", "--out", run / "d_not_run.json")
    run.flake_observe("fl.json")
    return run


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return build_clean_run(tmp_path_factory.mktemp("clean"))


@pytest.fixture
def work(clean: Run, tmp_path: Path) -> Run:
    """A private copy of the clean run that a test may change."""
    return clean.copy_to(tmp_path / "work")


def assert_refused(run_cli: RunCli, argv: list[str | Path], out: Path, fragment: str) -> str:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("stale flake ledger\n")
    result = run_cli(*argv)
    assert result.code == 3, result.err
    assert fragment in result.first_error_line
    assert not out.exists()
    assert f"removed the stale file at {out}" in result.err
    return result.first_error_line


# --- the ledger that is written ------------------------------------------------------------


def test_writes_the_narrow_observation(clean: Run) -> None:
    written = json.loads((clean / "fl.json").read_text())
    entry = json.loads(clean.flake_pin.read_text())["flakes"][0]
    prop_bytes = (clean / "p_a.json").read_bytes()
    assert list(written) == [
        "kind", "ledger_id", "test_id", "flake_pin_id", "accepted_revision", "review_by",
        "observed", "fixture_digest", "property_ledger_sha256", "recorded_at",
    ]  # fmt: skip
    assert written["kind"] == "flake"
    assert (written["test_id"], written["flake_pin_id"]) == (FLAKY_ID, "flakepin-orders")
    assert written["accepted_revision"] == entry["accepted_revision"]
    assert written["review_by"] == entry["review_by"]
    assert written["observed"] == "fail"
    assert written["fixture_digest"] == json.loads((clean / "f_a.json").read_text())["digest"]
    assert written["property_ledger_sha256"] == hashlib.sha256(prop_bytes).hexdigest()
    stamps = {
        json.loads((clean / name).read_text())["recorded_at"] for name in ("f_a.json", "p_a.json")
    }
    assert written["recorded_at"] not in stamps


def test_no_property_id_is_ever_written(work: Run, run_cli: RunCli) -> None:
    """Even when properties fail in the same run, the flake ledger names only its own id."""
    break_a_property(work)
    result = run_cli(*observe_argv(work, "fl_fail.json", "f_a.json", "p_fail.json"))
    assert result.code == 0, result.err
    text = (work / "fl_fail.json").read_text()
    property_ids = json.loads((work / "p_fail.json").read_text())["status_by_id"]
    assert all(prop_id not in text for prop_id in property_ids)
    assert "flake observed" in result.out


def test_review_by_today_still_holds(work: Run, run_cli: RunCli) -> None:
    """An entry is valid through the whole UTC day of its review_by."""
    set_review_by(work.flake_pin, utc_today())
    result = run_cli(*observe_argv(work, "fl_today.json"))
    assert result.code == 0, result.err
    assert json.loads((work / "fl_today.json").read_text())["review_by"] == utc_today().isoformat()


def test_with_base_writes_when_every_precondition_holds(clean: Run, run_cli: RunCli) -> None:
    out = clean.ledgers.parent / "extra" / "fl_base.json"
    argv = observe_argv(clean, "x", root=clean.repo, base=clean.base)
    argv[argv.index("--out") + 1] = out
    result = run_cli(*argv)
    assert result.code == 0, result.err
    assert json.loads(out.read_text())["test_id"] == FLAKY_ID


# --- each precondition failing alone -------------------------------------------------------


# Two changes under test, appended to the example's product code (a later def wins).
OFF_BY_ONE = """

def order_total(order: Order) -> int:  # the patch under test: one cent too many
    return sum(line["quantity"] * line["unit_price_cents"] for line in order["lines"]) + 1
"""
KRONA_ROUNDING = """

def order_total(order: Order) -> int:  # the patch under test: rounds krona to whole kronor
    total = sum(line["quantity"] * line["unit_price_cents"] for line in order["lines"])
    return total if order["currency"] == "EUR" else total - total % 100
"""
MISSED_PROPERTY = "orders.total.matches_lines"


def break_a_property(run: Run) -> None:
    """The patch breaks a property; a second flake pin also lists that property's test."""
    run.patch_product(OFF_BY_ONE)
    pin = json.loads(run.flake_pin.read_text())
    first = pin["flakes"][0]
    test = "properties/test_orders.py::test_total_matches_lines"
    review_by = datetime.date.fromisoformat(first["review_by"])
    pin["flakes"].append(flake_entry(MISSED_PROPERTY, test, first["accepted_revision"], review_by))
    write_json(run.other_pin("flakes_with_property.json"), pin)
    flake_pin = run.other_pin("flakes_with_property.json")
    run.properties("p_fail.json", "f_a.json", flake_pin=flake_pin, expect=1)


def set_review_by(pin_path: Path, day: datetime.date) -> None:
    pin = json.loads(pin_path.read_text())
    pin["flakes"][0]["review_by"] = day.isoformat()
    write_json(pin_path, pin)


def test_1_digests_disagree(clean: Run, run_cli: RunCli) -> None:
    argv = observe_argv(clean, "refused.json", fixture="f_b.json")
    line = assert_refused(run_cli, argv, clean / "refused.json", "precondition 1")
    assert str(clean / "p_a.json") in line


def test_1_malformed_ledger(work: Run, run_cli: RunCli) -> None:
    document = json.loads((work / "f_a.json").read_text())
    del document["digest"]
    write_json(work / "f_a.json", document)
    line = assert_refused(run_cli, observe_argv(work, "o.json"), work / "o.json", "precondition 1")
    assert str(work / "f_a.json") in line


def test_2_oracles_moved(work: Run, run_cli: RunCli) -> None:
    move_an_oracle(work)
    argv = observe_argv(work, "o.json", "f_a.json", "p_moved.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 2")
    assert "oracle_moved is true" in line


def move_an_oracle(run: Run) -> None:
    oracle = run.repo / "properties/test_orders.py"
    oracle.write_text(oracle.read_text() + "\n# an agent's edit to the oracle\n")
    run.properties("p_moved.json", "f_a.json", expect=5)


def test_3_id_not_listed(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["test_id"] = "orders.other.timeout"
    write_json(work.other_pin("other_flakes.json"), pin)
    argv = observe_argv(work, "o.json", flake_pin=work.other_pin("other_flakes.json"))
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 3")
    assert f"{FLAKY_ID!r} is not listed" in line


def test_3_review_by_passed(work: Run, run_cli: RunCli) -> None:
    yesterday = utc_today() - datetime.timedelta(days=1)
    set_review_by(work.flake_pin, yesterday)
    line = assert_refused(run_cli, observe_argv(work, "o.json"), work / "o.json", "precondition 3")
    assert f"review_by {yesterday.isoformat()}" in line
    assert "never extends" in line


def test_3_accepted_revision_after_the_base(work: Run, run_cli: RunCli) -> None:
    """The label names a commit the base does not contain (here: one on a side branch)."""
    git(work.repo, "switch", "-q", "-c", "side")
    git(work.repo, "commit", "-q", "--allow-empty", "-m", "a commit the base never saw")
    side = git(work.repo, "rev-parse", "HEAD")
    git(work.repo, "switch", "-q", "main")
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["accepted_revision"] = side
    write_json(work.flake_pin, pin)
    git(work.repo, "commit", "-q", "-am", "flake pin: accepted on the side branch")
    base = git(work.repo, "rev-parse", "HEAD")
    argv = observe_argv(work, "o.json", root=work.repo, base=base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 3")
    assert f"accepted_revision {side!r} is neither the base" in line


def test_4_id_is_a_property_id(work: Run, run_cli: RunCli) -> None:
    break_a_property(work)
    argv = observe_argv(
        work, "o.json", "f_a.json", "p_fail.json",
        flake_pin=work.other_pin("flakes_with_property.json"), test_id=MISSED_PROPERTY,
    )  # fmt: skip
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 4")
    assert f"{MISSED_PROPERTY!r} is a property id" in line


def test_5_the_flaky_test_passed(work: Run, run_cli: RunCli) -> None:
    work.properties("p_passed.json", "f_a.json", budget_ms=ALWAYS_PASSES)
    argv = observe_argv(work, "o.json", prop="p_passed.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 5")
    assert "as pass" in line


def test_5_nothing_observed(work: Run, run_cli: RunCli) -> None:
    """The test ran in no result the property ledger holds: nothing observed, nothing written."""
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["test"] = "properties/test_orders.py::test_that_does_not_exist"
    write_json(work.other_pin("unmatched_flakes.json"), pin)
    work.properties(
        "p_unmatched.json", "f_a.json", flake_pin=work.other_pin("unmatched_flakes.json")
    )
    argv = observe_argv(work, "o.json", prop="p_unmatched.json")
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 5")
    assert "nothing observed" in line


def test_6_flake_pin_changed_against_base(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0]["note"] = "edited in the change under test"
    write_json(work.flake_pin, pin)
    argv = observe_argv(work, "o.json", root=work.repo, base=work.base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 6")
    assert "pin mutation" in line
    assert str(work.flake_pin) in line


def test_6_flake_pin_outside_the_work_tree(work: Run, run_cli: RunCli) -> None:
    outside = work.other_pin("flakes_outside.json")
    shutil.copyfile(work.flake_pin, outside)
    argv = observe_argv(work, "o.json", flake_pin=outside, root=work.repo, base=work.base)
    line = assert_refused(run_cli, argv, work / "o.json", "precondition 6")
    assert "outside the git work tree" in line


def test_base_that_does_not_resolve(clean: Run, run_cli: RunCli, tmp_path: Path) -> None:
    argv = observe_argv(clean, "x", root=clean.repo, base="no-such-branch")
    argv[argv.index("--out") + 1] = tmp_path / "o.json"
    assert_refused(run_cli, argv, tmp_path / "o.json", "'no-such-branch'")


# --- where the ledger may not go ------------------------------------------------------------


def test_out_inside_the_pin_folder_is_refused_and_the_pin_kept(clean: Run, run_cli: RunCli) -> None:
    before = clean.flake_pin.read_bytes()
    argv = observe_argv(clean, "x")
    argv[argv.index("--out") + 1] = clean.flake_pin
    result = run_cli(*argv)
    assert result.code == 3
    assert "folder of pin" in result.first_error_line
    assert clean.flake_pin.read_bytes() == before


def test_out_over_an_input_is_refused_and_the_input_kept(clean: Run, run_cli: RunCli) -> None:
    before = (clean / "p_a.json").read_bytes()
    result = run_cli(*observe_argv(clean, "p_a.json"))
    assert result.code == 3
    assert "also an input ledger" in result.first_error_line
    assert (clean / "p_a.json").read_bytes() == before


def test_missing_required_flag_is_usage(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("flake-observe", "--out", tmp_path / "o.json")
    assert result.code == 64


def test_3_a_mistyped_id_lists_the_pin_ids_closest_first(work: Run, run_cli: RunCli) -> None:
    pin = json.loads(work.flake_pin.read_text())
    entry = pin["flakes"][0]
    others = [{**entry, "test_id": test_id} for test_id in ("payments.retry", "orders.slow")]
    pin["flakes"] = [*others, entry]
    write_json(work.other_pin("three_flakes.json"), pin)
    typo = "orders.boundary.timout"
    argv = observe_argv(work, "o.json", flake_pin=work.other_pin("three_flakes.json"), test_id=typo)
    result = run_cli(*argv)
    assert result.code == 3
    assert f"{typo!r} is not listed" in result.first_error_line
    listed = f"lists, closest first: {FLAKY_ID}, orders.slow, payments.retry"
    assert listed in result.err.splitlines()[1]
