"""`properties` and `merge` on a generated suite: expected skips, the tests behind a miss, and
failures outside every property, through real pytest children and real git repositories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import CliResult, RunCli, git
from helpers.suites import (
    PYTEST,
    SUITE,
    TEST_FILE,
    edit_properties,
    make_suite,
    prop,
    properties_pin,
)
from three_ledger.report.step_summary import code

pytestmark = pytest.mark.pytest_child

DRAFT = f"{TEST_FILE}::TestDraft"
FORMAT_SKIP = {"test": DRAFT, "reason": "Format checker "}
LEAP_SKIP = {"test": f"{DRAFT}::test_format_dynamic", "reason": "Leap seconds"}


def score(run_cli: RunCli, repo: Path, base: str = "HEAD", options: str = "") -> CliResult:
    """`digest`, then `properties` on the suite's tests, with pytest OPTIONS."""
    digest = run_cli(
        "digest", "--pin", repo / "pins/fixtures.json", "--root", repo,
        "--out", repo / "ledgers/fixture.json",
    )  # fmt: skip
    assert digest.code == 0, digest.err
    return run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest.out.strip(),
        "--properties", repo / "pins/properties.json", "--command", f"{PYTEST} {options} tests",
        "--root", repo, "--base", base, "--out", repo / "ledgers/property.json",
    )  # fmt: skip


def ledger(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo / "ledgers/property.json").read_text())
    return document


def merge(run_cli: RunCli, repo: Path, *extra: str | Path) -> CliResult:
    return run_cli(
        "merge", "--fixture-ledger", repo / "ledgers/fixture.json",
        "--property-ledger", repo / "ledgers/property.json", "--root", repo,
        "--out", repo / "ledgers/decision.json", "--summary-md", repo / "ledgers/summary.md",
        *extra,
    )  # fmt: skip


def test_expected_skips_leave_a_class_passing(run_cli: RunCli, tmp_path: Path) -> None:
    pin = properties_pin([prop("suite.draft", DRAFT)], expected_skips=[FORMAT_SKIP, LEAP_SKIP])
    repo = make_suite(tmp_path, pin)
    result = score(run_cli, repo)
    assert result.code == 0, result.err
    assert ledger(repo)["status_by_id"] == {"suite.draft": "pass"}
    assert ledger(repo)["expected_skips_left_out"] == {"suite.draft": 2}
    assert ledger(repo)["failing_tests"] == {}


