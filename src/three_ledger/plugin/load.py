"""What `PYTEST_PLUGINS` names in the gate's runs: the plugin's module hooks, from `hooks.py`.

pytest rewrites the asserts of the module `PYTEST_PLUGINS` names, and keeps the rewritten
code only where it may write bytecode, which the gate's test child may not: `hooks.py`,
which holds no assert, was parsed and compiled again from its syntax tree in every run,
some 20 million instructions (issue 25). This module is all that pytest rewrites now;
`hooks.py` loads from the bytecode staged beside it (run/staging.py).
`tests/unit/test_plugin_staging.py` holds the names below to every module hook of
`hooks.py`. Standard library and pytest only (a plugin-side module).
"""

from __future__ import annotations

from .hooks import (
    pytest_configure,
    pytest_plugin_registered,
    pytest_runtest_protocol,
    pytest_unconfigure,
)

__all__ = [
    "pytest_configure",
    "pytest_plugin_registered",
    "pytest_runtest_protocol",
    "pytest_unconfigure",
]
