"""`merge` end to end: each row of the table (SPEC 4.5) from ledgers the real commands wrote.

Only rows that need evidence no honest writer produces (a shared clock, a malformed or
foreign dual-pin ledger) edit a ledger by hand, and each says so.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import CliResult, RunCli, git, write_json
from helpers.example_run import (
    FLAKY_ID,
    KRONA_ROUNDING,
    MISSED_PROPERTY,
    OFF_BY_ONE,
    Run,
    cli,
    flake_entry,
    move_an_oracle,
    utc_today,
)

# Real pytest runs of the example: `clean_run` (conftest.py), shared with
# test_flake_observe.py on one worker through the group, and a few runs of this module's own.
pytestmark = [pytest.mark.xdist_group("clean-run"), pytest.mark.pytest_child]


def merge(
    run_cli: RunCli,
    run: Run,
    *extra: str | Path,
    fixture: str = "f_a.json",
    prop: str = "p_a.json",
    out: Path | None = None,
) -> tuple[CliResult, dict[str, Any]]:
    out = out or run.ledgers.parent / "decision" / "merge.json"
    result = run_cli(
        "merge", "--fixture-ledger", run / fixture, "--property-ledger", run / prop,
        "--out", out, *extra,
    )  # fmt: skip
    assert out.exists(), result.err
    decision: dict[str, Any] = json.loads(out.read_text())
    return result, decision


def all_checks(run: Run) -> list[str | Path]:
    """Every optional check merge offers, pointed at the run's real pins."""
    return [
        "--flake-pin", run.flake_pin, "--pin", run.repo / "pins/fixtures.json",
        "--root", run.repo, "--pins-dir", run.repo / "pins", "--base", run.base,
    ]  # fmt: skip


def assert_row(result: CliResult, decision: dict[str, Any], posture: str, row: int) -> None:
    assert (decision["posture"], decision["row"]) == (posture, row), decision["reason"]
    assert result.code == (1 if posture == "reject" else 0)
    assert f"merge: {posture} (row {row})" in result.out


def forge(path: Path, **change: Any) -> None:
    """Edit a real ledger by hand: only for evidence no honest writer produces."""
    document = json.loads(path.read_text())
    write_json(path, {**document, **change})


# --- row 1: F missing or invalid, or the tree moved after scoring ---------------------------


def test_row_1_fixture_ledger_missing(clean_run: Run, run_cli: RunCli) -> None:
    result, decision = merge(run_cli, clean_run, fixture="never_written.json")
    assert_row(result, decision, "reject", 1)
    assert decision["reason"].startswith("do not score: fixture ledger")
    assert decision["inputs"]["fixture"] is None


def test_row_1_fixture_ledger_malformed(work: Run, run_cli: RunCli) -> None:
    (work / "f_a.json").write_text('{"kind": "fixture"}\n')
    result, decision = merge(run_cli, work)
    assert_row(result, decision, "reject", 1)
    expected = hashlib.sha256((work / "f_a.json").read_bytes()).hexdigest()
    assert decision["inputs"]["fixture"] == expected


@pytest.mark.parametrize("tree_change", ["edit a pinned fixture", "add an unpinned fixture"])
def test_row_1_tree_moved_after_scoring(work: Run, run_cli: RunCli, tree_change: str) -> None:
    if tree_change == "edit a pinned fixture":
        pinned = work.repo / "fixtures/orders_min.json"
        pinned.write_bytes(pinned.read_bytes() + b"\n")
    else:
        (work.repo / "fixtures/orders_extra.json").write_text('{"orders": []}\n')
    result, decision = merge(
        run_cli, work, "--pin", work.repo / "pins/fixtures.json", "--root", work.repo
    )
    assert_row(result, decision, "reject", 1)
    assert "pins/fixtures.json" in decision["reason"]


