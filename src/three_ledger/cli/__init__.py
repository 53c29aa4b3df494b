"""The command line's entry point. `three-ledger --version` is answered here, before the parser
and the rest of the package are imported; everything else goes to `dispatch.py`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given == ["--version"]:
        # What the parser's version action prints (tests/commands/test_cli.py holds them equal).
        from three_ledger import __version__

        print(f"three-ledger {__version__}")
        return 0
    from three_ledger.cli.dispatch import main as dispatch

    return dispatch(argv)
