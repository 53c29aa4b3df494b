"""Real evidence for the example: a copy of examples/orders in git, and the ledgers the real
commands write over it (the flake-pinned test fails or passes through its time budget).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE, CliResult, git, write_json
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


def captured(*argv: str | Path) -> CliResult:
    """The real command line with streams of its own: a RunCli for fixtures wider than a test."""
    out, err = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(arg) for arg in argv])
    out.seek(0)
    err.seek(0)
    return CliResult(code, out.read(), err.read())


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


def move_an_oracle(run: Run) -> None:
    oracle = run.repo / "properties/test_orders.py"
    oracle.write_text(oracle.read_text() + "\n# an agent's edit to the oracle\n")
    run.properties("p_moved.json", "f_a.json", expect=5)
