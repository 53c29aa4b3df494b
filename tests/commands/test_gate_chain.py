"""`gate` in-process with a stand-in for pytest: the chain, its files and its reports, fast.

The stand-in writes what pytest with the plugin would (the tripwire's lines, a harness
measurement, one result per test), so each case runs in a second; tests/e2e/test_gate.py
runs the same chain on the demo's scenarios with real pytest children.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import CI_VARIABLES, PLUGIN_STAND_IN, RunCli, git
from three_ledger.demo import repository as demo

TEST_FILE = "properties/test_orders.py"
PASSING = {
    f"{TEST_FILE}::test_total_non_negative": "pass",
    f"{TEST_FILE}::test_total_matches_lines": "pass",
    f"{TEST_FILE}::test_id_stable": "pass",
    f"{TEST_FILE}::test_round_trip": "pass",
    f"{TEST_FILE}::test_boundary_timeout": "pass",
}
WRITE_RESULTS = """
with open(os.environ["THREE_LEDGER_RESULTS"], "a") as _out:
    for _id, _outcome in json.loads(sys.argv[1]).items():
        _ids = ["orders.json.round_trip"] if _id.endswith("test_round_trip") else []
        _out.write(json.dumps({"id": _id, "property_ids": _ids, "outcome": _outcome}) + "\\n")
