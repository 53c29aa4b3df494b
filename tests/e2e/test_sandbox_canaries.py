"""The sandbox's canaries, through the whole chain (`gate`): product code that attacks the run
from inside it, and what did *not* happen. Each attack is shown to work where its layer is
missing (the probe's answer injected in-process), so that each canary can fail.

One change carries every attack, in the product module, run at import by the property
tests: a `setsid` sleeper that writes after the run, fixtures rewritten for the run and
restored at exit (with a broken product the rewrite would hide), `posture=review` appended to
`$GITHUB_OUTPUT` and a line to `$GITHUB_STEP_SUMMARY`, a look at every process in `/proc`
and at its parent's environment. The honest controls are suites a sandbox must not break.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git, simulate_missing_layers, terminated_on_exit

pytestmark = [
    pytest.mark.pytest_child,
    pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer"),
]

# `-s`: what the attack prints at import reaches the log.
TEST_COMMAND = shlex.join(
    [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-s",
        "-p",
        "no:cacheprovider",
        "properties/test_orders.py",
    ]
)
# Product code, appended to orders.py: order_total drops the quantity, and the fixtures are
# rewritten so that their totals agree, then restored at exit (a digest taken before or
# after the run sees the reviewed bytes).
ATTACK = """

# --- the attack ---------------------------------------------------------------------------
import atexit as _atexit, json as _json, os as _os, subprocess as _subprocess


def order_total(order: Order) -> int:  # broken: the quantity is dropped
    return sum(line["unit_price_cents"] for line in order["lines"])


def _rewrite_fixtures() -> None:
    folder = Path(_os.environ["THREE_LEDGER_FIXTURES"])
    for path in folder.glob("*.json"):
        original = path.read_bytes()
        document = _json.loads(original)
        for order in document["orders"]:
            order["total_cents"] = order_total(order)
        try:
            path.write_text(_json.dumps(document))
        except OSError as error:
            print(f"CANARY fixture write failed: {{error}}", flush=True)
            continue
        _atexit.register(path.write_bytes, original)


def _look_around() -> dict:
    seen = {{"processes": [], "parent_environ": None, "secrets_in_environ": []}}
    for pid in sorted(name for name in _os.listdir("/proc") if name.isdigit()):
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as stream:
                seen["processes"].append([int(pid), stream.read().decode(errors="replace")])
            with open(f"/proc/{{pid}}/environ", "rb") as stream:
                if b"{secret}" in stream.read():
                    seen["secrets_in_environ"].append(int(pid))
        except OSError:
            pass
    try:
        with open(f"/proc/{{_os.getppid()}}/environ", "rb") as stream:
            seen["parent_environ"] = "{secret}" in stream.read().decode(errors="replace")
    except OSError as error:
        seen["parent_environ"] = error.strerror
    return seen


def _write_file_commands() -> list:
    failures = []
    for path in ({output!r}, {summary!r}):
        try:
            with open(path, "a") as stream:
                stream.write("posture=review\\n" if path == {output!r} else "all clear\\n")
        except OSError as error:
            failures.append(error.strerror)
    return failures


_subprocess.Popen(["setsid", "sh", "-c", "sleep 3; touch {marker}"])
_rewrite_fixtures()
print("CANARY " + _json.dumps({{"seen": _look_around(), "commands": _write_file_commands()}}),
      flush=True)
"""


@pytest.fixture
def bystander(tmp_path: Path) -> Iterator[str]:
    """A process of the job beside the gate, with a secret in its environment: its command
    line carries a token the attack looks for."""
    token = f"bystander-{os.urandom(4).hex()}"
    code = "import time; time.sleep(300)"
    env = {**os.environ, "CANARY_SECRET": "s3cret-token"}
    process = subprocess.Popen([sys.executable, "-c", code, token], env=env)
    with terminated_on_exit(process):
        yield token


@pytest.fixture
def runner_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The runner's file-command files, as GitHub sets them for the step."""
    folder = tmp_path / "runner/_temp/_runner_file_commands"
    folder.mkdir(parents=True)
    files = {"GITHUB_OUTPUT": folder / "set_output_1", "GITHUB_STEP_SUMMARY": folder / "summary_1"}
    for name, path in files.items():
        path.write_text("")
        monkeypatch.setenv(name, str(path))
    monkeypatch.setenv("CANARY_SECRET", "s3cret-token")  # a secret of the job, in the gate's env
    return files


