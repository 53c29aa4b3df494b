"""Which pinned files each test item opened, for `vet`: an audit hook on `open`.

Off unless the gate sets THREE_LEDGER_READS (the folder to write to) and
THREE_LEDGER_READS_UNDER (the folders whose files count). Then a `sys.addaudithook` hook
notes every file below those folders that is opened for reading, and whom it was opened
for: the test item running, the fixture being set up, or the collector collecting (a
module that loads its data at import). Each item's line names its own reads, its fixtures'
reads, and the reads of every collector above it, so a module's import-time reads count
for each of its items. Reads before collection (a conftest.py imported at start-up) count
for every item. Reads made by subprocesses are not seen.

Standard library and pytest only: the plugin imports this module inside every test run.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Generator, Iterable
from typing import IO, Any

import pytest

from .wire import ID_KEY, READS_ENV, READS_KEY, WATCHED_ENV

# Whom a read is for: ("item", nodeid), ("fixture", id of the FixtureDef) or
# ("collector", nodeid). Reads with no owner yet (start-up) go to the session's key.
_Owner = tuple[str, object]
_SESSION: _Owner = ("collector", "")


class _ReadLog:
    """The reads seen so far, by owner, and the stack of owners now running."""

    def __init__(self, folder: str, watched: Iterable[str]) -> None:
        self.folder = folder
        self.watched = [os.path.join(os.path.normpath(path), "") for path in watched if path]
        self.owners: list[_Owner] = []
        self.reads: dict[_Owner, set[str]] = {}
        self.stream: IO[str] | None = None

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        # Called for every audit event of the process: the test must stay cheap, and
        # nothing may escape, since an exception here would fail the caller's open().
        if event != "open":
            return
        with contextlib.suppress(Exception):  # a read we cannot name is simply not noted
            self._note(args[0], args[2])

    def _note(self, target: object, flags: object) -> None:
        if isinstance(target, int) or target is None:
            return  # a file descriptor: opened earlier, by name
        if isinstance(flags, int) and flags & os.O_ACCMODE == os.O_WRONLY:
            return
        path = os.fsdecode(os.fspath(target))  # type: ignore[call-overload]
        path = os.path.normpath(os.path.join(os.getcwd(), path))
        for prefix in self.watched:
            if path.startswith(prefix):
                owner = self.owners[-1] if self.owners else _SESSION
                relative = path[len(prefix) :].replace(os.sep, "/")
                self.reads.setdefault(owner, set()).add(relative)
                return

    def item_reads(self, item: pytest.Item) -> list[str]:
        owners: list[_Owner] = [_SESSION, ("item", item.nodeid)]
        owners += [("collector", node.nodeid) for node in item.listchain()]
        info = getattr(item, "_fixtureinfo", None)
        for definitions in getattr(info, "name2fixturedefs", {}).values():
            owners += [("fixture", id(definition)) for definition in definitions]
        return sorted(set().union(*(self.reads.get(owner, ()) for owner in owners)))


def _start(folder: str | None, watched: str | None) -> _ReadLog | None:
    if not folder or not watched:
        return None
    log = _ReadLog(folder, watched.split(os.pathsep))
    audit = log.audit

    # A plain function, not the bound method: see machinery._hook.
    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":  # first, and constant-time: most events are not wanted
            audit(event, args)

    sys.addaudithook(hook)
    return log


# Process-wide on purpose: an audit hook cannot be removed, so it is installed at most once,
# here at import (before any conftest.py is imported), and only when the gate asked for it.
_LOG = _start(os.environ.get(READS_ENV), os.environ.get(WATCHED_ENV))


def configure(config: pytest.Config) -> None:
    """Start writing this process's reads (the run's own process, or an xdist worker)."""
    log = _LOG
    if log is None:
        return
    if getattr(config.option, "dist", "no") == "no" or hasattr(config, "workerinput"):
        # Removed before any test runs, so that a pytest a test starts does not record too.
        # An xdist controller keeps them for the workers it starts; it runs no test itself.
        os.environ.pop(READS_ENV, None)
        os.environ.pop(WATCHED_ENV, None)
    if log.stream is not None:  # a pytest run nested in this process
        return
    path = os.path.join(log.folder, f"reads-{os.getpid()}.jsonl")
    log.stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at unconfigure
    config.pluginmanager.register(_Recorder(log), "three_ledger.reads")


class _Recorder:
    """Hooks that keep the owner stack and write one line per item that ran."""

    def __init__(self, log: _ReadLog) -> None:
        self.log = log

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, None]:
        yield from self._owning(("collector", collector.nodeid))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: object) -> Generator[None, Any, None]:
        yield from self._owning(("fixture", id(fixturedef)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, None]:
        yield from self._owning(("item", item.nodeid))
        assert self.log.stream is not None
        line = {ID_KEY: item.nodeid, READS_KEY: self.log.item_reads(item)}
        self.log.stream.write(json.dumps(line) + "\n")
        self.log.stream.flush()

    def _owning(self, owner: _Owner) -> Generator[None, Any, None]:
        self.log.owners.append(owner)
        try:
            yield
        finally:
            self.log.owners.pop()

    def pytest_unconfigure(self) -> None:
        if self.log.stream is not None:
            self.log.stream.close()
