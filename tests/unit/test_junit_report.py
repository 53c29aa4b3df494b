"""Tests for three_ledger.junit_report on reports that real runners wrote (tests/data/junit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import REPO
from three_ledger.errors import InfraFailure
from three_ledger.junit_report import Reading, parse_report
from three_ledger.results import property_statuses
from three_ledger.vocabulary import Outcome

# jest's ancestor separator, as the recommended options set it (U+203A).
SEP = "\u203a"

DATA = REPO / "tests" / "data" / "junit"
# Where tests/data/junit/suites/capture.sh ran each runner.
CAPTURED_IN = Path("/tmp/three-ledger-junit")


def reading(name: str, runner: str) -> Reading:
    return parse_report(f"JUnit XML {name}", (DATA / name).read_bytes(), CAPTURED_IN / runner)


def statuses(name: str, runner: str, selectors: list[str]) -> dict[str, str]:
    """Status of each selector, keyed by the selector itself."""
    results = reading(name, runner).results
    by_id = {f"p{index}": selector for index, selector in enumerate(selectors)}
    found = property_statuses(dict(by_id), results)
    return {selector: found[prop_id] for prop_id, selector in by_id.items()}


def test_every_recorded_report_is_read() -> None:
    names = sorted(path.name for path in DATA.glob("*.xml"))
    assert names == [
        "gotestsum.xml",
        "jest-junit-default.xml",
        "jest-junit-recommended.xml",
        "mocha-junit-reporter-default.xml",
        "mocha-junit-reporter-jenkins-pending.xml",
        "mocha-junit-reporter-jenkins.xml",
        "mocha-xunit.xml",
        "node-test-junit.xml",
        "node-test-own-failure-junit.xml",
        "node-test-subtests-junit.xml",
        "vitest-junit.xml",
    ]


# --- mocha ---------------------------------------------------------------------------------------


JENKINS = {
    "Outer.Inner::adds": "pass",
    "Outer.Inner.adds": "pass",  # classname.name, as SPEC 6 allows
    "Outer.Inner::fails": "fail",
    "Outer.Inner": "fail",  # a classname selects every test it holds
    "Outer::a::b holds colons": "pass",
    # `::` inside a title is no boundary: this names a test titled "a", which does not exist.
    "Outer::a": "missing",
    "Outer::tab\there and\nnewline": "pass",
    "Outer::<unnamed 1>": "pass",
    # The failing afterEach counts against the test it ran for, not against the others.
    "after hook::torn down": "fail",
    # The failing beforeEach names a test that never reached the report: it stands in for it.
    "before hook::never runs": "fail",
    # mocha skipped the rest of the describe without a word: not a pass either.
    "before hook::never runs either": "missing",
    # A failing `after` (after all) counts against every test of its describe.
    "after all::ran one": "fail",
    "after all::ran two": "fail",
    "before all::blocked one": "fail",
    # A named beforeEach of an outer describe that failed for a test of a nested one.
    "named hook::deep": "fail",
}


def test_mocha_junit_reporter_jenkins_mode() -> None:
    found = statuses("mocha-junit-reporter-jenkins.xml", "mocha", list(JENKINS))
    assert found == JENKINS
    skipped = ["Outer.Inner::is skipped", "Outer.Inner::is pending"]
    # Without includePending mocha-junit-reporter drops them: missing, still not a pass.
    assert statuses("mocha-junit-reporter-jenkins.xml", "mocha", skipped) == dict.fromkeys(
        skipped, "missing"
    )


def test_mocha_junit_reporter_jenkins_mode_with_pending() -> None:
    found = statuses("mocha-junit-reporter-jenkins-pending.xml", "mocha", list(JENKINS))
    assert found == JENKINS
    skipped = ["Outer.Inner::is skipped", "Outer.Inner::is pending"]
    assert statuses("mocha-junit-reporter-jenkins-pending.xml", "mocha", skipped) == dict.fromkeys(
        skipped, "skip"
    )


def test_mocha_junit_reporter_default_title_then_full_title() -> None:
    expected = {
        "adds::Outer Inner adds": "pass",
        "adds": "pass",  # the classname is the title: it selects every test of that title
        "fails::Outer Inner fails": "fail",
        "a::b holds colons::Outer a::b holds colons": "pass",
        "tab\there and\nnewline::Outer tab\there and\nnewline": "pass",
        "torn down::after hook torn down": "fail",
        "never runs::before hook never runs": "fail",
        "ran one::after all ran one": "fail",
        "blocked one::before all blocked one": "fail",
        "deep::named hook deep": "fail",
    }
    assert statuses("mocha-junit-reporter-default.xml", "mocha", list(expected)) == expected


def test_mocha_xunit_ids_are_relative_to_root_and_classname_selects_a_describe() -> None:
    expected = {
        "test/suite.spec.js::adds": "pass",
        "Outer Inner::adds": "pass",
        "Outer Inner::fails": "fail",
        "Outer Inner::is skipped": "skip",
        "Outer Inner::is pending": "skip",
        "Outer Inner": "fail",
        "test/suite.spec.js": "fail",
        "Outer::tab\there and\nnewline": "pass",
        "Outer::a::b holds colons": "pass",
        "Outer::a": "missing",
        "Outer::<unnamed 1>": "pass",
        "after hook::torn down": "fail",
        "before hook::never runs": "fail",
        "after all::ran two": "fail",
        "before all::blocked one": "fail",
        "named hook::deep": "fail",
    }
    assert statuses("mocha-xunit.xml", "mocha", list(expected)) == expected


def test_mocha_xunit_without_root_keeps_the_absolute_file() -> None:
    results = parse_report("x", (DATA / "mocha-xunit.xml").read_bytes()).results
    assert results[0].id == f"{CAPTURED_IN}/mocha/test/suite.spec.js::a::b holds colons"


@pytest.mark.parametrize(
    "name", ["mocha-junit-reporter-jenkins.xml", "mocha-xunit.xml", "vitest-junit.xml"]
)
def test_an_anonymous_test_gets_a_synthetic_id_and_a_warning(name: str) -> None:
    read = reading(name, name.split("-")[0])
    unnamed = [result.id for result in read.results if "<unnamed" in result.id]
    if name.startswith("vitest"):  # vitest names it after its describe: "Outer > "
        assert (unnamed, read.warnings) == ([], [])
        return
    assert len(unnamed) == 1
    assert len(read.warnings) == 1
    assert read.warnings[0].startswith(f"JUnit XML {name}: a testcase of ")
    assert repr(unnamed[0]) in read.warnings[0]


def test_the_hook_testcases_themselves_are_kept() -> None:
    ids = [result.id for result in reading("mocha-junit-reporter-jenkins.xml", "mocha").results]
    assert 'after hook::"after each" hook for "torn down"' in ids
    assert 'named hook::"before each" hook: opens the store for "deep"' in ids


# --- jest ----------------------------------------------------------------------------------------


def test_jest_junit_recommended_options() -> None:
    expected = {
        # A failing afterAll becomes a testcase jest-junit cannot tie to a describe: it
        # counts against every test of its file, including those that passed.
        f"__tests__/suite.test.js::Outer {SEP} Inner adds": "fail",
        f"__tests__/suite.test.js::Outer {SEP} Inner is skipped": "fail",
        "__tests__/suite.test.js::after hook second": "fail",
        "__tests__/suite.test.js::Outer tab\there and\nnewline": "fail",
        # A test file that cannot load is an error, thanks to reportTestSuiteErrors.
        "__tests__/broken.test.js": "error",
    }
    assert statuses("jest-junit-recommended.xml", "jest", list(expected)) == expected


def test_jest_junit_default_drops_a_file_that_does_not_load() -> None:
    expected = {
        "Outer Inner adds": "fail",  # the afterAll of the same file, as above
        "__tests__/broken.test.js": "missing",
    }
    assert statuses("jest-junit-default.xml", "jest", list(expected)) == expected


def test_jest_junit_hook_failures_of_each_test_stay_on_the_test() -> None:
    # Without the afterAll testcase, each test keeps its own outcome: jest itself fails a
    # test whose afterEach or beforeEach failed.
    data = (DATA / "jest-junit-recommended.xml").read_bytes()
    start = data.index(b'<testcase classname=" Test execution failure')
    end = data.index(b"</testcase>", start) + len(b"</testcase>")
    results = parse_report("x", data[:start] + data[end:], CAPTURED_IN / "jest").results
    outcomes = {result.id.split("::", 1)[1]: result.outcome for result in results}
    assert outcomes[f"Outer {SEP} Inner adds"] is Outcome.PASS
    assert outcomes[f"Outer {SEP} Inner fails"] is Outcome.FAIL
    assert outcomes[f"Outer {SEP} Inner is skipped"] is Outcome.SKIP
    assert outcomes[f"Outer {SEP} Inner is todo"] is Outcome.PASS  # jest-junit writes todo so
    assert outcomes["after hook torn down"] is Outcome.FAIL
    assert outcomes["after hook second"] is Outcome.PASS
    assert outcomes["before hook never runs either"] is Outcome.FAIL


# --- vitest --------------------------------------------------------------------------------------


def test_vitest_junit() -> None:
    expected = {
        "test/suite.test.js::Outer > Inner > adds": "pass",
        "test/suite.test.js::Outer > Inner > fails": "fail",
        "test/suite.test.js::Outer > Inner > is skipped": "skip",
        "test/suite.test.js::Outer > Inner > is todo": "skip",
        "test/suite.test.js::Outer > a::b holds colons": "pass",
        "test/suite.test.js::Outer > a": "missing",
        "test/suite.test.js::Outer > tab\there and\nnewline": "pass",
        "test/suite.test.js::after hook > torn down": "fail",
        "test/suite.test.js::after hook > second": "pass",
        # vitest writes a failing afterAll/beforeAll as a testcase named after the describe.
        "test/suite.test.js::after all > ran one": "fail",
        "test/suite.test.js::before all > blocked one": "fail",
        # ... and a failing file-level afterAll as a testcase named after the file.
        "test/toplevel.test.js::top one": "fail",
        "test/broken.test.js": "fail",
    }
    assert statuses("vitest-junit.xml", "vitest", list(expected)) == expected


# --- node's test runner --------------------------------------------------------------------------


def test_node_test_runner_junit() -> None:
    expected = {
        # node writes classname="test" for every testcase and leaves describes out of the id.
        "test::adds": "pass",
        "test::fails": "fail",
        "test::is skipped": "skip",
        "test::is todo": "skip",
        # A top-level test sits straight under <testsuites>, outside any <testsuite>.
        "test::a::b holds colons": "pass",
        "test::a": "missing",
        "Outer::adds": "missing",
        "Outer.Inner::adds": "missing",
        "test": "fail",
    }
    assert statuses("node-test-junit.xml", "node", list(expected)) == expected
    assert reading("node-test-junit.xml", "node").timestamps == ()


def test_node_tests_with_subtests_count_every_failure_the_tally_counts() -> None:
    expected = {
        # A parent's own outcome is not written: its subtests are, in a <testsuite>.
        "test::sub passes": "pass",
        "test::sub fails": "fail",
        # A subtest its parent left running, a timeout, a test its describe's `before` stopped:
        # node counts them as cancelled and writes them as failures, as the gate reads them.
        "test::late": "fail",
        "test::times out": "fail",
        "test::needs the database": "fail",
        # Written with both <skipped type="todo"> and <failure>: the worst of them.
        "test::todo that fails": "fail",
        "test::adds": "pass",
        "test::parent": "missing",
        # Describes with no test in them are written as testcases (and tallied as suites): a
        # count of tests with subtests taken from the tally refused this honest report.
        "test::Empty": "pass",
        "test::Skipped": "skip",
    }
    assert statuses("node-test-subtests-junit.xml", "node", list(expected)) == expected


def test_node_a_test_that_fails_in_its_own_body_after_its_subtests_is_refused() -> None:
    # node counts `total` as failed (`<!-- fail 2 -->`) and writes only its passing subtest:
    # read as written, a property on that subtest would pass.
    with pytest.raises(InfraFailure) as refused:
        reading("node-test-own-failure-junit.xml", "node")
    assert str(refused.value).startswith(
        "JUnit XML node-test-own-failure-junit.xml: node's tally counts 2 failed test(s) and "
        "the report shows at most 1: a test with subtests failed in its own body"
    )


def tallied(body: str, tally: dict[str, int]) -> str:
    comments = "".join(f"<!-- {key} {count} -->" for key, count in tally.items())
    return f"<testsuites>{body}{comments}</testsuites>"


PASS_THEN_FAIL = (
    '<testcase classname="test" name="a"/><testcase classname="test" name="b"><failure/></testcase>'
)
NODE_TALLY = {"tests": 2, "suites": 0, "pass": 1, "fail": 1, "cancelled": 0, "skipped": 0}


@pytest.mark.parametrize(
    ("body", "tally", "refused"),
    [
        # Every counted failure is a failing testcase.
        (
            PASS_THEN_FAIL,
            NODE_TALLY,
            False,
        ),
        # One failure more than the report holds, and no test with subtests to hold it.
        (
            '<testcase classname="test" name="a"/><testcase classname="test" name="b"/>',
            NODE_TALLY,
            True,
        ),
        # A tally without node's counts is no tally: nothing is judged.
        ('<testcase classname="test" name="a"/>', {"tests": 1, "fail": 1}, False),
        # The tally that ends the report wins over a comment before it.
        (
            '<testcase classname="test" name="a"/><!-- fail 0 -->',
            {**NODE_TALLY, "tests": 1, "pass": 0},
            True,
        ),
    ],
)
def test_node_tally_rules(body: str, tally: dict[str, int], refused: bool) -> None:
    document = tallied(body, tally).encode()
    if refused:
        with pytest.raises(InfraFailure, match="node's tally counts"):
            parse_report("r", document)
    else:
        assert parse_report("r", document).results


def test_node_tally_on_deeply_nested_subtests_is_read_without_recursion() -> None:
    depth = 5000  # deeper than Python's recursion limit: each level a test with a subtest
    body = (
        '<testsuite name="t">' * depth
        + '<testcase classname="test" name="leaf"><failure/></testcase>'
        + "</testsuite>" * depth
    )
    tally = {**NODE_TALLY, "tests": depth + 1, "pass": 0, "fail": depth + 1}
    read = parse_report("r", tallied(body, tally).encode())
    assert [(r.id, r.outcome) for r in read.results] == [("test::leaf", Outcome.FAIL)]


# --- go ------------------------------------------------------------------------------------------


def test_gotestsum() -> None:
    package = "example.com/calc/calc"
    expected = {
        f"{package}::TestAdds": "pass",
        f"{package}::TestFails": "fail",
        f"{package}::TestSkipped": "skip",
        f"{package}::TestTable": "fail",  # go fails a test whose subtest failed
        f"{package}::TestTable/one": "pass",
        f"{package}::TestTable/a::b": "pass",
        f"{package}::TestTable/a": "missing",
        f"{package}::TestCleanupFails": "fail",
        package: "fail",
        # A package whose TestMain fails, or that does not build, runs no test.
        "example.com/calc/setup::TestNeverRuns": "missing",
        "example.com/calc/broken::TestNeverBuilt": "missing",
        "TestMain": "fail",
    }
    assert statuses("gotestsum.xml", "go", list(expected)) == expected


# --- rules on small documents --------------------------------------------------------------------


def parse(cases: str) -> Reading:
    return parse_report("r", f"<testsuites><testsuite>{cases}</testsuite></testsuites>".encode())


def test_a_passing_hook_testcase_changes_nothing() -> None:
    read = parse(
        '<testcase classname="s" name="t"/>'
        '<testcase classname="s" name="&quot;after each&quot; hook for &quot;t&quot;"/>'
    )
    assert (read.results[0].id, read.results[0].outcome) == ("s::t", Outcome.PASS)


def test_a_skipped_suite_level_testcase_does_not_turn_its_tests_into_skips() -> None:
    read = parse(
        '<testcase classname="f.js" name="d > t"/>'
        '<testcase classname="f.js" name="d"><skipped/></testcase>'
    )
    assert read.results[0].outcome is Outcome.PASS


def test_an_unnamed_testcase_is_numbered_per_owner_in_document_order() -> None:
    read = parse(
        '<testcase classname="a" name=""/><testcase classname="b" name=" "/>'
        '<testcase classname="a" name=""><failure/></testcase>'
    )
    assert [(r.id, r.outcome) for r in read.results] == [
        ("a::<unnamed 1>", Outcome.PASS),
        ("b::<unnamed 1>", Outcome.PASS),
        ("a::<unnamed 2>", Outcome.FAIL),
    ]
    assert len(read.warnings) == 3


def test_whitespace_written_as_character_references_is_normalised_too() -> None:
    read = parse('<testcase classname="s" name="a&#9;b&#10;c&#13;&#10;d"/>')
    assert read.results[0].id == "s::a b c d"
    assert read.results[0].matches("s::a\tb\nc\r\nd")


def test_parametrised_names_still_match_by_their_base() -> None:
    read = parse('<testcase file="t.py" classname="t" name="test_x[1]"/>')
    assert read.results[0].matches("t.py::test_x")
    assert not read.results[0].matches("t.py::test_")


def test_a_testcase_deep_inside_other_elements_is_read_without_recursion() -> None:
    depth = 5000  # deeper than Python's recursion limit
    nested = (
        "<x>" * depth + '<testcase classname="c" name="t"><failure/></testcase>' + "</x>" * depth
    )
    read = parse(nested)
    assert [(r.id, r.outcome) for r in read.results] == [("c::t", Outcome.FAIL)]
