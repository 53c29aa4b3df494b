"""What the `pytest11` entry point `three_ledger.pytest_plugin` loads: the plugin, by name,
where a run asks for it.

The entry point's name is older than this folder and stays, so that
`-p no:three_ledger.pytest_plugin` still blocks it. Its value is this module rather than
`hooks.py` itself: pytest registers an entry point's module under the entry point's name, and
a run that also names `three_ledger.plugin.hooks` (in `PYTEST_PLUGINS` or `-p`) would then
register the same module a second time under another name, which pytest refuses. Through
`pytest_plugins`, the hooks are registered under their module's own name, once.

The plugin is inert without its variables (SPEC 6), and every plain pytest run of a project
that installs three-ledger loads this entry point: there it registers the `property` marker
(so `--strict-markers` knows it) and imports nothing else. The hooks load where a
`THREE_LEDGER_` variable is set, and in an xdist worker, which learns from its controller
whether the gate asked.
"""

from __future__ import annotations

import os

import pytest

from .wire import PROPERTY_MARKER_HELP


def _asked() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ or any(
        name.startswith("THREE_LEDGER_") for name in os.environ
    )


if _asked():
    pytest_plugins = ["three_ledger.plugin.hooks"]
else:

    def pytest_configure(config: pytest.Config) -> None:
        config.addinivalue_line("markers", PROPERTY_MARKER_HELP)