"""


def stand_in(outcomes: dict[str, str]) -> str:
    return shlex.join([sys.executable, "-c", PLUGIN_STAND_IN + WRITE_RESULTS,
                       json.dumps(outcomes)])  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    return repo, demo.build_repository(repo)


@pytest.fixture(autouse=True)
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in CI_VARIABLES:
        monkeypatch.delenv(key, raising=False)


def gate(run_cli: RunCli, repo: Path, command: str, *extra: str | Path) -> tuple[int, str, Path]:
    out = repo.parent / "out"
    result = run_cli(
        "gate", "--pins-dir", repo / "pins", "--root", repo, "--command", command,
        "--out-dir", out, "--summary-md", out / "summary.md",
        "--verdict-junit", out / "verdict.xml", "--verdict-dotenv", out / "verdict.env", *extra,
    )  # fmt: skip
    return result.code, result.out, out


def decision(out: Path) -> tuple[str, int, str]:
    document = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    return document["posture"], document["row"], document["reason"]


def test_two_pins_that_pass_and_agree_are_review(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, base = project
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 0, stdout
    assert decision(out)[:2] == ("review", 9)
    names = {path.name for path in out.iterdir()}
    assert {"fixture-a.json", "fixture-b.json", "property-a.json", "property-b.json",
            "dual-pin.json", "decision.json", "summary.md", "verdict.xml"} <= names  # fmt: skip
    assert (out / "verdict.env").read_text().startswith("THREE_LEDGER_POSTURE=review\n")
    suites = {suite.get("name"): suite for suite in ET.parse(out / "verdict.xml").getroot()}
    assert suites["three-ledger.properties"].get("tests") == "4"
    assert suites["three-ledger.properties"].get("failures") == "0"
    assert suites["three-ledger.gate"].get("tests") == "6"


def test_a_failing_property_is_a_reject_with_annotations_in_github(
    project: tuple[Path, str], run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, base = project
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    failing = {**PASSING, f"{TEST_FILE}::test_id_stable": "fail"}
    code, stdout, out = gate(run_cli, repo, stand_in(failing), "--base", base)
    assert code == 1
    assert decision(out)[:2] == ("reject", 7)
    assert "::error title=three-ledger reject (row 7)::property miss stands" in stdout
    assert summary.read_text().startswith("### ❌ three-ledger gate: reject (row 7)")
    verdict = ET.parse(out / "verdict.xml").getroot()
    failed = [
        case.get("name") for case in verdict.iter("testcase") if case.find("failure") is not None
    ]
    assert "orders.id.stable" in failed
    assert "merge" in failed


def test_the_console_names_the_tests_behind_a_miss_and_the_failures_outside_every_property(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    # A failure no property covers changes no posture; on the console it is named all the
    # same, before the posture line, as `merge` names it.
    repo, base = project
    outcomes = {
        **PASSING,
        f"{TEST_FILE}::test_id_stable": "fail",
        f"{TEST_FILE}::test_extra": "fail",
    }
    code, stdout, out = gate(run_cli, repo, stand_in(outcomes), "--base", base)
    assert (code, decision(out)[:2]) == (1, ("reject", 7))
    lines = stdout.splitlines()
    posture = next(at for at, line in enumerate(lines) if line.startswith("posture: "))
    miss = lines.index("orders.id.stable is fail:")
    assert lines[miss + 1] == f"  {TEST_FILE}::test_id_stable (fail)"
    outside = lines.index("1 test outside every property failed:")
    assert lines[outside + 1] == f"  {TEST_FILE}::test_extra"
    assert miss < outside < posture


def test_a_miss_behind_many_tests_names_three_and_counts_the_rest_everywhere(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    # The ledger names the first three tests behind a miss and counts them all: the console,
    # the posture's reason, the summary and the JUnit verdict say how many more there are.
    repo, base = project
    family = {f"{TEST_FILE}::test_id_stable[{n}]": "fail" for n in range(5)}
    outcomes = {**PASSING, **family}
    del outcomes[f"{TEST_FILE}::test_id_stable"]
    code, stdout, out = gate(run_cli, repo, stand_in(outcomes), "--base", base)
    assert (code, decision(out)[:2]) == (1, ("reject", 7))
    ledger = json.loads((out / "property-a.json").read_text(encoding="utf-8"))
    assert len(ledger["failing_tests"]["orders.id.stable"]) == 3
    assert ledger["failing_counts"] == {"orders.id.stable": 5}
    lines = stdout.splitlines()
    miss = lines.index("orders.id.stable is fail:")
    assert lines[miss + 1 : miss + 5] == [
        *(f"  {TEST_FILE}::test_id_stable[{n}] (fail)" for n in range(3)),
        "  ... and 2 more",
    ]
    assert decision(out)[2].endswith(f"{TEST_FILE}::test_id_stable[2] and 2 more)")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "stable\\[2\\]</code> (fail) and 2 more |" in summary
    verdict = ET.parse(out / "verdict.xml").getroot()
    (case,) = [c for c in verdict.iter("testcase") if c.get("name") == "orders.id.stable"]
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message", "").endswith("test_id_stable[2] and 2 more")


def test_a_failure_outside_every_property_leaves_the_posture_and_is_shown(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, base = project
    code, stdout, out = gate(
        run_cli, repo, stand_in({**PASSING, f"{TEST_FILE}::test_extra": "fail"}), "--base", base
    )
    assert (code, decision(out)[:2]) == (0, ("review", 9))
    assert f"1 test outside every property failed:\n  {TEST_FILE}::test_extra\n" in stdout


def test_a_refused_step_shows_its_hint_under_its_console_line(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    # A ROOT one folder too deep: the pinned folder is missing there. How to fix it is the
    # refusal's hint, on the console under the step's line, not in its log alone.
    repo, base = project
    result = run_cli(
        "gate", "--pins-dir", repo / "pins", "--root", repo / "properties", "--command",
        stand_in(PASSING), "--out-dir", repo.parent / "out", "--base", base,
    )  # fmt: skip
    lines = result.out.splitlines()
    step = next(at for at, line in enumerate(lines) if line.startswith("digest A "))
    assert ": exit 2: " in lines[step]
    hint = lines[step + 1]
    assert hint.startswith("  fixtures/ exists under ")
    assert "pinned paths are relative to --root" in hint
    assert ", so give --root " in hint


def test_a_fired_flake_is_observed_and_noted(project: tuple[Path, str], run_cli: RunCli) -> None:
    repo, base = project
    fired = {**PASSING, f"{TEST_FILE}::test_boundary_timeout": "fail"}
    code, stdout, out = gate(run_cli, repo, stand_in(fired), "--base", base)
    assert code == 0, stdout
    assert json.loads((out / "flake-1.json").read_text())["observed"] == "fail"
    assert "**Flake notes**" in (out / "summary.md").read_text()


def test_a_dual_pin_ledger_that_should_exist_and_does_not_is_a_reject(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    """Pin B's run dies (pytest's internal error: properties exits 4, no ledger), so dual-pin
    cannot compare; the missing dual-pin ledger is a reject, never one pin fewer."""
    repo, base = project
    dies_on_b = "if os.environ['THREE_LEDGER_PIN_ID'] == 'fixpin-orders-b': sys.exit(3)\n"
    command = shlex.join([sys.executable, "-c", PLUGIN_STAND_IN + dies_on_b + WRITE_RESULTS,
                          json.dumps(PASSING)])  # fmt: skip
    code, stdout, out = gate(run_cli, repo, command, "--base", base)
    assert code == 1
    posture, row, reason = decision(out)
    assert (posture, row) == ("reject", 6)
    assert reason.startswith("the dual-pin ledger is not about this run: ")
    assert "properties B (fixpin-orders-b): exit 4: " in stdout
    assert "dual-pin: not run: no property ledger property-b.json" in stdout
    assert not (out / "dual-pin.json").exists()


def test_a_moved_fixture_is_annotated_with_its_file(
    project: tuple[Path, str], run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = project
    moved = repo / "fixtures" / "orders_min.json"
    moved.write_bytes(moved.read_bytes() + b" ")
    git(repo, "commit", "-q", "-am", "a fixture byte")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 1
    assert decision(out)[:2] == ("reject", 1)
    assert "::error file=fixtures/orders_min.json,title=three-ledger%3A fixture moved::" in stdout


def test_an_edited_oracle_is_annotated(
    project: tuple[Path, str], run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = project
    oracle = repo / TEST_FILE
    oracle.write_text(oracle.read_text() + "\n# weakened\n")
    # Beside a product edit: an edit to tests alone goes to the test owners unscored.
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n")
    git(repo, "commit", "-q", "-am", "an oracle edit")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 1
    assert decision(out)[:2] == ("reject", 5)
    assert f"::error file={TEST_FILE},title=three-ledger%3A oracle changed::" in stdout


def test_a_pin_edit_mixed_into_a_change_is_annotated_as_mutation(
    project: tuple[Path, str], run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = project
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n")
    flakes = repo / "pins" / "flakes.json"
    flakes.write_text(flakes.read_text().replace('"note": "', '"note": "Renewed. ', 1))
    git(repo, "commit", "-q", "-am", "code and a pin")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 1
    assert decision(out)[:2] == ("reject", 4)
    assert "title=three-ledger%3A pin changed::pins/flakes.json: pin mutation" in stdout


def test_no_base_is_a_reject_saying_why_with_every_report(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, _ = project
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING))
    assert code == 1
    posture, row, reason = decision(out)
    assert (posture, row) == ("reject", 0)
    assert reason.startswith("gate inputs unusable: no base revision: pass --base REV")
    assert (out / "verdict.env").read_text().startswith("THREE_LEDGER_POSTURE=reject\n")
    # Nothing was read, not even the properties pin: the decision itself is the failure.
    (case,) = ET.parse(out / "verdict.xml").getroot().iter("testcase")
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("reject (row 0): gate inputs unusable")
    assert "posture: reject (row 0)" in stdout


def without_reviewed_digests(repo: Path) -> str:
    """The demo's fixture pins with their reviewed `digest` removed, committed: the new base."""
    for name in ("fixtures.json", "fixtures_b.json"):
        pin = repo / "pins" / name
        document = json.loads(pin.read_text(encoding="utf-8"))
        del document["digest"]
        pin.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "fixture pins without a reviewed digest")
    return git(repo, "rev-parse", "HEAD")