def test_row_1_without_a_reviewed_digest_names_the_fixture_that_differs_from_the_base(
    work: Run, run_cli: RunCli
) -> None:
    pin = work.repo / "pins/fixtures.json"
    document = json.loads(pin.read_text())
    del document["digest"]
    write_json(pin, document)
    pinned = work.repo / "fixtures/orders_min.json"
    pinned.write_bytes(pinned.read_bytes() + b"\n")
    # The pin edit is a pin mutation too (row 4); row 1 comes first.
    result, decision = merge(
        run_cli, work, "--pin", pin, "--root", work.repo,
        "--pins-dir", work.repo / "pins", "--base", work.base,
    )  # fmt: skip
    assert_row(result, decision, "reject", 1)
    assert "pinned fixture fixtures/orders_min.json differs from" in decision["reason"]
    assert "no reviewed digest" in decision["reason"]


# --- row 2: P missing or invalid, or not scored on F's digest ------------------------------


def test_row_2_property_ledger_of_another_digest(clean_run: Run, run_cli: RunCli) -> None:
    """F from pin B, P scored on pin A: both real, they do not describe one tree."""
    result, decision = merge(run_cli, clean_run, fixture="f_b.json", prop="p_a.json")
    assert_row(result, decision, "reject", 2)
    assert "not the fixture ledger's" in decision["reason"]


def test_row_2_property_ledger_missing(clean_run: Run, run_cli: RunCli) -> None:
    result, decision = merge(run_cli, clean_run, prop="never_written.json")
    assert_row(result, decision, "reject", 2)
    assert decision["inputs"]["property"] is None


# --- row 3: two ledgers share a recorded_at ------------------------------------------------


def test_row_3_shared_recorded_at(work: Run, run_cli: RunCli) -> None:
    # Forged: no writer copies a clock, so the shared stamp is written by hand.
    stamp = json.loads((work / "f_a.json").read_text())["recorded_at"]
    forge(work / "p_a.json", recorded_at=stamp)
    result, decision = merge(run_cli, work, "--dual-pin", work / "d.json")
    assert_row(result, decision, "reject", 3)
    assert stamp in decision["reason"]
    assert decision["recorded_at"] != stamp


# --- row 4: pin mutation ------------------------------------------------------------------


def append_a_flake_id(run: Run) -> None:
    pin = json.loads(run.flake_pin.read_text())
    first = pin["flakes"][0]
    review_by = datetime.date.fromisoformat(first["review_by"])
    pin["flakes"].append(
        flake_entry(MISSED_PROPERTY, "properties/test_orders.py::test_total_matches_lines",
                    first["accepted_revision"], review_by)
    )  # fmt: skip
    write_json(run.flake_pin, pin)


@pytest.mark.parametrize(
    ("mutation", "listed"),
    [
        ("append a flake id to pins/flakes.json", "pins/flakes.json"),
        ("add a pin, untracked", "pins/fixtures_c.json"),
        ("remove a pin, staged", "pins/fixtures_b.json"),
    ],
)
def test_row_4_pin_mutation_against_base(
    work: Run, run_cli: RunCli, mutation: str, listed: str
) -> None:
    if mutation.startswith("append"):
        append_a_flake_id(work)
    elif mutation.startswith("add"):
        (work.repo / listed).write_text((work.repo / "pins/fixtures_b.json").read_text())
    else:
        git(work.repo, "rm", "-q", listed)
    extra = ["--dual-pin", work / "d.json", "--flake-ledger", work / "fl.json", *all_checks(work)]
    result, decision = merge(run_cli, work, *extra)
    assert_row(result, decision, "reject", 4)
    assert decision["reason"].startswith("pin mutation: ")
    assert listed in decision["reason"]


def test_row_4_flake_ledger_from_another_run(work: Run, run_cli: RunCli) -> None:
    """A real flake ledger, but written against an earlier property ledger of the same tree."""
    work.properties("p_rerun.json", "f_a.json")
    result, decision = merge(
        run_cli, work, "--dual-pin", work / "d.json", "--flake-ledger", work / "fl.json",
        prop="p_rerun.json",
    )  # fmt: skip
    assert_row(result, decision, "reject", 4)
    assert "is not about this run" in decision["reason"]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"test_id": "orders.other.timeout"}, "does not list"),
        ({"review_by": (utc_today() - datetime.timedelta(days=1)).isoformat()}, "has passed"),
    ],
)
def test_row_4_flake_ledger_the_flake_pin_does_not_back(
    work: Run, run_cli: RunCli, change: dict[str, str], fragment: str
) -> None:
    pin = json.loads(work.flake_pin.read_text())
    pin["flakes"][0].update(change)
    flake_pin = work.other_pin("flakes.json")
    write_json(flake_pin, pin)
    extra: list[str | Path] = ["--dual-pin", work / "d.json", "--flake-ledger", work / "fl.json"]
    result, decision = merge(run_cli, work, *extra, "--flake-pin", flake_pin)
    assert_row(result, decision, "reject", 4)
    assert FLAKY_ID in decision["reason"]
    assert fragment in decision["reason"]


