"""The verdict as JUnit XML (GitLab's widget, Jenkins) and as a GitLab dotenv report.

An output, not to be confused with `properties --junit-xml`, the runner's report read as
input. One testcase per property id, where fail, error, skip and missing are all failures
carrying the reason (missing is not a pass), as is every property of a run whose oracles
moved (not evidence); one per gate step; one for the decision. A `human_review` decision is
a skipped case: a decision still to be taken, neither green nor red. Every suite carries the
posture and row as properties, and a `time`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

from three_ledger.frozen import frozen
from three_ledger.ledgers import PropertyLedger
from three_ledger.report.findings import tests_counted
from three_ledger.vocabulary import Posture, Status

SUITES = "three-ledger"
PROPERTIES = "three-ledger.properties"
STEPS = "three-ledger.gate"
DECISION = "three-ledger.decision"
# The gate step that writes the decision; its case carries it.
MERGE_STEP = "merge"
# Characters XML 1.0 cannot hold, even escaped; ids and reasons may carry them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_STATUS_MEANING = {
    Status.FAIL: "a test of this property failed",
    Status.ERROR: "a test of this property errored",
    Status.SKIP: "skipped: a skipped property is not a pass",
    Status.MISSING: "missing: no test result matched its selector; missing is not a pass",
}


@frozen
class PropertyCase:
    prop_id: str
    status: Status
    detail: str = ""
    # Why a missing property is missing, as its ledger says; "" when it says nothing.
    reason: str = ""
    # How many tests it counted ("42 tests"); "" when no ledger says.
    tests: str = ""
    # The tests behind a miss, as the ledger names them.
    failing: tuple[str, ...] = ()
    # Why the status is not evidence at all (the oracles moved); "" when it is.
    not_evidence: str = ""
    # How many tests behind the miss did not pass, named or not (`failing` names the first).
    failing_count: int = 0


def property_cases(
    ledger: PropertyLedger | None,
    pinned_ids: Sequence[str] | None,
    claims: Mapping[str, str],
    unscored: str,
) -> list[PropertyCase]:
    """One case per pinned property (per scored one when the pin is not known), its detail its
    claim; a property the ledger does not score is `missing`, and UNSCORED says why."""
    statuses = ledger.status_by_id if ledger is not None else {}
    ids = list(statuses) if pinned_ids is None else list(pinned_ids)
    return [
        PropertyCase(
            prop_id,
            statuses.get(prop_id, Status.MISSING),
            claims.get(prop_id, ""),
            _missing_reason(ledger, prop_id) or (unscored if prop_id not in statuses else ""),
            tests_counted(ledger, prop_id) if ledger is not None else "",
            _failing(ledger, prop_id),
            NOT_EVIDENCE if ledger is not None and ledger.oracle_moved else "",
            ledger.failing_count(prop_id) if ledger is not None else 0,
        )
        for prop_id in ids
    ]


# Every property of a run whose oracles moved: its status says nothing about the change.
NOT_EVIDENCE = "not evidence (oracles moved)"
# Failing tests named in a failing case's message before "and N more".
FIRST_FAILING = 3


def _missing_reason(ledger: PropertyLedger | None, prop_id: str) -> str:
    return ledger.missing_reasons.get(prop_id, "") if ledger is not None else ""


def _failing(ledger: PropertyLedger | None, prop_id: str) -> tuple[str, ...]:
    if ledger is None:
        return ()
    return tuple(test.id for test in ledger.failing_tests.get(prop_id, ()))


@frozen
class StepCase:
    name: str
    # None: the step did not run.
    exit_code: int | None
    passed: bool
    note: str


@frozen
class DecisionCase:
    posture: Posture
    row: int
    reason: str


def junit_xml(
    decision: DecisionCase,
    properties: Sequence[PropertyCase],
    steps: Sequence[StepCase] = (),
    duration_s: float = 0.0,
) -> bytes:
    """The XML document; with STEPS, the last step (merge) carries the decision. DURATION_S,
    the scored run's, is the properties suite's `time` (a property has none of its own)."""
    root = ET.Element("testsuites", name=SUITES)
    cases = [_property_case(case) for case in properties]
    _suite(root, PROPERTIES, cases, decision, duration_s)
    if steps:
        step_cases = [_step_case(step) for step in steps]
        if step_cases and decision.posture is Posture.HUMAN_REVIEW:
            _to_be_decided(step_cases[-1], decision)
        elif steps[-1].name == MERGE_STEP and decision.posture is Posture.REJECT:
            _rejected(step_cases[-1], decision)
        _suite(root, STEPS, step_cases, decision, 0.0)
    else:
        _suite(root, DECISION, [_decision_case(decision)], decision, 0.0)
    for key in ("tests", "failures", "skipped"):
        root.set(key, str(sum(int(suite.get(key, "0")) for suite in root)))
    root.set("time", _seconds(sum(float(suite.get("time", "0")) for suite in root)))
    ET.indent(root)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _suite(
    parent: ET.Element,
    name: str,
    cases: Sequence[ET.Element],
    decision: DecisionCase,
    duration_s: float,
) -> None:
    failures = sum(1 for case in cases if case.find("failure") is not None)
    skipped = sum(1 for case in cases if case.find("skipped") is not None)
    suite = ET.SubElement(
        parent, "testsuite", name=name, tests=str(len(cases)), failures=str(failures)
    )
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suite.set("time", _seconds(duration_s))
    facts = ET.SubElement(suite, "properties")
    ET.SubElement(facts, "property", name="three-ledger.posture", value=str(decision.posture))
    ET.SubElement(facts, "property", name="three-ledger.row", value=str(decision.row))
    suite.extend(cases)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _to_be_decided(case: ET.Element, decision: DecisionCase) -> None:
    """A `human_review` decision: skipped, with the reason, before any output of the case."""
    text = f"{decision.posture} (row {decision.row}): {decision.reason}"
    case.insert(0, ET.Element("skipped", message=_clean(f"a person decides: {text}")))


def _rejected(case: ET.Element, decision: DecisionCase) -> None:
    """merge's failure names the reason, as the decision case would: what to fix."""
    failure = case.find("failure")
    if failure is not None:
        message = f"{failure.get('message')}: {decision.reason}"
        failure.set("message", _clean(message))
        failure.text = _clean(message)


