"""What the `pytest11` entry point `three_ledger.pytest_plugin` loads: the plugin, by name.

The entry point's name is older than this folder and stays, so that
`-p no:three_ledger.pytest_plugin` still blocks it. Its value is this module rather than
`hooks.py` itself: pytest registers an entry point's module under the entry point's name, and
a run that also names `three_ledger.plugin.hooks` (in `PYTEST_PLUGINS` or `-p`) would then
register the same module a second time under another name, which pytest refuses. Through
`pytest_plugins`, the hooks are registered under their module's own name, once.
"""

pytest_plugins = ["three_ledger.plugin.hooks"]
