"""The verdict as JUnit XML (GitLab's widget, Jenkins) and as a GitLab dotenv report.

An output, not to be confused with `properties --junit-xml`, the runner's report read as
input. One testcase per property id, where fail, error, skip and missing are all failures
carrying the reason (missing is not a pass); one per gate step; one for the decision.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from three_ledger.ledgers import PropertyLedger
from three_ledger.report.findings import tests_counted
from three_ledger.vocabulary import Posture, Status

SUITES = "three-ledger"
PROPERTIES = "three-ledger.properties"
STEPS = "three-ledger.gate"
DECISION = "three-ledger.decision"
# Characters XML 1.0 cannot hold, even escaped; ids and reasons may carry them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_STATUS_MEANING = {
    Status.FAIL: "a test of this property failed",
    Status.ERROR: "a test of this property errored",
    Status.SKIP: "skipped: a skipped property is not a pass",
    Status.MISSING: "missing: no test result matched its selector; missing is not a pass",
}


@dataclass(frozen=True)
class PropertyCase:
    prop_id: str
    status: Status
    detail: str = ""
    # Why a missing property is missing, as its ledger says; "" when it says nothing.
    reason: str = ""
    # How many tests it counted ("42 tests"); "" when no ledger says.
    tests: str = ""


def property_cases(
    ledger: PropertyLedger | None,
    pinned_ids: Sequence[str] | None,
    claims: Mapping[str, str],
    unscored: str,
) -> list[PropertyCase]:
    """One case per pinned property (per scored one when the pin is not known); a property
    the ledger does not score is `missing`, its detail its claim or else why it is unscored."""
    statuses = ledger.status_by_id if ledger is not None else {}
    ids = list(statuses) if pinned_ids is None else list(pinned_ids)
    return [
        PropertyCase(
            prop_id,
            statuses.get(prop_id, Status.MISSING),
            claims.get(prop_id) or unscored,
            ledger.missing_reasons.get(prop_id, "") if ledger is not None else "",
            tests_counted(ledger, prop_id) if ledger is not None else "",
        )
        for prop_id in ids
    ]


@dataclass(frozen=True)
class StepCase:
    name: str
    # None: the step did not run.
    exit_code: int | None
    passed: bool
    note: str


@dataclass(frozen=True)
class DecisionCase:
    posture: Posture
    row: int
    reason: str


def junit_xml(
    decision: DecisionCase, properties: Sequence[PropertyCase], steps: Sequence[StepCase] = ()
) -> bytes:
    """The XML document; with STEPS, the last step (merge) carries the decision."""
    root = ET.Element("testsuites", name=SUITES)
    _suite(root, PROPERTIES, [_property_case(case) for case in properties])
    if steps:
        _suite(root, STEPS, [_step_case(step) for step in steps])
    else:
        _suite(root, DECISION, [_decision_case(decision)])
    failures = sum(int(suite.get("failures", "0")) for suite in root)
    root.set("tests", str(sum(int(suite.get("tests", "0")) for suite in root)))
    root.set("failures", str(failures))
    ET.indent(root)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _suite(parent: ET.Element, name: str, cases: Sequence[ET.Element]) -> None:
    failures = sum(1 for case in cases if case.find("failure") is not None)
    suite = ET.SubElement(
        parent, "testsuite", name=name, tests=str(len(cases)), failures=str(failures)
    )
    suite.set("errors", "0")
    suite.set("skipped", "0")
    suite.extend(cases)


def _case(classname: str, name: str, failure: str | None, body: str = "") -> ET.Element:
    case = ET.Element("testcase", classname=classname, name=_clean(name))
    if failure is not None:
        element = ET.SubElement(case, "failure", message=_clean(failure))
        element.text = _clean(body or failure)
    elif body:
        ET.SubElement(case, "system-out").text = _clean(body)
    return case


def _property_case(case: PropertyCase) -> ET.Element:
    counted = f"{case.tests} counted" if case.tests else ""
    if case.status == Status.PASS:
        body = "\n".join(part for part in (case.detail, counted) if part)
        return _case(PROPERTIES, case.prop_id, None, body)
    meaning = _STATUS_MEANING[case.status]
    if case.reason:
        meaning = f"{case.reason}; missing is not a pass"
    body = "\n".join(part for part in (meaning, case.detail, counted) if part)
    return _case(PROPERTIES, case.prop_id, f"{case.status}: {meaning}", body)


def _step_case(step: StepCase) -> ET.Element:
    exit_text = "not run" if step.exit_code is None else f"exit {step.exit_code}"
    message = f"{exit_text}: {step.note}" if step.note else exit_text
    return _case(STEPS, step.name, None if step.passed else message, message)


def _decision_case(decision: DecisionCase) -> ET.Element:
    text = f"{decision.posture} (row {decision.row}): {decision.reason}"
    return _case(DECISION, "merge", text if decision.posture is Posture.REJECT else None, text)


def dotenv(posture: Posture, row: int, decision_path: str | None) -> str:
    """GitLab's dotenv report: one KEY=value per line, no quoting, no line breaks in values."""
    lines = [f"THREE_LEDGER_POSTURE={posture}", f"THREE_LEDGER_ROW={row}"]
    if decision_path is not None and decision_path.isprintable():
        lines.append(f"THREE_LEDGER_DECISION={decision_path}")
    return "\n".join(lines) + "\n"
