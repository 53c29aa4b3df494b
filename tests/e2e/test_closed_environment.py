"""The test child's closed environment and PR_SET_NO_NEW_PRIVS, end to end: real git
repositories, real pytest children (serial and under xdist), a JUnit runner, and `gate`.

The canaries assert what did not happen: a token set for the gate that a test could read, a
job variable the ledger would record by value, a child that could gain privileges. The honest
controls (tmp_path, /tmp, subprocesses, PATH, xdist) still pass.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, beside, expected_layers, git
from helpers.scoring import ledger, score
from helpers.suites import PYTEST, TEST_FILE, make_suite, plan_json, prop, properties_pin

pytestmark = pytest.mark.pytest_child

GITHUB_TOKEN = "ghs_canary-value-that-must-never-be-written-4f1d"
OIDC_TOKEN = "oidc-canary-value-that-must-never-be-written-9b2e"
TOKEN_SHA256 = hashlib.sha256(GITHUB_TOKEN.encode()).hexdigest()

# The tests name the token only by its hash, so that no file of the suite holds its value.
CANARY_SUITE = f"""
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def no_new_privs(status):
    return [line.split()[1] for line in status.splitlines() if line.startswith("NoNewPrivs:")]


def test_tokens_absent():
    names = set(os.environ)
    assert "ACTIONS_ID_TOKEN_REQUEST_TOKEN" not in names
    assert "GITHUB_TOKEN" not in names


def test_token_kept():
    token = os.environ.get("GITHUB_TOKEN", "")
    assert hashlib.sha256(token.encode()).hexdigest() == "{TOKEN_SHA256}"


def test_setting_kept():
    assert os.environ.get("CANARY_SETTING") == "on"


def test_no_new_privs():
    assert no_new_privs(Path("/proc/self/status").read_text()) == ["1"]
    read = [sys.executable, "-c", "print(open('/proc/self/status').read())"]
    grandchild = subprocess.run(read, capture_output=True, text=True, check=True).stdout
    assert no_new_privs(grandchild) == ["1"]


def test_home_private():
    home = Path.home()
    assert str(home) == os.environ["HOME"]
    assert list(home.iterdir()) == []
    (home / ".cache").mkdir()


def test_honest_tmp_path(tmp_path):
    (tmp_path / "data.txt").write_text("42")
    assert (tmp_path / "data.txt").read_text() == "42"


def test_honest_tmp():
    with tempfile.NamedTemporaryFile("w+", dir="/tmp") as scratch:
        scratch.write("42")
        scratch.seek(0)
        assert scratch.read() == "42"


def test_honest_subprocess():
    done = subprocess.run([sys.executable, "-c", "print(40 + 2)"], capture_output=True, text=True)
    assert done.stdout == "42\\n"
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    assert git.stdout.startswith("git version")


@pytest.mark.parametrize("case", os.environ.get("CANARY_CASES", "one").split(","))
def test_cases(case):
    assert case
"""
CANARIES = ["tokens_absent", "token_kept", "setting_kept", "no_new_privs", "home_private"]
HONEST = ["honest_tmp_path", "honest_tmp", "honest_subprocess", "cases"]


def canary_pin(**extra: Any) -> dict[str, Any]:
    names = [*CANARIES, *HONEST]
    return properties_pin([prop(f"canary.{name}", f"{TEST_FILE}::test_{name}") for name in names],
                          **extra)  # fmt: skip


@pytest.fixture
def job(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The gate's environment as a CI job gives it: tokens, a setting, a home with files."""
    home = tmp_path / "job-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = the job's own\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", OIDC_TOKEN)
    monkeypatch.setenv("CANARY_SETTING", "on")
    monkeypatch.setenv("CANARY_CASES", "one,two,three")
    monkeypatch.setenv("THREE_LEDGER_DEBUG", "1")
    return home


def statuses(written: dict[str, Any]) -> dict[str, str]:
    return {key.removeprefix("canary."): value for key, value in written["status_by_id"].items()}


def assert_no_value_written(path: Path, home: Path) -> None:
    text = path.read_text()
    for value in (GITHUB_TOKEN, OIDC_TOKEN, str(home)):
        assert value not in text


