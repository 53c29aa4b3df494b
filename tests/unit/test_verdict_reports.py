"""Workflow commands, the JUnit verdict and the dotenv report, as pure functions."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from helpers.records import property_ledger
from three_ledger.report.junit_verdict import (
    DecisionCase,
    PropertyCase,
    StepCase,
    dotenv,
    junit_xml,
    property_cases,
)
from three_ledger.report.workflow_commands import (
    Annotation,
    annotations_of_kind,
    commands,
    escape_data,
    escape_property,
)
from three_ledger.vocabulary import Posture, Status


def failure_message(case: ET.Element) -> str:
    failure = case.find("failure")
    return "" if failure is None else failure.get("message", "")


def test_messages_escape_percent_and_line_breaks_properties_also_colon_and_comma() -> None:
    assert escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"


def test_an_annotation_names_its_file_and_title() -> None:
    line = Annotation("error", "t: x", "m\n::error::forged", "pins/a,b:c.json").command()
    assert line == "::error file=pins/a%2Cb%3Ac.json,title=t%3A x::m%0A::error::forged"
    assert commands([Annotation("notice", "t", "m")]) == "::notice title=t::m\n"


def test_at_most_ten_annotations_of_a_kind_the_last_says_how_many_more() -> None:
    items = [(f"f{n}.json", f"moved {n}") for n in range(13)]
    shown = annotations_of_kind("warning", "moved", items)
    assert len(shown) == 10
    assert shown[-1].message == "moved 9 (and 3 more)"
    assert [a.file for a in shown] == [f"f{n}.json" for n in range(10)]
    assert len(annotations_of_kind("warning", "moved", items[:10])) == 10


def test_every_status_but_pass_is_a_failure_carrying_its_reason() -> None:
    statuses = zip("abcde", Status, strict=True)
    cases = [PropertyCase(prop_id, status, "claim") for prop_id, status in statuses]
    root = ET.fromstring(junit_xml(DecisionCase(Posture.REJECT, 7, "miss"), cases))
    suite = root.find("testsuite[@name='three-ledger.properties']")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "4", "0")
    messages = {case.get("name"): failure_message(case) for case in suite.iter("testcase")}
    assert messages["a"] == ""
    assert messages["d"].startswith("skip: skipped: a skipped property is not a pass")
    assert messages["e"].startswith("missing: ")
    decision = root.find("testsuite[@name='three-ledger.decision']/testcase/failure")
    assert decision is not None
    assert decision.get("message") == "reject (row 7): miss"


def test_steps_replace_the_decision_case_and_a_step_not_run_fails() -> None:
    steps = [
        StepCase("digest A", 2, False, "refused"),
        StepCase("properties A", None, False, "no ledger"),
    ]
    root = ET.fromstring(junit_xml(DecisionCase(Posture.REJECT, 1, "x"), [], steps))
    assert [suite.get("name") for suite in root] == ["three-ledger.properties", "three-ledger.gate"]
    messages = [failure_message(case) for case in root.iter("testcase")]
    assert messages == ["exit 2: refused", "not run: no ledger"]


def test_characters_xml_cannot_hold_are_replaced() -> None:
    document = junit_xml(
        DecisionCase(Posture.REVIEW, 9, "ok\x00\x1b"), [PropertyCase("a\x07", Status.PASS)]
    )
    root = ET.fromstring(document)
    assert {c.get("name") for c in root.iter("testcase")} == {"a\ufffd", "merge"}


def test_dotenv_leaves_out_a_decision_path_it_cannot_hold() -> None:
    assert dotenv(Posture.HUMAN_REVIEW, 8, "out/decision.json") == (
        "THREE_LEDGER_POSTURE=human_review\nTHREE_LEDGER_ROW=8\n"
        "THREE_LEDGER_DECISION=out/decision.json\n"
    )
    assert "DECISION" not in dotenv(Posture.REJECT, 0, "out\n/decision.json")


def test_property_cases_list_every_pinned_id_and_mark_the_unscored_missing() -> None:
    ledger = property_ledger(status_by_id={"orders.a": "pass", "orders.extra": "fail"})
    cases = property_cases(ledger, ["orders.a", "orders.b"], {"orders.a": "claim a"}, "why")
    assert cases == [
        PropertyCase("orders.a", Status.PASS, "claim a"),
        PropertyCase("orders.b", Status.MISSING, "", "why"),
    ]
    # Why it is missing is the failure's message, not a note beside it.
    root = ET.fromstring(junit_xml(DecisionCase(Posture.REJECT, 7, "x"), cases))
    missing = root.find("testsuite/testcase[@name='orders.b']/failure")
    assert missing is not None
    assert missing.get("message") == "missing: why; missing is not a pass"


def test_without_a_pin_the_property_cases_are_the_scored_ids() -> None:
    ledger = property_ledger(status_by_id={"orders.a": "pass", "orders.b": "skip"})
    assert property_cases(ledger, None, {}, "") == [
        PropertyCase("orders.a", Status.PASS),
        PropertyCase("orders.b", Status.SKIP),
    ]
    assert property_cases(None, ["orders.a"], {}, "no ledger") == [
        PropertyCase("orders.a", Status.MISSING, "", "no ledger")
    ]


def test_merge_s_failing_step_case_names_the_reason_of_a_reject() -> None:
    steps = [StepCase("digest A", 0, True, ""), StepCase("merge", 1, False, "reject (row 4)")]
    decision = DecisionCase(Posture.REJECT, 4, "pin mutation: pins/flakes.json")
    root = ET.fromstring(junit_xml(decision, [], steps))
    merge = root.find("testsuite[@name='three-ledger.gate']/testcase[@name='merge']/failure")
    assert merge is not None
    assert merge.get("message") == "exit 1: reject (row 4): pin mutation: pins/flakes.json"


def test_a_missing_property_fails_with_its_reason_and_every_case_shows_its_count() -> None:
    reason = "3 tests matched, the pin asks for at least 42"
    ledger = property_ledger(
        status_by_id={"orders.a": "pass", "orders.b": "missing"},
        tests_matched={"orders.a": 42, "orders.b": 3},
        missing_reasons={"orders.b": reason},
    )
    cases = property_cases(ledger, None, {"orders.a": "claim a"}, "")
    document = junit_xml(DecisionCase(Posture.REJECT, 7, "r"), cases)
    by_name = {case.get("name"): case for case in ET.fromstring(document).iter("testcase")}
    assert failure_message(by_name["orders.b"]) == f"missing: {reason}; missing is not a pass"
    assert (by_name["orders.b"].findtext("failure") or "").endswith("\n3 tests counted")
    assert by_name["orders.a"].find("failure") is None
    assert by_name["orders.a"].findtext("system-out") == "claim a\n42 tests counted"


def test_every_property_of_a_run_whose_oracles_moved_is_no_evidence_never_a_pass() -> None:
    ledger = property_ledger(oracle_moved=True, oracle_changes=("properties/test_orders.py",))
    cases = property_cases(ledger, None, {}, "")
    assert {case.not_evidence for case in cases} == {"not evidence (oracles moved)"}
    root = ET.fromstring(junit_xml(DecisionCase(Posture.REJECT, 5, "moved"), cases))
    suite = root.find("testsuite[@name='three-ledger.properties']")
    assert suite is not None
    messages = [failure_message(case) for case in suite.iter("testcase")]
    assert messages
    assert sorted(messages) == [
        "not evidence (oracles moved): recorded fail, which says nothing here",
        "not evidence (oracles moved): recorded pass, which says nothing here",
    ]


def test_a_failing_case_names_its_failing_tests() -> None:
    from three_ledger.ledgers import FailingTest
    from three_ledger.vocabulary import Outcome

    failing = tuple(FailingTest(f"t.py::test_{n}", Outcome.FAIL) for n in range(3))
    ledger = property_ledger(
        status_by_id={"p": Status.FAIL},
        failing_tests={"p": failing},
        failing_counts={"p": 5},
        oracle_moved=False,
    )
    (case,) = property_cases(ledger, None, {}, "")
    root = ET.fromstring(junit_xml(DecisionCase(Posture.REJECT, 7, "miss"), [case]))
    (element,) = root.iter("testsuite").__next__().iter("testcase")
    assert failure_message(element).endswith(
        "; failing: t.py::test_0, t.py::test_1, t.py::test_2 and 2 more"
    )


def test_human_review_is_a_decision_to_take_and_every_suite_carries_posture_row_and_time() -> None:
    decision = DecisionCase(Posture.HUMAN_REVIEW, 8, "one pin is weaker evidence")
    steps = [StepCase("digest A", 0, True, ""), StepCase("merge", 0, True, "human_review")]
    cases = [PropertyCase("p", Status.PASS, "claim")]
    root = ET.fromstring(junit_xml(decision, cases, steps, duration_s=1.5))
    merge = root.find("testsuite[@name='three-ledger.gate']/testcase[@name='merge']")
    assert merge is not None
    skipped = merge.find("skipped")
    assert skipped is not None
    assert skipped.get("message") == (
        "a person decides: human_review (row 8): one pin is weaker evidence"
    )
    assert (root.get("skipped"), root.get("failures"), root.get("time")) == ("1", "0", "1.500")
    for suite in root.iter("testsuite"):
        facts = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert facts == {"three-ledger.posture": "human_review", "three-ledger.row": "8"}
        assert all(case.get("time") == "0.000" for case in suite.iter("testcase"))
    decided = ET.fromstring(junit_xml(decision, cases))
    assert decided.find("testsuite[@name='three-ledger.decision']/testcase/skipped") is not None
