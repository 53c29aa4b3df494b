"""The dict versions the machinery audit reads (plugin/versions.py): every way a namespace can
change moves its version, a read does not, and a reader that reads the wrong place is never
trusted."""

from __future__ import annotations

import gc
import sys
from collections import OrderedDict
from collections.abc import Callable
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

from three_ledger.plugin import versions
from three_ledger.plugin.versions import VERSIONS, Versions

KEEPS_VERSIONS = (
    sys.implementation.name == "cpython"
    and (3, 11) <= sys.version_info < (3, 14)
    and sys.maxsize == 2**63 - 1
    and object.__basicsize__ == 16
)
needs_versions = pytest.mark.skipif(VERSIONS is None, reason="no dict versions here")


def test_the_versions_are_read_where_cpython_keeps_them() -> None:
    assert (VERSIONS is not None) == KEEPS_VERSIONS


def _module() -> ModuleType:
    module = ModuleType("watched")
    exec("kept = 1\ndef rebind():\n    global kept\n    kept = object()\n", vars(module))
    return module


def _class() -> type:
    return type("Watched", (), {"kept": 1, "added": 0})


def _table_of(kind: type) -> dict[str, Any]:
    """The dict behind a class's proxy, which code can write without the class knowing."""
    table = gc.get_referents(kind.__dict__)[0]
    assert type(table) is dict
    return table


CHANGES: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {
    "module attribute set": (_module, lambda m: setattr(m, "added", 1)),
    "module attribute replaced": (_module, lambda m: setattr(m, "kept", 2)),
    "module attribute deleted": (_module, lambda m: delattr(m, "kept")),
    "global rebound by the module's code": (_module, lambda m: m.rebind()),
    "module dict written": (_module, lambda m: vars(m).__setitem__("kept", 3)),
    "module dict updated": (_module, lambda m: vars(m).update(kept=4)),
    "module dict popped": (_module, lambda m: vars(m).pop("kept")),
    "module dict setdefault": (_module, lambda m: vars(m).setdefault("other", 5)),
    "module dict cleared": (_module, lambda m: vars(m).clear()),
    "module dict merged in place": (_module, lambda m: vars(m).__ior__({"kept": 7})),
    "code run in the module's namespace": (_module, lambda m: exec("kept = 8", vars(m))),
    "class attribute set": (_class, lambda c: setattr(c, "added", 1)),
    "class attribute deleted": (_class, lambda c: delattr(c, "added")),
    "class dict written behind its proxy": (_class, lambda c: _table_of(c).update(kept=6)),
    "class dict popped behind its proxy": (_class, lambda c: _table_of(c).pop("kept")),
}


@needs_versions
@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_each_way_a_namespace_changes_moves_its_version(
    change: tuple[Callable[[], Any], Callable[[Any], None]],
) -> None:
    assert VERSIONS is not None
    make, apply = change
    owner = make()
    stamp = VERSIONS.stamp(owner.__dict__)
    before = VERSIONS.reads([stamp])
    dict(owner.__dict__)
    assert VERSIONS.reads([stamp]) == before  # reading moves nothing
    apply(owner)
    assert VERSIONS.reads([stamp]) != before


@needs_versions
def test_a_value_set_to_itself_leaves_the_version() -> None:
    """Nothing changed, so nothing is compared again: the audit's fast path holds."""
    assert VERSIONS is not None
    module = _module()
    stamp = VERSIONS.stamp(vars(module))
    before = VERSIONS.reads([stamp])
    vars(module)["kept"] = vars(module)["kept"]
    assert VERSIONS.reads([stamp]) == before


@needs_versions
def test_only_a_dict_or_a_proxy_of_one_has_a_stamp() -> None:
    assert VERSIONS is not None
    assert VERSIONS.stamp(OrderedDict(a=1)) is None
    assert VERSIONS.stamp(MappingProxyType(OrderedDict(a=1))) is None
    assert VERSIONS.stamp(MappingProxyType({"a": 1})) is not None


class _Misplaced(Versions):
    """Reads eight bytes early: the count is the object's type, the version the count."""

    def __init__(self, real: Versions) -> None:
        super().__init__(real._counter, real._version)
        self._header -= 8


class _Frozen(Versions):
    """Reads a version that never moves, as CPython 3.14's watcher tag does not."""

    def __init__(self, real: Versions) -> None:
        super().__init__(real._counter, real._version)
        self._still: dict[str, int] = {}

    def stamp(self, mapping: Any) -> Any:
        return super().stamp(self._still) if versions._table(mapping) is not None else None


@needs_versions
@pytest.mark.parametrize("reader", [_Misplaced, _Frozen], ids=["misplaced", "never moves"])
def test_a_reader_that_reads_the_wrong_place_is_not_trusted(
    reader: Callable[[Versions], Versions],
) -> None:
    assert VERSIONS is not None
    assert versions._proven(VERSIONS)
    assert not versions._proven(reader(VERSIONS))
