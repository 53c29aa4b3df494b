"""The command line's entry point. `three-ledger --version` is answered here, before the parser
and the rest of the package are imported; everything else goes to `dispatch.py`."""

from __future__ import annotations

import gc
import sys

# Not `typing.TYPE_CHECKING`: importing `typing` (and `re` under it) was most of what
# `--version` cost. mypy reads any name TYPE_CHECKING as true.
TYPE_CHECKING = False
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
        import_dataclasses_without_inspect()
        from three_ledger.cli.dispatch import main as dispatch

        resume = None
        if collecting:
            resume = _freeze_and_resume if argv is None else gc.enable
        return dispatch(argv, loaded=resume)
    finally:
        if collecting:
            gc.enable()


class _DeferredInspect(type(sys)):  # type: ignore[misc]  # `types.ModuleType`, not imported
    """Stands for `inspect` in `dataclasses` alone; the real module is imported at its first
    use."""

    def __getattr__(self, name: str) -> object:
        import importlib

        return getattr(importlib.import_module("inspect"), name)


def import_dataclasses_without_inspect() -> None:
    """Import `dataclasses` with its `inspect` deferred to the first use.

    `dataclasses` imports `inspect` (with `ast`, `dis` and `tokenize` under it) for one call:
    the `__doc__` of a class that has none. That import was the largest piece of the
    standard library the CLI loads, 10 to 16 ms of every start, more than the whole of
    `argparse` (`benchmarks/README.md`), and no command on the path of `check-pins` or
    `properties` needs `inspect` otherwise. So `dataclasses` is imported while a stand-in
    holds the name `inspect`, which it binds; the stand-in is then removed, so that every
    other `import inspect` gets the real module, and the stand-in's first attribute lookup
    imports the real one too. Nothing is done once either module is loaded.
    """
    if "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    sys.modules["inspect"] = _DeferredInspect("inspect")
    try:
        import dataclasses  # noqa: F401  # loaded for the package, with the stand-in bound
    finally:
        del sys.modules["inspect"]


def _freeze_and_resume() -> None:
    gc.freeze()
    gc.enable()
