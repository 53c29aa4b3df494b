"""Whether a namespace changed, read from CPython's own count of each dictionary's changes.

CPython 3.11 to 3.13 keep in every `dict` a version (PEP 509's `ma_version_tag`): each change
to the dict (a key added, a value replaced, a key removed, the dict cleared) takes a new
number from one counter of the interpreter, and nothing else alters it. A module's namespace
is a dict, and so is the one behind a class's `__dict__` proxy. So one integer read tells
the machinery audit whether a namespace of pytest's may have changed since it was last
seen, where comparing its values one by one costs a read of each (issue 25: the comparison
after each test was most of the tripwire's cost per test). A version that moved only sends
the audit back to that comparison; it never decides that something changed, so data pytest
sets and puts back costs only time.

The version is read through `_ctypes` at an offset CPython does not publish, and not every
Python keeps it: 3.14 drops it, a free-threaded build lays the dict out differently, PyPy
has no such dicts. So `VERSIONS` is a reader only where the module has watched dicts of its
own change in every way above, and seen the count of entries where it reads it; otherwise
it is None, and the audit compares values alone, as it always did. Code that writes the
interpreter's memory itself can set a version back, as it can change any value unseen: that
is an attack on the audit (docs/threat-model.md, "Out of scope").

Standard library only (a plugin-side module; see run/staging.py).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Mapping
from operator import attrgetter
from types import MappingProxyType, ModuleType
from typing import Any

# A stamp reads one dict's version: an unsigned 64-bit integer at a fixed address.
Stamp = Any
_value = attrgetter("value")


class Versions:
    """Reads the version of dicts laid out as CPython 3.11 to 3.13 lay them out: the object's
    header, the count of entries, then the version."""

    def __init__(self, counter: Any, version: Any) -> None:
        self._counter = counter
        self._version = version
        self._header = object.__basicsize__

    def stamp(self, mapping: Mapping[str, Any]) -> Stamp | None:
        """The stamp of the dict behind MAPPING (a module's namespace, a class's proxy); None
        for anything else, which the audit then compares value by value."""
        table = _table(mapping)
        if table is None:
            return None
        return self._version.from_address(id(table) + self._header + 8)

    def count(self, table: dict[Any, Any]) -> int:
        """The count of entries where this reader expects it: a check of the layout."""
        return int(self._counter.from_address(id(table) + self._header).value)

    def reads(self, stamps: list[Stamp]) -> list[int]:
        return list(map(_value, stamps))


def _table(mapping: Mapping[str, Any]) -> dict[Any, Any] | None:
    if type(mapping) is dict:
        return mapping
    if type(mapping) is MappingProxyType:
        # A proxy's only reference is the mapping it shows (CPython's `mappingproxy_traverse`).
        inner = gc.get_referents(mapping)
        if len(inner) == 1 and type(inner[0]) is dict:
            return inner[0]
    return None


def _proven(versions: Versions) -> bool:
    """Whether VERSIONS reads what it should here: the count of entries, for dicts of three
    sizes; and a version that each kind of change moves and a read leaves alone, in a dict, a
    module's namespace set through the module, and a class's set through the class."""
    for size in (0, 1, 9):
        table = {str(key): key for key in range(size)}
        if versions.count(table) != size:
            return False
    probe: dict[str, object] = {"kept": 1}
    module = ModuleType("three_ledger_probe")
    kind = type("Probe", (), {"kept": 1})
    stamps = [versions.stamp(probe), versions.stamp(vars(module)), versions.stamp(kind.__dict__)]
    if any(stamp is None for stamp in stamps):
        return False
    changes: list[Callable[[], object]] = [
        lambda: probe.__setitem__("added", 1),
        lambda: probe.__setitem__("added", 2),
        lambda: probe.pop("added"),
        lambda: probe.setdefault("other", 3),
        lambda: probe.update(kept=object()),
        lambda: probe.clear(),
        lambda: setattr(module, "added", 1),
        lambda: delattr(module, "added"),
        lambda: setattr(kind, "added", 1),
        lambda: setattr(kind, "kept", 2),
    ]
    for change in changes:
        before = versions.reads(stamps)
        if versions.reads(stamps) != before:  # a read alone moved it
            return False
        change()
        after = versions.reads(stamps)
        if after == before or sum(map(int.__ne__, after, before)) != 1:
            return False
    return True


def _reader() -> Versions | None:
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info < (3, 14):
        return None
    # A 64-bit build whose objects start with the plain header (a free-threaded or a
    # reference-tracing build has a larger one, and lays the dict out otherwise).
    if sys.maxsize != 2**63 - 1 or object.__basicsize__ != 16:
        return None
    try:
        from _ctypes import _SimpleCData
    except ImportError:  # pragma: no cover - a CPython built without ctypes
        return None

    class Counter(_SimpleCData):  # type: ignore[type-arg] # Py_ssize_t, 64-bit
        _type_ = "q"

    class Version(_SimpleCData):  # type: ignore[type-arg] # uint64_t
        _type_ = "Q"

    versions = Versions(Counter, Version)
    return versions if _proven(versions) else None


VERSIONS = _reader()
