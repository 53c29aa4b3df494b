"""`selftest`'s command line, in-process: its refusals, the clean run it must see first, and
one whole run on the example scored on one fixture pin (each plant's gate a real child)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git
from three_ledger.demo.repository import build_repository

COMMAND = shlex.join([sys.executable, "-m", "pytest", "-q", "properties/test_orders.py"])


def _commit(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=o", "-c", "user.email=o@example.com", "commit", "-qm", "x")


def _one_pin(repo: Path) -> None:
    """The example scored on pin A alone: half the runs per plant."""
    pin = repo / "pins/properties.json"
    document: dict[str, Any] = json.loads(pin.read_text(encoding="utf-8"))
    document["fixture_pins"] = ["fixpin-orders-a"]
    pin.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    (repo / "pins/fixtures_b.json").unlink()
    _commit(repo)


@pytest.fixture(scope="module")
def one_pin_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("selftest") / "repo"
    build_repository(repo)
    _one_pin(repo)
    return repo


def _args(repo: Path, out: Path, *more: str | Path) -> list[str | Path]:
    return [
        "selftest",
        "--pins-dir",
        repo / "pins",
        "--root",
        repo,
        "--command",
        COMMAND,
        "--out",
        out,
        *more,
    ]


def test_an_unknown_plant_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    done = run_cli(*_args(tmp_path, tmp_path / "s.json", "--only", "no-such-plant"))
    assert done.code == 64
    assert "--only no-such-plant: no such plant" in done.err


def test_a_keep_folder_that_holds_files_is_refused(
    run_cli: RunCli, one_pin_repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "x").write_text("x", encoding="utf-8")
    done = run_cli(*_args(one_pin_repo, tmp_path / "s.json", "--keep", tmp_path / "keep"))
    assert done.code == 2
    assert "--keep must be an empty folder" in done.err


def test_pins_outside_root_are_refused(run_cli: RunCli, one_pin_repo: Path, tmp_path: Path) -> None:
    args = _args(one_pin_repo, tmp_path / "s.json")
    args[2] = tmp_path / "pins"
    done = run_cli(*args)
    assert done.code == 2
    assert "is not inside --root" in done.err


@pytest.mark.pytest_child
def test_a_rejected_clean_run_stops_everything(run_cli: RunCli, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    build_repository(repo)
    _one_pin(repo)
    orders = repo / "orders.py"
    text = orders.read_text(encoding="utf-8")
    orders.write_text(text.replace('line["quantity"] * line', 'line["quantity"] + line'))
    _commit(repo)
    done = run_cli(*_args(repo, tmp_path / "s.json", "--quiet"))
    assert done.code == 2
    assert "the clean run (an empty change on HEAD" in done.err
    assert "was rejected at row 7" in done.err
    assert not (tmp_path / "s.json").exists()


@pytest.mark.pytest_child
def test_a_clean_run_that_cannot_import_the_product_says_how_the_clone_gets_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # The tests import a module the user's tree has and the clone lacks (here untracked; an
    # editable install of the user's tree does the same): the refusal names the error, and
    # the note says how the clone's tests get its own checkout.
    repo = tmp_path / "repo"
    build_repository(repo)
    _one_pin(repo)
    test = repo / "properties/test_orders.py"
    test.write_text(test.read_text(encoding="utf-8") + "\nimport outside_the_clone  # noqa\n")
    _commit(repo)
    (repo / "outside_the_clone.py").write_text("")
    done = run_cli(*_args(repo, tmp_path / "s.json", "--quiet"))
    assert done.code == 4, done.err
    assert "ModuleNotFoundError: No module named 'outside_the_clone'" in done.err
    assert "three-ledger: note: the tests could not import a module in the scratch clone" in (
        done.err
    )
    assert not (tmp_path / "s.json").exists()


@pytest.fixture(scope="module")
def whole_run(one_pin_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    where = tmp_path_factory.mktemp("whole")
    from three_ledger.cli import main

    code = main([str(arg) for arg in _args(one_pin_repo, where / "s.json", "--keep", where / "k")])
    ledger: dict[str, Any] = json.loads((where / "s.json").read_text(encoding="utf-8"))
    ledger["exit"] = code
    ledger["kept"] = where / "k"
    return ledger


@pytest.mark.pytest_child
def test_a_whole_run_in_process_catches_every_plant(whole_run: dict[str, Any]) -> None:
    outcomes = {record["plant"]: record["outcome"] for record in whole_run["plants"]}
    assert whole_run["exit"] == 0, whole_run["plants"]
    assert outcomes["broken-product"] == "caught"
    assert outcomes["weakened-helper"] == "not_applicable"
    assert outcomes["fresh-clock-forgery"] == "known_escape"
    assert "caught" in outcomes.values()
    assert set(outcomes.values()) <= {"caught", "not_applicable", "known_escape"}
    assert (whole_run["kept"] / "runs" / "broken-product" / "decision.json").is_file()
