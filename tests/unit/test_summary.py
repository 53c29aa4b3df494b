"""Merge reports: the Markdown table, the 1 MiB step summary cap, the `::error::` annotation."""

from __future__ import annotations

from pathlib import Path

from helpers.records import evidence
from three_ledger.ledgers import Posture
from three_ledger.merge_table import Verdict
from three_ledger.report.posture import (
    STEP_SUMMARY_LIMIT,
    TRUNCATION_NOTE,
    append_step_summary,
    error_annotation,
    fit_step_summary,
    verdict_text,
)

REJECT = Verdict(Posture.REJECT, 7, "property miss stands: orders.b is fail")


def test_verdict_text_ends_with_the_row_and_why() -> None:
    lines = verdict_text(evidence(dual_pin=None), REJECT).splitlines()
    assert lines[0].startswith("fixture ledger f.json: digest ")
    assert lines[-1] == "merge: reject (row 7): property miss stands: orders.b is fail"
    assert len(lines) == 4


def test_fit_step_summary_leaves_small_text_alone() -> None:
    assert fit_step_summary(100, "report\n") == "report\n"


def test_fit_step_summary_cuts_to_stay_under_the_limit() -> None:
    text = "é" * 600  # two bytes each: a cut may land inside a character
    fitted = fit_step_summary(0, text, limit=301)
    assert fitted.endswith(TRUNCATION_NOTE)
    assert len(fitted.encode("utf-8")) < 301
    assert fitted.removesuffix(TRUNCATION_NOTE).strip("é") == ""


def test_fit_step_summary_gives_up_when_there_is_no_room() -> None:
    assert fit_step_summary(STEP_SUMMARY_LIMIT - 10, "x" * 100) == ""


def test_append_step_summary_keeps_the_file_under_1_mib(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    step_summary.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 1000))
    assert append_step_summary(step_summary, "y" * 5000) is None
    size = step_summary.stat().st_size
    assert size < STEP_SUMMARY_LIMIT
    assert step_summary.read_text().endswith(TRUNCATION_NOTE)


def test_append_step_summary_warns_when_full(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    step_summary.write_bytes(b"x" * (STEP_SUMMARY_LIMIT - 1))
    warning = append_step_summary(step_summary, "report\n")
    assert warning is not None
    assert "full" in warning
    assert step_summary.stat().st_size == STEP_SUMMARY_LIMIT - 1


def test_append_step_summary_creates_a_missing_file(tmp_path: Path) -> None:
    step_summary = tmp_path / "summary.md"
    assert append_step_summary(step_summary, "report\n") is None
    assert step_summary.read_text() == "report\n"


def test_error_annotation_escapes_percent_and_line_breaks() -> None:
    verdict = Verdict(Posture.REJECT, 1, "100% moved\r\nnext")
    assert error_annotation(verdict) == (
        "::error::three-ledger merge: reject (row 1): 100%25 moved%0D%0Anext"
    )
