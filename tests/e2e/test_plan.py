"""`plan` end to end: real pytest children collecting small generated suites."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers import RunCli
from helpers.suites import (
    PYTEST,
    TEST_FILE,
    by_id,
    edit_properties,
    make_suite,
    plan,
    plan_json,
    prop,
    properties_pin,
)

pytestmark = pytest.mark.pytest_child


def test_a_parametrised_family_is_counted_and_its_ids_shown(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    result = plan(run_cli, repo)
    assert result.code == 0, result.err
    assert "suite.parse: 2 tests\n" in result.out
    assert f"  {TEST_FILE}::test_parse[a.json]\n  {TEST_FILE}::test_parse[b.json]\n" in result.out
    assert "11 tests collected" in result.out


def test_a_selector_typo_exits_1_with_close_ids(run_cli: RunCli, tmp_path: Path) -> None:
    pin = properties_pin(
        [
            prop("suite.parse", f"{TEST_FILE}::test_parse"),
            prop("suite.total", f"{TEST_FILE}::test_totl"),
        ]
    )
    repo = make_suite(tmp_path, pin)
    result = plan(run_cli, repo)
    assert result.code == 1
    assert "suite.total: 0 tests (it would be missing)" in result.out
    assert f"suite.total: selector '{TEST_FILE}::test_totl' matches no test" in result.out
    assert f"    did you mean {TEST_FILE}::test_total\n" in result.out
    assert "1 property match no test: suite.total" in result.out
    document = plan_json(run_cli, repo)
    assert document["unmatched_properties"] == ["suite.total"]
    assert by_id(document)["suite.total"]["selectors"][0]["did_you_mean"][0] == (
        f"{TEST_FILE}::test_total"
    )


def test_marker_ids_the_pin_does_not_list_are_named(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    result = plan(run_cli, repo)
    assert result.code == 0, result.err
    assert "suite.marked: 1 test (1 by marker)" in result.out
    assert "marker id 'suite.unknown' (1 test) is not a property of the pin" in result.out
    assert plan_json(run_cli, repo)["unknown_marker_ids"] == {"suite.unknown": 1}


def test_xdist_collects_the_same_tests(run_cli: RunCli, tmp_path: Path) -> None:
    pin = properties_pin(
        [
            prop("suite.parse", f"{TEST_FILE}::test_parse"),
            prop("suite.marked"),
            prop("suite.typo", "x"),
        ]
    )
    repo = make_suite(tmp_path, pin)
    serial = plan_json(run_cli, repo)
    parallel = plan_json(run_cli, repo, command=f"{PYTEST} -n 2")
    assert parallel == serial
    assert [entry["matched"] for entry in serial["properties"]] == [2, 1, 0]


def test_selector_lists_and_wildcards(run_cli: RunCli, tmp_path: Path) -> None:
    pin = properties_pin(
        [
            prop("suite.minimum", f"{TEST_FILE}::TestDraft::test_minimum*"),
            prop("suite.both", [f"{TEST_FILE}::test_total", f"{TEST_FILE}::test_outside_*"]),
            prop("suite.anywhere", "*_high"),
        ]
    )
    repo = make_suite(tmp_path, pin)
    result = plan(run_cli, repo)
    assert result.code == 0, result.err
    assert "suite.minimum: 2 tests\n" in result.out
    assert "suite.both: 3 tests\n" in result.out
    assert f"  selector '{TEST_FILE}::test_outside_*': 2 tests\n" in result.out
    assert "suite.anywhere: 1 test\n" in result.out
    assert f"  {TEST_FILE}::TestDraft::test_minimum_high\n" in result.out


def test_an_expected_skip_that_matches_nothing_is_a_warning(
    run_cli: RunCli, tmp_path: Path
) -> None:
    skips = [{"test": f"{TEST_FILE}::TestDraft::test_format_idm", "reason": "Format"}]
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")], expected_skips=skips))
    result = plan(run_cli, repo)
    assert result.code == 0, result.err
    assert f"expected_skips[0]: '{TEST_FILE}::TestDraft::test_format_idm' matches no test" in (
        result.out
    )
    assert f"did you mean {TEST_FILE}::TestDraft::test_format_idn" in result.out


def test_no_test_body_runs(run_cli: RunCli, tmp_path: Path) -> None:
    source = "from pathlib import Path\n\ndef test_writes():\n    Path('ran').write_text('x')\n"
    repo = make_suite(
        tmp_path, properties_pin([prop("suite.w", f"{TEST_FILE}::test_writes")]), source
    )
    result = plan(run_cli, repo)
    assert result.code == 0, result.err
    assert "suite.w: 1 test" in result.out
    assert not (repo / "ran").exists()


def test_invalid_pins_and_trees_are_refused_with_2(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    (repo / "fixtures/stray.json").write_text("{}")
    result = plan(run_cli, repo)
    assert result.code == 2
    assert "fixtures/stray.json: unpinned file (untracked)" in result.err
    (repo / "fixtures/stray.json").unlink()
    edit_properties(repo, {**properties_pin([prop("suite.marked")]), "expected_skip": []})
    assert plan(run_cli, repo).code == 2


def test_a_command_that_is_not_pytest_is_an_infrastructure_failure(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    pin = properties_pin([prop("suite.marked")], network="allowed")
    edit_properties(repo, pin)
    result = plan(run_cli, repo, command="true")
    assert result.code == 4
    assert "the plugin wrote nothing" in result.err
    assert "plan needs pytest" in result.err


def test_a_collection_error_exits_4_and_shows_the_end_of_the_output(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]), "import not_a_module\n")
    result = plan(run_cli, repo)
    assert result.code == 4
    assert (
        "collection failed: the command exited 2: 1 error during collection (tests/test_"
    ) in result.err
    assert "ModuleNotFoundError: No module named 'not_a_module'); no test ran" in result.err
    assert "ModuleNotFoundError: No module named 'not_a_module'" in result.out
    log = tmp_path / "plan.log"
    kept = plan(run_cli, repo, "--log", log)
    assert kept.code == 4
    assert f"(log: {log})" in kept.err
    assert "not_a_module" in log.read_text()


def test_usage_errors_exit_64(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--pin", tmp_path / "p.json", "--properties", tmp_path / "q.json")
    assert result.code == 64
    assert "--command" in result.err


def test_a_log_in_a_pin_folder_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.marked")]))
    result = plan(run_cli, repo, "--log", repo / "pins/plan.log")
    assert result.code == 2
    assert "three-ledger never writes beside a pin" in result.err


REPORTS = Path(__file__).parent.parent / "data" / "junit"


def test_plan_from_a_recorded_junit_report(run_cli: RunCli, tmp_path: Path) -> None:
    """Most runners cannot collect without running: plan reads an earlier run's report."""
    from three_ledger.junit_report import read_junit_report

    report = REPORTS / "mocha-junit-reporter-jenkins.xml"
    real = sorted(result.id for result in read_junit_report(report).results)[0]
    typo = real[:-2] + real[-1] + real[-2]  # two letters swapped
    repo = make_suite(tmp_path, properties_pin([prop("js.ok", real), prop("js.typo", typo)]))
    base = ("plan", "--pin", repo / "pins/fixtures.json", "--properties",
            repo / "pins/properties.json", "--root", repo)  # fmt: skip
    result = run_cli(*base, "--junit-xml", report, "--from-report")
    assert result.code == 1, result.err
    assert f"collected by `JUnit report {report}`" in result.out
    assert "js.ok: 1 test" in result.out
    assert f"did you mean {real}" in result.out
    document = json.loads(run_cli(*base, "--junit-xml", report, "--from-report", "--json").out)
    assert by_id(document)["js.ok"]["matched"] == 1


