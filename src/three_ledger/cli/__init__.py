"""The command line's entry point. `three-ledger --version` is answered here, before the parser
and the rest of the package are imported; everything else goes to `dispatch.py`."""

from __future__ import annotations

import gc
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
    # The cyclic collector is paused while the package loads: importing it makes tens of
    # thousands of objects and no garbage cycle, and the collector's passes over them were a
    # tenth of the start-up. `dispatch` resumes it once the command's module is in, before
    # the command runs. In a process of its own (no ARGV: the console script, `-m`), what
    # loading made lives until the exit, so it is frozen first: the collector's later passes
    # skip it. A caller in the same process keeps its own objects collectable.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from three_ledger.cli.dispatch import main as dispatch

        resume = None
        if collecting:
            resume = _freeze_and_resume if argv is None else gc.enable
        return dispatch(argv, loaded=resume)
    finally:
        if collecting:
            gc.enable()


def _freeze_and_resume() -> None:
    gc.freeze()
    gc.enable()
