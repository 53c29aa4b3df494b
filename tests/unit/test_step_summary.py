"""The step summary: decision first, what to do next, narrow tables, escaped hostile text.

The width check renders the Markdown with cmark-gfm (GitHub's own parser) and bounds each
table's narrowest layout: a column is at least as wide as the longest run of characters no
browser may break (no whitespace, no zero-width space, no `<wbr>`), so the table's minimum
width is the sum over its columns. That minimum must fit in 1,000 px, the width the redesign
promises; and with every `<wbr>` stripped, as GitHub's sanitizer may, no run in a cell is
longer than LONGEST_RUN characters.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers.markdown_tables import gfm_html, longest_runs, tables_of
from helpers.records import DIGEST, OTHER_DIGEST, evidence, flake_reading, prop_reading
from three_ledger.ledgers import PropertyLedger, encode
from three_ledger.merge_table import Reading, Verdict
from three_ledger.other_ledgers import (
    CandidateEvidence,
    FlakeEvidenceLedger,
    FlakeProposal,
    ModeTally,
)
from three_ledger.report.step_summary import (
    LONGEST_RUN,
    NEXT_STEP,
    STATUS_MARK,
    ZERO_WIDTH_SPACE,
    FlakeEvidenceNote,
    StepRow,
    SummaryInput,
    VetRow,
    breakable,
    code,
    render,
    text,
    wrappable,
)
from three_ledger.vocabulary import (
    Enforcement,
    FlakeVerdict,
    Network,
    Posture,
    RerunMode,
    Status,
    VetVerdict,
)

PAGE_PX = 1000
# Generous per-character widths: GitHub's body font is 16 px, its code font 85% monospace.
CHAR_PX = 10
CELL_PADDING_PX = 26
LONG_ID = "jsonschema.validators.draft202012.format_checker.unknown_formats_are_ignored_by_default"

POSTURES = {
    "reject": Verdict(Posture.REJECT, 7, "property miss stands: orders.b is fail"),
    "human_review": Verdict(Posture.HUMAN_REVIEW, 8, "one pin is weaker evidence: no dual-pin"),
    "review": Verdict(Posture.REVIEW, 9, "a person reads the diff: every property passes"),
}  # fmt: skip


def minimum_width_px(table: list[list[list[str]]]) -> int:
    columns = max(len(row) for row in table)
    widest = [0] * columns
    for row in table:
        for index, runs in enumerate(row):
            widest[index] = max(widest[index], max(len(run) for run in runs))
    return sum(width * CHAR_PX + CELL_PADDING_PX for width in widest)


def full_summary(verdict: Verdict, prop_id: str = "orders.b") -> SummaryInput:
    statuses = {"orders.a": "pass", prop_id: "fail" if verdict.row == 7 else "pass"}
    return SummaryInput(
        verdict=verdict,
        evidence=evidence(prop=prop_reading(status_by_id=statuses)),
        title="three-ledger gate",
        claims={prop_id: "Every order total in the domain is zero or more, " * 3},
        failing_tests={
            prop_id: [f"properties/test_orders.py::test_{prop_id}[case{n}]" for n in range(5)]
        },
        flake_owners={"orders.slow": "orders-team"},
        steps=[StepRow(f"properties A ({prop_id})", "1", "property-a.json", ok=False)],
    )


@pytest.mark.parametrize("posture", sorted(POSTURES))
def test_the_first_line_says_posture_row_and_reason(posture: str) -> None:
    verdict = POSTURES[posture]
    lines = render(full_summary(verdict)).splitlines()
    assert lines[0].startswith("### ")
    assert f"three-ledger gate: {posture} (row {verdict.row}): " in lines[0]
    assert text(verdict.reason) in lines[0]
    assert lines[2] == f"**What to do next:** {NEXT_STEP[verdict.row]}"


@pytest.mark.parametrize("posture", sorted(POSTURES))
@pytest.mark.parametrize("prop_id", ["orders.b", LONG_ID])
def test_no_table_needs_more_than_1000_px(posture: str, prop_id: str) -> None:
    markdown = render(full_summary(POSTURES[posture], prop_id))
    tables = tables_of(markdown)
    assert len(tables) >= 3  # properties, flake notes, steps, ledgers
    for table in tables:
        assert max(len(row) for row in table) <= 4
        assert minimum_width_px(table) <= PAGE_PX, table


def test_the_width_check_catches_a_full_digest_in_a_table() -> None:
    wide = f"| a | b |\n|---|---|\n| `{DIGEST}{OTHER_DIGEST}` | {LONG_ID}{LONG_ID} |\n"
    assert minimum_width_px(tables_of(wide)[0]) > PAGE_PX


def test_properties_not_passing_come_first_with_a_mark_and_their_failing_tests() -> None:
    summary = full_summary(POSTURES["reject"])
    table = tables_of(render(summary))[0]
    header, first, second = table[0], table[1], table[2]
    assert [" ".join(cell) for cell in header][1:] == [
        "Property",
        "Status",
        "Claim and failing tests",
    ]
    assert "".join(first[0]) == STATUS_MARK[Status.FAIL]
    assert "".join(first[1]) == "orders.b"
    assert "".join(second[0]) == STATUS_MARK[Status.PASS]
    markdown = render(summary)
    assert "failing: <code>properties/<wbr>test\\_<wbr>orders.<wbr>py" in markdown
    assert " and 2 more |" in markdown


@pytest.mark.parametrize(
    ("status", "mark"), [("error", "💥"), ("skip", "⚠️"), ("missing", "❓"), ("fail", "❌")]
)
def test_every_status_that_is_not_a_pass_stands_out(status: str, mark: str) -> None:
    summary = SummaryInput(
        POSTURES["reject"], evidence(prop=prop_reading(status_by_id={"orders.a": status}))
    )
    row = tables_of(render(summary))[0][1]
    assert "".join(row[0]) == mark
    assert "".join(row[2]) == status
    assert f"| **{status}** |" in render(summary)


def test_no_property_of_a_run_whose_oracles_moved_shows_a_green_mark() -> None:
    moved = prop_reading(oracle_moved=True, oracle_changes=("properties/test_orders.py",))
    markdown = render(SummaryInput(POSTURES["reject"], evidence(prop=moved)))
    rows = tables_of(markdown)[0][1:]
    assert rows
    assert {"".join(row[0]) for row in rows} == {"🚫"}
    assert all(" ".join(row[2]).startswith("not evidence") for row in rows)
    assert STATUS_MARK[Status.PASS] not in markdown


def test_each_property_shows_its_count_and_a_missing_one_why() -> None:
    reasons = {
        "orders.b": "3 tests matched, the pin asks for at least 42",
        LONG_ID: f"the 42 tests it matched hash to {DIGEST}, the pin's tests_sha256 is "
        f"{OTHER_DIGEST} (`three-ledger plan --json` lists the ids: counted_ids)",
    }
    ledger = prop_reading(
        status_by_id={"orders.a": "pass", "orders.b": "missing", LONG_ID: "missing"},
        tests_matched={"orders.a": 1, "orders.b": 3, LONG_ID: 42},
        missing_reasons=reasons,
    )
    markdown = render(SummaryInput(POSTURES["reject"], evidence(prop=ledger), claims={}))
    table = tables_of(markdown)[0]
    assert [" ".join(row[2]) for row in table[1:]] == [
        "missing, 3 tests",
        "missing, 42 tests",
        "pass, 1 test",
    ]
    assert "| missing: 3 tests matched, the pin asks for at least 42 |" in markdown
    assert f"hash to {DIGEST[:12]}…, the pin's tests\\_sha256 is {OTHER_DIGEST[:12]}…" in markdown
    assert minimum_width_px(table) <= PAGE_PX, table


def test_digests_are_cut_to_12_hex_with_the_full_values_in_details() -> None:
    markdown = render(full_summary(POSTURES["review"]))
    outside, _, details = markdown.partition("<details><summary>Full digests</summary>")
    assert DIGEST not in outside
    assert DIGEST[:12] in outside
    assert f"`{DIGEST}`" in details
    assert f"`{OTHER_DIGEST}`" in details
    assert details.rstrip().endswith("</details>")


def test_flake_notes_show_owner_and_review_by() -> None:
    markdown = render(full_summary(POSTURES["review"]))
    flakes = tables_of(markdown)[1]
    assert [" ".join(cell) for cell in flakes[0]] == ["Test", "Observed", "Owner", "Review by"]
    assert ["".join(cell) for cell in flakes[1]] == ["orders.slow", "fail", "orders-team",
                                                      "2026-12-31"]  # fmt: skip


HOSTILE = "evil|id\n::error::x <script>alert(1)</script> [link](http://e.com) @team #1 *b* `c`"


def test_hostile_text_stays_literal_in_every_place_it_reaches() -> None:
    summary = SummaryInput(
        Verdict(Posture.REJECT, 4, f"pin mutation: {HOSTILE}"),
        evidence(flakes=flake_reading(test_id=HOSTILE)),
        flake_owners={HOSTILE: HOSTILE},
        steps=[StepRow(HOSTILE, "3", HOSTILE, ok=False)],
        pin_change=[HOSTILE],
        problems=[HOSTILE],
        vet=[VetRow(HOSTILE, HOSTILE, VetVerdict.SURVIVED, gate=False, finding=HOSTILE)],
    )
    markdown = render(summary)
    rendered = gfm_html(markdown)
    assert "<script>" not in rendered
    assert "<a " not in rendered
    assert "<em>" not in rendered
    assert "\n::error" not in markdown
    visible = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert visible.count("evil|id ::error::x <script>alert(1)</script>") >= 8
    for table in tables_of(markdown):
        assert len({len(row) for row in table}) == 1  # no pipe split a row


def test_breakable_marks_break_points_and_keeps_the_text() -> None:
    marked = breakable(LONG_ID)
    assert marked.count("<wbr>") >= 10
    assert html.unescape(re.sub(r"<[^>]+>|\\|\u200b", "", marked)) == LONG_ID


NODE_ID = (
    "jsonschema/tests/test_jsonschema_test_suite.py::TestDraft202012::"
    "test_multipleOf_float_division_inf_always_invalid_but_naive_implementations_may_raise"
)


@pytest.mark.parametrize(
    ("value", "pieces"),
    [
        ("orders.total.non_negative", ["orders.total.non_negative"]),
        # Node ids break before `::` and `[`, paths after `/`: as few breaks as fit.
        (
            "properties/test_orders.py::test_total_non_negative[orders_boundary.json]",
            ["properties/test_orders.py", "::test_total_non_negative", "[orders_boundary.json]"],
        ),
        ("a" * 90, ["a" * 40, "a" * 40, "a" * 10]),
        (
            "x_" * 30,
            ["x_" * 20, "x_" * 10],
        ),
    ],
)
def test_long_runs_get_zero_width_spaces_where_ids_break(value: str, pieces: list[str]) -> None:
    assert wrappable(value).split(ZERO_WIDTH_SPACE) == pieces


@pytest.mark.parametrize("posture", sorted(POSTURES))
@pytest.mark.parametrize("prop_id", ["orders.b", LONG_ID, NODE_ID])
def test_every_cell_wraps_when_github_strips_wbr(posture: str, prop_id: str) -> None:
    summary = full_summary(POSTURES[posture], prop_id)
    markdown = render(summary)
    runs = longest_runs(markdown, wbr_stripped=True)
    assert len(runs) > 20
    assert max(len(run) for run in runs) <= LONGEST_RUN, max(runs, key=len)
    # The measure has teeth: the same report without the zero-width spaces has longer runs.
    assert max(len(run) for run in longest_runs(markdown.replace(ZERO_WIDTH_SPACE, ""),
                                                wbr_stripped=True)) > LONGEST_RUN  # fmt: skip


def test_without_a_property_ledger_the_pinned_ids_are_missing() -> None:
    broken: Reading[PropertyLedger] = Reading(Path("p.json"), None, None, "p.json: not found")
    summary = SummaryInput(
        Verdict(Posture.REJECT, 2, "do not score"), evidence(prop=broken), pinned_ids=["orders.a"]
    )
    markdown = render(summary)
    assert "**Properties** (no property ledger)" in markdown
    assert "| ❓ | <code>orders.<wbr>a</code> | **missing** |" in markdown


def test_vet_findings_mark_each_property_that_cannot_fail_on_its_pin() -> None:
    summary = SummaryInput(
        Verdict(Posture.HUMAN_REVIEW, 0, "pin change: the pin owners review it"),
        None,
        pin_change=["pins/properties.json"],
        vet=[
            VetRow(
                "fixpin-a", "orders.a", VetVerdict.STRONG, gate=True, finding="killed by drop-key"
            ),
            VetRow("fixpin-a", LONG_ID, VetVerdict.SURVIVED, gate=False, finding="cannot fail"),
        ],
    )
    markdown = render(summary)
    section = markdown.split("**vet**", 1)[1]
    assert "| ✅ | <code>orders.<wbr>a</code> | strong on <code>fixpin-<wbr>a</code> |" in section
    assert f"| ❌ | {code(LONG_ID)} | survived on" in section
    (table,) = [table for table in tables_of(markdown) if len(table) == 3]
    assert minimum_width_px(table) <= PAGE_PX


@pytest.mark.parametrize(
    ("vet_exit", "warned"),
    [("0", False), ("2", True), ("-", False)],
    ids=["passed", "failed", "skipped"],
)
def test_a_pin_change_vet_did_not_pass_warns_what_merging_it_alone_does(
    vet_exit: str, warned: bool
) -> None:
    """New golden files before their fix: vet's baseline fails, and merged alone the pin makes
    every later change a reject. A vet that was skipped (another runner) warns of nothing."""
    summary = SummaryInput(
        Verdict(Posture.HUMAN_REVIEW, 0, "pin change: the pin owners review it"),
        None,
        pin_change=["pins/fixtures.json"],
        steps=[StepRow("vet A (fixpin-a)", vet_exit, "vet-a.json", ok=vet_exit == "0")],
    )
    markdown = render(summary)
    assert ("merged alone it makes every later change a reject at row 7" in markdown) is warned
    assert ("Merge it on its own" in markdown) is not warned


def _candidate(test_id: str, verdict: FlakeVerdict, **changes: Any) -> CandidateEvidence:
    modes = {
        RerunMode.ORIGINAL: ModeTally(4, 2, 0, "2 of 4 failed: 6.8 % to 93.2 % (two-sided, 95 %)"),
        RerunMode.ISOLATED: ModeTally(4, 0, 1, None),
    }
    fields: dict[str, Any] = {
        "id": test_id, "reason": "flake_entry", "property_ids": (), "worker": "main",
        "prefix": 3, "modes": modes, "verdict": verdict, "polluter": None,
        "inputs_changed": (), "unfinished": None, "proposal": None,
    }  # fmt: skip
    return CandidateEvidence(**{**fields, **changes})


def _flake_evidence(*candidates: CandidateEvidence) -> FlakeEvidenceLedger:
    return FlakeEvidenceLedger(
        ledger_id="ab" * 16, pin_id="fixpin-a", property_pin_id="pp", property_pin_sha256=DIGEST,
        fixture_digest=DIGEST, property_ledger_sha256=OTHER_DIGEST, head_revision="cd" * 20,
        command=("pytest",), confidence="0.95", reruns=4, budget_s=60, runs=9, duration_ms=4200,
        network=Network.BANNED, network_enforcement=Enforcement.NONE, sandbox_layers={},
        candidates=candidates, recorded_at="2026-01-01T00:00:00Z",
    )  # fmt: skip


def test_flake_evidence_shows_verdicts_a_proposal_to_paste_and_the_owners_part_apart() -> None:
    # An id from the change under review may hold backticks: the fence stays longer.
    hostile = "properties/test_x.py::test_random[````]"
    proposal = FlakeProposal(hostile, hostile, "FILL-IN", "FILL-IN", "non_deterministic")
    random = _candidate(hostile, FlakeVerdict.NON_DETERMINISTIC, proposal=proposal)
    victim = _candidate(
        "properties/test_x.py::test_victim", FlakeVerdict.ORDER_DEPENDENT_VICTIM,
        polluter="properties/test_x.py::test_polluter", inputs_changed=("fixtures/a.json",),
        unfinished="the budget ended first",
    )  # fmt: skip
    owned = _candidate(
        "properties/test_x.py::test_prop", FlakeVerdict.CONSISTENT_FAILURE,
        reason="property", property_ids=("orders.a",),
    )  # fmt: skip
    summary = SummaryInput(
        POSTURES["reject"],
        evidence(prop=prop_reading()),
        flake_evidence=FlakeEvidenceNote(_flake_evidence(random, victim, owned), ""),
    )
    markdown = render(summary)
    section = markdown.split("**Flake evidence**", 1)[1]
    ours, owners = section.split("**For the test owners (the property miss stands, row 7)\\:**")
    assert "**non\\_deterministic**" in ours
    assert "likely polluter: <code>properties/<wbr>test\\_<wbr>x.<wbr>py" in ours
    assert "unfinished: the budget ended first" in ours
    assert "isolated: no run reached it, 1 broke as a whole" in ours
    assert "answers for <code>orders.<wbr>a</code>" in owners
    assert "test\\_<wbr>prop" not in ours
    fenced = re.search(r"^(`{5,})json\n(.*)\n\1$", ours, re.MULTILINE)
    assert fenced is not None
    assert json.loads(fenced.group(2)) == encode(proposal)
    for table in tables_of(markdown):
        assert minimum_width_px(table) <= PAGE_PX, table


def test_flake_evidence_that_found_nothing_says_why() -> None:
    said = "not run: no candidates: no flake entry failed"
    summary = SummaryInput(
        POSTURES["review"],
        evidence(prop=prop_reading()),
        flake_evidence=FlakeEvidenceNote(None, said),
    )
    assert text(said) in render(summary).split("**Flake evidence**", 1)[1]
    assert "**Flake evidence**" not in render(SummaryInput(POSTURES["review"], None))