def test_plan_flags_a_title_holding_colons(run_cli: RunCli, tmp_path: Path) -> None:
    report = REPORTS / "mocha-junit-reporter-default.xml"
    repo = make_suite(tmp_path, properties_pin([prop("js.any", "nothing::matches")]))
    result = run_cli(
        "plan", "--pin", repo / "pins/fixtures.json", "--properties",
        repo / "pins/properties.json", "--root", repo, "--junit-xml", report, "--from-report",
    )  # fmt: skip
    assert "its title holds '::'" in result.out


def test_from_report_and_command_exclude_each_other(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("js.any", "x")]))
    base = ("plan", "--pin", repo / "pins/fixtures.json", "--properties",
            repo / "pins/properties.json", "--root", repo)  # fmt: skip
    report = REPORTS / "mocha-xunit.xml"
    assert run_cli(*base, "--command", PYTEST, "--junit-xml", report, "--from-report").code == 64
    assert run_cli(*base, "--junit-xml", report).code == 64
    assert run_cli(*base).code == 64


def test_proposals_count_what_the_run_would_count_and_an_unmet_min_tests_is_named(
    run_cli: RunCli, tmp_path: Path
) -> None:
    skip = {"test": f"{TEST_FILE}::TestDraft", "reason": "Format checker"}
    entry = {**prop("suite.draft", f"{TEST_FILE}::TestDraft"), "min_tests": 5}
    repo = make_suite(tmp_path, properties_pin([entry], expected_skips=[skip]))
    document = by_id(plan_json(run_cli, repo))["suite.draft"]
    counted = [f"{TEST_FILE}::TestDraft::{name}" for name in
               ("test_format_dynamic", "test_minimum_high", "test_minimum_low")]  # fmt: skip
    assert document["counted_ids"] == counted
    assert document["tests_matched"] == document["proposed_min_tests"] == 3
    assert (
        document["proposed_tests_sha256"] == hashlib.sha256("\n".join(counted).encode()).hexdigest()
    )
    reason = "3 tests matched once 1 expected skip(s) were left out, the pin asks for at least 5"
    assert document["missing_reason"] == reason
    result = plan(run_cli, repo)
    assert (
        f"suite.draft: 4 tests (1 expected skips left out; it would be missing: {reason})"
        in result.out
    )
    # A property that would be missing on these tests is a pin to fix before the gate runs.
    assert result.code == 1
    assert '  proposed for the pin: "min_tests": 3, ' in result.out
    assert "(the pin's min_tests differ)" in result.out


