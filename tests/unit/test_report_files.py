"""The report files of a decision: the decision ledger, --summary-md, the JUnit verdict, the
dotenv, and GitHub's step summary, capped under 1 MiB."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers.records import evidence
from three_ledger.ledgers import read_ledger
from three_ledger.merge_table import Verdict
from three_ledger.other_ledgers import MergeDecision
from three_ledger.report.junit_verdict import PropertyCase, StepCase
from three_ledger.report.posture import STEP_SUMMARY_LIMIT, TRUNCATION_NOTE
from three_ledger.vocabulary import Posture, Status
from three_ledger.workflow.decision_files import (
    DecisionReport,
    ReportFiles,
    append_step_summary,
    append_to_step_summary,
    write_decision,
    write_reports,
)

REJECT = Verdict(Posture.REJECT, 7, "property miss stands: orders.b is fail")


def test_the_decision_names_the_sha256_of_each_input(tmp_path: Path) -> None:
    write_decision(tmp_path / "decision.json", REJECT, evidence())
    decision = read_ledger(tmp_path / "decision.json", MergeDecision).record
    assert (decision.posture, decision.row, decision.reason) == (Posture.REJECT, 7, REJECT.reason)
    assert decision.inputs.fixture == "11" * 32
    assert decision.inputs.dual_pin == "22" * 32
    assert decision.inputs.flakes == ("33" * 32,)


def test_a_decision_made_before_the_table_has_no_inputs(tmp_path: Path) -> None:
    verdict = Verdict(Posture.REJECT, 0, "gate inputs unusable: no base revision")
    write_decision(tmp_path / "decision.json", verdict, None)
    document = json.loads((tmp_path / "decision.json").read_text(encoding="utf-8"))
    assert document["inputs"] == {
        "fixture": None,
        "property": None,
        "dual_pin": None,
        "flakes": [],
        "flake_evidence": None,
    }
    assert document["row"] == 0


def test_each_report_file_asked_for_is_written_and_no_other(tmp_path: Path) -> None:
    report = DecisionReport(
        REJECT,
        "### summary\n",
        [PropertyCase("orders.b", Status.FAIL)],
        [StepCase("merge", 1, False, "reject (row 7)")],
    )
    files = ReportFiles(summary_md=tmp_path / "summary.md", verdict_dotenv=tmp_path / "verdict.env")
    write_reports(files, report, Path("out/decision.json"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["summary.md", "verdict.env"]
    assert (tmp_path / "summary.md").read_text() == "### summary\n"
    assert (tmp_path / "verdict.env").read_text() == (
        "THREE_LEDGER_POSTURE=reject\nTHREE_LEDGER_ROW=7\nTHREE_LEDGER_DECISION=out/decision.json\n"
    )
    write_reports(ReportFiles(verdict_junit=tmp_path / "verdict.xml"), report, Path("d.json"))
    suites = [suite.get("name") for suite in ET.parse(tmp_path / "verdict.xml").getroot()]
    assert suites == ["three-ledger.properties", "three-ledger.gate"]


def test_append_step_summary_keeps_the_file_under_1_mib(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    step_summary.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 1000))
    assert append_to_step_summary(step_summary, "y" * 5000) is None
    size = step_summary.stat().st_size
    assert size < STEP_SUMMARY_LIMIT
    assert step_summary.read_text().endswith(TRUNCATION_NOTE)


def test_append_step_summary_warns_when_full(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    step_summary.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 1))
    warning = append_to_step_summary(step_summary, "report\n")
    assert warning is not None
    assert "full" in warning
    assert step_summary.stat().st_size == STEP_SUMMARY_LIMIT - 1


def test_append_step_summary_creates_a_missing_file(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    assert append_to_step_summary(step_summary, "report\n") is None
    assert step_summary.read_text() == "report\n"


def test_the_step_summary_is_the_one_github_names_and_a_full_one_is_said_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    step_summary = tmp_path / "summary.md"
    append_step_summary({}, "report\n")
    assert not step_summary.exists()
    append_step_summary({"GITHUB_STEP_SUMMARY": str(step_summary)}, "report\n")
    assert step_summary.read_text() == "report\n"
    step_summary.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 1))
    append_step_summary({"GITHUB_STEP_SUMMARY": str(step_summary)}, "report\n")
    assert "is full (1 MiB)" in capsys.readouterr().err
