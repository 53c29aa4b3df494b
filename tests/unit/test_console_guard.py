"""Under GitHub Actions, nothing the gate prints but its own commands reads as a workflow
command: its reports' lines anywhere, and every line on stdout and stderr, and the test
command's relayed output, under Actions."""

from __future__ import annotations

import io
import json
import sys

import pytest

from helpers.github_runner import runner_commands
from three_ledger.console_guard import command, fenced, guarded
from three_ledger.paths import neutral, printable
from three_ledger.report.findings import one_line

ACTIONS = {"GITHUB_ACTIONS": "true"}
# What a change can name a file or a test: each a command the runner would act on.
FORGED = [
    "::add-mask::reject",
    "  ::stop-commands::f00d",
    "\u3000::notice title=review::a person reads the diff",
    "tests/a.py ##[add-mask]reject",
    "##[error]forged",
    "fixtures/a\r::add-mask::reject.json",
]


def test_the_runner_stand_in_reads_each_forged_line_as_a_command() -> None:
    # The control: without the guard, each of these is a command to the runner.
    assert runner_commands("\n".join(FORGED)) == FORGED[:2]  # the stop holds from there on
    for line in FORGED:
        assert len(runner_commands(line)) == 1, line


@pytest.mark.parametrize("line", FORGED)
def test_a_neutral_line_is_no_command(line: str) -> None:
    assert runner_commands(neutral(line)) == []
    assert runner_commands(one_line(line + "\n::add-mask::x")) == []
    assert runner_commands(printable(line)) == []


def test_ordinary_lines_and_test_ids_are_left_as_they_are() -> None:
    for line in ["tests/t.py::test_a[x::y]", "three-ledger: row 5", ":not a command", "#[x]"]:
        assert neutral(line) == line
    assert neutral("::add-mask::x") == "\\u003a:add-mask::x"
    assert neutral("a ##[b]c") == "a ##\\u005bb]c"


def test_a_json_document_reads_back_the_same_once_neutral() -> None:
    document = {"files": ["##[error]x.json", "a\r::add-mask::b"], "id": "::x"}
    text = json.dumps(document, indent=2)
    shown = "\n".join(map(neutral, text.split("\n")))
    assert runner_commands(shown) == []
    assert json.loads(shown) == document


def test_stdout_and_stderr_are_guarded_under_actions_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    with guarded(ACTIONS):
        sys.stderr.write("  :")
        sys.stderr.write(":add-mask::reject\nok ##")
        sys.stderr.write("[error]x\n")
        print("a refusal naming fixtures/a\r::add-mask::b.json", file=sys.stderr)
        print("##[warning]on stdout")
        command("::error::three-ledger reject (row 7)\n")
        print("unfinished ::x", end="")
    assert (sys.stdout, sys.stderr) == (out, err)
    assert runner_commands(err.getvalue()) == []
    assert runner_commands(out.getvalue()) == ["::error::three-ledger reject (row 7)"]
    assert out.getvalue().endswith("unfinished ::x")
    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    with guarded({}):
        print("::add-mask::reject", file=sys.stderr)
    assert plain.getvalue() == "::add-mask::reject\n"


def test_relayed_output_is_fenced_by_a_token_it_never_saw() -> None:
    stream = io.BytesIO()
    with fenced(stream, ACTIONS):
        stream.write(b"::add-mask::reject\n##[error]x\n::notice::no newline")
    text = stream.getvalue().decode()
    assert runner_commands(text) == [text.splitlines()[0]]  # the fence's own stop
    token = text.splitlines()[0].removeprefix("::stop-commands::")
    assert len(token) == 32
    assert text.endswith(f"\n::{token}::\n")
    with fenced(second := io.BytesIO(), ACTIONS):
        pass
    assert token not in second.getvalue().decode()
    with fenced(plain := io.BytesIO(), {}):
        plain.write(b"::x::y\n")
    assert plain.getvalue() == b"::x::y\n"