def test_without_them_the_class_scores_skip_and_names_its_skips(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.draft", DRAFT)]))
    result = score(run_cli, repo)
    assert result.code == 1
    assert ledger(repo)["status_by_id"] == {"suite.draft": "skip"}
    assert ledger(repo)["failing_tests"] == {
        "suite.draft": [
            {
                "id": f"{DRAFT}::test_format_dynamic",
                "outcome": "skip",
                "reason": "Leap seconds are unsupported.",
            },
            {
                "id": f"{DRAFT}::test_format_idn",
                "outcome": "skip",
                "reason": "Format checker 'idn-hostname' not found.",
            },
        ]
    }
    assert (
        f"three-ledger: suite.draft is skip:\n"
        f"  {DRAFT}::test_format_dynamic (skip: Leap seconds are unsupported.)\n"
        f"  {DRAFT}::test_format_idn (skip: Format checker 'idn-hostname' not found.)\n"
    ) in result.err
    entry = {"test": DRAFT, "reason": "Leap seconds are unsupported."}
    assert f"\n  {json.dumps(entry)}  (1 test)\n" in result.err


def test_a_property_whose_every_result_is_an_expected_skip_is_missing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pin = properties_pin(
        [prop("suite.idn", f"{DRAFT}::test_format_idn")], expected_skips=[FORMAT_SKIP]
    )
    repo = make_suite(tmp_path, pin)
    result = score(run_cli, repo)
    assert result.code == 1
    assert ledger(repo)["status_by_id"] == {"suite.idn": "missing"}
    assert ledger(repo)["expected_skips_left_out"] == {"suite.idn": 1}
    assert (
        "suite.idn is missing: no test matched once 1 expected skip(s) were left out" in result.err
    )


def test_a_listed_test_that_fails_still_fails(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = {"test": f"{DRAFT}::test_minimum_low", "reason": "never"}
    pin = properties_pin(
        [prop("suite.minimum", f"{DRAFT}::test_minimum*")], expected_skips=[listed]
    )
    repo = make_suite(tmp_path, pin)
    monkeypatch.setenv("SUITE_BROKEN", "minimum")
    result = score(run_cli, repo)
    assert result.code == 1
    assert ledger(repo)["status_by_id"] == {"suite.minimum": "fail"}
    assert f"suite.minimum is fail:\n  {DRAFT}::test_minimum_low (fail)\n" in result.err


def test_a_skip_with_another_reason_is_not_expected(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = properties_pin([prop("suite.draft", DRAFT)], expected_skips=[FORMAT_SKIP, LEAP_SKIP])
    repo = make_suite(tmp_path, pin)
    monkeypatch.setenv("SUITE_SKIP_REASON", "Not implemented: leap seconds")
    result = score(run_cli, repo)
    assert result.code == 1
    assert ledger(repo)["status_by_id"] == {"suite.draft": "skip"}
    assert ledger(repo)["expected_skips_left_out"] == {"suite.draft": 1}


def test_the_tests_behind_a_miss_and_the_log_are_named(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse"), prop("suite.marked")])
    repo = make_suite(tmp_path, pin)
    monkeypatch.setenv("SUITE_BROKEN", '{"a": 1}\n')
    result = score(run_cli, repo)
    assert result.code == 1
    miss = f"suite.parse is fail:\n  {TEST_FILE}::test_parse[a.json] (fail)\n"
    assert f"three-ledger: {miss}" in result.err
    assert f"the command's output is in {repo / 'ledgers/property.json.log'}" in result.err
    decided = merge(run_cli, repo)
    assert decided.code == 1
    assert miss in decided.out
    summary = (repo / "ledgers/summary.md").read_text()
    row = next(line for line in summary.splitlines() if "suite.<wbr>parse</code>" in line)
    assert f"failing: {code(f'{TEST_FILE}::test_parse[a.json]')} (fail)" in row


def test_failures_outside_every_property_are_recorded_and_shown(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    monkeypatch.setenv("SUITE_BROKEN", "outside")
    result = score(run_cli, repo)
    assert result.code == 0, result.err
    outside = [f"{TEST_FILE}::test_outside_one", f"{TEST_FILE}::test_outside_two"]
    assert ledger(repo)["unpinned_failures"] == {"count": 2, "first_ids": outside}
    lines = f"2 tests outside every property failed:\n  {outside[0]}\n  {outside[1]}\n"
    assert f"three-ledger: {lines}" in result.err
    assert "every pinned property passed" in result.err
    decided = merge(run_cli, repo)
    # The posture does not change: the people reading the diff see them.
    assert decided.code == 0
    assert f"{lines}merge: human_review (row 8)" in decided.out
    summary = (repo / "ledgers/summary.md").read_text()
    assert "**Unpinned failures** (2 outside every property" in summary
    assert f"- {code(outside[0])}\n- {code(outside[1])}\n" in summary


EXPECTED_FAILURES = """

@pytest.mark.xfail(reason="known")
def test_outside_known():
    assert "known" == "fixed"


@pytest.mark.xfail(reason="known")
def test_pinned_known():
    assert "known" == "fixed"
"""


def test_an_expected_failure_outside_every_property_is_not_listed_and_inside_one_fails_it(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = properties_pin([prop("suite.known", f"{TEST_FILE}::test_pinned_known")])
    repo = make_suite(tmp_path, pin, source=SUITE + EXPECTED_FAILURES)
    monkeypatch.setenv("SUITE_BROKEN", "outside")
    result = score(run_cli, repo)
    assert result.code == 1, result.err
    outside = [f"{TEST_FILE}::test_outside_one", f"{TEST_FILE}::test_outside_two"]
    assert ledger(repo)["unpinned_failures"] == {"count": 2, "first_ids": outside}
    assert ledger(repo)["status_by_id"] == {"suite.known": "fail"}
    assert "test_outside_known" not in result.err


def test_properties_warns_about_selectors_and_markers_after_its_run(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pin = properties_pin(
        [prop("suite.parse", [f"{TEST_FILE}::test_parse", f"{TEST_FILE}::test_totl"])]
    )
    repo = make_suite(tmp_path, pin)
    result = score(run_cli, repo)
    assert result.code == 0, result.err
    warning = "three-ledger: warning: "
    assert (
        f"{warning}suite.parse: selector '{TEST_FILE}::test_totl' matches no test\n" in result.err
    )
    assert f"matches no test\n  did you mean {TEST_FILE}::test_total\n" in result.err
    assert f"{warning}marker id 'suite.marked' (1 test) is not a property of the pin" in result.err


def test_adding_an_expected_skip_in_the_patch_is_pin_mutation(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.draft", DRAFT)]))
    edit_properties(
        repo, properties_pin([prop("suite.draft", DRAFT)], expected_skips=[FORMAT_SKIP])
    )
    git(repo, "commit", "-qam", "patch: accept the format skips")
    score(run_cli, repo, base="HEAD~1")
    decided = merge(run_cli, repo, "--pins-dir", repo / "pins", "--base", "HEAD~1")
    assert decided.code == 1
    assert "merge: reject (row 4): pin mutation: " in decided.out
    assert "pins/properties.json" in decided.out


def test_findings_count_what_the_ledger_does_not_name() -> None:
    from helpers.records import property_ledger
    from three_ledger.ledgers import FailingTest, UnpinnedFailures
    from three_ledger.report.findings import findings, plain_lines
    from three_ledger.vocabulary import Outcome

    ledger = property_ledger(
        status_by_id={"orders.a": "pass", "orders.b": "error", "orders.c": "missing"},
        failing_tests={"orders.b": (FailingTest("t.py::b", Outcome.ERROR),)},
        expected_skips_left_out={"orders.c": 4},
        missing_reasons={"orders.c": "no test matched once 4 expected skip(s) were left out"},
        unpinned_failures=UnpinnedFailures(76, tuple(f"t.py::x[{n}]" for n in range(20))),
    )
    lines = plain_lines(findings(ledger))
    assert lines[:3] == [
        "orders.b is error:",
        "  t.py::b (error)",
        "orders.c is missing: no test matched once 4 expected skip(s) were left out",
    ]
    assert lines[3] == "76 tests outside every property failed:"
    assert lines[4] == "  t.py::x[0]"
    assert lines[-1] == "  ... and 56 more"


def test_properties_runs_where_xdist_is_not_loaded(run_cli: RunCli, tmp_path: Path) -> None:
    """The tripwire's xdist hook is optional: a project without pytest-xdist still scores."""
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -p no:xdist\n")
    git(repo, "commit", "-qam", "no xdist")
    result = score(run_cli, repo)
    assert result.code == 0, result.err
    assert ledger(repo)["tripwire"] == "sentinels"


@pytest.mark.parametrize("workers", ["", "-n 2"])
def test_a_module_that_no_longer_imports_is_named_with_its_error(
    run_cli: RunCli, tmp_path: Path, workers: str
) -> None:
    # pytest exits 2 after errors during collection; under xdist it exits 1 with no result.
    # Either way the refusal says which module failed to collect and why, not "interrupted"
    # or "is the command pytest?".
    repo = make_suite(tmp_path / "suite", properties_pin([prop("suite.marked")]), "def broken(:\n")
    result = score(run_cli, repo, options=workers)
    assert result.code == 4, result.err
    assert f"1 error during collection ({TEST_FILE}: SyntaxError: " in result.first_error_line
    assert "interrupted" not in result.err
    assert "is the command pytest" not in result.err
    assert not (repo / "ledgers/property.json").exists()


@pytest.mark.parametrize("workers", ["-n 2", "--continue-on-collection-errors"])
@pytest.mark.parametrize(
    "selector", [None, "tests/test_broken.py", "tests/test_broken.py::test_x", "tests/*::test_x"]
)
def test_a_module_that_fails_to_collect_in_a_run_that_goes_on_is_a_result(
    run_cli: RunCli, tmp_path: Path, workers: str, selector: str | None
) -> None:
    # Under xdist, or told to go on, pytest runs the other modules and exits 1. The module
    # that failed to collect is an error of its own, where its tests used to vanish from the
    # results unseen: a property with a selector under the module errs, even where its other
    # selector's tests pass, and outside every property it is listed with the failures there.
    broken = [prop("suite.broken", [f"{TEST_FILE}::test_parse", selector])] if selector else []
    repo = make_suite(tmp_path / "suite", properties_pin([prop("suite.marked"), *broken]))
    (repo / "tests/test_broken.py").write_text("import not_a_module\n\n\ndef test_x():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a module that does not import")
    result = score(run_cli, repo, options=workers)
    written = ledger(repo)
    error = {"id": "tests/test_broken.py", "outcome": "error", "reason": None}
    if selector:
        assert result.code == 1, result.err
        assert written["status_by_id"] == {"suite.marked": "pass", "suite.broken": "error"}
        assert written["failing_tests"]["suite.broken"] == [error]
        assert written["unpinned_failures"]["count"] == 0
    else:
        assert result.code == 0, result.err
        assert "tests/test_broken.py" in written["unpinned_failures"]["first_ids"]
        assert "  tests/test_broken.py" in result.err.splitlines()
