"""The cyclic collector is paused while the CLI loads the package, and runs for the command.

`cli.main` pauses it before importing the parser and the command's module; `dispatch`
resumes it once the command's module is in. A caller that had paused it keeps it paused.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from three_ledger import cli
from three_ledger.cli import dispatch
from three_ledger.cli.help_text import COMMAND_HELP
from three_ledger.exit_codes import ExitCode


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, bool]]:
    """Whether the collector ran while the command's module loaded, and while it ran."""
    states: dict[str, bool] = {}
    real_import = importlib.import_module

    def import_module(name: str, package: str | None = None) -> ModuleType:
        states["while loading"] = gc.isenabled()
        return real_import(name, package)

    def runner(args: argparse.Namespace) -> int:
        states["while running"] = gc.isenabled()
        states["frozen"] = gc.get_freeze_count() > 0
        return 0

    monkeypatch.setattr(importlib, "import_module", import_module)
    monkeypatch.setitem(dispatch._RUNNERS, "explain", runner)
    was_enabled = gc.isenabled()
    gc.unfreeze()
    yield states
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_paused_while_loading_running_for_the_command(seen: dict[str, bool]) -> None:
    gc.enable()
    assert cli.main(["explain", "a.json", "b.json"]) == 0
    assert seen == {"while loading": False, "while running": True, "frozen": False}
    assert gc.isenabled()


def test_a_process_of_its_own_freezes_what_loading_made(
    seen: dict[str, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ARGV: the console script. The caller's objects are frozen too, so only then."""
    gc.enable()
    monkeypatch.setattr(sys, "argv", ["three-ledger", "explain", "a.json", "b.json"])
    assert cli.main() == 0
    assert seen == {"while loading": False, "while running": True, "frozen": True}


def test_a_caller_that_paused_the_collector_keeps_it_paused(seen: dict[str, bool]) -> None:
    gc.disable()
    assert cli.main(["explain", "a.json", "b.json"]) == 0
    assert seen == {"while loading": False, "while running": False, "frozen": False}
    assert not gc.isenabled()


def test_resumed_when_the_command_fails_to_parse() -> None:
    gc.enable()
    assert cli.main(["explain", "--no-such-flag"]) == ExitCode.USAGE
    assert gc.isenabled()


@pytest.mark.parametrize("name", sorted(COMMAND_HELP))
def test_every_command_has_the_module_dispatch_loads(name: str) -> None:
    importlib.import_module(f"three_ledger.commands.{name.replace('-', '_')}")