# --- row 5: the oracles moved ---------------------------------------------------------------


def test_row_5_oracle_moved(work: Run, run_cli: RunCli) -> None:
    move_an_oracle(work)
    result, decision = merge(run_cli, work, prop="p_moved.json")
    assert_row(result, decision, "reject", 5)
    assert "properties/test_orders.py" in decision["reason"]


# --- row 6: drift, or a dual-pin ledger that is not about this run --------------------------


def test_row_6_fixture_drift(work: Run, run_cli: RunCli) -> None:
    """The patch mishandles krona: it passes on the euro pin and fails on the krona pin."""
    work.patch_product(KRONA_ROUNDING)
    work.properties("p_a2.json", "f_a.json")
    work.properties("p_b2.json", "f_b.json", pin="pins/fixtures_b.json", expect=1)
    cli("dual-pin", "--left", work / "p_a2.json", "--right", work / "p_b2.json",
        "--out", work / "drift.json", expect=3)  # fmt: skip
    result, decision = merge(run_cli, work, "--dual-pin", work / "drift.json", prop="p_a2.json")
    assert_row(result, decision, "reject", 6)
    assert decision["reason"].startswith("file fixture drift: ")
    assert MISSED_PROPERTY in decision["reason"]


def test_row_6_dual_pin_ledger_about_other_digests(work: Run, run_cli: RunCli) -> None:
    # Forged: a real dual-pin ledger can only cite digests its two property ledgers scored.
    forge(work / "d.json", left_digest="0" * 64, right_digest="1" * 64)
    result, decision = merge(run_cli, work, "--dual-pin", work / "d.json")
    assert_row(result, decision, "reject", 6)
    assert "not about this run" in decision["reason"]


def test_row_6_dual_pin_ledger_malformed(work: Run, run_cli: RunCli) -> None:
    (work / "d.json").write_text("not json\n")
    result, decision = merge(run_cli, work, "--dual-pin", work / "d.json")
    assert_row(result, decision, "reject", 6)
    assert decision["inputs"]["dual_pin"] == hashlib.sha256(b"not json\n").hexdigest()


# --- row 7: a property is not pass ---------------------------------------------------------


def test_row_7_property_miss_stands(work: Run, run_cli: RunCli) -> None:
    """Both pins agree that the property fails: the miss is the patch's, not the fixtures'."""
    work.patch_product(OFF_BY_ONE)
    work.properties("p_miss.json", "f_a.json", expect=1)
    work.properties("p_miss_b.json", "f_b.json", pin="pins/fixtures_b.json", expect=1)
    cli("dual-pin", "--left", work / "p_miss.json", "--right", work / "p_miss_b.json",
        "--out", work / "agree_on_fail.json")  # fmt: skip
    extra = ["--dual-pin", work / "agree_on_fail.json", *all_checks(work)]
    result, decision = merge(run_cli, work, *extra, prop="p_miss.json")
    assert_row(result, decision, "reject", 7)
    # The reason names the tests behind the miss: the posture line says what to fix.
    test = "properties/test_orders.py::test_total_matches_lines"
    failing = f"{test}[orders_boundary.json], {test}[orders_min.json]"
    assert decision["reason"] == (
        f"property miss stands: {MISSED_PROPERTY} is fail (failing: {failing})"
    )
    assert f"merge: reject (row 7): {decision['reason']}" in result.out


# --- rows 8 and 9: the postures that let a person look ------------------------------------


