"""pytest is never a requirement of the CLI: no gate-side command imports it.

The Action and the GitLab component install three-ledger into an environment of its own,
without pytest; a command module that imports pytest (even for one constant) crashes there.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

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
