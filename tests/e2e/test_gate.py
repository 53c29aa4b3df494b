"""`three-ledger gate`: the whole chain in one command, on the demo's scenarios and beyond."""

from __future__ import annotations

import json
import shlex
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import CI_VARIABLES, RunCli, git, write_json
from three_ledger.commands.gate import OutDir
from three_ledger.demo import repository as demo
from three_ledger.demo.scenarios import CLEAN, SCENARIOS, Expected, Scenario
from three_ledger.demo.vet_check import CEREMONY_ID, CEREMONY_TEST, AddProperty
from three_ledger.demo.workflow import run_scenario
from three_ledger.frozen import frozen
from three_ledger.vocabulary import Posture

TEST_COMMAND = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "properties/test_orders.py"])  # fmt: skip
PROPERTIES_PIN = "pins/properties.json"


@frozen
class Project(demo.ScenarioPaths):
    """The demo's example repository with one scenario's patch committed on top of the base."""

    base: str


def one_pin_base(repo: Path) -> str:
    """A project whose properties pin names pin A only: a pin change of its own, reviewed."""
    path = repo / PROPERTIES_PIN
    pin = json.loads(path.read_text(encoding="utf-8"))
    pin["fixture_pins"] = pin["fixture_pins"][:1]
    write_json(path, pin)
    git(repo, "commit", "-q", "-am", "pins: score on pin A only")
    return git(repo, "rev-parse", "HEAD")


def project_for(tmp_path: Path, scenario: Scenario) -> Project:
    repo = tmp_path / "repo"
    base = demo.build_repository(repo)
    if not scenario.two_pins:
        base = one_pin_base(repo)
    paths = demo.ScenarioPaths(tmp_path / "scenario")
    demo.prepare(repo, base, scenario, paths)
    return Project(paths.folder, base)


def scenario(name: str) -> Scenario:
    return next(item for item in SCENARIOS if item.name == name)


def run_gate(run_cli: RunCli, project: Project, *extra: str | Path) -> tuple[int, str, str]:
    out = project.folder / "gate"
    result = run_cli(
        "gate", "--pins-dir", project.worktree / "pins", "--root", project.worktree,
        "--command", TEST_COMMAND, "--base", project.base, "--out-dir", out,
        "--summary-md", out / "summary.md", "--verdict-junit", out / "verdict.xml",
        "--verdict-dotenv", out / "verdict.env", *extra,
    )  # fmt: skip
    return result.code, result.out, result.err


