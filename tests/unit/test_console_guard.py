"""Under GitHub Actions, nothing the gate prints but its own commands reads as a workflow
command: lines on stderr, its reports on stdout, and the test command's relayed output."""

from __future__ import annotations

import io

import pytest

from helpers.github_runner import runner_commands
from three_ledger.console_guard import fenced, guarded, neutral
from three_ledger.report.findings import one_line

ACTIONS = {"GITHUB_ACTIONS": "true"}
# What a change can name a file or a test: each a command the runner would act on.
FORGED = [
    "::add-mask::reject",
    "  ::stop-commands::f00d",
    "\u3000::notice title=review::a person reads the diff",
    "tests/a.py ##[add-mask]reject",
    "##[error]forged",
]


def test_the_runner_stand_in_reads_each_forged_line_as_a_command() -> None:
    # The control: without the guard, each of these is a command to the runner.
    assert runner_commands("\n".join(FORGED)) == FORGED[:2]  # the stop holds from there on
    for line in FORGED:
        assert runner_commands(line) == [line], line
    assert runner_commands("ok\r::add-mask::x\n") == ["::add-mask::x"]


@pytest.mark.parametrize("line", FORGED)
def test_a_neutral_line_is_no_command(line: str) -> None:
    assert runner_commands(neutral(line)) == []
    assert runner_commands(one_line(line + "\n::add-mask::x")) == []


def test_ordinary_lines_and_test_ids_are_left_as_they_are() -> None:
    for line in ["tests/t.py::test_a[x::y]", "three-ledger: row 5", ":not a command", "#[x]"]:
        assert neutral(line) == line
    assert neutral("::add-mask::x") == "\\x3a:add-mask::x"
    assert neutral("a ##[b]c") == "a ##\\x5bb]c"


def test_stderr_is_guarded_under_actions_alone_even_split_across_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inner = io.StringIO()
    monkeypatch.setattr("sys.stderr", inner)
    with guarded(ACTIONS):
        import sys

        sys.stderr.write("  :")
        sys.stderr.write(":add-mask::reject\nok ##")
        sys.stderr.write("[error]x\n")
        print("unfinished ::x", end="", file=sys.stderr)
    assert sys.stderr is inner
    assert runner_commands(inner.getvalue()) == []
    assert inner.getvalue().endswith("unfinished ::x")
    outside = io.StringIO()
    monkeypatch.setattr("sys.stderr", outside)
    with guarded({}):
        print("::add-mask::reject", file=sys.stderr)
    assert outside.getvalue() == "::add-mask::reject\n"


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