def test_the_jobs_tokens_never_reach_the_tests_and_the_ledger_names_them_only(
    run_cli: RunCli, tmp_path: Path, job: Path
) -> None:
    repo = make_suite(tmp_path / "suite", canary_pin(), source=CANARY_SUITE)
    result = score(run_cli, repo, "--base", "HEAD", command=f"{PYTEST} {TEST_FILE}")
    assert result.code == 1, result.err
    written = ledger(repo)
    assert statuses(written) == {
        "tokens_absent": "pass",
        "token_kept": "fail",
        "setting_kept": "fail",
        "no_new_privs": "pass",
        "home_private": "pass",
        "honest_tmp_path": "pass",
        "honest_tmp": "pass",
        "honest_subprocess": "pass",
        "cases": "pass",
    }
    sandbox = written["sandbox"]
    assert sandbox["layers"] == expected_layers()
    removed = sandbox["env_removed"]
    assert {"GITHUB_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "CANARY_SETTING"} <= set(removed)
    assert "THREE_LEDGER_DEBUG" in removed
    assert removed == sorted(removed)
    # HOME is replaced, not removed; PATH is kept.
    assert "HOME" not in removed
    assert "PATH" not in removed
    assert sandbox["env_kept"] == []
    assert_no_value_written(repo.parent / "ledgers/p.json", job)
    keys = list(written)
    assert keys[keys.index("network_enforcement") + 1] == "sandbox"


def test_the_pin_lets_a_reviewed_token_through_and_keep_env_a_setting_under_xdist(
    run_cli: RunCli, tmp_path: Path, job: Path
) -> None:
    repo = make_suite(tmp_path / "suite", canary_pin(env=["GITHUB_TOKEN"]), source=CANARY_SUITE)
    command = f"{PYTEST} -p xdist -n 2 {TEST_FILE}"
    result = score(run_cli, repo, "--base", "HEAD", "--keep-env", "CANARY_SETTING", command=command)
    assert result.code == 1, result.err
    assert statuses(ledger(repo)) == {
        "tokens_absent": "fail",  # GITHUB_TOKEN, through the pin
        "token_kept": "pass",
        "setting_kept": "pass",
        "no_new_privs": "pass",
        "home_private": "pass",
        "honest_tmp_path": "pass",
        "honest_tmp": "pass",
        "honest_subprocess": "pass",
        "cases": "pass",
    }
    sandbox = ledger(repo)["sandbox"]
    assert sandbox["env_kept"] == ["CANARY_SETTING", "GITHUB_TOKEN"]
    assert "ACTIONS_ID_TOKEN_REQUEST_TOKEN" in sandbox["env_removed"]
    assert "GITHUB_TOKEN" not in sandbox["env_removed"]
    assert sandbox["layers"]["no_new_privs"] == "held"
    assert_no_value_written(repo.parent / "ledgers/p.json", job)


def test_plan_collects_in_the_same_closed_environment(
    run_cli: RunCli, tmp_path: Path, job: Path
) -> None:
    repo = make_suite(tmp_path / "suite", canary_pin(), source=CANARY_SUITE)
    closed = plan_json(run_cli, repo, command=f"{PYTEST} {TEST_FILE}")
    kept = plan_json(run_cli, repo, "--keep-env", "CANARY_CASES", command=f"{PYTEST} {TEST_FILE}")
    # test_cases is parametrised at collection by CANARY_CASES: one case unless it is kept.
    assert kept["tests"] == closed["tests"] + 2


# A runner that is not pytest: it writes one testcase that fails when any name it is given is
# in its environment, and a passing one for the example's other properties.
JUNIT_RUNNER = """
import os, sys
report, names = sys.argv[1], sys.argv[2:]
seen = [name for name in names if name in os.environ]
failure = f"<failure message='seen: {' '.join(seen)}'/>" if seen else ""
os.makedirs(os.path.dirname(report), exist_ok=True)
with open(report, "w") as out:
    out.write(
        "<?xml version='1.0'?><testsuites><testsuite name='canary'>"
        "<testcase file='properties/test_orders.py' classname='c' name='test_total_non_negative'>"
        f"{failure}</testcase></testsuite></testsuites>"
    )
"""


def test_a_junit_runner_gets_the_closed_environment_too(
    run_cli: RunCli, orders_repo: Path, job: Path, needs_network_namespace: None
) -> None:
    runner = beside(orders_repo, "runner.py", JUNIT_RUNNER)
    report = orders_repo.parent / "reports" / "junit.xml"
    names = "GITHUB_TOKEN ACTIONS_ID_TOKEN_REQUEST_TOKEN CANARY_SETTING"
    command = f"{sys.executable} {runner} {report} {names}"
    closed = score(run_cli, orders_repo, "--base", "HEAD", "--junit-xml", report, command=command)
    assert closed.code == 1, closed.err  # the example's other properties are missing
    written = ledger(orders_repo)
    assert written["status_by_id"]["orders.total.non_negative"] == "pass"
    assert written["sandbox"]["layers"] == expected_layers()
    assert {"GITHUB_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"} <= set(
        written["sandbox"]["env_removed"]
    )
    # The control: the runner does see a name kept for the run, and fails on it.
    kept = score(
        run_cli, orders_repo, "--base", "HEAD", "--junit-xml", report,
        "--keep-env", "CANARY_SETTING", command=command,
    )  # fmt: skip
    assert kept.code == 1, kept.err
    assert ledger(orders_repo)["status_by_id"]["orders.total.non_negative"] == "fail"
    assert ledger(orders_repo)["sandbox"]["env_kept"] == ["CANARY_SETTING"]
    assert_no_value_written(orders_repo.parent / "ledgers/p.json", job)


def test_gate_runs_the_whole_chain_in_the_closed_environment(
    run_cli: RunCli, tmp_path: Path, job: Path
) -> None:
    names = ["tokens_absent", "no_new_privs", "home_private", *HONEST]
    pin = properties_pin([prop(f"canary.{n}", f"{TEST_FILE}::test_{n}") for n in names])
    repo = make_suite(tmp_path / "suite", pin, source=CANARY_SUITE)
    git(repo, "commit", "-q", "--allow-empty", "-m", "an empty change")
    out = tmp_path / "gate"
    result = run_cli(
        "gate", "--pins-dir", repo / "pins", "--command", f"{PYTEST} {TEST_FILE}",
        "--root", repo, "--base", "HEAD~1", "--out-dir", out, "--keep-env", "CANARY_SETTING",
    )  # fmt: skip
    decision = json.loads((out / "decision.json").read_text())
    assert (result.code, decision["row"]) == (0, 8), result.out + result.err
    written = json.loads((out / "property-a.json").read_text())
    assert set(written["status_by_id"].values()) == {"pass"}
    assert written["sandbox"]["env_kept"] == ["CANARY_SETTING"]
    assert "GITHUB_TOKEN" in written["sandbox"]["env_removed"]
    for path in out.rglob("*"):
        if path.is_file():
            assert_no_value_written(path, job)
