"""Tests for three_ledger.results: reading results files and JUnit XML, and property statuses."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from three_ledger.errors import InfraFailure
from three_ledger.exit_codes import ExitCode
from three_ledger.junit_report import MAX_JUNIT_BYTES, read_junit_report
from three_ledger.results import (
    PropertyScore,
    TestResult,
    flake_outcomes,
    merge_worst,
    property_statuses,
    read_results_file,
    read_results_records,
    score_properties,
    scored_fields,
)
from three_ledger.selection import ExpectedSkip, TestsRequirement, hashed_ids, ids_sha256
from three_ledger.vocabulary import Outcome, worst

PASS, FAIL, ERROR, SKIP = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP


def result(test_id: str, outcome: Outcome, *property_ids: str) -> TestResult:
    return TestResult(id=test_id, property_ids=property_ids, outcome=outcome)


def line(test_id: str, outcome: str, property_ids: list[str] | None = None) -> str:
    record = {"id": test_id, "property_ids": property_ids or [], "outcome": outcome}
    return json.dumps(record) + "\n"


# --- TestResult ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class CompiledResult:
    """`TestResult` as the dataclass would make it: the yardstick of its own `__init__`."""

    id: str
    property_ids: tuple[str, ...]
    outcome: Outcome
    aliases: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None
    skip_reason: str | None = None
    xfail: bool = False


def test_a_result_s_init_takes_the_fields_in_their_order() -> None:
    parameters = list(inspect.signature(TestResult.__init__).parameters)[1:]
    assert parameters == [field.name for field in dataclasses.fields(TestResult)]
    assert parameters == [field.name for field in dataclasses.fields(CompiledResult)]


RESULT_VALUES = st.tuples(
    st.text(max_size=3),
    st.lists(st.text(max_size=2), max_size=2).map(tuple),
    st.sampled_from(list(Outcome)),
    st.lists(st.text(max_size=2), max_size=2).map(tuple),
    st.none() | st.lists(st.text(max_size=2), max_size=2).map(tuple),
    st.none() | st.text(max_size=2),
    st.booleans(),
)


@given(RESULT_VALUES)
def test_a_result_is_what_the_frozen_dataclass_would_make(values: tuple) -> None:  # type: ignore[type-arg]
    ours, theirs = TestResult(*values), CompiledResult(*values)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs) == values
    named = dict(zip((f.name for f in dataclasses.fields(TestResult)), values, strict=True))
    assert TestResult(**named) == ours
    assert hash(TestResult(**named)) == hash(ours)
    for twin in (copy.copy(ours), copy.deepcopy(ours), pickle.loads(pickle.dumps(ours))):
        assert twin == ours
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.id = "changed"  # type: ignore[misc]
    assert dataclasses.replace(ours, outcome=Outcome.FAIL).outcome is Outcome.FAIL
    assert ours.id == values[0]


def test_a_result_takes_the_dataclass_s_defaults() -> None:
    assert dataclasses.astuple(TestResult("t.py::a", (), PASS)) == (
        "t.py::a",
        (),
        PASS,
        (),
        None,
        None,
        False,
    )


# --- read_results_file -------------------------------------------------------------------------


def test_results_file_is_read_in_order(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "pass", ["p.one"]) + line("t.py::b", "skip"))
    assert read_results_file(path) == [result("t.py::a", PASS, "p.one"), result("t.py::b", SKIP)]


def test_a_skip_reason_is_kept_on_a_skip_alone(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    records = [
        {"id": "t.py::a", "property_ids": [], "outcome": "pass", "skip_reason": "stray"},
        {"id": "t.py::b", "property_ids": ["p.one"], "outcome": "skip", "skip_reason": "why"},
        {"id": "t.py::c", "property_ids": [], "outcome": "skip", "skip_reason": None},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert [(r.id, r.outcome, r.skip_reason) for r in read_results_file(path)] == [
        ("t.py::a", PASS, None),
        ("t.py::b", SKIP, "why"),
        ("t.py::c", SKIP, None),
    ]


def test_the_records_of_a_results_file_are_its_lines_objects_in_order(tmp_path: Path) -> None:
    """What the run order is read from: every line's object, repeated ids and keys the results
    leave out (the worker) kept, from the same reading as the merged results."""
    path = tmp_path / "results.jsonl"
    records = [
        {"id": "t.py::a", "property_ids": [], "outcome": "fail", "worker": "gw1"},
        {"id": "t.py::b", "property_ids": [], "outcome": "pass", "worker": "gw0"},
        {"id": "t.py::a", "property_ids": [], "outcome": "pass", "worker": "gw1"},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    results, lines = read_results_records(path)
    assert lines == records
    assert results == read_results_file(path) == [result("t.py::a", FAIL), result("t.py::b", PASS)]


def test_an_expected_failure_is_read_as_one(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    records = [
        {"id": "t.py::a", "property_ids": [], "outcome": "fail", "xfail": True},
        {"id": "t.py::b", "property_ids": [], "outcome": "fail"},
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert [(r.id, r.outcome, r.xfail) for r in read_results_file(path)] == [
        ("t.py::a", FAIL, True),
        ("t.py::b", FAIL, False),
    ]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (TestResult("a", (), FAIL, xfail=True), TestResult("a", (), PASS), (FAIL, True)),
        (
            TestResult("a", (), FAIL, xfail=True),
            TestResult("a", (), FAIL, xfail=True),
            (FAIL, True),
        ),
        (TestResult("a", (), FAIL, xfail=True), TestResult("a", (), FAIL), (FAIL, False)),
        (TestResult("a", (), FAIL), TestResult("a", (), FAIL, xfail=True), (FAIL, False)),
        (TestResult("a", (), FAIL, xfail=True), TestResult("a", (), ERROR), (ERROR, False)),
    ],
)
def test_a_merged_failure_is_expected_only_where_every_failure_of_it_was(
    first: TestResult, second: TestResult, expected: tuple[Outcome, bool]
) -> None:
    (merged,) = merge_worst([first, second])
    assert (merged.outcome, merged.xfail) == expected


def test_results_file_merges_repeated_ids_worst_first(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "fail", ["p.one"]) + line("t.py::a", "pass", ["p.two"]))
    assert read_results_file(path) == [result("t.py::a", FAIL, "p.one", "p.two")]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("{not json\n", "line 2: not valid JSON"),
        ("[1, 2]\n", "line 2: must be a JSON object"),
        ('{"id": 3, "property_ids": [], "outcome": "pass"}\n', "line 2: 'id' must be"),
        ('{"id": "", "property_ids": [], "outcome": "pass"}\n', "line 2: 'id' must be"),
        ('{"id": "x", "property_ids": "p", "outcome": "pass"}\n', "line 2: 'property_ids' must"),
        ('{"id": "x", "property_ids": [1], "outcome": "pass"}\n', "line 2: 'property_ids' must"),
        ('{"id": "x", "property_ids": []}\n', "line 2: 'outcome' must be one of"),
        ('{"id": "x", "property_ids": [], "outcome": ["pass"]}\n', "line 2: 'outcome' must be"),
        (
            '{"id": "x", "property_ids": [], "outcome": "passed"}\n',
            "line 2: 'outcome' must be one of pass, fail, error, skip",
        ),
        (
            '{"id": "x", "property_ids": [], "outcome": "skip", "skip_reason": 3}\n',
            "line 2: 'skip_reason' must be a string",
        ),
        (
            '{"id": "x", "property_ids": [], "outcome": "pass", "xfail": true}\n',
            "line 2: 'xfail' may only be true, on an outcome of 'fail'",
        ),
        (
            '{"id": "x", "property_ids": [], "outcome": "fail", "xfail": 1}\n',
            "line 2: 'xfail' may only be true",
        ),
        ("\n", "line 2: not valid JSON"),
    ],
)
def test_results_file_refuses_a_bad_line(tmp_path: Path, bad_line: str, reason: str) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "pass") + bad_line + line("t.py::c", "pass"))
    with pytest.raises(InfraFailure) as caught:
        read_results_file(path)
    assert caught.value.message.startswith(f"results file {path}: ")
    assert reason in caught.value.message
    assert caught.value.exit_code == ExitCode.INFRA_FAILURE


@pytest.mark.parametrize("bad", [b"\xff", b"\xed\xa0\x80"], ids=["byte", "surrogate"])
def test_results_file_refuses_non_utf8(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "results.jsonl"
    good = line("t.py::a", "pass").encode()
    path.write_bytes(good + b'{"id": "' + bad + b'", "property_ids": [], "outcome": "pass"}\n')
    with pytest.raises(InfraFailure, match=r"results\.jsonl: line 2: not UTF-8"):
        read_results_file(path)


@pytest.mark.parametrize("content", [b"", None])
def test_empty_or_missing_results_file_gives_no_results(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "results.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InfraFailure, match="no results could be read") as caught:
        read_results_file(path)
    assert str(path) in caught.value.message


def test_unfinished_last_line_of_a_killed_run_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "fail") + '{"id": "t.py::b", "prop')
    assert read_results_file(path) == [result("t.py::a", FAIL)]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "pass") + line("t.py::b", "error").rstrip("\n"))
    assert [r.outcome for r in read_results_file(path)] == [PASS, ERROR]


def test_unfinished_last_line_with_wrong_types_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(line("t.py::a", "pass") + '{"id": "t.py::b", "outcome": "ok"}')
    with pytest.raises(InfraFailure, match="line 2: 'property_ids'"):
        read_results_file(path)


def test_only_an_unfinished_line_gives_no_results(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "t.py::a"')
    with pytest.raises(InfraFailure, match="no results could be read"):
        read_results_file(path)


# --- read_junit_report ----------------------------------------------------------------------------


def write_junit(tmp_path: Path, cases: str, root: str = "testsuites") -> Path:
    path = tmp_path / "junit.xml"
    path.write_text(
        f'<?xml version="1.0" encoding="utf-8"?><{root}><testsuite name="s">{cases}'
        f"</testsuite></{root}>"
    )
    return path


def test_junit_call_failure_and_teardown_error_of_one_test_is_error(tmp_path: Path) -> None:
    path = write_junit(
        tmp_path,
        '<testcase classname="tests.test_a" name="test_x"><failure message="boom"/></testcase>'
        '<testcase classname="tests.test_a" name="test_x"><error message="td"/></testcase>'
        '<testcase classname="tests.test_a" name="test_y"/>',
    )
    assert [(r.id, r.outcome) for r in read_junit_report(path).results] == [
        ("tests.test_a::test_x", ERROR),
        ("tests.test_a::test_y", PASS),
    ]


@pytest.mark.pytest_child
def test_junit_written_by_real_pytest_merges_call_failure_and_teardown_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_inner.py").write_text(
        "import pytest\n"
        "@pytest.fixture\n"
        "def broken():\n    yield\n    raise RuntimeError('teardown')\n"
        "def test_both(broken):\n    assert False\n"
        "def test_fine():\n    pass\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "THREE_LEDGER_"))}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--junit-xml=j.xml"]
    subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=120, check=False)
    outcomes = {r.id: r.outcome for r in read_junit_report(tmp_path / "j.xml").results}
    assert outcomes == {"test_inner::test_both": ERROR, "test_inner::test_fine": PASS}


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ("", PASS),
        ("<system-out>noise</system-out><properties/>", PASS),
        ("<failure/>", FAIL),
        ("<error/>", ERROR),
        ('<skipped message="later"/>', SKIP),
        ('<skipped type="pytest.xfail" message="known"/>', FAIL),
        ("<flakyFailure/><flakyFailure/>", FAIL),
        ("<rerunFailure/>", FAIL),
        ("<flakyError/>", ERROR),
        ("<rerunError/><failure/>", ERROR),
        ("<skipped/><failure/>", FAIL),
    ],
)
def test_junit_child_elements_give_the_worst_outcome(
    tmp_path: Path, children: str, expected: Outcome
) -> None:
    path = write_junit(tmp_path, f'<testcase classname="c" name="t">{children}</testcase>')
    assert [r.outcome for r in read_junit_report(path).results] == [expected]


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ('<skipped type="pytest.xfail" message="known"/>', True),
        ('<skipped type="pytest.xfail"/><failure/>', False),
        ('<skipped type="pytest.xfail"/><error/>', False),
        ("<failure/>", False),
        ('<skipped message="later"/>', False),
    ],
)
def test_a_junit_xfail_is_an_expected_failure_unless_something_else_failed(
    tmp_path: Path, children: str, expected: bool
) -> None:
    path = write_junit(tmp_path, f'<testcase classname="c" name="t">{children}</testcase>')
    assert [r.xfail for r in read_junit_report(path).results] == [expected]


def test_junit_file_attribute_makes_the_id_and_classname_dot_name_still_matches(
    tmp_path: Path,
) -> None:
    path = write_junit(
        tmp_path,
        '<testcase file="tests/test_a.py" classname="tests.test_a.TestK" name="test_x[1]"/>',
    )
    results = read_junit_report(path).results
    assert [r.id for r in results] == ["tests/test_a.py::test_x[1]"]
    selectors = {
        "by.file": "tests/test_a.py::test_x",
        "by.dotted": "tests.test_a.TestK.test_x",
        "by.other": "tests.test_a.TestK.test_z",
    }
    assert property_statuses(selectors, results) == {
        "by.file": "pass",
        "by.dotted": "pass",
        "by.other": "missing",
    }


def test_junit_testcases_that_share_an_id_count_once_and_say_so(tmp_path: Path) -> None:
    """node writes `classname="test"` for every testcase: two suites' tests of one title are
    one id, scored once with the worst outcome, and the reading says how many merged."""
    path = write_junit(
        tmp_path,
        '<testcase classname="test" name="Tabs example 1"/>'
        '<testcase classname="test" name="Tabs example 1"><failure/></testcase>'
        '<testcase classname="test" name="Tabs example 2"/>',
    )
    reading = read_junit_report(path)
    assert [(r.id, r.outcome) for r in reading.results] == [
        ("test::Tabs example 1", FAIL),
        ("test::Tabs example 2", PASS),
    ]
    shared = (
        f"JUnit XML {path}: 1 testcase(s) share their id with another and count as one test "
        "each, with the worst outcome (a runner that writes one classname for every testcase, "
        "as node's does, tells tests apart by their titles alone)"
    )
    assert reading.warnings == [shared]
    (tmp_path / "once").mkdir()
    once = write_junit(tmp_path / "once", '<testcase classname="test" name="a"/>')
    assert read_junit_report(once).warnings == []


def test_junit_without_classname_or_file_uses_the_name(tmp_path: Path) -> None:
    path = write_junit(tmp_path, '<testcase name="lonely"><failure/></testcase>')
    assert [(r.id, r.outcome) for r in read_junit_report(path).results] == [("lonely", FAIL)]


@pytest.mark.parametrize(
    "prolog",
    [
        '<!DOCTYPE testsuites [<!ENTITY lol "lol">]>',
        '<!DOCTYPE testsuites SYSTEM "http://192.0.2.1/junit.dtd">',
        '<!ENTITY lol "lol">',
    ],
)
def test_junit_declarations_are_refused(tmp_path: Path, prolog: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(f'<?xml version="1.0"?>{prolog}<testsuites><testcase name="t"/></testsuites>')
    with pytest.raises(InfraFailure, match="DOCTYPE and ENTITY declarations are refused") as caught:
        read_junit_report(path)
    assert str(path) in caught.value.message


def test_junit_doctype_hidden_in_utf16_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    document = '<?xml version="1.0" encoding="utf-16"?><!DOCTYPE t [<!ENTITY a "b">]><t>&a;</t>'
    path.write_bytes(document.encode("utf-16"))
    with pytest.raises(InfraFailure, match="DOCTYPE and ENTITY declarations are refused"):
        read_junit_report(path)


def test_junit_over_64_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    with path.open("wb") as stream:
        stream.write(b'<testsuites><testcase name="t"/></testsuites>')
        stream.truncate(MAX_JUNIT_BYTES + 1)  # sparse: no 64 MiB actually written
    with pytest.raises(InfraFailure, match="over the 64 MiB limit") as caught:
        read_junit_report(path)
    assert str(path) in caught.value.message


def test_junit_of_exactly_64_mib_is_not_refused_for_size(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    document = b'<testsuites><testcase name="t"/></testsuites>'
    path.write_bytes(document + b" " * (MAX_JUNIT_BYTES - len(document)))
    assert [(r.id, r.outcome) for r in read_junit_report(path).results] == [("t", PASS)]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("<testsuites><testcase name='t'></testsuites>", "malformed XML"),
        ("", "malformed XML"),
        ("<html><testcase name='t'/></html>", "root element is <html>"),
        ("<testsuites><testsuite/></testsuites>", "no testcase"),
    ],
)
def test_junit_bad_documents_are_refused(tmp_path: Path, document: str, reason: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(document)
    with pytest.raises(InfraFailure, match=reason) as caught:
        read_junit_report(path)
    assert caught.value.message.startswith(f"JUnit XML {path}: ")


def test_junit_root_testsuite_is_accepted(tmp_path: Path) -> None:
    path = write_junit(tmp_path, '<testcase classname="c" name="t"/>', root="testsuites")
    path.write_text('<testsuite><testcase classname="c" name="t"><skipped/></testcase></testsuite>')
    assert [(r.id, r.outcome) for r in read_junit_report(path).results] == [("c::t", SKIP)]


def test_missing_junit_gives_no_results(tmp_path: Path) -> None:
    with pytest.raises(InfraFailure, match="no results could be read"):
        read_junit_report(tmp_path / "absent.xml")


# --- merging and statuses ------------------------------------------------------------------------


def test_merge_worst_keeps_first_seen_order_and_unites_ids() -> None:
    merged = merge_worst(
        [
            result("b", PASS, "p.1"),
            result("a", SKIP),
            TestResult("b", ("p.2", "p.1"), FAIL, aliases=("B",)),
        ]
    )
    assert merged == [TestResult("b", ("p.1", "p.2"), FAIL, aliases=("B",)), result("a", SKIP)]


@given(st.lists(st.sampled_from(list(Outcome)), min_size=1))
def test_worst_follows_error_fail_skip_pass(outcomes: list[Outcome]) -> None:
    order = [ERROR, FAIL, SKIP, PASS]
    assert worst(outcomes) == next(o for o in order if o in outcomes)
    assert worst(reversed(outcomes)) == worst(outcomes)


RESULTS = [
    result("tests/test_orders.py::test_total[1]", PASS),
    result("tests/test_orders.py::test_total[-1]", PASS),
    result("tests/test_orders.py::test_totally_other", FAIL),
    result("tests/test_orders.py::TestIds::test_stable", PASS),
    result("tests/test_orders.py::TestIds::test_unique", SKIP),
    result("tests/test_marked.py::test_anything", PASS, "orders.marked"),
    result("tests/test_marked.py::test_else", ERROR, "orders.marked_bad"),
    result("tests/test_slow.py::test_skipped", SKIP),
]


def test_property_statuses() -> None:
    selectors: dict[str, str | None] = {
        "orders.parametrised": "tests/test_orders.py::test_total",
        "orders.exact": "tests/test_orders.py::test_total[-1]",
        "orders.missing": "tests/test_orders.py::test_tot",
        "orders.class": "tests/test_orders.py::TestIds",
        "orders.file": "tests/test_orders.py",
        "orders.skip": "tests/test_slow.py::test_skipped",
        "orders.marked": None,
        "orders.marked_bad": "tests/test_orders.py::TestIds::test_stable",
        "orders.nothing": None,
    }
    statuses = property_statuses(selectors, RESULTS)
    assert statuses == {
        "orders.parametrised": "pass",
        "orders.exact": "pass",
        "orders.missing": "missing",
        "orders.class": "skip",
        "orders.file": "fail",
        "orders.skip": "skip",
        "orders.marked": "pass",
        "orders.marked_bad": "error",
        "orders.nothing": "missing",
    }
    assert list(statuses) == list(selectors)


def test_property_status_needs_every_matched_result_to_pass() -> None:
    results = [result("t.py::a[x]", PASS), result("t.py::a[y]", SKIP), result("t.py::a[z]", PASS)]
    assert property_statuses({"p": "t.py::a"}, results) == {"p": "skip"}


def test_selector_is_not_a_bare_string_prefix() -> None:
    results = [result("t.py::test_ab", PASS), result("t.pyc::x", PASS)]
    assert property_statuses({"p": "t.py::test_a", "q": "t.p"}, results) == {
        "p": "missing",
        "q": "missing",
    }


def test_flake_outcomes_are_worst_and_absent_when_not_run() -> None:
    selectors = {
        "orders.total": "tests/test_orders.py::test_total",
        "orders.gone": "tests/test_gone.py::test_x",
        "orders.class": "tests/test_orders.py::TestIds",
    }
    assert flake_outcomes(selectors, RESULTS) == {"orders.total": "pass", "orders.class": "skip"}


def test_flake_outcomes_ignore_markers() -> None:
    assert flake_outcomes({"orders.marked": "elsewhere"}, RESULTS) == {}


def test_a_folder_in_place_of_the_results_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "results.jsonl"
    folder.mkdir()
    with pytest.raises(InfraFailure) as caught:
        read_results_file(folder)
    assert caught.value.message == (
        f"results file {folder}: Is a directory, so no results could be read"
    )


def test_a_folder_in_place_of_the_junit_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "junit.xml"
    folder.mkdir()
    with pytest.raises(InfraFailure) as caught:
        read_junit_report(folder)
    assert caught.value.message == f"JUnit XML {folder}: not a regular file"


def test_an_unreadable_junit_file_is_refused(tmp_path: Path) -> None:
    # A link loop: stat fails with ELOOP, which is neither "missing" nor a size to check.
    loop = tmp_path / "junit.xml"
    loop.symlink_to(loop)
    with pytest.raises(InfraFailure) as caught:
        read_junit_report(loop)
    assert caught.value.message == (
        f"JUnit XML {loop}: Too many levels of symbolic links, so no results could be read"
    )


# --- the tests a property counts, and what the pin asks of them --------------------------------

CASES = [result(f"t.py::test_total[{n}]", PASS) for n in range(4)]
ALL_FOUR = hashlib.sha256(
    b"t.py::test_total[0]\nt.py::test_total[1]\nt.py::test_total[2]\nt.py::test_total[3]"
).hexdigest()


def counted(requirement: TestsRequirement, results: list[TestResult]) -> PropertyScore:
    return score_properties({"p": "t.py::test_total"}, results, (), {"p": requirement})["p"]


def test_tests_sha256_is_of_the_distinct_sorted_ids_joined_by_line_feeds() -> None:
    ids = ["t.py::test_total[3]", "t.py::test_total[1]", "t.py::test_total[0]"]
    assert ids_sha256([*ids, "t.py::test_total[2]", ids[0]]) == ALL_FOUR
    assert ids_sha256([]) == hashlib.sha256(b"").hexdigest()
    # An id as a ledger writes it: a byte that is not UTF-8 reads as `\xff`.
    assert hashed_ids(["t.py::b\udcff", "t.py::a"]) == ["t.py::a", "t.py::b\\xff"]


def test_tests_matched_counts_distinct_results_after_expected_skips() -> None:
    skipped = TestResult("t.py::test_total[9]", (), SKIP, skip_reason="Format checker x")
    results = [*CASES, CASES[0], skipped]
    skips = [ExpectedSkip("t.py::test_total", "Format checker")]
    score = score_properties({"p": "t.py::test_total"}, results, skips)["p"]
    assert score.tests_matched == 4
    assert (score.matched, score.expected_skips) == (6, 1)


def test_fewer_tests_than_min_tests_is_missing_and_the_reason_names_both_counts() -> None:
    score = counted(TestsRequirement(min_tests=42), CASES[:3])
    assert score.status == "missing"
    assert score.missing_reason == "3 tests matched, the pin asks for at least 42"
    assert counted(TestsRequirement(min_tests=3), CASES[:3]).status == "pass"
    assert counted(TestsRequirement(min_tests=4), CASES[:1]).missing_reason == (
        "1 test matched, the pin asks for at least 4"
    )


def test_a_failure_among_too_few_tests_stays_fail_and_a_skip_turns_missing() -> None:
    failing = [*CASES[:2], result("t.py::test_total[2]", FAIL)]
    assert counted(TestsRequirement(min_tests=42), failing).status == "fail"
    assert counted(TestsRequirement(min_tests=42), failing).missing_reason is None
    skipping = [*CASES[:2], result("t.py::test_total[2]", SKIP)]
    assert counted(TestsRequirement(min_tests=42), skipping).status == "missing"


def test_another_set_of_tests_is_missing_and_the_reason_names_both_hashes() -> None:
    assert counted(TestsRequirement(tests_sha256=ALL_FOUR), CASES).status == "pass"
    swapped = [*CASES[:3], result("t.py::test_total[trivial]", PASS)]
    score = counted(TestsRequirement(min_tests=4, tests_sha256=ALL_FOUR), swapped)
    assert score.status == "missing"
    found = ids_sha256(test.id for test in swapped)
    assert score.missing_reason == (
        f"the 4 tests it matched hash to {found}, the pin's tests_sha256 is {ALL_FOUR} "
        "(`three-ledger plan --json` lists the ids: counted_ids)"
    )


def test_a_hash_of_tests_less_run_time_skips_says_plan_counted_them() -> None:
    """idna's trial: 485 vectors skip as they run; the hint sent the reader to `plan`'s ids,
    which hold them, without a word."""
    skipped = TestResult(CASES[2].id, (), SKIP, skip_reason="Unicode 16 only")
    requirement = {"p": TestsRequirement(tests_sha256=ALL_FOUR)}
    tests = [*CASES[:2], skipped, CASES[3]]
    skips = [ExpectedSkip("t.py::test_total", "Unicode 16")]
    score = score_properties({"p": "t.py::test_total"}, tests, skips, requirement)["p"]
    assert score.status == "missing"
    assert score.missing_reason is not None
    assert score.missing_reason.endswith(
        "(`three-ledger plan --json` lists the ids it counts at collection: counted_ids, "
        "where a test an expected skip accepts only once it runs is still one)"
    )


def test_nothing_counted_says_so_once_whatever_the_pin_asks() -> None:
    skipped = TestResult("t.py::test_total[0]", (), SKIP, skip_reason="Format checker x")
    skips = [ExpectedSkip("t.py::test_total", "Format checker")]
    selectors = {"p": "t.py::test_total", "q": "t.py::test_total"}
    requirements = {"q": TestsRequirement(min_tests=2, tests_sha256=ALL_FOUR)}
    scores = score_properties(selectors, [skipped], skips, requirements)
    assert scores["p"].missing_reason == "no test matched once 1 expected skip(s) were left out"
    assert scores["q"].missing_reason == (
        "no test matched once 1 expected skip(s) were left out, the pin asks for at least 2"
    )


def test_scored_fields_count_every_property_and_give_each_missing_one_its_reason() -> None:
    selectors = {"p.cases": "t.py::test_total", "p.none": "t.py::test_gone"}
    fields = scored_fields(selectors, (), {}, [*CASES, *CASES], {"p.cases": TestsRequirement(5)})
    assert fields["tests_matched"] == {"p.cases": 4, "p.none": 0}
    assert fields["status_by_id"] == {"p.cases": "missing", "p.none": "missing"}
    assert fields["missing_reasons"] == {
        "p.cases": "4 tests matched, the pin asks for at least 5",
        "p.none": "no test matched",
    }


def test_scored_fields_name_the_first_failing_tests_and_count_them_all() -> None:
    # 39 of a family fail: the ledger names three and counts 39, so a reader can say how
    # many are behind the miss; a property that passes has neither.
    family = [result(f"t.py::test_case[{n}]", FAIL if n % 2 else PASS) for n in range(78)]
    selectors = {"p.cases": "t.py::test_case", "p.none": "t.py::test_gone"}
    fields = scored_fields(selectors, (), {}, family)
    assert [test.id for test in fields["failing_tests"]["p.cases"]] == [
        "t.py::test_case[1]",
        "t.py::test_case[3]",
        "t.py::test_case[5]",
    ]
    assert fields["failing_counts"] == {"p.cases": 39}
    assert "p.none" not in fields["failing_tests"]
