"""`three-ledger demo`: the whole workflow over the example's scenarios, and its refusals."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git
from helpers.demo_rows import table_rows
from helpers.markdown_tables import longest_runs
from three_ledger.demo.scenarios import SCENARIOS, Expected
from three_ledger.report.step_summary import LONGEST_RUN, ZERO_WIDTH_SPACE
from three_ledger.vocabulary import Posture

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


def test_demo_vets_a_ceremony_property_beside_the_table(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, folder = demo_run
    assert "vet-ceremony: vet exit 1, as expected" in done.stdout
    assert "survived  orders.fixtures.read: cannot fail on its fixtures" in done.stdout
    assert done.stdout.rstrip().endswith("and vet caught the ceremony property")
    vetted = json.loads((folder / "scenarios/vet-ceremony/ledgers/vet.json").read_text())
    verdicts = {pid: found["verdict"] for pid, found in vetted["properties"].items()}
    assert verdicts == {
        "orders.total.non_negative": "strong",
        "orders.total.matches_lines": "strong",
        "orders.id.stable": "strong",
        "orders.json.round_trip": "weak",
        "orders.fixtures.read": "survived",
    }


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


def test_every_summary_stays_wrappable_when_github_strips_wbr(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """GitHub's sanitizer may drop `<wbr>`: each table cell must still wrap, its node ids
    (`properties/test_orders.py::test_..[orders_boundary.json]`) included."""
    _, folder = demo_run
    summaries = sorted((folder / "scenarios").glob("*/ledgers/merge.md"))
    assert len(summaries) == len(SCENARIOS)
    too_long_without = []
    for summary in summaries:
        markdown = summary.read_text(encoding="utf-8")
        runs = longest_runs(markdown, wbr_stripped=True)
        assert runs, summary
        assert max(len(run) for run in runs) <= LONGEST_RUN, (summary, max(runs, key=len))
        bare = longest_runs(markdown.replace(ZERO_WIDTH_SPACE, ""), wbr_stripped=True)
        too_long_without += [run for run in bare if len(run) > LONGEST_RUN]
    # The zero-width spaces are what keeps them short: without them some node ids are longer.
    assert any("::" in run for run in too_long_without), too_long_without