def _case(classname: str, name: str, failure: str | None, body: str = "") -> ET.Element:
    case = ET.Element("testcase", classname=classname, name=_clean(name), time="0.000")
    if failure is not None:
        element = ET.SubElement(case, "failure", message=_clean(failure))
        element.text = _clean(body or failure)
    elif body:
        ET.SubElement(case, "system-out").text = _clean(body)
    return case


def _property_case(case: PropertyCase) -> ET.Element:
    counted = f"{case.tests} counted" if case.tests else ""
    if case.not_evidence:
        message = f"{case.not_evidence}: recorded {case.status}, which says nothing here"
        body = "\n".join(part for part in (message, case.detail, counted) if part)
        return _case(PROPERTIES, case.prop_id, message, body)
    if case.status == Status.PASS:
        body = "\n".join(part for part in (case.detail, counted) if part)
        return _case(PROPERTIES, case.prop_id, None, body)
    meaning = _STATUS_MEANING[case.status]
    if case.reason:
        meaning = f"{case.reason}; missing is not a pass"
    message = f"{case.status}: {meaning}"
    if case.failing:
        shown = case.failing[:FIRST_FAILING]
        more = max(case.failing_count, len(case.failing)) - len(shown)
        message += f"; failing: {', '.join(shown)}" + (f" and {more} more" if more > 0 else "")
    body = "\n".join(part for part in (meaning, *case.failing, case.detail, counted) if part)
    return _case(PROPERTIES, case.prop_id, message, body)


def _step_case(step: StepCase) -> ET.Element:
    exit_text = "not run" if step.exit_code is None else f"exit {step.exit_code}"
    message = f"{exit_text}: {step.note}" if step.note else exit_text
    return _case(STEPS, step.name, None if step.passed else message, message)


def _decision_case(decision: DecisionCase) -> ET.Element:
    text = f"{decision.posture} (row {decision.row}): {decision.reason}"
    case = _case(DECISION, "merge", text if decision.posture is Posture.REJECT else None, text)
    if decision.posture is Posture.HUMAN_REVIEW:
        _to_be_decided(case, decision)
    return case


def dotenv(posture: Posture, row: int, decision_path: str | None) -> str:
    """GitLab's dotenv report: one KEY=value per line, no quoting, no line breaks in values."""
    lines = [f"THREE_LEDGER_POSTURE={posture}", f"THREE_LEDGER_ROW={row}"]
    if decision_path is not None and decision_path.isprintable():
        lines.append(f"THREE_LEDGER_DECISION={decision_path}")
    return "\n".join(lines) + "\n"