def gate_on_a_moved_fixture(run_cli: RunCli, repo: Path, base: str) -> tuple[str, str]:
    """A quantity changed in pin A's fixtures, committed, then gate: reject at row 1. Its stdout
    and the decision's reason."""
    moved = repo / "fixtures" / "orders_min.json"
    moved.write_text(moved.read_text().replace('"quantity": 1', '"quantity": 2', 1))
    git(repo, "commit", "-q", "-am", "a fixture moved with the code")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 1, stdout
    posture, row, reason = decision(out)
    assert (posture, row) == ("reject", 1), reason
    return stdout, reason


def test_without_reviewed_digests_a_moved_fixture_is_row_1_naming_it(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, _ = project
    stdout, reason = gate_on_a_moved_fixture(run_cli, repo, without_reviewed_digests(repo))
    assert "digest A (fixpin-orders-a): exit 2: " in stdout
    assert "pinned fixture fixtures/orders_min.json differs from" in stdout
    assert "no reviewed digest" in stdout
    assert "digest B (fixpin-orders-b): exit 0" in stdout
    assert reason.startswith("do not score: fixture ledger ")
    # The digest step's refusal, which names the file, is said once.
    assert reason.count("pinned fixture fixtures/orders_min.json differs from") == 1


def test_with_reviewed_digests_a_moved_fixture_is_row_1_as_before(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, base = project
    stdout, reason = gate_on_a_moved_fixture(run_cli, repo, base)
    assert "differs from the reviewed digest" in stdout
    assert "no reviewed digest" not in stdout
    assert "; the tree itself is refused, naming: " in reason
    assert reason.count("differs from the reviewed digest") == 1
    assert f"moved since {base}: fixtures/orders_min.json" in reason


def test_without_reviewed_digests_a_change_that_leaves_the_fixtures_is_review(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, _ = project
    base = without_reviewed_digests(repo)
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n# a comment\n")
    git(repo, "commit", "-q", "-am", "a harmless edit")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert code == 0, stdout
    assert decision(out)[:2] == ("review", 9)


# --- every report names the cause ------------------------------------------------------------


def moved_fixture(repo: Path) -> None:
    moved = repo / "fixtures" / "orders_min.json"
    moved.write_text(moved.read_text().replace('"quantity": 1', '"quantity": 2', 1))


def stray_bytecode(repo: Path) -> None:
    """properties refuses bytecode the change brings: it writes no property ledger."""
    (repo / "stray.pyc").write_bytes(b"\x00" * 16)
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n# a comment\n")


def mixed_pin_edit(repo: Path) -> None:
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n")
    flakes = repo / "pins" / "flakes.json"
    flakes.write_text(flakes.read_text().replace('"note": "', '"note": "Renewed. ', 1))


def weakened_oracle(repo: Path) -> None:
    oracle = repo / TEST_FILE
    oracle.write_text(oracle.read_text() + "\n# weakened\n")
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n")


def plain(markdown_line: str) -> str:
    """A Markdown line as it reads: escapes and zero-width spaces gone."""
    return markdown_line.replace("\\", "").replace("\u200b", "")


REFUSED = "properties A (fixpin-orders-a) refused (exit 2): bytecode"
PIN_EDIT = "pin mutation: pins added, changed or removed against"


@pytest.mark.parametrize(
    ("change", "row", "headline", "posture_line", "junit"),
    [
        # No property scored: every property's case says why, never "no test result matched".
        (moved_fixture, 1, "fixture moved: fixtures/orders_min.json",
         "moved since {base}: fixtures/orders_min.json",
         ("missing: not scored: fixture moved: fixtures/orders_min.json", 4)),
        (stray_bytecode, 2, REFUSED, "properties A (fixpin-orders-a) exited 2: bytecode",
         (f"missing: not scored: {REFUSED}", 4)),
        # Scored, but under an edited pin: merge's case names the pin.
        (mixed_pin_edit, 4, PIN_EDIT, f"{PIN_EDIT} {{base}}: pins/flakes.json",
         (f"exit 1: reject (row 4): {PIN_EDIT} {{base}}: pins/flakes.json", 1)),
        (weakened_oracle, 5, f"oracles moved ({TEST_FILE})", f"oracles moved ({TEST_FILE})",
         ("not evidence (oracles moved): recorded pass, which says nothing here", 4)),
    ],
    ids=["moved-fixture", "refused-step", "pin-edit-with-code", "oracles-moved"],
)  # fmt: skip
def test_a_reject_names_its_cause_in_the_posture_line_the_headline_and_the_junit_verdict(
    project: tuple[Path, str],
    run_cli: RunCli,
    change: Callable[[Path], None],
    row: int,
    headline: str,
    posture_line: str,
    junit: tuple[str, int],
) -> None:
    repo, base = project
    change(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the change")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base)
    assert (code, decision(out)[:2]) == (1, ("reject", row))
    said = next(line for line in stdout.splitlines() if line.startswith("posture: "))
    assert said.startswith(f"posture: reject (row {row}): ")
    assert posture_line.format(base=base) in said
    first = plain((out / "summary.md").read_text(encoding="utf-8").splitlines()[0])
    assert first.startswith(f"### ❌ three-ledger gate: reject (row {row}): ")
    assert headline in first
    failures = [
        failure.get("message", "")
        for failure in ET.parse(out / "verdict.xml").getroot().iter("failure")
    ]
    prefix, count = junit
    named = [message for message in failures if message.startswith(prefix.format(base=base))]
    assert len(named) == count, failures


# --- gate --flake-evidence: evidence after the chain's steps, the posture untouched --------

FLAKY = f"{TEST_FILE}::test_boundary_timeout"
FIRED = {**PASSING, FLAKY: "fail"}
# flake-evidence's reruns measure no harness (THREE_LEDGER_HARNESS is unset in them).
HARNESS = 'open(os.environ["THREE_LEDGER_HARNESS"], "w")'
assert HARNESS in PLUGIN_STAND_IN
RERUNNABLE = PLUGIN_STAND_IN.replace(
    HARNESS, 'open(os.environ.get("THREE_LEDGER_HARNESS", os.devnull), "w")'
)


def rerunnable(outcomes: dict[str, str]) -> str:
    return shlex.join([sys.executable, "-c", RERUNNABLE + WRITE_RESULTS, json.dumps(outcomes)])


FLAG = ("--flake-evidence", "--flake-reruns", "1", "--flake-budget-s", "60")


def test_a_fired_flake_that_fails_every_rerun_is_no_flake_note(
    project: tuple[Path, str], run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The red team's `slowflake`: a regression under a test on the flake pin was `review`
    with a flake note, though the gate's own reruns found it failing every time."""
    repo, base = project
    code, stdout, out = gate(run_cli, repo, rerunnable(FIRED), "--base", base)
    assert (code, decision(out)[:2]) == (0, ("review", 9))
    assert not (out / "flake_evidence.json").exists()
    assert "flake-evidence" not in (out / "summary.md").read_text()
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    code, stdout, out = gate(run_cli, repo, rerunnable(FIRED), "--base", base, *FLAG)
    assert (code, decision(out)[:2]) == (0, ("human_review", 8))
    assert decision(out)[2].startswith(
        "a flake note the reruns contradict: orders.boundary.timeout failed every rerun, in "
        "order and alone (flake-evidence: consistent_failure), which no flakiness explains"
    )
    evidence_sha = hashlib.sha256((out / "flake_evidence.json").read_bytes()).hexdigest()
    assert json.loads((out / "decision.json").read_text())["inputs"]["flake_evidence"] == (
        evidence_sha
    )
    evidence = json.loads((out / "flake_evidence.json").read_text())
    assert evidence["kind"] == "flake_evidence"
    (candidate,) = evidence["candidates"]
    # The stand-in fails the flaky test in every run: the same in each mode.
    assert (candidate["id"], candidate["reason"]) == (FLAKY, "flake_entry")
    assert candidate["verdict"] == "consistent_failure"
    assert f"{FLAKY}: consistent_failure" in stdout
    assert "original: 1 of 1 failed" in stdout
    assert "(flake evidence is for people: only a flake note it contradicts moves the posture)" in (
        stdout
    )
    summary = step_summary.read_text()
    assert "**Flake evidence**" in summary
    assert "consistent\\_failure" in summary
    assert (out / "flake_evidence.log").is_file()
    steps = {case.get("name"): case for case in ET.parse(out / "verdict.xml").getroot().iter()}
    assert steps["flake-evidence"].find("failure") is None


def test_without_candidates_no_evidence_ledger_is_written_and_it_says_so(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    repo, base = project
    out = repo.parent / "out"
    out.mkdir()
    # An earlier run's evidence must not pass for this run's.
    (out / "flake_evidence.json").write_text("{}")
    code, stdout, out = gate(run_cli, repo, stand_in(PASSING), "--base", base, *FLAG)
    assert code == 0, stdout
    assert decision(out)[:2] == ("review", 9)
    assert not (out / "flake_evidence.json").exists()
    said = "flake-evidence: not run: no candidates: no flake entry failed, no property failed"
    assert said in stdout
    summary = (out / "summary.md").read_text()
    assert "**Flake evidence**" in summary
    assert "not run\\: no candidates" in summary


def test_a_refusal_of_flake_evidence_is_a_note_not_a_gate_failure(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    """An oracle edit beside a product edit is scored (row 5); flake-evidence refuses to rerun
    a run whose oracles moved, and the gate reports that, with merge's posture and code."""
    repo, base = project
    oracle = repo / TEST_FILE
    oracle.write_text(oracle.read_text() + "\n# weakened\n")
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n")
    git(repo, "commit", "-q", "-am", "an oracle edit")
    code, _, out = gate(run_cli, repo, rerunnable(FIRED), "--base", base)
    without = (code, decision(out))
    code, stdout, out = gate(run_cli, repo, rerunnable(FIRED), "--base", base, *FLAG)
    assert (code, decision(out)) == without
    assert without[1][:2] == ("reject", 5)
    assert "flake-evidence: exit 2: " in stdout
    assert not (out / "flake_evidence.json").exists()
    summary = (out / "summary.md").read_text()
    assert "flake-evidence exited 2\\: " in summary
    assert "(the posture stands)" in summary
    steps = {case.get("name"): case for case in ET.parse(out / "verdict.xml").getroot().iter()}
    assert steps["flake-evidence"].find("failure") is None


def test_its_reruns_and_budget_go_with_the_flag(project: tuple[Path, str], run_cli: RunCli) -> None:
    repo, base = project
    code, _, out = gate(run_cli, repo, stand_in(PASSING), "--base", base, "--flake-reruns", "3")
    assert code == 64
    assert not (out / "decision.json").exists()


# --- a runner other than pytest (--junit-xml) ----------------------------------------------

REPORT = "test-results/junit.xml"
WRITE_REPORT = """
import sys, pathlib
cases = "".join(
    f'<testcase classname="t" name="{name}" file="properties/test_orders.py"/>'
    for name in sys.argv[1].split(",")
)
report = pathlib.Path("test-results/junit.xml")
report.parent.mkdir(exist_ok=True)
report.write_text(f'<testsuites><testsuite name="t">{cases}</testsuite></testsuites>')
sys.exit(int(sys.argv[2]))
"""


def junit_runner(exit_code: int) -> str:
    """A runner whose report says every test of the demo's properties passed, then exits."""
    names = ",".join(test.split("::")[1] for test in PASSING)
    return shlex.join([sys.executable, "-c", WRITE_REPORT, names, str(exit_code)])


def junit_project(repo: Path) -> str:
    """The demo with its report folder ignored and each property naming its test (a JUnit
    report carries no markers): the base, committed."""
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "test-results/\n")
    pin_path = repo / "pins/properties.json"
    pin = json.loads(pin_path.read_text())
    for prop in pin["properties"]:
        prop.setdefault("test", f"{TEST_FILE}::test_round_trip")
    pin_path.write_text(json.dumps(pin, indent=2) + "\n")
    git(repo, "commit", "-q", "-am", "properties a JUnit report can answer")
    return git(repo, "rev-parse", "HEAD")


def test_a_failing_exit_with_a_report_that_shows_no_failure_is_human_review(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    """With two pins that agree, a clean report is `review`; the same report from a runner
    that exited 1 says something failed that it does not show: `human_review`, row 8."""
    repo, _ = project
    base = junit_project(repo)
    (repo / "orders.py").write_text((repo / "orders.py").read_text() + "\n# a comment\n")
    git(repo, "commit", "-q", "-am", "a harmless edit")
    code, stdout, out = gate(
        run_cli, repo, junit_runner(0), "--base", base, "--junit-xml", repo / REPORT
    )
    assert (code, decision(out)[:2]) == (0, ("review", 9)), stdout
    code, stdout, out = gate(
        run_cli, repo, junit_runner(1), "--base", base, "--junit-xml", repo / REPORT
    )
    posture, row, reason = decision(out)
    assert (code, posture, row) == (0, "human_review", 8), stdout
    assert reason.startswith("the command exited 1, but no test of its results failed")
    assert "the command exited 1, but no test of its results failed" in stdout


def test_a_pin_change_under_a_junit_runner_is_not_vetted_and_says_why(
    project: tuple[Path, str], run_cli: RunCli
) -> None:
    """vet runs pytest with the plugin: under --junit-xml it is a skipped step with its reason,
    not a failed one that the pin owners' reason reports as exit 4."""
    repo, _ = project
    base = junit_project(repo)
    pin_path = repo / "pins/properties.json"
    pin_path.write_text(pin_path.read_text().replace('"claim": "', '"claim": "Still: ', 1))
    git(repo, "commit", "-q", "-am", "a claim reworded")
    code, stdout, out = gate(
        run_cli, repo, junit_runner(0), "--base", base, "--junit-xml", repo / REPORT
    )
    posture, row, reason = decision(out)
    assert (code, posture, row) == (0, "human_review", 0), stdout
    assert "vet" not in reason
    vet_line = next(line for line in stdout.splitlines() if line.lstrip().startswith("vet"))
    assert "vet runs the tests through three-ledger's pytest plugin" in vet_line
    assert not list(out.glob("vet-*.json"))