@pytest.mark.parametrize("dual_pin", [None, "d_not_run.json"])
def test_row_8_one_pin_is_weaker_evidence(
    clean_run: Run, run_cli: RunCli, dual_pin: str | None
) -> None:
    extra: list[str | Path] = ["--dual-pin", clean_run / dual_pin] if dual_pin else []
    result, decision = merge(run_cli, clean_run, *extra, *all_checks(clean_run))
    assert_row(result, decision, "human_review", 8)


def test_row_9_review_with_a_flake_note(clean_run: Run, run_cli: RunCli) -> None:
    extra: list[str | Path] = [
        "--dual-pin",
        clean_run / "d.json",
        "--flake-ledger",
        clean_run / "fl.json",
    ]
    result, decision = merge(run_cli, clean_run, *extra, *all_checks(clean_run))
    assert_row(result, decision, "review", 9)
    assert "a flake note is not a pass" in decision["reason"]


# --- the decision file and the reports --------------------------------------------------------


def test_decision_records_each_input_and_its_own_clock(clean_run: Run, run_cli: RunCli) -> None:
    extra: list[str | Path] = [
        "--dual-pin",
        clean_run / "d.json",
        "--flake-ledger",
        clean_run / "fl.json",
    ]
    _, decision = merge(run_cli, clean_run, *extra)
    assert list(decision) == ["kind", "ledger_id", "posture", "row", "reason", "inputs",
                              "recorded_at"]  # fmt: skip

    def sha(name: str) -> str:
        return hashlib.sha256((clean_run / name).read_bytes()).hexdigest()

    assert decision["inputs"] == {
        "fixture": sha("f_a.json"),
        "property": sha("p_a.json"),
        "dual_pin": sha("d.json"),
        "flakes": [sha("fl.json")],
        "flake_evidence": None,
    }
    stamps = {json.loads((clean_run / n).read_text())["recorded_at"]
              for n in ("f_a.json", "p_a.json", "d.json", "fl.json")}  # fmt: skip
    assert decision["recorded_at"] not in stamps


def test_absent_inputs_are_null_and_empty(clean_run: Run, run_cli: RunCli) -> None:
    _, decision = merge(run_cli, clean_run)
    inputs = decision["inputs"]
    assert (inputs["dual_pin"], inputs["flakes"], inputs["flake_evidence"]) == (None, [], None)


def test_stdout_names_each_ledger_and_the_row(clean_run: Run, run_cli: RunCli) -> None:
    result, _ = merge(run_cli, clean_run, "--dual-pin", clean_run / "d.json")
    lines = result.out.splitlines()
    assert lines[0].startswith(f"fixture ledger {clean_run / 'f_a.json'}: digest ")
    assert lines[1].startswith(f"property ledger {clean_run / 'p_a.json'}: ")
    assert "orders.id.stable: pass (2 tests)" in lines[1]
    assert lines[2].endswith("; agree")
    assert lines[3].startswith("merge: review (row 9): ")


