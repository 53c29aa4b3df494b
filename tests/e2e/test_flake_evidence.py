"""`flake-evidence` over a toy suite with one test of each kind, rerun in the sandbox."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git
from helpers.flake_suites import TOY, evidence_args, make_toy, score_toy
from three_ledger.run import sandbox

pytestmark = pytest.mark.pytest_child


def _evidence(repo: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((repo.parent / "ledgers/evidence.json").read_text())
    return document


def _by_id(repo: Path) -> dict[str, dict[str, Any]]:
    return {candidate["id"]: candidate for candidate in _evidence(repo)["candidates"]}


def _tree(repo: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(repo)): path.read_bytes()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


def test_each_deterministic_kind_gets_its_verdict(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_toy(tmp_path / "repo")
    fixture, prop = score_toy(repo, run_cli)
    before, status = _tree(repo), git(repo, "status", "--porcelain")
    kinds = ["a_setter", "b_brittle", "c_polluter", "d_victim", "f_broken", "g_clean"]
    # These tests hold no randomness: one rerun per mode decides them.
    given = [f"{TOY}::test_{kind}" for kind in kinds]
    result = run_cli(*evidence_args(repo, fixture, prop, "--reruns", "1", "--candidates", *given))
    assert result.code == 0, result.err
    found = {test_id.rsplit("_", 1)[-1]: c["verdict"] for test_id, c in _by_id(repo).items()}
    assert found == {
        "setter": "not_reproduced",
        "brittle": "order_dependent_brittle",
        "polluter": "not_reproduced",
        "victim": "order_dependent_victim",
        "broken": "consistent_failure",
        "clean": "not_reproduced",
    }
    victim = _by_id(repo)[f"{TOY}::test_d_victim"]
    assert victim["polluter"] == f"{TOY}::test_c_polluter"
    assert all(c["proposal"] is None for c in _by_id(repo).values())
    assert "likely polluter: properties/test_toy.py::test_c_polluter" in result.out
    # The clean test answers for toy.clean: its evidence is for the test owners.
    assert "For the test owners (the property miss stands, row 7):" in result.out
    assert _tree(repo) == before
    assert git(repo, "status", "--porcelain") == status


def test_the_random_test_is_non_deterministic_and_alone_proposed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_toy(tmp_path / "repo")
    fixture, prop = score_toy(repo, run_cli)
    random_test, in_property = (
        f"{TOY}::test_e_random",
        "properties/test_z_property.py::test_random_property",
    )
    # Each run fails with p = 77/256 independently. The verdict is wrong only if every mode
    # sees one outcome alone over its 10 runs: (0.699**10 + 0.301**10)**3 < 3e-5 for each
    # of the two (both have a prefix of two or more: three modes).
    args = evidence_args(
        repo, fixture, prop, "--reruns", "10", "--candidates", random_test, in_property
    )
    result = run_cli(*args)
    assert result.code == 0, result.err
    found = _by_id(repo)
    assert found[random_test]["verdict"] == "non_deterministic"
    proposal = found[random_test]["proposal"]
    assert proposal["accepted_revision"] == "FILL-IN"
    assert proposal["review_by"] == "FILL-IN"
    assert "owner" not in proposal
    # A property's test is never proposed: a property miss is never a flake.
    assert found[in_property]["verdict"] == "non_deterministic"
    assert found[in_property]["property_ids"] == ["toy.random"]
    assert found[in_property]["proposal"] is None
    owners = result.out.split("For the test owners (the property miss stands, row 7):")
    assert len(owners) == 2
    assert in_property in owners[1]
    assert random_test not in owners[1]
    assert "(two-sided, 95 %)" in result.out


def test_a_test_that_rewrites_its_fixture_is_recorded_and_the_copy_restored(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_toy(tmp_path / "repo")
    fixture, prop = score_toy(repo, run_cli)
    # Without the mount layer the scratch copy is writable, and the test's write lands.
    missing = sandbox.Probe(None, None, "not made for this test")
    monkeypatch.setattr(sandbox, "probe_namespaces", lambda: missing)
    rewriter = "properties/test_z_property.py::test_rewrites_its_fixture"
    clean = f"{TOY}::test_g_clean"
    # The clean test reads the fixture: were the copy not restored, it would fail after.
    args = evidence_args(repo, fixture, prop, "--reruns", "2", "--candidates", rewriter, clean)
    result = run_cli(*args)
    assert result.code == 0, result.err
    found = _by_id(repo)
    assert found[rewriter]["inputs_changed"] == ["fixtures/a.json"]
    assert found[rewriter]["verdict"] == "not_reproduced"
    assert found[clean]["inputs_changed"] == []
    assert found[clean]["verdict"] == "not_reproduced"
    assert (repo / "fixtures/a.json").read_bytes() == b'{"ok": true}'
    assert "changed its own inputs (restored in the copy): fixtures/a.json" in result.out


def _refused(run_cli: RunCli, repo: Path, fixture: Path, prop: Path, reason: str) -> None:
    out = repo.parent / "ledgers/evidence.json"
    out.write_text("stale")
    result = run_cli(*evidence_args(repo, fixture, prop, "--candidates", f"{TOY}::test_g_clean"))
    assert result.code == 2, result.err
    assert reason in result.err
    assert not out.exists()


def test_preconditions_refuse_and_write_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    repo = make_toy(tmp_path / "repo")
    fixture, prop = score_toy(repo, run_cli)
    (repo / "fixtures/a.json").write_bytes(b'{"ok": 1}')
    _refused(run_cli, repo, fixture, prop, "not --expect-digest")
    git(repo, "checkout", "-q", "fixtures/a.json")
    (repo / "properties/test_toy.py").write_text("def test_g_clean():\n    pass\n")
    _refused(run_cli, repo, fixture, prop, "oracles moved")
    git(repo, "checkout", "-q", "properties/test_toy.py")
    git(repo, "commit", "-q", "--allow-empty", "-m", "another HEAD")
    _refused(run_cli, repo, fixture, prop, "$.head_revision")


def test_the_users_tree_and_git_state_stay_as_they_were_after_sigterm(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_toy(tmp_path / "repo")
    fixture, prop = score_toy(repo, run_cli)
    before, status = _tree(repo), git(repo, "status", "--porcelain")
    # A clean test (all one outcome never stops early) and far more reruns than six seconds
    # hold, on a fast machine too (500 once all finished within them): the signal must find
    # the reruns under way, never a command that had finished.
    args = evidence_args(
        repo, fixture, prop, "--reruns", "5000", "--candidates", f"{TOY}::test_g_clean"
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "three_ledger", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(6)  # into the reruns: the copy is made and a run is under way
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert b"interrupted" in err
    assert not (repo.parent / "ledgers/evidence.json").exists()
    assert _tree(repo) == before
    assert git(repo, "status", "--porcelain") == status
