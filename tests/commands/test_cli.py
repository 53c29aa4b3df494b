"""The command line as a whole: exit codes, help, crashes, and a real end-to-end run."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import RunCli, git
from three_ledger import __version__
from three_ledger.cli import main


def test_version_and_help_exit_zero(run_cli: RunCli) -> None:
    version = run_cli("--version")
    assert (version.code, version.out) == (0, f"three-ledger {__version__}\n")
    help_text = run_cli("--help")
    assert help_text.code == 0
    assert "digest" in help_text.out
    assert "dual-pin" in help_text.out


def test_the_quick_version_is_the_parsers(capsys: pytest.CaptureFixture[str]) -> None:
    # `--version` alone is answered before the parser is imported; with anything after it,
    # the parser's version action answers. Both say the same.
    assert main(["--version"]) == 0
    quick = capsys.readouterr().out
    assert main(["--version", "--quiet"]) == 0
    assert capsys.readouterr().out == quick == f"three-ledger {__version__}\n"


def test_version_imports_neither_the_parser_nor_the_commands() -> None:
    code = (
        "import sys; from three_ledger.cli import main; main(['--version']);"
        "print(sorted(m for m in sys.modules if m.startswith(('three_ledger.', 'argparse'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.splitlines()[1] == "['three_ledger.cli']", done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["digest", "--pin", "p.json", "--out", "o.json", "--bogus"],
        ["digest", "--out", "o.json"],
    ],
)
def test_usage_errors_never_exit_2(run_cli: RunCli, argv: list[str]) -> None:
    result = run_cli(*argv)
    assert result.code == 64
    assert "usage error" in result.err


def test_a_crash_is_not_a_verdict(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    from three_ledger.commands import dual_pin

    def explode(**_: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(dual_pin, "dual_pin_not_run", explode)
    result = run_cli("dual-pin", "--not-run", "--out", "x.json")
    assert result.code == 70
    assert "internal error" in result.first_error_line
    assert "please report it" in result.first_error_line


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "not a number of seconds: 'abc'"),
        ("0", "must be a positive number of seconds: '0'"),
        ("-5", "must be a positive number of seconds: '-5'"),
        ("inf", "must be a positive number of seconds: 'inf'"),
        ("nan", "must be a positive number of seconds: 'nan'"),
    ],
)
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(
    run_cli: RunCli, value: str, message: str
) -> None:
    result = run_cli("properties", f"--timeout={value}")
    assert result.code == 64
    assert message in result.err


@pytest.mark.parametrize(
    ("command", "message"),
    [("", "the command is empty"), ("   ", "the command is empty"), ("'x", "cannot split")],
)
def test_a_command_with_no_words_is_a_usage_error(
    run_cli: RunCli, command: str, message: str
) -> None:
    result = run_cli("properties", f"--command={command}")
    assert result.code == 64
    assert message in result.err


def interrupt_dual_pin(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    from three_ledger.commands import dual_pin

    def raise_it(**_: object) -> int:
        raise error

    monkeypatch.setattr(dual_pin, "dual_pin_not_run", raise_it)


def test_ctrl_c_outside_a_child_run_exits_130(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt_dual_pin(monkeypatch, KeyboardInterrupt())
    result = run_cli("dual-pin", "--not-run", "--out", "x.json")
    assert (result.code, result.err) == (130, "three-ledger: interrupted\n")


@pytest.mark.parametrize("debug", ["", "1"])
def test_a_crash_shows_its_traceback_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], debug: str
) -> None:
    interrupt_dual_pin(monkeypatch, RuntimeError("boom"))
    monkeypatch.setenv("THREE_LEDGER_DEBUG", debug)
    assert main(["dual-pin", "--not-run", "--out", "x.json"]) == 70
    err = capsys.readouterr().err
    assert ("Traceback (most recent call last)" in err) == bool(debug)
    assert ("set THREE_LEDGER_DEBUG=1 to see the traceback" in err) != bool(debug)


def test_seed_workflow_steps_1_and_3_end_to_end(orders_repo: Path) -> None:
    """`python -m three_ledger` in a real git checkout, pins untouched byte for byte."""
    pins = orders_repo / "pins"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in pins.iterdir()}
    for pin, out in (("fixtures.json", "fixture_a.json"), ("fixtures_b.json", "fixture_b.json")):
        completed = subprocess.run(
            [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", f"pins/{pin}",
             "--root", ".", "--out", f"ledgers/{out}"],
            cwd=orders_repo, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr
        ledger = json.loads((orders_repo / "ledgers" / out).read_text())
        assert completed.stdout == ledger["digest"] + "\n"
    completed = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "dual-pin", "--not-run",
         "--out", "ledgers/d.json"],
        cwd=orders_repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in pins.iterdir()}
    assert after == before
    assert git(orders_repo, "status", "--porcelain", "--", "pins") == ""
    assert not any(os.path.isabs(p) for p in ledger_paths(orders_repo / "ledgers/fixture_a.json"))


def ledger_paths(path: Path) -> list[str]:
    ledger = json.loads(path.read_text())
    return [ledger["fixtures_dir"], *(entry["path"] for entry in ledger["files"])]


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from three_ledger.cli.parser import build_parser

    actions = build_parser()._actions
    subparsers = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


def _commands_writing(flag: str) -> list[str]:
    return sorted(
        name
        for name, sub in _subcommands().items()
        if any(flag in action.option_strings for action in sub._actions)
    )


@pytest.mark.parametrize(
    ("command", "flag"),
    [*((name, "--out") for name in _commands_writing("--out")), ("gate", "--out-dir")],
)
def test_standard_output_is_no_ledger_path(run_cli: RunCli, command: str, flag: str) -> None:
    result = run_cli(command, flag, "-")
    assert result.code == 64
    assert f"argument {flag}: '-' (standard output) is not a file" in result.err
    assert not Path("-").exists()


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_subcommand_helps_with_a_description_an_example_and_its_exit_codes(
    run_cli: RunCli, command: str
) -> None:
    from three_ledger.exit_codes import ExitCode

    result = run_cli(command, "--help")
    assert result.code == 0
    assert _subcommands()[command].description, command
    example, codes = result.out.split("\nexample:\n", 1)[1].split("\n\nexit codes:\n")
    assert example.strip().startswith(f"three-ledger {command}")
    listed = [int(line.split()[0]) for line in codes.strip().splitlines()]
    assert listed[-3:] == [64, 70, 130]
    assert set(listed) <= {int(code) for code in ExitCode}


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_a_command_parsed_alone_reads_its_arguments_as_the_whole_grammar_does(
    command: str,
) -> None:
    """`main` builds only the named command's parser: it must be that command's, whole."""
    from three_ledger.cli.parser import build_parser

    alone = build_parser(command)
    whole = _subcommands()[command]
    subparsers = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == [command]
    assert subparsers.choices[command].format_help() == whole.format_help()


def test_an_unknown_command_still_lists_every_command(run_cli: RunCli) -> None:
    result = run_cli("no-such-command")
    assert result.code == 64
    assert all(name in result.err for name in _subcommands())
