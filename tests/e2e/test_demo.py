"""`three-ledger demo`: the whole workflow over the example's scenarios, and its refusals."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import RunCli, git
from three_ledger.commands.demo import demo
from three_ledger.demo.scenarios import SCENARIOS, Expected, Scenario
from three_ledger.ledgers import Posture

# Each scenario's table row: the exit of digest A, digest B, properties A, properties B,
# dual-pin, flake-observe and merge ('-': not run), then expected and actual posture, mark.
EXPECTED_ROWS = {
    "clean-one-pin": "0 - 0 - 0 - 0 human_review 8 human_review 8 ok",
    "clean-two-pins": "0 0 0 0 0 - 0 review 9 review 9 ok",
    "flake-observed": "0 0 0 0 0 0 0 review 9 review 9 ok",
    "fixture-moved": "2 - - - - - 1 reject 1 reject 1 ok",
    "unpinned-fixture": "2 - - - - - 1 reject 1 reject 1 ok",
    "property-broken": "0 0 1 1 0 - 1 reject 7 reject 7 ok",
    "oracle-edited": "0 - 5 - 0 - 1 reject 5 reject 5 ok",
    "pins-drift": "0 0 0 1 3 - 1 reject 6 reject 6 ok",
    "flake-pin-mutated": "0 - 1 - 0 3 1 reject 4 reject 4 ok",
}


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


def table_rows(output: str) -> dict[str, str]:
    """Table rows by scenario name (progress and legend lines start otherwise)."""
    names = {s.name for s in SCENARIOS}
    return {
        line.split()[0]: " ".join(line.split()[1:])
        for line in output.splitlines()
        if line.split() and line.split()[0] in names
    }


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One real run of `python -m three_ledger demo --dir DIR`, shared by the tests below."""
    folder = tmp_path_factory.mktemp("demo") / "kept"
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "demo", "--dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done, folder


def test_demo_ends_every_scenario_as_expected(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = demo_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert table_rows(done.stdout) == EXPECTED_ROWS
    assert "FAIL" not in done.stdout
    assert f"[{len(SCENARIOS)}/{len(SCENARIOS)}]" in done.stdout
    assert "Traceback" not in done.stderr


def test_demo_prints_one_progress_line_per_scenario(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = demo_run
    progress = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert sorted(line.split()[1].rstrip(":") for line in progress) == sorted(EXPECTED_ROWS)
    assert all("as expected" in line for line in progress)


def test_demo_leaves_each_scenario_ledgers_in_dir(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, folder = demo_run
    for item in SCENARIOS:
        ledgers = folder / "scenarios" / item.name / "ledgers"
        decision = json.loads((ledgers / "merge.json").read_text(encoding="utf-8"))
        assert Expected(Posture(decision["posture"]), decision["row"]) == item.expected
        assert (folder / "scenarios" / item.name / "logs").is_dir()
    flake_ledgers = folder / "scenarios" / "flake-observed" / "ledgers"
    assert json.loads((flake_ledgers / "flake.json").read_text())["observed"] == "fail"
    moved = folder / "scenarios" / "fixture-moved" / "ledgers"
    assert not (moved / "fixture_a.json").exists()


def test_demo_flake_pin_names_an_earlier_commit_and_a_future_date(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, folder = demo_run
    repo = folder / "repo"
    first, base = git(repo, "rev-list", "--reverse", "HEAD").split()
    entry = json.loads((repo / "pins" / "flakes.json").read_text())["flakes"][0]
    assert entry["accepted_revision"] == first != base
    today = datetime.datetime.now(datetime.UTC).date()
    assert datetime.date.fromisoformat(entry["review_by"]) > today
    assert git(repo, "show", "--name-only", "--format=", base).split() == [
        "pins/fixtures.json",
        "pins/fixtures_b.json",
        "pins/flakes.json",
        "pins/properties.json",
    ]


def test_a_wrong_expectation_is_marked_and_fails_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = replace(scenario("unpinned-fixture"), expected=Expected(Posture.REVIEW, 9))
    folder = tmp_path / "empty"
    folder.mkdir()  # an existing empty folder is accepted
    code = demo(directory=folder, scenarios=[scenario("fixture-moved"), wrong])
    out = capsys.readouterr().out
    assert code == 1
    rows = table_rows(out)
    assert rows["unpinned-fixture"].endswith("review 9 reject 1 FAIL")
    assert rows["fixture-moved"].endswith("reject 1 reject 1 ok")
    assert "1 scenario(s) not as expected: unpinned-fixture" in out


def test_without_dir_the_temporary_folder_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert demo(directory=None, scenarios=[scenario("unpinned-fixture")]) == 0
    assert "unpinned-fixture" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_dir_is_refused_and_left_untouched(run_cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "busy"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    result = run_cli("demo", "--dir", folder)
    assert result.code == 2
    assert "not empty" in result.first_error_line
    assert os.listdir(folder) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "mine\n"
    assert result.out == ""


def test_a_file_as_dir_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("mine\n")
    result = run_cli("demo", "--dir", target)
    assert result.code == 2
    assert str(target) in result.first_error_line
    assert target.read_text() == "mine\n"
