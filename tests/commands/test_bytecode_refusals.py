"""Bytecode refused before anything runs, command by command: `properties` refuses bytecode new
against the base, bytecode without its source and unchecked-hash bytecode in `__pycache__`;
`plan` and `vet`, which have no base, the last two only. Timestamp and checked-hash bytecode
in `__pycache__` that git ignores is checked against its source by Python: never refused."""

from __future__ import annotations

import py_compile
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import REPO, RunCli, fixture_pin, git, make_tree, write_json

# Stands in for the test command: it leaves a mark in its log when it runs (the sandbox keeps
# ROOT read-only), and writes no results.
MARK = "the command ran"
MARKS_ITS_RUN = shlex.join([sys.executable, "-c", f"print({MARK!r})"])
REPORT = REPO / "tests/data/junit/mocha-xunit.xml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    make_tree(
        root,
        {
            "fixtures/a.json": b'{"n": 1}\n',
            "properties/test_a.py": b"def test_a(): pass\n",
            ".gitignore": b"__pycache__/\n",
        },
    )
    fixture_pin(root, ["fixtures/a.json"])
    write_json(
        root / "pins/properties.json",
        {
            "pin_id": "proppin-test",
            "fixture_pins": ["fixpin-test"],
            "network": "allowed",
            "properties": [
                {"id": "a.n", "claim": "n is one.", "domain": ["a.json"], "test": "test_a"}
            ],
        },
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def pins(root: Path) -> tuple[str | Path, ...]:
    return ("--pin", root / "pins/fixtures.json", "--properties", root / "pins/properties.json")


def ran(root: Path) -> bool:
    """Whether the command ran: its mark is in the log."""
    log = root.parent / "run.log"
    return log.exists() and MARK in log.read_text()


def plan(run_cli: RunCli, root: Path) -> tuple[int, str]:
    result = run_cli(
        "plan", *pins(root), "--root", root, "--command", MARKS_ITS_RUN,
        "--log", root.parent / "run.log",
    )  # fmt: skip
    return result.code, result.first_error_line


def vet(run_cli: RunCli, root: Path) -> tuple[int, str]:
    out = root.parent / "vet.json"
    result = run_cli("vet", *pins(root), "--root", root, "--command", MARKS_ITS_RUN, "--out", out)
    return result.code, result.first_error_line


def properties(run_cli: RunCli, root: Path) -> tuple[int, str]:
    digest = run_cli(
        "digest", "--pin", root / "pins/fixtures.json", "--root", root,
        "--out", root.parent / "f.json",
    ).out.strip()  # fmt: skip
    result = run_cli(
        "properties", *pins(root), "--expect-digest", digest, "--command", MARKS_ITS_RUN,
        "--root", root, "--base", "HEAD", "--out", root.parent / "p.json",
        "--log", root.parent / "run.log",
    )  # fmt: skip
    return result.code, result.first_error_line


Command = Callable[[RunCli, Path], tuple[int, str]]
COMMANDS: dict[str, Command] = {"plan": plan, "vet": vet, "properties": properties}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_pyc_outside_pycache_is_refused_ignored_or_not(
    run_cli: RunCli, project: Path, command: Command
) -> None:
    make_tree(project, {"properties/helpers.pyc": b"\x00"})
    (project / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(project, "commit", "-qam", "ignore bytecode")
    code, first_line = command(run_cli, project)
    assert code == 2
    assert first_line.endswith(
        "bytecode outside __pycache__ where the test child imports from: properties/helpers.pyc "
        "(outside __pycache__ under ROOT): Python imports such a file without its source, in "
        "place of the module; delete it (`git rm` where git tracks it)"
    )
    assert not ran(project)


def test_properties_refuses_bytecode_new_against_the_base(run_cli: RunCli, project: Path) -> None:
    make_tree(project, {"properties/__pycache__/test_a.cpython-311.pyc": b"\x00"})
    git(project, "add", "-f", "properties/__pycache__")
    code, first_line = properties(run_cli, project)
    assert code == 2
    assert "bytecode new or changed against the base " in first_line
    assert ": properties/__pycache__/test_a.cpython-311.pyc: Python or pytest could" in first_line
    assert not ran(project)


def ignored_bytecode(project: Path, mode: py_compile.PycInvalidationMode) -> str:
    """The test module's bytecode, as Python writes it in MODE, where git ignores it."""
    pyc = f"properties/__pycache__/test_a.{sys.implementation.cache_tag}.pyc"
    source = str(project / "properties/test_a.py")
    py_compile.compile(source, cfile=str(project / pyc), doraise=True, invalidation_mode=mode)
    return pyc


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_ignored_unchecked_hash_bytecode_in_pycache_is_refused(
    run_cli: RunCli, project: Path, command: Command
) -> None:
    pyc = ignored_bytecode(project, py_compile.PycInvalidationMode.UNCHECKED_HASH)
    code, first_line = command(run_cli, project)
    assert code == 2
    assert first_line.endswith(
        f"unchecked-hash bytecode under ROOT: {pyc}: Python loads such a file in place of its "
        "source without comparing the two, so the run would execute code other than the source "
        "under review; delete it (`git rm` where git tracks it)"
    )
    assert not ran(project)


MODES = {
    "timestamp": py_compile.PycInvalidationMode.TIMESTAMP,
    "checked-hash": py_compile.PycInvalidationMode.CHECKED_HASH,
}


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_ignored_bytecode_in_pycache_python_checks_is_no_refusal(
    run_cli: RunCli, project: Path, command: Command, mode: py_compile.PycInvalidationMode
) -> None:
    """Python compares it with its source and compiles the source where it is stale; the run
    goes ahead (and fails for want of pytest)."""
    ignored_bytecode(project, mode)
    (project / "properties/test_a.py").write_text("def test_a(): assert True\n")
    code, first_line = command(run_cli, project)
    assert code == 4, first_line
    assert "bytecode" not in first_line
    assert ran(project) or command is vet  # vet runs in a copy of ROOT


def test_plan_from_a_report_runs_nothing_and_refuses_no_bytecode(
    run_cli: RunCli, project: Path
) -> None:
    make_tree(project, {"pytest.pyc": b"\x00"})
    result = run_cli(
        "plan", *pins(project), "--root", project, "--junit-xml", REPORT, "--from-report"
    )
    assert result.code in (0, 1), result.err
    assert "bytecode" not in result.err
