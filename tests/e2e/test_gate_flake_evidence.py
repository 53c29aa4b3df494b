"""`gate --flake-evidence` with real pytest children: a small project whose pinned flaky test
and one property's test fail while a file it controls is present."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from helpers import CI_VARIABLES, RunCli, git, make_tree, write_json

pytestmark = pytest.mark.pytest_child

COMMAND = f"{sys.executable} -m pytest -q -p no:cacheprovider properties"
FLAKY = "properties/test_small.py::test_flaky"
PROPERTY_TEST = "properties/test_small.py::test_trigger_property"
# Both fail while `flaky.trigger` sits at the root of the tree, here and in flake-evidence's
# scratch copy of it: the condition is a file the test controls, so every verdict is certain.
TESTS = """
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
FIXTURES = Path(os.environ.get("THREE_LEDGER_FIXTURES", ROOT / "fixtures"))


def test_clean():
    assert json.loads((FIXTURES / "a.json").read_text())["ok"]


def test_flaky():
    assert not (ROOT / "flaky.trigger").exists(), "the trigger file is there"


@pytest.mark.property("small.trigger")
def test_trigger_property():
    assert not (ROOT / "flaky.trigger").exists(), "the trigger file is there"
"""


@pytest.fixture(autouse=True)
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in CI_VARIABLES:
        monkeypatch.delenv(key, raising=False)


def make_project(root: Path) -> str:
    """The project with its pins reviewed at the base, and a product change on top; the base."""
    make_tree(root, {
        "fixtures/a.json": b'{"ok": true}',
        "properties/test_small.py": textwrap.dedent(TESTS).encode(),
        "pytest.ini": b"[pytest]\n",
        "app.py": b"VALUE = 1\n",
    })  # fmt: skip
    write_json(
        root / "pins/fixtures.json",
        {"pin_id": "fixpin-small", "algorithm": "sha256", "files": ["fixtures/a.json"]},
    )
    claims: list[dict[str, Any]] = [
        {"id": "small.clean", "claim": "The clean test passes.", "domain": ["a.json"],
         "test": "properties/test_small.py::test_clean"},
        {"id": "small.trigger", "claim": "No trigger file.", "domain": ["a.json"]},
    ]  # fmt: skip
    write_json(
        root / "pins/properties.json",
        {"pin_id": "proppin-small", "fixture_pins": ["fixpin-small"], "properties": claims},
    )
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "small project, reviewed pins")
    accepted = git(root, "rev-parse", "HEAD").strip()
    entry = {"test_id": "small.flaky", "test": FLAKY, "accepted_revision": accepted,
             "review_by": "2099-01-01", "owner": "small-team", "note": "a trigger"}  # fmt: skip
    write_json(root / "pins/flakes.json", {"pin_id": "flakepin-small", "flakes": [entry]})
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the flake pin, reviewed")
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "app.py").write_bytes(b"VALUE = 2\n")
    git(root, "commit", "-q", "-am", "a product change")
    return base


def gate(run_cli: RunCli, repo: Path, base: str, out: Path, *extra: str) -> tuple[int, str]:
    result = run_cli(
        "gate", "--pins-dir", repo / "pins", "--root", repo, "--command", COMMAND,
        "--base", base, "--out-dir", out, "--summary-md", out / "summary.md", *extra,
    )  # fmt: skip
    return result.code, result.out


def posture(out: Path) -> tuple[str, int, str]:
    document = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    return document["posture"], document["row"], document["reason"]


def test_the_evidence_is_reported_and_the_posture_is_that_without_it(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    base = make_project(repo)
    (repo / "flaky.trigger").write_bytes(b"")
    code, _ = gate(run_cli, repo, base, tmp_path / "plain")
    without = (code, posture(tmp_path / "plain"))
    assert not (tmp_path / "plain/flake_evidence.json").exists()
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    out = tmp_path / "with"
    flag = ("--flake-evidence", "--flake-reruns", "2", "--flake-budget-s", "120")
    code, stdout = gate(run_cli, repo, base, out, *flag)
    assert (code, posture(out)) == without
    assert without[0] == 1
    assert without[1][:2] == ("reject", 7)
    evidence = json.loads((out / "flake_evidence.json").read_text(encoding="utf-8"))
    found = {c["id"]: c for c in evidence["candidates"]}
    assert found[FLAKY]["reason"] == "flake_entry"
    assert found[PROPERTY_TEST]["reason"] == "property"
    assert {c["verdict"] for c in found.values()} == {"consistent_failure"}
    assert found[PROPERTY_TEST]["property_ids"] == ["small.trigger"]
    # Console: the flake entry's verdict with its bound; the property's test apart from it.
    assert f"{FLAKY}: consistent_failure" in stdout
    assert "original: 2 of 2 failed" in stdout
    ours, owners = stdout.split("For the test owners (the property miss stands, row 7):")
    assert FLAKY in ours
    assert PROPERTY_TEST in owners
    summary = step_summary.read_text(encoding="utf-8")
    assert "**Flake evidence**" in summary
    assert "**For the test owners (the property miss stands, row 7)\\:**" in summary
    assert "consistent\\_failure" in summary
    # Evidence, never a pin: the pins are the bytes the base reviewed.
    assert git(repo, "status", "--porcelain", "pins") == ""


def test_a_run_without_candidates_writes_no_evidence_and_says_so(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    base = make_project(repo)
    out = tmp_path / "out"
    code, stdout = gate(run_cli, repo, base, out, "--flake-evidence", "--flake-reruns", "2")
    assert code == 0, stdout
    assert posture(out)[:2] == ("human_review", 8)
    assert not (out / "flake_evidence.json").exists()
    assert "flake-evidence: not run: no candidates" in stdout
    assert "not run\\: no candidates" in (out / "summary.md").read_text(encoding="utf-8")
