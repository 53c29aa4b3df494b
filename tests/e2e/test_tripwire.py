"""The tripwire: honest runs keep their statuses under every pytest option that reorders, stops
or selects; runs whose outcomes are forced are refused (exit 4, naming the sentinel)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import FORCE_PASS, CliResult, RunCli, git

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


def test_sentinels_do_not_reach_the_ledger_or_the_cache(run_cli: RunCli, orders_repo: Path) -> None:
    assert score(run_cli, orders_repo, f"{PYTEST} properties/test_orders.py").code == 0
    text = (orders_repo.parent / "ledgers/p.json").read_text()
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    sentinels = re.findall(r"test_[0-9a-f]{12}", log)
    assert len(set(sentinels)) == 2
    assert not any(name in text for name in sentinels)
    lastfailed = orders_repo / ".pytest_cache/v/cache/lastfailed"
    assert not lastfailed.exists() or not any(name in lastfailed.read_text() for name in sentinels)
    assert "the gate's tripwire added 2 items" in log


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


# Blanket ways to force outcomes from inside the run: each must trip the wire.
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
        r"three-ledger: infrastructure failure: tripwire: sentinel test_[0-9a-f]{12} must "
        r"fail but was recorded as pass",
        result.first_error_line,
    )
    assert not (orders_repo.parent / "ledgers/p.json").exists()
