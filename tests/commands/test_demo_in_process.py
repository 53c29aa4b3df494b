"""`three-ledger demo` in-process on a few scenarios: a wrong expectation fails it, the
temporary folder goes away, and a DIR that is not an empty folder is refused.

The full demo, every scenario in child processes, is tests/e2e/test_demo.py.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import RunCli
from helpers.demo_rows import scenario, table_rows
from three_ledger.commands.demo import demo
from three_ledger.demo.scenarios import Expected
from three_ledger.vocabulary import Posture


def test_a_wrong_expectation_is_marked_and_fails_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = replace(scenario("unpinned-fixture"), expected=Expected(Posture.REVIEW, 9))
    folder = tmp_path / "empty"
    folder.mkdir()  # an existing empty folder is accepted
    code = demo(directory=folder, scenarios=[scenario("fixture-moved"), wrong], vet=False)
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
    assert demo(directory=None, scenarios=[scenario("unpinned-fixture")], vet=False) == 0
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


def test_without_pytest_one_line_says_how_to_get_it(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "pytest" else found(name)
    )
    folder = tmp_path / "kept"
    result = run_cli("demo", "--dir", folder)
    assert result.code == 4
    assert result.err.count("\n") == 1
    assert f"run {sys.executable} -m pip install pytest" in result.first_error_line
    assert "its demo extra (pip install 'PATH[demo]'" in result.first_error_line
    assert result.out == ""
    assert not folder.exists()