def decision_of(folder: Path) -> Expected:
    decision = json.loads((folder / "decision.json").read_text(encoding="utf-8"))
    return Expected(Posture(decision["posture"]), decision["row"])


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (*CI_VARIABLES, "PYTEST_ADDOPTS"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize("item", SCENARIOS, ids=[item.name for item in SCENARIOS])
def test_gate_gives_the_posture_of_the_step_by_step_commands(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, item: Scenario
) -> None:
    project = project_for(tmp_path, item)
    for key, value in item.env.items():
        monkeypatch.setenv(key, value)
    step_by_step = run_scenario(item, demo.ScenarioPaths(project.folder), project.base)
    code, out, _ = run_gate(run_cli, project)
    gated = decision_of(project.folder / "gate")
    assert step_by_step.actual == item.expected
    assert gated == step_by_step.actual, out
    assert code == (1 if gated.posture is Posture.REJECT else 0)
    assert out.rstrip().splitlines()[-1].startswith(f"posture: {gated.posture.value} (row ")


@pytest.mark.usefixtures("clean_env")
def test_one_pin_runs_dual_pin_not_run_and_prints_each_step_then_the_table(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = project_for(tmp_path, scenario("clean-one-pin"))
    code, out, _ = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 0
    # Each step's line when it ends, after its progress line when it starts.
    lines = [line for line in out.splitlines() if not line.endswith(" ...")]
    assert lines[0] == f"gate: base {project.base[:12]} (from --base)"
    assert lines[1].startswith("digest A (fixpin-orders-a): exit 0: digest ")
    assert lines[2] == "properties A (fixpin-orders-a): exit 0: 4 properties pass"
    assert lines[3] == "dual-pin --not-run: exit 0: not run: one fixture pin"
    assert lines[4] == "merge: exit 0: human_review (row 8)"
    table = lines[lines.index("") + 1 : lines.index("", lines.index("") + 1)]
    assert table[0].split() == ["step", "exit", "ledger"]
    assert [row.split()[-2] for row in table[1:]] == ["0", "0", "0", "0"]
    assert lines[-1].startswith("posture: human_review (row 8): one pin is weaker evidence")
    assert sorted(path.name for path in gate_dir.glob("*.json")) == [
        "decision.json", "dual-pin.json", "fixture-a.json", "property-a.json",
    ]  # fmt: skip
    assert json.loads((gate_dir / "dual-pin.json").read_text())["dual_pin"] == "not_run"


@pytest.mark.usefixtures("clean_env")
def test_two_pins_write_every_ledger_and_a_dual_pin_run(tmp_path: Path, run_cli: RunCli) -> None:
    project = project_for(tmp_path, scenario("clean-two-pins"))
    code, out, _ = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 0, out
    assert sorted(path.name for path in gate_dir.glob("*.json")) == [
        "decision.json", "dual-pin.json", "fixture-a.json", "fixture-b.json",
        "property-a.json", "property-b.json",
    ]  # fmt: skip
    dual = json.loads((gate_dir / "dual-pin.json").read_text())
    assert (dual["dual_pin"], dual["drift"]) == ("run", False)
    assert decision_of(gate_dir) == Expected(Posture.REVIEW, 9)
    assert (gate_dir / "verdict.env").read_text() == (
        f"THREE_LEDGER_POSTURE=review\nTHREE_LEDGER_ROW=9\n"
        f"THREE_LEDGER_DECISION={gate_dir / 'decision.json'}\n"
    )


@pytest.mark.usefixtures("clean_env")
def test_a_fired_flake_gets_a_flake_ledger_and_a_note_in_the_summary(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = scenario("flake-observed")
    project = project_for(tmp_path, item)
    monkeypatch.setenv("ORDERS_SUMMARY_BUDGET_MS", "0")
    code, out, _ = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 0, out
    flake = json.loads((gate_dir / "flake-1.json").read_text())
    assert (flake["test_id"], flake["observed"]) == ("orders.boundary.timeout", "fail")
    assert (
        "flake-observe orders.boundary.timeout: exit 0: orders.boundary.timeout observed fail"
        in out
    )
    summary = (gate_dir / "summary.md").read_text()
    assert "**Flake notes** (a flake note is not a pass)" in summary
    assert "| orders\\_team |" not in summary  # the owner is escaped, not dropped
    flake_row = next(line for line in summary.splitlines() if "boundary" in line and "fail" in line)
    assert "orders\\-team" in flake_row or "orders-team" in flake_row


@pytest.mark.usefixtures("clean_env")
def test_a_refusal_leaves_its_ledger_absent_and_the_chain_goes_on_to_merge(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = project_for(tmp_path, scenario("fixture-moved"))
    stale = project.folder / "gate"
    write_json(stale / "property-a.json", {"left": "by an earlier run"})
    write_json(stale / "flake-7.json", {"left": "by an earlier run"})
    write_json(stale / "vet-b.json", {"left": "by an earlier run"})
    code, out, err = run_gate(run_cli, project)
    assert code == 1
    assert "removed 3 file(s) an earlier run left" in err
    for name in ("property-a.json", "flake-7.json", "vet-b.json"):
        assert not (stale / name).exists()
    assert "digest A (fixpin-orders-a): exit 2: " in out
    assert "properties A (fixpin-orders-a): not run: no fixture ledger" in out
    assert decision_of(stale) == Expected(Posture.REJECT, 1)
    log = (stale / "logs" / "1-digest-a.log").read_text()
    assert "refused" in log or "differs from the reviewed digest" in log


def junit_cases(path: Path) -> dict[str, list[ET.Element]]:
    root = ET.parse(path).getroot()
    return {suite.get("name", ""): list(suite.iter("testcase")) for suite in root}


@pytest.mark.usefixtures("clean_env")
def test_the_junit_verdict_has_one_testcase_per_property_and_per_step(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = project_for(tmp_path, scenario("property-broken"))
    code, _, _ = run_gate(run_cli, project)
    assert code == 1
    suites = junit_cases(project.folder / "gate" / "verdict.xml")
    pinned = json.loads((project.worktree / PROPERTIES_PIN).read_text())["properties"]
    properties = suites["three-ledger.properties"]
    assert sorted(case.get("name", "") for case in properties) == sorted(p["id"] for p in pinned)
    failed = {case.get("name") for case in properties if case.find("failure") is not None}
    assert failed == {"orders.total.matches_lines"}
    steps = suites["three-ledger.gate"]
    assert [case.get("name") for case in steps] == [
        "digest A (fixpin-orders-a)", "properties A (fixpin-orders-a)",
        "digest B (fixpin-orders-b)", "properties B (fixpin-orders-b)", "dual-pin", "merge",
    ]  # fmt: skip
    merge_case = steps[-1].find("failure")
    assert merge_case is not None
    # merge's case carries the reason, which names the failing test.
    failing = "properties/test_orders.py::test_total_matches_lines[orders_boundary.json]"
    assert merge_case.get("message") == (
        "exit 1: reject (row 7): property miss stands: orders.total.matches_lines is fail "
        f"(failing: {failing})"
    )


@pytest.mark.usefixtures("clean_env")
def test_without_a_property_ledger_every_property_is_a_missing_failure(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = project_for(tmp_path, scenario("unpinned-fixture"))
    run_gate(run_cli, project)
    properties = junit_cases(project.folder / "gate" / "verdict.xml")["three-ledger.properties"]
    assert len(properties) == 4
    for case in properties:
        failure = case.find("failure")
        assert failure is not None
        assert failure.get("message", "").startswith("missing: ")


# --- pin changes and unusable inputs -----------------------------------------------------------


def commit_pin_edit(project: Project, name: str, text: str) -> None:
    (project.worktree / "pins" / name).write_text(text, encoding="utf-8")
    git(project.worktree, "add", "-A")
    git(project.worktree, "commit", "-q", "-m", f"pins: {name}")


def pins_only_project(tmp_path: Path) -> Project:
    """A project whose change under test is the base itself, before any pin edit."""
    repo = tmp_path / "repo"
    base = demo.build_repository(repo)
    return Project(tmp_path, base)


@pytest.mark.usefixtures("clean_env")
def test_a_change_to_pins_only_is_not_scored_and_goes_to_the_pin_owners(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pins_only_project(tmp_path)
    flakes = json.loads((project.worktree / "pins" / "flakes.json").read_text())
    flakes["flakes"][0]["note"] = "Renewed after a look at the runner's load."
    commit_pin_edit(project, "flakes.json", json.dumps(flakes, indent=2) + "\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 0, out + err
    assert "check-pins: exit 0: pins valid" in out
    assert "properties" not in out.split("posture:")[0]
    # Only the flake pin moved: there are no new fixtures or properties to vet.
    assert "vet" not in out.split("posture:")[0]
    assert decision_of(gate_dir) == Expected(Posture.HUMAN_REVIEW, 0)
    reason = json.loads((gate_dir / "decision.json").read_text())["reason"]
    assert reason == "pin change: the pin owners review it (pins/flakes.json)"
    assert "::notice file=pins/flakes.json,title=three-ledger%3A pin changed::" in out
    summary = (gate_dir / "summary.md").read_text()
    assert "**Pins changed**" in summary
    assert "CODEOWNERS" in summary


@pytest.mark.usefixtures("clean_env")
def test_a_properties_pin_change_is_vetted_on_each_pin_and_vet_reports_the_ceremony(
    tmp_path: Path, run_cli: RunCli
) -> None:
    # The realistic order: the test lands first, unpinned; the pin that names it follows.
    repo = tmp_path / "repo"
    demo.build_repository(repo)
    CEREMONY_TEST.apply(repo)
    git(repo, "commit", "-q", "-am", "a test of the orders files")
    project = Project(tmp_path, git(repo, "rev-parse", "HEAD"))
    AddProperty().apply(repo)
    git(repo, "commit", "-q", "-am", "pins: pin the new property")
    code, out, err = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 0, out + err
    vetted = json.loads((gate_dir / "vet-a.json").read_text())["properties"]
    # The example's round trip is weak (killed only by malformed input): the line says so.
    weak = sorted(prop_id for prop_id, found in vetted.items() if found["verdict"] == "weak")
    assert weak == ["orders.json.round_trip"]
    for side, pin_id in (("A", "fixpin-orders-a"), ("B", "fixpin-orders-b")):
        assert (
            f"vet {side} ({pin_id}): exit 1: cannot fail on its fixtures: {CEREMONY_ID} (1 weak, "
            "killed only by malformed input or a crash: orders.json.round_trip)\n"
        ) in out
    assert vetted[CEREMONY_ID]["verdict"] == "survived"
    assert all(found["gate"] for prop_id, found in vetted.items() if prop_id != CEREMONY_ID)
    # vet informs the pin owners; it never turns a pin change into a score. What it found is
    # in the reason too, not in the step table alone.
    assert decision_of(gate_dir) == Expected(Posture.HUMAN_REVIEW, 0)
    reason = json.loads((gate_dir / "decision.json").read_text())["reason"]
    assert reason.startswith("pin change: the pin owners review it (pins/properties.json); ")
    assert f"; vet A (fixpin-orders-a) exited 1: cannot fail on its fixtures: {CEREMONY_ID}" in (
        reason
    )
    summary = (gate_dir / "summary.md").read_text()
    vet_section = summary.split("**vet**", 1)[1].split("\n\n**", 1)[0]
    ceremony_rows = [line for line in vet_section.splitlines() if "orders.<wbr>fixtures" in line]
    assert len(ceremony_rows) == 2
    assert all(row.startswith("| ❌ |") and "cannot fail" in row for row in ceremony_rows)
    assert vet_section.count("| ✅ |") == 2 * (len(vetted) - 1)
    # Nothing was scored: no property is reported, as missing or otherwise.
    assert "**Properties**" not in summary
    assert not junit_cases(gate_dir / "verdict.xml").get("three-ledger.properties")


def a_test_with_its_pin(tmp_path: Path, *, failing: bool = False) -> Project:
    """The example with one change: the ceremony test (made to fail, with FAILING) and the
    property that names it in the properties pin."""
    repo = tmp_path / "repo"
    project = Project(tmp_path, demo.build_repository(repo))
    CEREMONY_TEST.apply(repo)
    if failing:
        oracle = repo / "properties/test_orders.py"
        oracle.write_text(
            oracle.read_text().replace("is not None\n", "is not None\n    assert False, 'new'\n")
        )
    AddProperty().apply(repo)
    git(repo, "commit", "-q", "-am", "a test, and the pin that names it, in one change")
    return project


@pytest.mark.usefixtures("clean_env")
def test_a_test_and_the_pin_naming_it_go_to_their_owners_vetted_for_the_report(
    tmp_path: Path, run_cli: RunCli
) -> None:
    project = a_test_with_its_pin(tmp_path)
    code, out, _ = run_gate(run_cli, project)
    # Tests and pins alone go to their owners unscored, with vet's finding for them to read.
    assert code == 0
    assert decision_of(project.folder / "gate") == Expected(Posture.HUMAN_REVIEW, 0)
    steps = out.split("posture:")[0]
    assert f"cannot fail on its fixtures: {CEREMONY_ID}" in steps
    assert "\nmerge: " not in steps
    summary = (project.folder / "gate" / "summary.md").read_text()
    assert "**vet**" in summary
    assert "**Tests changed**" in summary


@pytest.mark.usefixtures("clean_env")
def test_a_pin_naming_a_test_that_fails_on_the_tree_says_so_in_the_reason(
    tmp_path: Path, run_cli: RunCli
) -> None:
    # Merged, such a pin would reject every later change at row 7: the owners must read that
    # on the posture line, not only in vet's step.
    project = a_test_with_its_pin(tmp_path, failing=True)
    code, out, _ = run_gate(run_cli, project)
    assert code == 0, out
    assert decision_of(project.folder / "gate") == Expected(Posture.HUMAN_REVIEW, 0)
    reason = json.loads((project.folder / "gate" / "decision.json").read_text())["reason"]
    assert "; vet A (fixpin-orders-a) exited 2: vet needs a passing baseline: 1 propert" in reason
    # Which property, and how, in the reason itself: the log alone said it before.
    assert "did not pass on the unmutated fixtures: orders." in reason
    assert f"posture: human_review (row 0): {reason}" in out


@pytest.mark.usefixtures("clean_env")
def test_a_fixture_pin_change_is_vetted_on_that_pin_alone(tmp_path: Path, run_cli: RunCli) -> None:
    project = pins_only_project(tmp_path)
    pin_b = json.loads((project.worktree / "pins" / "fixtures_b.json").read_text())
    pin_b["description"] = "The same orders, reviewed again."
    commit_pin_edit(project, "fixtures_b.json", json.dumps(pin_b, indent=2) + "\n")
    code, out, err = run_gate(run_cli, project)
    assert code == 0, out + err
    assert "vet B (fixpin-orders-b): exit 0: each of 4 properties can fail" in out
    assert "vet A" not in out
    assert decision_of(project.folder / "gate") == Expected(Posture.HUMAN_REVIEW, 0)


def add_fixture_with_pin(run_cli: RunCli, project: Project, *, update_digest: bool) -> None:
    """A new order file in pin A's folder, listed in pin A; its digest drafted again or not."""
    tree = project.worktree
    (tree / "fixtures" / "orders_extra.json").write_bytes(
        (tree / "fixtures" / "orders_min.json").read_bytes()
    )
    drafted = run_cli("draft-pin", "--fixtures-dir", "fixtures", "--root", tree, "--with-digest")
    assert drafted.code == 0, drafted.err
    draft = json.loads(drafted.out)
    pin = json.loads((tree / "pins" / "fixtures.json").read_text(encoding="utf-8"))
    pin["files"] = draft["files"]
    if update_digest:
        pin["digest"] = draft["digest"]
    commit_pin_edit(project, "fixtures.json", json.dumps(pin, indent=2) + "\n")


@pytest.mark.usefixtures("clean_env")
def test_fixture_files_changed_with_their_pin_go_to_the_pin_owners(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The honest way to change fixtures: the files and their pin, in one reviewed change."""
    project = pins_only_project(tmp_path)
    add_fixture_with_pin(run_cli, project, update_digest=True)
    code, out, err = run_gate(run_cli, project)
    assert code == 0, out + err
    assert "digest A (fixpin-orders-a): exit 0" in out
    assert "properties A" not in out.split("posture:")[0]
    decision = json.loads((project.folder / "gate" / "decision.json").read_text())
    assert (decision["posture"], decision["row"]) == ("human_review", 0)
    assert decision["reason"] == (
        "pin change: the pin owners review it (pins/fixtures.json); "
        "fixture files changed with their pin: 1"
    )


@pytest.mark.usefixtures("clean_env")
def test_a_moved_fixture_pin_that_does_not_hold_its_files_is_rejected(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """The files listed, the digest left as it was: the pin would stop every later change."""
    project = pins_only_project(tmp_path)
    add_fixture_with_pin(run_cli, project, update_digest=False)
    code, out, err = run_gate(run_cli, project)
    assert code == 1, out + err
    decision = json.loads((project.folder / "gate" / "decision.json").read_text())
    assert (decision["posture"], decision["row"]) == ("reject", 0)
    assert decision["reason"].startswith("pin change: fixtures.json does not hold the tree: ")
    assert "vet A" not in out


def product_folder_base(repo: Path) -> str:
    """The example with a second product module, in a folder of its own, reviewed."""
    (repo / "pricing").mkdir()
    (repo / "pricing" / "rates.py").write_text("VAT = 0.2\n", encoding="utf-8")
    pin = json.loads((repo / PROPERTIES_PIN).read_text(encoding="utf-8"))
    pin["product_paths"] = [*pin["product_paths"], "pricing/**"]
    write_json(repo / PROPERTIES_PIN, pin)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pricing: rates")
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(
    "drops_product_path", [False, True], ids=["product-kept", "product-dropped"]
)
def test_a_fixture_pin_retargeted_at_product_code_is_not_a_fixture_update(
    tmp_path: Path, run_cli: RunCli, drops_product_path: bool
) -> None:
    """Code shipped as fixtures: the pin names the product's folder, its digest holds, the
    code changes. The reviewed pin at the base decides what a fixture update is, so this is
    a pin changed beside code, and the properties pin cannot unname the product to help."""
    repo = tmp_path / "repo"
    demo.build_repository(repo)
    product_folder_base(repo)
    base = one_pin_base(repo)
    (repo / "pricing" / "rates.py").write_text("VAT = 0.0\n", encoding="utf-8")
    drafted = run_cli(
        "draft-pin", "--fixtures-dir", "fixtures", "--fixtures-dir", "pricing",
        "--root", repo, "--with-digest",
    )  # fmt: skip
    assert drafted.code == 0, drafted.err
    draft = json.loads(drafted.out)
    pin = json.loads((repo / "pins" / "fixtures.json").read_text(encoding="utf-8"))
    del pin["fixtures_dir"]
    pin.update(fixtures_dirs=draft["fixtures_dirs"], files=draft["files"], digest=draft["digest"])
    write_json(repo / "pins" / "fixtures.json", pin)
    # With `fixtures_dirs`, domains are relative to ROOT.
    properties = json.loads((repo / PROPERTIES_PIN).read_text(encoding="utf-8"))
    for prop in properties["properties"]:
        prop["domain"] = [f"fixtures/{entry}" for entry in prop["domain"]]
    if drops_product_path:
        properties["product_paths"] = ["orders.py"]
    write_json(repo / PROPERTIES_PIN, properties)
    git(repo, "commit", "-q", "-am", "fixtures: rates")
    code, out, err = run_gate(run_cli, Project(tmp_path, base))
    assert code == 1, out + err
    decision = json.loads((tmp_path / "gate" / "decision.json").read_text())
    assert decision["posture"] == "reject"
    assert "fixture files changed with their pin" not in decision["reason"], out
    assert decision["row"] == 4, decision["reason"]


@pytest.mark.usefixtures("clean_env")
def test_a_broken_pin_change_is_rejected(tmp_path: Path, run_cli: RunCli) -> None:
    project = pins_only_project(tmp_path)
    commit_pin_edit(project, "fixtures_b.json", "{\n")
    code, out, _ = run_gate(run_cli, project)
    assert code == 1
    assert "check-pins: exit 2: check-pins: " in out
    # The problem itself, under the step's line, not in the summary alone.
    assert any(line.startswith("  ") and "fixtures_b.json" in line for line in out.splitlines())
    assert decision_of(project.folder / "gate") == Expected(Posture.REJECT, 0)


def broken_base_project(tmp_path: Path, breaks: Callable[[Path], object]) -> Project:
    """Pins broken in the base itself, and a change under test that touches code only."""
    repo = tmp_path / "repo"
    demo.build_repository(repo)
    breaks(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pins: broken")
    base = git(repo, "rev-parse", "HEAD")
    CLEAN.apply(repo)
    git(repo, "commit", "-q", "-am", "a refactor")
    return Project(tmp_path, base)


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize(
    ("breaks", "why"),
    [
        (lambda root: (root / PROPERTIES_PIN).unlink(), "must hold one properties pin; found 0"),
        (lambda root: (root / "pins" / "fixtures.json").unlink(),
         "fixture pin 'fixpin-orders-a', named by the properties pin, must be one file"),
        (lambda root: (root / "pins" / "x.json").write_text("[]"), "a pin is a JSON object"),
    ],
)  # fmt: skip
def test_unusable_inputs_write_a_reject_decision_saying_why(
    tmp_path: Path, run_cli: RunCli, breaks: Callable[[Path], object], why: str
) -> None:
    project = broken_base_project(tmp_path, breaks)
    code, out, _ = run_gate(run_cli, project)
    gate_dir = project.folder / "gate"
    assert code == 1
    decision = json.loads((gate_dir / "decision.json").read_text())
    assert (decision["posture"], decision["row"]) == ("reject", 0)
    assert decision["reason"].startswith("gate inputs unusable: ")
    assert why in decision["reason"]
    assert "posture: reject (row 0): gate inputs unusable" in out
    assert "Fix the gate's configuration" in (gate_dir / "summary.md").read_text()


@pytest.mark.usefixtures("clean_env")
def test_no_pins_folder_and_no_base_are_unusable_inputs(tmp_path: Path, run_cli: RunCli) -> None:
    project = pins_only_project(tmp_path)
    out = tmp_path / "out"
    no_folder = run_cli("gate", "--pins-dir", tmp_path / "nope", "--root", project.worktree,
                        "--command", "true", "--base", project.base, "--out-dir", out)  # fmt: skip
    assert no_folder.code == 1
    assert "nope: no such folder" in json.loads((out / "decision.json").read_text())["reason"]
    no_base = run_cli("gate", "--pins-dir", project.worktree / "pins", "--root",
                      project.worktree, "--command", "true", "--out-dir", out)  # fmt: skip
    assert no_base.code == 1
    assert "no base revision: pass --base REV" in (out / "decision.json").read_text()


def test_an_out_dir_inside_the_pins_folder_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "pins").mkdir()
    result = run_cli("gate", "--pins-dir", tmp_path / "pins", "--command", "true",
                     "--out-dir", tmp_path / "pins" / "ledgers")  # fmt: skip
    assert result.code == 2
    assert "lies in --pins-dir" in result.first_error_line
    assert not (tmp_path / "pins" / "ledgers").exists()


@pytest.mark.usefixtures("clean_env")
def test_hostile_pin_file_names_are_escaped_in_annotations_and_the_summary(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pins_only_project(tmp_path)
    hostile = "evil%0A,x:y\n::error::forged.json"
    commit_pin_edit(project, hostile, "{}\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run_gate(run_cli, project)
    assert code == 1
    commands = [line for line in out.splitlines() if line.startswith("::")]
    assert len(commands) == 2  # the headline and one pin edit: nothing forged
    for command in commands:
        level_and_properties, _, message = command[2:].partition("::")
        level, _, properties = level_and_properties.partition(" ")
        assert level == "error"
        for pair in properties.split(","):
            key, _, value = pair.partition("=")
            assert key in ("file", "title")
            assert ":" not in value
            assert "," not in value
        assert "%0A::error::forged" in message
    pin_edit = commands[1]
    assert pin_edit.startswith(
        "::error file=pins/evil%250A%2Cx%3Ay%0A%3A%3Aerror%3A%3Aforged.json,"
    )
    summary = (project.folder / "gate" / "summary.md").read_text()
    assert "forged" in summary
    assert "\n::error" not in summary
    assert all(line.count("\\n") == 0 for line in summary.splitlines() if "forged" in line)


def test_a_step_log_never_leaves_the_logs_folder(tmp_path: Path) -> None:
    out = OutDir(tmp_path / "out")
    log = out.step_log(7, "flake-observe ../../../etc/evil\nname")
    assert log.parent == tmp_path / "out" / "logs"
    assert log.name == "7-flake-observe-etc-evil.log"
