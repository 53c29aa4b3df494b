"""Merge reports: the Markdown table, the 1 MiB step summary cap, the `::error::` annotation."""

from __future__ import annotations

from dataclasses import replace

from helpers.records import evidence, flake_pin, prop_reading
from three_ledger.merge_table import FlakePinView, Verdict
from three_ledger.report.posture import (
    STEP_SUMMARY_LIMIT,
    TRUNCATION_NOTE,
    error_annotation,
    fit_step_summary,
    summary_markdown,
    verdict_text,
)
from three_ledger.vocabulary import Posture

REJECT = Verdict(Posture.REJECT, 7, "property miss stands: orders.b is fail")


def test_verdict_text_ends_with_the_row_and_why() -> None:
    lines = verdict_text(evidence(dual_pin=None), REJECT).splitlines()
    assert lines[0].startswith("fixture ledger f.json: digest ")
    assert lines[-1] == "merge: reject (row 7): property miss stands: orders.b is fail"
    assert len(lines) == 4


def test_verdict_text_shows_each_property_with_its_count_and_why_one_is_missing() -> None:
    prop = prop_reading(
        status_by_id={"orders.a": "pass", "orders.b": "missing"},
        tests_matched={"orders.a": 42, "orders.b": 3},
        missing_reasons={"orders.b": "3 tests matched, the pin asks for at least 42"},
    )
    lines = verdict_text(evidence(prop=prop, dual_pin=None), REJECT).splitlines()
    assert "; orders.a: pass (42 tests), orders.b: missing (3 tests); " in lines[1]
    assert "orders.b is missing: 3 tests matched, the pin asks for at least 42" in lines


def test_the_merge_summary_shows_each_flake_note_with_its_owner_from_the_flake_pin() -> None:
    pin = flake_pin()
    owned = replace(pin, flakes=tuple(replace(entry, owner="orders-team") for entry in pin.flakes))
    evidence_ = evidence(flake_pin=FlakePinView(pin.source, owned))
    markdown = summary_markdown(evidence_, Verdict(Posture.REVIEW, 9, "a person reads the diff"))
    assert markdown.startswith("### 🔎 three-ledger merge: review (row 9)")
    assert "| <code>orders.<wbr>slow</code> | fail | orders-team | 2026-12-31 |" in markdown


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


def test_error_annotation_escapes_percent_and_line_breaks() -> None:
    verdict = Verdict(Posture.REJECT, 1, "100% moved\r\nnext")
    assert error_annotation(verdict) == (
        "::error::three-ledger merge: reject (row 1): 100%25 moved%0D%0Anext"
    )
