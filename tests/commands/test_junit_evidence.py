"""`properties --junit-xml`: only a report this run wrote is evidence, whatever the runner exits.

Real git repositories and real child processes; the "runner" is a shell line that writes a
report the way a reporter does, so that each way a report can be stale, forged or linked is
produced exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    CliResult,
    RunCli,
    beside,
    git,
    make_tree,
    simulate_missing_layers,
    write_json,
)
from three_ledger.run.junit_oracles import CHANGED_OUTSIDE_PRODUCT, NAMED_BY_COMMAND

PASSING = "test_total_non_negative"
FAILING = "test_id_stable"


def report_xml(failing: int = 1) -> str:
    """A report of the orders properties; FAILING fails, plus FAILING-1 more extra failures."""
    extra = "".join(
        f'<testcase file="properties/test_orders.py" classname="p" name="test_extra_{n}">'
        "<failure/></testcase>"
        for n in range(failing - 1)
    )
    failed = "<failure message='boom'/>" if failing else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="orders">'
        f'<testcase file="properties/test_orders.py" classname="p" name="{PASSING}"/>'
        f'<testcase file="properties/test_orders.py" classname="p" name="{FAILING}">{failed}'
        f"</testcase>{extra}</testsuite></testsuites>\n"
    )


def score(
    run_cli: RunCli, repo: Path, command: str, report: Path | str, *extra: str | Path
) -> CliResult:
    digest = run_cli(
        "digest", "--pin", repo / "pins/fixtures.json", "--root", repo,
        "--out", repo.parent / "f.json",
    ).out.strip()  # fmt: skip
    return run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo / "pins/properties.json", "--command", command, "--root", repo,
        "--out", repo.parent / "ledgers/p.json", "--base", "HEAD", "--junit-xml", report,
        *extra,
    )  # fmt: skip


def ledger(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.parent / "ledgers/p.json").read_text())
    return document


def speaks_of_pytest(stderr: str) -> bool:
    """Whether STDERR names one of pytest's exit meanings (its paths may hold `pytest`)."""
    meanings = ("interrupted", "internal error", "usage error", "no tests collected", "plugin")
    return any(meaning in stderr for meaning in meanings)


def no_ledger(repo: Path) -> bool:
    return not (repo.parent / "ledgers/p.json").exists()


def source_file(repo: Path, text: str) -> Path:
    """A report for a stand-in runner to copy, where the sandbox lets the run read it."""
    return beside(repo, "report.src", text)


@pytest.fixture
def source(orders_repo: Path) -> Path:
    """A report with one passing and one failing property test, beside the project's files."""
    return source_file(orders_repo, report_xml())


@pytest.fixture
def report(orders_repo: Path) -> Path:
    return orders_repo.parent / "out" / "junit.xml"


def writes(source: Path, report: Path, then: str = "") -> str:
    """A command that writes SOURCE to REPORT as a reporter would, then runs THEN."""
    return f"sh -c 'mkdir -p {report.parent} && cat {source} > {report}{then}'"


# --- evidence from this run only -----------------------------------------------------------------


