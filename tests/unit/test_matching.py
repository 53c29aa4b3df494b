"""Selector lists, `*` wildcards, expected skips, unpinned failures and `plan`'s matching."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import write_json
from three_ledger.errors import Refused
from three_ledger.matching import closest_first, match_pin, warning_lines
from three_ledger.pins import PropertiesPin, load_properties_pin
from three_ledger.results import (
    ResultIndex,
    TestResult,
    score_properties,
    unpinned_failures,
)
from three_ledger.selection import ExpectedSkip, selects
from three_ledger.vocabulary import Outcome

PASS, FAIL, ERROR, SKIP = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIP
SUITE = "jsonschema/tests/test_suite.py"


def result(test_id: str, outcome: Outcome = PASS, reason: str | None = None) -> TestResult:
    return TestResult(test_id, (), outcome, skip_reason=reason)


@pytest.mark.parametrize(
    ("selector", "test_id", "expected"),
    [
        (f"{SUITE}::TestDraft7::test_minimum*", f"{SUITE}::TestDraft7::test_minimum_low", True),
        (f"{SUITE}::TestDraft7::test_minimum*", f"{SUITE}::TestDraft7::test_minimum", True),
        (f"{SUITE}::TestDraft7::test_minimum*", f"{SUITE}::TestDraft4::test_minimum_low", False),
        (f"{SUITE}::TestDraft*::test_minimum", f"{SUITE}::TestDraft4::test_minimum[1]", True),
        ("*::test_minimum", f"{SUITE}::TestDraft4::test_minimum", True),
        ("*::test_minimum", f"{SUITE}::TestDraft4::test_minimum_low", False),
        ("*minimum*", "a.py::test_maximum", False),
        # `[` and `.` are literal: only `*` is a wildcard.
        ("t.py::test_a[1]", "t.py::test_a[1]", True),
        ("t.py::test_a[12]", "t.py::test_a[1]", False),
        ("t.py::test_a.b*", "t.py::test_aXb", False),
        ("t.py::*", "t.py::TestC::test_x", True),
        ("t.py*", "t.pyc::test_x", True),
        ("t.py", "t.pyc::test_x", False),
    ],
)
def test_selects(selector: str, test_id: str, expected: bool) -> None:
    assert selects(selector, test_id) is expected


def test_a_list_of_selectors_scores_the_worst_of_everything_matched() -> None:
    results = [result("t.py::a"), result("t.py::b[1]", FAIL), result("t.py::c", SKIP)]
    scores = score_properties(
        {"p.ab": ["t.py::a", "t.py::b"], "p.ac": ("t.py::a", "t.py::c"), "p.a": "t.py::a"}, results
    )
    assert {key: score.status for key, score in scores.items()} == {
        "p.ab": "fail",
        "p.ac": "skip",
        "p.a": "pass",
    }
    assert scores["p.ab"].matched == 2
    assert scores["p.ab"].non_pass == (results[1],)


def test_non_pass_names_the_first_three_in_run_order() -> None:
    results = [result(f"t.py::a[{n}]", ERROR if n == 1 else FAIL) for n in range(5)]
    score = score_properties({"p": "t.py::a"}, results)["p"]
    assert [r.id for r in score.non_pass] == ["t.py::a[0]", "t.py::a[1]", "t.py::a[2]"]
    assert score.status == "error"


EXPECTED = [ExpectedSkip("t.py::TestDraft", "Format checker")]


@pytest.mark.parametrize(
    ("results", "status", "left_out"),
    [
        # Every matched result is an expected skip: nothing is left to score.
        (
            [result("t.py::TestDraft::test_idn", SKIP, "Format checker 'idn' not found.")],
            "missing",
            1,
        ),
        # A listed test that fails or passes counts as usual.
        ([result("t.py::TestDraft::test_idn", FAIL)], "fail", 0),
        (
            [
                result("t.py::TestDraft::test_idn", SKIP, "Format checker x"),
                result("t.py::TestDraft::test_a"),
            ],
            "pass",
            1,
        ),
        # Another reason, or none recorded, is a skip like any other.
        ([result("t.py::TestDraft::test_idn", SKIP, "Leap seconds")], "skip", 0),
        ([result("t.py::TestDraft::test_idn", SKIP)], "skip", 0),
        # The reason is matched from its start, case and all.
        ([result("t.py::TestDraft::test_idn", SKIP, "format checker")], "skip", 0),
        ([result("t.py::TestOther::test_idn", SKIP, "Format checker")], "skip", 0),
    ],
)
def test_expected_skips(results: list[TestResult], status: str, left_out: int) -> None:
    score = score_properties({"p": "t.py"}, results, EXPECTED)["p"]
    assert (score.status, score.expected_skips) == (status, left_out)


def test_unpinned_failures_leave_out_properties_markers_and_flakes() -> None:
    results = [
        result("t.py::a", FAIL),
        TestResult("t.py::b", ("p.marked",), FAIL),
        result("t.py::flaky", ERROR),
        result("t.py::c", ERROR),
        result("t.py::d", SKIP),
        result("t.py::e", FAIL),
    ]
    selectors = {"p.a": "t.py::a", "p.marked": None}
    found = unpinned_failures(selectors, ["t.py::flaky"], results)
    assert [r.id for r in found] == ["t.py::c", "t.py::e"]


def test_an_expected_failure_is_no_unpinned_failure_and_still_fails_its_property() -> None:
    results = [
        TestResult("t.py::known", (), FAIL, xfail=True),
        TestResult("t.py::bug", (), FAIL),
        TestResult("t.py::scored", (), FAIL, xfail=True),
    ]
    selectors = {"p.scored": "t.py::scored"}
    assert [r.id for r in unpinned_failures(selectors, [], results)] == ["t.py::bug"]
    assert score_properties(selectors, results)["p.scored"].status == "fail"


def properties_pin(tmp_path: Path, **document: Any) -> PropertiesPin:
    base = {"pin_id": "p", "fixture_pins": ["f"], "properties": []}
    return load_properties_pin(write_json(tmp_path / "properties.json", {**base, **document}))


def prop(property_id: str, test: Any = None) -> dict[str, Any]:
    entry = {"id": property_id, "claim": "c", "domain": ["a.json"]}
    return {**entry, "test": test} if test is not None else entry


def test_the_pin_takes_a_string_a_list_or_no_selector(tmp_path: Path) -> None:
    pin = properties_pin(
        tmp_path, properties=[prop("a", "t.py"), prop("b", ["x", "y*"]), prop("c")]
    )
    assert [p.test for p in pin.properties] == [("t.py",), ("x", "y*"), ()]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"properties": [prop("a", [])]}, "$.properties[0].test"),
        ({"properties": [prop("a", ["x", "x"])]}, "$.properties[0].test"),
        ({"properties": [prop("a", [""])]}, "$.properties[0].test"),
        (
            {"properties": [prop("a")], "expected_skips": [{"test": "t.py::*", "reason": "r"}]},
            "$.expected_skips[0].test: 't.py::*' holds `*`",
        ),
        (
            {"properties": [prop("a")], "expected_skips": [{"test": "t.py", "reason": ""}]},
            "$.expected_skips[0].reason",
        ),
        ({"properties": [prop("a")], "expected_skips": [{"test": "t.py"}]}, "$.expected_skips[0]"),
    ],
)
def test_bad_selectors_and_expected_skips_are_refused(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    with pytest.raises(Refused) as refused:
        properties_pin(tmp_path, **document)
    assert message in refused.value.message


def test_match_pin_reports_what_each_selector_meets(tmp_path: Path) -> None:
    pin = properties_pin(
        tmp_path,
        properties=[prop("p.total", ["t.py::test_totl", "t.py::test_parse"]), prop("p.marked")],
        expected_skips=[{"test": "t.py::test_skipd", "reason": "r"}],
    )
    tests = [
        result("t.py::test_parse[a]"),
        result("t.py::test_parse[b]"),
        result("t.py::test_total"),
        TestResult("t.py::test_marked", ("p.marked", "p.other"), PASS),
        result("t.py::test_skipped", SKIP, "r"),
    ]
    match = match_pin(pin, [], tests)
    # The run's own index, when it has one, gives the same match.
    assert match_pin(pin, [], ResultIndex(tests)) == match
    total = match.properties[0]
    assert (total.score.matched, total.examples) == (
        2,
        ("t.py::test_parse[a]", "t.py::test_parse[b]"),
    )
    assert [(s.matched, s.did_you_mean[:1]) for s in total.selectors] == [
        (0, ("t.py::test_total",)),
        (2, ()),
    ]
    assert match.unknown_markers == {"p.other": 1}
    assert (match.outside, match.outside_examples) == (
        2,
        ("t.py::test_total", "t.py::test_skipped"),
    )
    warnings = warning_lines(match)
    assert warnings[:2] == [
        "p.total: selector 't.py::test_totl' matches no test",
        "  did you mean t.py::test_total",
    ]
    skipd = warnings.index("expected_skips[0]: 't.py::test_skipd' matches no test")
    assert warnings[skipd + 1] == "  did you mean t.py::test_skipped"
    assert warnings[-1] == (
        "marker id 'p.other' (1 test) is not a property of the pin: its tests count for no property"
    )


def test_closest_first() -> None:
    ids = ["orders.boundary.timeout", "orders.slow", "payments.retry"]
    assert closest_first("orders.boundary.timout", ids)[0] == "orders.boundary.timeout"
    assert closest_first("payment.retry", ids)[0] == "payments.retry"
    assert sorted(closest_first("x", ids)) == sorted(ids)


def test_a_selector_that_begins_ids_is_offered_with_a_star(tmp_path: Path) -> None:
    pin = properties_pin(tmp_path, properties=[prop("p.min", "t.py::TestDraft::test_minimum")])
    tests = [result("t.py::TestDraft::test_minimum_low"), result("t.py::TestDraft::test_maximum")]
    [selector] = match_pin(pin, [], tests).properties[0].selectors
    assert selector.did_you_mean == ("t.py::TestDraft::test_minimum*",)


def test_a_folder_is_offered_as_everything_under_it(tmp_path: Path) -> None:
    """Pygments' trial: `tests/examplefiles` was offered `tests/examplefiles*`, which a
    sibling folder `tests/examplefiles_old/` would match too."""
    pin = properties_pin(tmp_path, properties=[prop("lexers", "tests/examplefiles")])
    tests = [result("tests/examplefiles/python/a.py::"), result("tests/examplefiles/c/b.c::")]
    [selector] = match_pin(pin, [], tests).properties[0].selectors
    assert selector.did_you_mean == ("tests/examplefiles/*",)
    sibling = [*tests, result("tests/examplefiles_old/c.c::")]
    [selector] = match_pin(pin, [], sibling).properties[0].selectors
    assert selector.did_you_mean == ("tests/examplefiles*",)


def test_a_typo_in_a_name_start_is_offered_as_a_wildcard(tmp_path: Path) -> None:
    long_name = "t.py::TestDraft::test_minimum_validation_of_a_number_below_the_minimum_is_invalid"
    pin = properties_pin(tmp_path, properties=[prop("p.min", "t.py::TestDraft::test_minimun_*")])
    [selector] = match_pin(pin, [], [result(long_name)]).properties[0].selectors
    assert selector.did_you_mean[0] == "t.py::TestDraft::test_minimum_*"


def test_a_run_scores_and_matches_its_results_through_one_index() -> None:
    """The index the run built serves the ledger and the pin's match, only for its own list."""
    from three_ledger.ledgers import Sandbox
    from three_ledger.run.observation import Observed
    from three_ledger.vocabulary import Tripwire

    tests = [result("t.py::test_a"), result("t.py::test_b")]
    index = ResultIndex(tests)
    fields = (0, 1, None, Tripwire.SENTINELS, Sandbox({}, (), ()))
    observed = Observed(index.results, *fields, index=index)
    assert observed.results_index is index
    copied = Observed(list(tests), *fields, index=index)
    assert copied.results_index is not index
    assert [t.id for t in copied.results_index.results] == ["t.py::test_a", "t.py::test_b"]