def attacked(tmp_path: Path, orders_repo: Path, runner_files: dict[str, Path]) -> str:
    """The attack committed on top of the base; the base's commit."""
    base = git(orders_repo, "rev-parse", "HEAD")
    code = ATTACK.format(
        secret="s3cret-token",
        output=str(runner_files["GITHUB_OUTPUT"]),
        summary=str(runner_files["GITHUB_STEP_SUMMARY"]),
        marker=tmp_path / "escaped",
    )
    orders = orders_repo / "orders.py"
    orders.write_text(orders.read_text() + code)
    git(orders_repo, "commit", "-qam", "orders: faster totals")
    return base


def gate(run_cli: RunCli, repo: Path, base: str, out: Path) -> Any:
    return run_cli(
        "gate", "--pins-dir", repo / "pins", "--root", repo, "--command", TEST_COMMAND,
        "--base", base, "--out-dir", out,
    )  # fmt: skip


def canary_report(out: Path) -> dict[str, Any]:
    """What the attack saw and did in the run on pin A, as it printed it to the log."""
    log = (out / "property-a.log").read_text()
    line = next(text for text in log.splitlines() if text.startswith("CANARY {"))
    report: dict[str, Any] = json.loads(line.removeprefix("CANARY "))
    report["fixture_write_failed"] = "CANARY fixture write failed" in log
    return report


def posture(out: Path) -> tuple[str, int]:
    decision = json.loads((out / "decision.json").read_text())
    return decision["posture"], decision["row"]


def test_every_canary_holds_in_the_sandbox(
    run_cli: RunCli,
    orders_repo: Path,
    tmp_path: Path,
    runner_files: dict[str, Path],
    bystander: str,
) -> None:
    fixtures = {path: path.read_bytes() for path in (orders_repo / "fixtures").iterdir()}
    base = attacked(tmp_path, orders_repo, runner_files)
    out = tmp_path / "out"
    result = gate(run_cli, orders_repo, base, out)
    report = canary_report(out)
    # The fixtures cannot be rewritten: the broken product fails its property, row 7.
    assert report["fixture_write_failed"]
    assert posture(out) == ("reject", 7), result.err
    assert (
        json.loads((out / "property-a.json").read_text())["status_by_id"][
            "orders.total.matches_lines"
        ]
        == "fail"
    )
    assert {path: path.read_bytes() for path in fixtures} == fixtures
    # The runner's file-command files are out of reach and unchanged (the gate appends its
    # own summary to GITHUB_STEP_SUMMARY; the attack's line is not in it).
    assert len(report["commands"]) == 2  # both writes failed
    assert runner_files["GITHUB_OUTPUT"].read_text() == ""
    assert "all clear" not in runner_files["GITHUB_STEP_SUMMARY"].read_text()
    # /proc holds the sandbox's processes only: PID 1, the trampoline, and the run below it.
    processes = report["seen"]["processes"]
    assert not [cmdline for _pid, cmdline in processes if bystander in cmdline]
    assert processes[0][0] == 1
    assert "import trampoline" in processes[0][1]
    assert len(processes) < 10
    assert report["seen"]["parent_environ"] == "Permission denied"  # PID 1 cannot be read
    assert report["seen"]["secrets_in_environ"] == []
    # Nothing the run started outlives it.
    time.sleep(4)
    assert not (tmp_path / "escaped").exists()
    ledger = json.loads((out / "property-a.json").read_text())
    assert ledger["sandbox"]["layers"] == dict.fromkeys(
        ("environment", "no_new_privs", "pid", "mount", "file_commands"), "held"
    )