def test_a_fresh_report_gives_a_ledger_that_records_it(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    result = score(run_cli, orders_repo, writes(source, report, "; exit 1"), report)
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert written["status_by_id"]["orders.total.non_negative"] == "pass"
    assert written["status_by_id"]["orders.id.stable"] == "fail"
    data = report.read_bytes()
    assert written["junit_report"] == {
        "path": "../out/junit.xml",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    assert list(written).index("junit_report") == list(written).index("command_exit") + 1


def test_a_stale_report_is_removed_and_never_read(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    # A library syntax error makes mocha exit 1 before its reporter writes anything.
    report.parent.mkdir()
    report.write_text(report_xml(failing=0))
    result = score(run_cli, orders_repo, "sh -c 'exit 1'", report)
    assert result.code == 4
    assert result.first_error_line == (
        f"three-ledger: infrastructure failure: JUnit XML {report}: missing after the command "
        "(the file an earlier run left there was removed before the command): the runner wrote "
        "no report (did it stop before its reporter ran, or write elsewhere? log: "
        f"{orders_repo.parent / 'ledgers/p.json.log'})"
    )
    assert not report.exists()
    assert no_ledger(orders_repo)


def test_a_committed_report_is_refused_before_the_command_runs(
    run_cli: RunCli, orders_repo: Path, source: Path
) -> None:
    report = orders_repo / "test-results/junit.xml"
    report.parent.mkdir()
    report.write_text(report_xml(failing=0))
    git(orders_repo, "add", "test-results/junit.xml")
    git(orders_repo, "commit", "-q", "-m", "a passing report, committed")
    ran = orders_repo.parent / "ran"
    result = score(run_cli, orders_repo, f"sh -c 'touch {ran}'", report)
    assert result.code == 2
    assert f"--junit-xml JUnit XML {report} is tracked by git" in result.first_error_line
    assert not ran.exists()
    assert report.exists()  # a refusal changes nothing
    assert no_ledger(orders_repo)


def test_a_staged_report_is_refused_too(run_cli: RunCli, orders_repo: Path, source: Path) -> None:
    report = orders_repo / "junit.xml"
    report.write_text(report_xml(failing=0))
    git(orders_repo, "add", "junit.xml")
    assert score(run_cli, orders_repo, writes(source, report), report).code == 2


@pytest.mark.parametrize(
    ("then", "problem"),
    [
        ("; touch -d 2001-01-01 {report}", "before the command started (a copy that kept"),
        ("; rm {report}; ln -s {source} {report}", "a symbolic link, not a report this run wrote"),
        ("; rm {report}; ln {source} {report}", "has 2 hard links, so it is not a report"),
        ("; rm {report}; mkfifo {report}", "not a regular file"),
    ],
    ids=["older-than-the-run", "symbolic-link", "hard-link", "fifo"],
)
def test_a_report_this_run_did_not_write_is_exit_4(
    run_cli: RunCli,
    orders_repo: Path,
    source: Path,
    report: Path,
    then: str,
    problem: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if " ln " in then:
        # The mount layer forbids the link itself (ROOT and the report's folder are two
        # mounts); where it is missing, the gate's own check is what refuses it.
        simulate_missing_layers(monkeypatch, mount="mount_setattr: Function not implemented")
    command = writes(source, report, then.format(report=report, source=source))
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 4, result.err
    assert result.first_error_line.startswith(
        f"three-ledger: infrastructure failure: JUnit XML {report}: "
    )
    assert problem in result.first_error_line
    assert no_ledger(orders_repo)


def test_a_copy_that_keeps_an_old_date_is_exit_4(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    os.utime(source, (1_000_000_000, 1_000_000_000))
    command = f"sh -c 'mkdir -p {report.parent} && cp -p {source} {report}'"
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 4
    assert "before the command started" in result.first_error_line


def test_a_relative_report_path_is_read_from_the_current_directory_and_the_error_says_so(
    run_cli: RunCli,
    orders_repo: Path,
    source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Where the mount layer holds, the runner cannot write into ROOT at all (next test).
    simulate_missing_layers(monkeypatch, mount="mount_setattr: Function not implemented")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    # The runner runs in ROOT and writes ROOT/out/junit.xml; the gate looks in ./out/junit.xml.
    result = score(run_cli, orders_repo, writes(source, Path("out/junit.xml")), "out/junit.xml")
    assert result.code == 4
    assert result.first_error_line.startswith(
        f"three-ledger: infrastructure failure: JUnit XML {elsewhere / 'out/junit.xml'} "
        f"(not {orders_repo / 'out/junit.xml'}, which exists: --junit-xml is relative to the "
        "current directory, not to --root): missing after the command"
    )


@pytest.mark.usefixtures("needs_mount_layer")
def test_a_report_the_read_only_tree_kept_the_runner_from_writing_names_writable_paths(
    run_cli: RunCli, orders_repo: Path, source: Path, tmp_path: Path
) -> None:
    report = orders_repo / "out/junit.xml"
    command = f"sh -c 'mkdir -p out; cat {source} > out/junit.xml'"
    result = score(run_cli, orders_repo, command, tmp_path / "elsewhere/junit.xml")
    assert result.code == 4
    assert "missing after the command" in result.first_error_line
    assert (
        "  the run tried to write out, which the sandbox keeps read-only: "
        "a test that writes into ROOT fails; if the run must write there, list its folder under "
        "writable_paths in the properties pin"
    ) in result.err
    assert not report.exists()


@pytest.mark.parametrize(
    ("flag_path", "problem"),
    [
        ("ledgers/p.json", "is also --out"),
        ("ledgers/p.json.log", "is also --log"),
        ("orders/fixtures/new.xml", "lies in the fixtures folder 'fixtures'"),
        ("orders/properties", "is a folder, not a report file"),
        ("orders/pins/junit.xml", "lies in the folder of pin"),
    ],
)
def test_a_report_path_the_gate_may_not_clear_is_refused(
    run_cli: RunCli, orders_repo: Path, source: Path, flag_path: str, problem: str
) -> None:
    report = orders_repo.parent / flag_path
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 2
    assert problem in result.first_error_line
    assert no_ledger(orders_repo)


# --- runner exit codes ---------------------------------------------------------------------------


@pytest.mark.parametrize("exit_code", [0, 1, 2, 3, 130, 255])
def test_any_normal_exit_with_a_fresh_report_gives_a_ledger(
    run_cli: RunCli, orders_repo: Path, report: Path, exit_code: int
) -> None:
    source = source_file(orders_repo, report_xml(failing=max(exit_code, 1)))
    result = score(run_cli, orders_repo, writes(source, report, f"; exit {exit_code}"), report)
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert written["command_exit"] == exit_code
    assert written["status_by_id"]["orders.id.stable"] == "fail"
    assert not speaks_of_pytest(result.err)


@pytest.mark.parametrize("exit_code", [125, 126, 127])
def test_the_codes_reserved_for_could_not_run_are_exit_4_even_with_a_report(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path, exit_code: int
) -> None:
    result = score(run_cli, orders_repo, writes(source, report, f"; exit {exit_code}"), report)
    assert result.code == 4
    assert result.first_error_line.startswith(
        f"three-ledger: infrastructure failure: the command exited {exit_code}: "
    )
    assert not speaks_of_pytest(result.err)
    assert no_ledger(orders_repo)


def test_a_runner_killed_by_a_signal_is_exit_4_even_with_a_report(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    result = score(run_cli, orders_repo, writes(source, report, "; kill -KILL $$"), report)
    assert result.code == 4
    assert "killed by SIGKILL" in result.first_error_line
    assert no_ledger(orders_repo)


def test_a_failing_exit_with_an_all_passing_report_is_noted(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    source = source_file(orders_repo, report_xml(failing=0))
    result = score(run_cli, orders_repo, writes(source, report, "; exit 1"), report)
    assert result.code == 1  # round_trip has no selector a JUnit report can match: missing
    assert "the command exited 1 but its report holds no failing testcase" in result.err
    assert ledger(orders_repo)["status_by_id"]["orders.id.stable"] == "pass"


def test_an_exit_0_whose_report_holds_a_failure_is_not_a_pass(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 1
    assert ledger(orders_repo)["status_by_id"]["orders.id.stable"] == "fail"


def test_mocha_exiting_3_reaches_merge_row_7(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    source = source_file(orders_repo, report_xml(failing=3))
    assert score(run_cli, orders_repo, writes(source, report, "; exit 3"), report).code == 1
    decision = orders_repo.parent / "decision.json"
    result = run_cli(
        "merge", "--fixture-ledger", orders_repo.parent / "f.json",
        "--property-ledger", orders_repo.parent / "ledgers/p.json", "--out", decision,
    )  # fmt: skip
    assert result.code == 1
    document = json.loads(decision.read_text())
    assert (document["posture"], document["row"]) == ("reject", 7)


def test_an_anonymous_test_warns_instead_of_failing_the_run(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    source = source_file(
        orders_repo,
        report_xml().replace("</testsuite>", '<testcase classname="p" name=""/></testsuite>'),
    )
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 1
    assert "three-ledger: warning: JUnit XML" in result.err
    assert "it is scored as 'p::<unnamed 1>'" in result.err


# --- pytest under --junit-xml ---------------------------------------------------------------------


@pytest.mark.pytest_child
def test_pytest_writing_its_own_junit_report_is_refused(run_cli: RunCli, orders_repo: Path) -> None:
    report = orders_repo / "reports/r.xml"
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider --junit-xml=reports/r.xml"
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 4, result.err
    assert result.first_error_line.startswith(
        "three-ledger: infrastructure failure: pytest ran under --junit-xml: use the plugin ("
    )
    assert "--junit-xml=reports/r.xml" in result.err  # the detail line names pytest's arguments
    assert report.exists()  # pytest did write a report: it is not read
    assert no_ledger(orders_repo)


@pytest.mark.pytest_child
def test_pytest_is_measured_not_guessed_and_no_conftest_hides_it(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    # A wrapper that runs pytest and then writes a valid report itself; a conftest that drops
    # the variable the plugin records through. The plugin records at import, before both.
    (orders_repo / "conftest.py").write_text(
        "import os\nos.environ.pop('THREE_LEDGER_PYTEST_SEEN', None)\n"
    )
    pytest_run = f"{sys.executable} -m pytest -q -p no:cacheprovider properties > /dev/null"
    result = score(
        run_cli,
        orders_repo,
        writes(source, report, "").replace("sh -c '", f"sh -c '{pytest_run}; "),
        report,
    )
    assert result.code == 4, result.err
    assert "pytest ran under --junit-xml: use the plugin" in result.first_error_line
    assert report.exists()
    assert no_ledger(orders_repo)


# --- the report's folder -------------------------------------------------------------------------


def ran_marker(repo: Path) -> tuple[Path, str]:
    marker = repo.parent / "ran"
    return marker, f"sh -c 'touch {marker}'"


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("ROOT/junit.xml", "lies directly in ROOT: put the report in a folder of its own"),
        ("junit.xml", "holds ROOT: put the report in a folder of its own"),
        ("ledgers/junit.xml", "shares its folder with"),
    ],
    ids=["in-root", "beside-root", "beside-out"],
)
def test_a_report_folder_the_gate_may_not_empty_is_refused_before_the_command(
    run_cli: RunCli, orders_repo: Path, where: str, problem: str
) -> None:
    report = orders_repo.parent / where.replace("ROOT", orders_repo.name)
    report.parent.mkdir(exist_ok=True)
    beside = report.parent / "keep.txt"
    beside.write_text("the user's\n")
    marker, command = ran_marker(orders_repo)
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 2
    assert problem in result.first_error_line
    assert not marker.exists()
    assert beside.exists()
    assert no_ledger(orders_repo)


def test_the_gate_empties_the_folder_of_ignored_files_before_the_command(
    run_cli: RunCli, orders_repo: Path, source: Path
) -> None:
    (orders_repo / ".gitignore").write_text("reports/\n")
    git(orders_repo, "add", ".gitignore")
    git(orders_repo, "commit", "-q", "-m", "reports are ignored")
    report = orders_repo / "reports/junit.xml"
    stale = {"reports/junit.xml": b"<testsuites/>", "reports/other.xml": b"x", "reports/.x": b""}
    make_tree(orders_repo, stale)
    command = f"sh -c 'echo listing: $(ls -A reports) .; cat {source} > reports/junit.xml'"
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 1, result.err
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    assert "listing: .\n" in log  # the command met an empty folder
    assert sorted(p.name for p in report.parent.iterdir()) == ["junit.xml"]
    assert ledger(orders_repo)["oracle_moved"] is False


@pytest.mark.parametrize(
    ("kept", "why"),
    [
        ("tracked.txt", "tracked by git"),
        ("notes.txt", "neither tracked nor ignored by git (new work?)"),
        ("sub/deeper.txt", "a folder"),
    ],
)
def test_a_folder_holding_what_the_gate_will_not_remove_is_refused_and_left_whole(
    run_cli: RunCli, orders_repo: Path, kept: str, why: str
) -> None:
    make_tree(orders_repo, {f"reports/{kept}": b"someone's\n", "reports/junit.xml": b"stale"})
    if kept == "tracked.txt":
        git(orders_repo, "add", "reports/tracked.txt")
        git(orders_repo, "commit", "-q", "-m", "a tracked file in the report's folder")
    marker, command = ran_marker(orders_repo)
    result = score(run_cli, orders_repo, command, orders_repo / "reports/junit.xml")
    assert result.code == 2
    assert "the gate empties the report's folder" in result.first_error_line
    named = kept.split("/")[0]
    assert f"  {orders_repo / 'reports' / named}: {why}" in result.err.splitlines()
    assert (orders_repo / "reports" / kept).exists()
    assert (orders_repo / "reports/junit.xml").exists()  # nothing removed on a refusal
    assert not marker.exists()


def test_outside_the_work_tree_only_the_report_itself_is_removed(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    make_tree(report.parent, {"junit.xml": b"stale", "yours.txt": b"kept\n"})
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 2
    assert f"  {report.parent / 'yours.txt'}: outside the git work tree" in result.err
    assert (report.parent / "yours.txt").exists()
    (report.parent / "yours.txt").unlink()
    assert score(run_cli, orders_repo, writes(source, report), report).code == 1


def test_a_missing_report_folder_is_made_for_runners_that_do_not_make_it(
    run_cli: RunCli, orders_repo: Path, source: Path
) -> None:
    report = orders_repo.parent / "made/deeper/junit.xml"
    result = score(run_cli, orders_repo, f"sh -c 'cat {source} > {report}'", report)
    assert result.code == 1, result.err
    assert ledger(orders_repo)["junit_report"]["path"] == "../made/deeper/junit.xml"
    assert [p.name for p in report.parent.iterdir()] == ["junit.xml"]  # no probe left behind


# --- the report is this run's: file times and timestamps ----------------------------------------


def test_an_old_report_copied_with_its_times_is_exit_4(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    # The adversary's npm script, `cp -p fixtures/old-pass.xml reports/junit.xml`: the copy
    # is a new file, but keeps the old modification time. The old report sits in the base.
    (orders_repo / "old-pass.xml").write_text(report_xml(failing=0))
    git(orders_repo, "add", "old-pass.xml")
    git(orders_repo, "commit", "-q", "-m", "a passing report, long ago")
    command = f"sh -c 'mkdir -p {report.parent} && cp -p old-pass.xml {report}'"
    result = score(run_cli, orders_repo, command, report)
    assert result.code == 4, result.err
    assert result.first_error_line.startswith(
        f"three-ledger: infrastructure failure: JUnit XML {report}: dated "
    )
    assert "before the command started (a copy that kept an older file's times?)" in result.err
    assert no_ledger(orders_repo)


def test_a_report_whose_timestamps_predate_the_run_is_exit_4(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    stamped = '<testsuite name="orders" timestamp="2024-05-01T10:00:00">'
    source = source_file(orders_repo, report_xml().replace('<testsuite name="orders">', stamped))
    result = score(run_cli, orders_repo, writes(source, report), report)  # `cat`: fresh times
    assert result.code == 4, result.err
    assert result.first_error_line.startswith(
        f"three-ledger: infrastructure failure: JUnit XML {report}: its timestamp "
        "'2024-05-01T10:00:00' is "
    )
    assert no_ledger(orders_repo)


def test_timestamps_from_this_run_pass_in_every_form_runners_write(
    run_cli: RunCli, orders_repo: Path, report: Path
) -> None:
    suites = "".join(
        f'<testsuite name="s{n}" timestamp="{stamp}"><testcase classname="s" name="t{n}"/>'
        "</testsuite>"
        for n, stamp in enumerate(["ISO_Z", "NAIVE", "RFC", "1970-01-01T00:00:00"])
    )
    source = source_file(
        orders_repo, report_xml().replace("</testsuites>", suites + "</testsuites>")
    )
    forms = {
        "ISO_Z": "+%Y-%m-%dT%H:%M:%S.000Z",  # vitest
        "NAIVE": "+%Y-%m-%dT%H:%M:%S",  # mocha-junit-reporter, jest-junit: UTC, no zone
        "RFC": "+%a, %d %b %Y %H:%M:%S GMT",  # mocha's xunit
    }
    script = source.parent / "stamp.sh"
    edits = " ".join(f'-e "s/{name}/$(date -u "{form}")/"' for name, form in forms.items())
    script.write_text(f"mkdir -p {report.parent}\nLC_ALL=C sed {edits} {source} > {report}\n")
    result = score(run_cli, orders_repo, f"sh {script}", report)
    assert result.code == 1, result.err
    assert ledger(orders_repo)["status_by_id"]["orders.total.non_negative"] == "pass"


# --- the oracles of a JUnit run ------------------------------------------------------------------


def test_with_product_paths_a_product_change_moves_no_oracle(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    orders = orders_repo / "orders.py"  # the example's product_paths: ["orders.py"]
    orders.write_text(orders.read_text() + "\n# reworded\n")
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert (written["oracle_moved"], written["oracle_model"]) == (False, "closed")


def test_with_product_paths_any_other_changed_file_moves_the_oracles(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    make_tree(orders_repo, {"support/old-pass.xml": report_xml(failing=0).encode()})
    result = score(run_cli, orders_repo, writes(source, report), report)
    assert result.code == 5, result.err
    written = ledger(orders_repo)
    assert written["oracle_changes"] == ["support/old-pass.xml"]
    assert written["oracle_change_reasons"] == {"support/old-pass.xml": CHANGED_OUTSIDE_PRODUCT}
    assert written["oracle_model"] == "closed"


def test_without_product_paths_the_launch_chain_is_an_oracle(
    run_cli: RunCli, orders_repo: Path, source: Path, report: Path
) -> None:
    pin_path = orders_repo / "pins/properties.json"
    pin = json.loads(pin_path.read_text())
    del pin["product_paths"]
    write_json(pin_path, pin)
    (orders_repo / "run.sh").write_text(f"mkdir -p {report.parent}\ncat {source} > {report}\n")
    git(orders_repo, "add", "-A")
    git(orders_repo, "commit", "-q", "-m", "a runner script, in the base")
    assert score(run_cli, orders_repo, "sh run.sh", report).code == 1
    assert ledger(orders_repo)["oracle_model"] == "inferred"
    old = source_file(orders_repo, report_xml(failing=0))
    (orders_repo / "run.sh").write_text(f"cp {old} {report}\n")
    result = score(run_cli, orders_repo, "sh run.sh", report)
    assert result.code == 5, result.err
    assert ledger(orders_repo)["oracle_change_reasons"] == {"run.sh": NAMED_BY_COMMAND}
