"""The measured harness as the gate reads it from the plugin, and records it in the ledger.

`plugin_harness.py` writes the measurement; this module reads it strictly and names, for each
file under ROOT that steered the run, why it counts as an oracle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from three_ledger.errors import InfraFailure

HARNESS_ENV = "THREE_LEDGER_HARNESS"
ROOT_ENV = "THREE_LEDGER_ROOT"
# What plugin_harness writes for a path that is not under ROOT.
OUTSIDE_ROOT = "<outside ROOT>"


@dataclass(frozen=True)
class PluginSource:
    """A registered plugin: its name, and its file under ROOT or its distribution."""

    name: str
    source: str


@dataclass(frozen=True, kw_only=True)
class Harness:
    pytest: str
    rootdir: str
    config_file: str | None
    main: str
    conftests: tuple[str, ...]
    plugins: tuple[PluginSource, ...]
    pythonpath: tuple[str, ...]
    addopts: tuple[str, ...]
    shadowing: dict[str, str]
    test_side_modules: tuple[str, ...]

    def files_under_root(self) -> dict[str, str]:
        """Each file under ROOT that steered the run, with why it counts as an oracle."""
        reasons: dict[str, str] = {}
        for path in self.test_side_modules:
            reasons[path] = "test-side module"
        for path, why in self.shadowing.items():
            reasons[path] = f"module that {why}"
        for plugin in self.plugins:
            if plugin.source.endswith(".py") and not plugin.source.startswith("<"):
                reasons[plugin.source] = f"pytest plugin {plugin.name}"
        for path in self.conftests:
            reasons[path] = "conftest"
        if self.main.endswith(".py"):
            reasons[self.main] = "the run's __main__"
        if self.config_file is not None and self.config_file != OUTSIDE_ROOT:
            reasons[self.config_file] = "pytest config file"
        reasons.pop(OUTSIDE_ROOT, None)
        return reasons


def read_harness(path: Path) -> Harness:
    """The plugin's measurement; InfraFailure when it is missing or malformed."""
    from three_ledger.ledgers import decode

    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
        harness: Harness = decode(Harness, document)
    except FileNotFoundError:
        raise InfraFailure(
            "the plugin reported no harness measurement: the run cannot be told apart from "
            "one steered by a config, plugin or module the pins do not describe"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise InfraFailure(f"the plugin's harness measurement is unreadable: {error}") from None
    return harness