def test_without_the_layers_every_attack_works(
    run_cli: RunCli,
    orders_repo: Path,
    tmp_path: Path,
    runner_files: dict[str, Path],
    bystander: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: the same change on a machine where neither layer can be made."""
    simulate_missing_layers(monkeypatch, pid="no PID namespace", mount="no mount namespace")
    base = attacked(tmp_path, orders_repo, runner_files)
    out = tmp_path / "out"
    result = gate(run_cli, orders_repo, base, out)
    report = canary_report(out)
    assert not report["fixture_write_failed"]
    assert posture(out) == ("review", 9), result.err  # the broken product got through
    assert "posture=review" in runner_files["GITHUB_OUTPUT"].read_text()
    assert "all clear" in runner_files["GITHUB_STEP_SUMMARY"].read_text()
    assert [cmdline for _pid, cmdline in report["seen"]["processes"] if bystander in cmdline]
    deadline = time.monotonic() + 10
    while not (tmp_path / "escaped").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (tmp_path / "escaped").exists()
    warnings = [line for line in result.out.splitlines() if "sandbox layer" in line]
    assert warnings == [
        (
            "warning: the test run's sandbox layer environment is missing: the job's "
            "environment is readable through /proc without a PID namespace"
        ),
        "warning: the test run's sandbox layer pid is missing: no PID namespace",
        "warning: the test run's sandbox layer mount is missing: no mount namespace",
        (
            "warning: the test run's sandbox layer file_commands is missing: the runner's "
            "file-command files are writable without the mount layer"
        ),
    ]


# --- honest controls --------------------------------------------------------------------------

HONEST_SUITE = """
import os, pathlib, subprocess, sys, tempfile

import pytest

pytestmark = pytest.mark.property("orders.total.non_negative")


def test_tmp_path(tmp_path):
    (tmp_path / "scratch.txt").write_text("written")
    assert (tmp_path / "scratch.txt").read_text() == "written"


def test_writes_to_tmp():
    path = pathlib.Path("/tmp") / f"honest-{os.getpid()}.txt"
    path.write_text("x")
    assert path.read_text() == "x"
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"y")


def test_home_is_writable():
    pathlib.Path(os.path.expanduser("~/.config")).mkdir(parents=True, exist_ok=True)


def test_spawns_a_subprocess():
    done = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
    assert done.stdout == "42\\n"
"""

HYPOTHESIS_SUITE = """
import pytest
from hypothesis import given, strategies as st

from orders import order_total

pytestmark = pytest.mark.property("orders.total.non_negative")


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 10_000)), max_size=5))
def test_total_of_non_negative_lines_is_non_negative(lines):
    order = {"lines": [{"quantity": q, "unit_price_cents": p} for q, p in lines]}
    assert order_total(order) >= 0
"""


def reviewed(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).write_text(textwrap.dedent(text))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tests: reviewed")
    return git(repo, "rev-parse", "HEAD")


def properties(run_cli: RunCli, repo: Path, command: str, base: str) -> Any:
    digest = run_cli(
        "digest", "--pin", repo / "pins/fixtures.json", "--root", repo,
        "--out", repo.parent / "f.json",
    ).out.strip()  # fmt: skip
    return run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo / "pins/properties.json", "--command", command, "--root", repo,
        "--out", repo.parent / "p.json", "--base", base,
    )  # fmt: skip


def test_an_honest_suite_with_tmp_path_tmp_subprocesses_and_xdist_passes(
    run_cli: RunCli, orders_repo: Path
) -> None:
    base = reviewed(orders_repo, {"properties/test_honest.py": HONEST_SUITE})
    command = f"{sys.executable} -m pytest -q -n 2 -p no:cacheprovider properties"
    result = properties(run_cli, orders_repo, command, base)
    assert result.code == 0, result.err
    written = json.loads((orders_repo.parent / "p.json").read_text())
    assert written["tests_matched"]["orders.total.non_negative"] == 6  # 2 fixtures + 4 here
    assert written["sandbox"]["layers"]["mount"] == "held"
    assert not list(Path("/tmp").glob("honest-*.txt"))  # /tmp was the run's own


def test_coverage_filterwarnings_error_and_hypothesis_pass(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's cache, coverage's data file and Hypothesis's database all go where the run
    may write; any of them written into the read-only tree would be an error here."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)  # the cache plugin stays on
    monkeypatch.delenv("COVERAGE_FILE", raising=False)
    config = (orders_repo / "pytest.ini").read_text() + "filterwarnings =\n    error\n"
    base = reviewed(
        orders_repo,
        {"pytest.ini": config, "properties/test_generated.py": HYPOTHESIS_SUITE},
    )
    command = f"{sys.executable} -m coverage run -m pytest -q properties"
    result = properties(run_cli, orders_repo, command, base)
    assert result.code == 0, result.err
    assert not (orders_repo / ".pytest_cache").exists()
    assert not (orders_repo / ".coverage").exists()
    assert not (orders_repo / ".hypothesis").exists()