def test_figures_the_pin_already_holds_are_said_to_match(run_cli: RunCli, tmp_path: Path) -> None:
    """pycodestyle's trial: `plan` proposed every property's figures, equal to the pin's,
    and marked none; a hash that differs is named."""
    skip = {"test": f"{TEST_FILE}::TestDraft", "reason": "Format checker"}
    repo = make_suite(
        tmp_path,
        properties_pin([prop("suite.draft", f"{TEST_FILE}::TestDraft")], expected_skips=[skip]),
    )
    document = by_id(plan_json(run_cli, repo))["suite.draft"]
    figures = {
        "min_tests": document["proposed_min_tests"],
        "tests_sha256": document["proposed_tests_sha256"],
    }
    pinned = {**prop("suite.draft", f"{TEST_FILE}::TestDraft"), **figures}
    edit_properties(repo, properties_pin([pinned], expected_skips=[skip]))
    result = plan(run_cli, repo)
    assert result.code == 0, result.out
    # The rest of the line: the class's tests an expected skip names could skip as they run.
    assert "  the pin's min_tests and tests_sha256 match the tests counted now; 3 tests " in (
        result.out
    )
    assert "proposed for the pin" not in result.out
    stale = {**pinned, "tests_sha256": "0" * 64}
    edit_properties(repo, properties_pin([stale], expected_skips=[skip]))
    result = plan(run_cli, repo)
    assert result.code == 1
    assert "(the pin's tests_sha256 differ)" in result.out