def test_summary_md_and_github_step_summary(
    clean_run: Run, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("## an earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    summary = tmp_path / "report" / "summary.md"
    merge(run_cli, clean_run, "--dual-pin", clean_run / "d.json", "--summary-md", summary)
    text = summary.read_text()
    assert text.startswith("### 🔎 three-ledger merge: review (row 9): a person reads the diff")
    assert "| fixture | <code>" in text
    assert (
        "| ✅ | <code>orders.<wbr>total.<wbr>non\\_<wbr>negative</code> | pass, 2 tests |" in text
    )
    assert "fixpin-orders-a and fixpin-orders-b agree" in text
    assert step_summary.read_text() == "## an earlier step\n\n" + text


@functools.cache
def _watched_opens() -> dict[str, list[str]]:
    """Files watched for open(), each with the mode of every open() of it in this process.

    An audit hook sees every open() made in-process, by any module, without standing in for
    anything; a hook cannot be removed, so there is one for the whole process.
    """
    watched: dict[str, list[str]] = {}

    def on_audit_event(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and watched and isinstance(args[0], str | bytes | os.PathLike):
            opens = watched.get(os.path.abspath(os.fsdecode(args[0])))
            if opens is not None:
                opens.append(str(args[1]))

    sys.addaudithook(on_audit_event)
    return watched


@contextlib.contextmanager
def opens_of(path: Path) -> Iterator[list[str]]:
    """The mode of each open() of PATH in this process while the block runs."""
    watched, key = _watched_opens(), os.path.abspath(path)
    watched[key] = []
    try:
        yield watched[key]
    finally:
        del watched[key]


def test_the_flake_pin_is_read_once_though_the_table_and_both_summaries_use_it(
    clean_run: Run, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step_summary.md"))
    with opens_of(clean_run.flake_pin) as opens:
        result, decision = merge(
            run_cli, clean_run, "--dual-pin", clean_run / "d.json", *all_checks(clean_run),
            "--summary-md", tmp_path / "summary.md",
        )  # fmt: skip
    assert_row(result, decision, "review", 9)
    assert (tmp_path / "step_summary.md").read_text() == (tmp_path / "summary.md").read_text()
    assert len(opens) == 1, opens


def test_error_annotation_on_reject_in_github_actions(
    clean_run: Run, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result, decision = merge(run_cli, clean_run, fixture="f_b.json")
    errors = [line for line in result.out.splitlines() if line.startswith("::error")]
    assert errors == [f"::error::three-ledger merge: reject (row 2): {decision['reason']}"]


@pytest.mark.parametrize(("github_actions", "fixture"), [("true", "f_a.json"), (None, "f_b.json")])
def test_no_error_annotation_otherwise(
    clean_run: Run,
    run_cli: RunCli,
    monkeypatch: pytest.MonkeyPatch,
    github_actions: str | None,
    fixture: str,
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    if github_actions:
        monkeypatch.setenv("GITHUB_ACTIONS", github_actions)
    result, _ = merge(run_cli, clean_run, fixture=fixture)
    assert "::error" not in result.out + result.err


# --- what merge refuses to write ------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--pins-dir", "--flake-pin", "--pin"])
def test_out_inside_a_pin_folder_is_refused(clean_run: Run, run_cli: RunCli, flag: str) -> None:
    out = clean_run.repo / "pins" / "merge.json"
    given = {
        "--pins-dir": ["--pins-dir", clean_run.repo / "pins", "--base", clean_run.base],
        "--flake-pin": ["--flake-pin", clean_run.flake_pin],
        "--pin": ["--pin", clean_run.repo / "pins/fixtures.json", "--root", clean_run.repo],
    }[flag]
    result = run_cli("merge", "--fixture-ledger", clean_run / "f_a.json",
                     "--property-ledger", clean_run / "p_a.json", "--out", out, *given)  # fmt: skip
    assert result.code == 2
    assert str(out) in result.first_error_line
    assert not out.exists()


def test_out_over_an_input_is_refused(clean_run: Run, run_cli: RunCli) -> None:
    before = (clean_run / "p_a.json").read_bytes()
    inputs = [
        "--fixture-ledger",
        clean_run / "f_a.json",
        "--property-ledger",
        clean_run / "p_a.json",
    ]
    result = run_cli("merge", *inputs, "--out", clean_run / "p_a.json")
    assert result.code == 2
    assert (clean_run / "p_a.json").read_bytes() == before


def test_summary_over_an_input_is_refused(clean_run: Run, run_cli: RunCli, tmp_path: Path) -> None:
    before = (clean_run / "f_a.json").read_bytes()
    result = run_cli("merge", "--fixture-ledger", clean_run / "f_a.json",
                     "--property-ledger", clean_run / "p_a.json", "--out", tmp_path / "m.json",
                     "--summary-md", clean_run / "f_a.json")  # fmt: skip
    assert result.code == 2
    assert "--summary-md" in result.first_error_line
    assert (clean_run / "f_a.json").read_bytes() == before
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("half", [["--pins-dir", "pins"], ["--base", "HEAD"]])
def test_pins_dir_and_base_go_together(run_cli: RunCli, tmp_path: Path, half: list[str]) -> None:
    result = run_cli("merge", "--fixture-ledger", "f.json", "--property-ledger", "p.json",
                     "--out", tmp_path / "m.json", *half)  # fmt: skip
    assert result.code == 64
    assert not (tmp_path / "m.json").exists()
