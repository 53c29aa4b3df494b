"""pytest is never a requirement of the CLI: no gate-side command imports it.

The Action and the GitLab component install three-ledger into an environment of its own,
without pytest; a command module that imports pytest (even for one constant) crashes there.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import EXAMPLE, python_unmeasured

COMMANDS = ["digest", "properties", "dual_pin", "flake_observe", "merge", "gate", "check_pins",
            "draft_pin", "explain", "plan", "shard_plan", "combine"]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_module_does_not_import_pytest(command: str) -> None:
    code = (
        "import importlib, sys\n"
        f"importlib.import_module('three_ledger.commands.{command}')\n"
        "print('pytest' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# The commands whose module, and everything it imports, needs no `inspect`.
WITHOUT_INSPECT = ["properties", "check_pins", "digest", "combine", "explain", "dual_pin",
                   "property_shard", "flake_observe", "draft_pin", "plan", "shard_plan", "vet",
                   "gate", "init", "merge", "flake_evidence", "flake_audit", "selftest",
                   "demo"]  # fmt: skip


@pytest.mark.parametrize("command", WITHOUT_INSPECT)
def test_these_commands_load_no_inspect(command: str) -> None:
    """`dataclasses` loaded as the CLI loads it (`cli.import_dataclasses_without_inspect`),
    then the parser and the command's module: `inspect` is still not loaded."""
    code = (
        "import sys\n"
        "from three_ledger.cli import import_dataclasses_without_inspect\n"
        "import_dataclasses_without_inspect()\n"
        f"import three_ledger.cli.dispatch, three_ledger.commands.{command}\n"
        "print('inspect' in sys.modules)\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# The commands that start without `concurrent.futures`, which imports `logging` with it: their
# work in the background (the namespace probe) runs in a `background.Background`.
WITHOUT_FUTURES = ["properties", "check_pins", "digest", "combine", "explain", "dual_pin",
                   "property_shard", "flake_observe", "draft_pin", "plan", "shard_plan",
                   "init", "merge", "flake_audit", "selftest"]  # fmt: skip


@pytest.mark.parametrize("command", WITHOUT_FUTURES)
def test_these_commands_load_no_thread_pool(command: str) -> None:
    code = (
        "import sys\n"
        f"import three_ledger.cli.dispatch, three_ledger.commands.{command}\n"
        "print(*(name in sys.modules for name in ('concurrent.futures', 'logging')))\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_a_check_pins_run_loads_neither_inspect_nor_shutil() -> None:
    """A whole `check-pins` run through `cli.main`: `dataclasses` holds the stand-in, and
    argparse's formatters get their width without `shutil`."""
    code = (
        "import sys\n"
        "from three_ledger.cli import main\n"
        f"code = main(['check-pins', '--pins-dir', {str(EXAMPLE / 'pins')!r}, "
        f"'--root', {str(EXAMPLE)!r}])\n"
        "import dataclasses\n"
        "print(code, 'inspect' in sys.modules, 'shutil' in sys.modules, "
        "type(dataclasses.inspect).__name__)\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == ["0", "False", "False", "_DeferredInspect"]


def test_a_check_pins_run_loads_no_openssl() -> None:
    """`hashlib` loads OpenSSL at import, more than a quarter of a bare Python's start: a
    `check-pins` run hashes its small pins without it (`pins.small_sha256`)."""
    code = (
        "import sys\n"
        "from three_ledger.cli import main\n"
        f"code = main(['check-pins', '--pins-dir', {str(EXAMPLE / 'pins')!r}, "
        f"'--root', {str(EXAMPLE)!r}])\n"
        "print(code, 'hashlib' in sys.modules, '_hashlib' in sys.modules)\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == ["0", "False", "False"]


def test_a_check_pins_run_reads_pins_without_the_results_or_the_ledger_words() -> None:
    """Reading a pin needs its selectors (`selection.py`) and its policies (`pin_policy.py`);
    `results` and `vocabulary`, which a run's results need, were 14 million instructions of a
    `check-pins` of 207 million."""
    code = (
        "import sys\n"
        "from three_ledger.cli import main\n"
        f"code = main(['check-pins', '--pins-dir', {str(EXAMPLE / 'pins')!r}, "
        f"'--root', {str(EXAMPLE)!r}])\n"
        "print(code, *(name in sys.modules for name in "
        "('three_ledger.results', 'three_ledger.vocabulary', 'three_ledger.selection')))\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == ["0", "False", "False", "True"]


def test_shard_plan_collects_without_what_only_plans_report_needs() -> None:
    """`shard-plan` writes the slices, not `plan`'s report: it loads neither the JUnit reader
    nor the pin matching nor the product proposal (`run/collection.py`)."""
    code = (
        "import sys\n"
        "import three_ledger.commands.shard_plan\n"
        "print(*(f'three_ledger.{name}' in sys.modules for name in "
        "('junit_report', 'matching', 'product_guess', 'run.collection')))\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "True"]


def test_version_imports_nothing_but_the_package() -> None:
    """`--version` is answered before anything is imported: not `typing`, not `re`."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from three_ledger.cli import main\n"
        "main(['--version'])\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    version, loaded = done.stdout.splitlines()
    assert version.startswith("three-ledger ")
    assert loaded == "['__future__', 'gc', 'three_ledger', 'three_ledger.cli']"


@pytest.mark.parametrize(("columns", "width"), [("60", 58), ("0", 78), ("wide", 78), (None, 78)])
def test_help_is_as_wide_as_shutil_says(
    columns: str | None, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The width argparse would take: COLUMNS, else the terminal's (none here: 80), less 2."""
    import argparse
    import shutil

    from three_ledger.cli.parser import build_parser

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    formatter = build_parser("check-pins")._get_formatter()
    assert formatter._width == width
    assert formatter._width == argparse.HelpFormatter("x")._width
    assert shutil.get_terminal_size().columns - 2 == width


def test_a_negative_columns_without_stdout_falls_back_to_80(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pythonw, or a closed stdout: no terminal to ask, so a negative COLUMNS means 80."""
    import shutil

    from three_ledger.cli.parser import build_parser

    monkeypatch.setenv("COLUMNS", "-5")
    monkeypatch.setattr(sys, "__stdout__", None)
    assert build_parser("check-pins")._get_formatter()._width == 78
    assert shutil.get_terminal_size().columns - 2 == 78


def test_the_deferred_inspect_is_the_real_one_at_its_first_use() -> None:
    """A class without a docstring: `dataclasses` writes one from `inspect.signature`."""
    code = (
        "import sys\n"
        "from three_ledger.cli import import_dataclasses_without_inspect\n"
        "import_dataclasses_without_inspect()\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Bare:\n"
        "    size: int\n"
        "import inspect\n"
        "print(Bare.__doc__, dataclasses.inspect.signature is inspect.signature)\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Bare(size: int) True"


def test_a_run_without_the_read_only_tree_loads_the_real_inspect_first() -> None:
    """Without the mount layer, what the gate would import after the test command is
    imported before it (`jsonio.load_validator_code`): the stand-in's `inspect` too."""
    code = (
        "import sys\n"
        "from three_ledger.cli import import_dataclasses_without_inspect\n"
        "import_dataclasses_without_inspect()\n"
        "from three_ledger import jsonio\n"
        "print('inspect' in sys.modules)\n"
        "jsonio.load_validator_code()\n"
        "print('inspect' in sys.modules)\n"
    )
    done = python_unmeasured(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_nothing_is_deferred_once_dataclasses_is_loaded() -> None:
    import dataclasses
    import inspect

    from three_ledger.cli import import_dataclasses_without_inspect

    import_dataclasses_without_inspect()
    assert vars(dataclasses)["inspect"] is inspect
    assert type(sys.modules["inspect"]).__name__ == "module"
