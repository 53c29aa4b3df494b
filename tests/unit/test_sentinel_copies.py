"""The records a sentinel is made from (plugin/sentinels.py `_copied`): copies of what pytest
resolved for its neighbour, equal to it and sharing none of its dicts and lists, whether
pytest made them as dataclasses (7.3 and later) or attrs classes (before 7.3)."""

from __future__ import annotations

import dataclasses
from typing import Any

import attr
import pytest

from three_ledger.plugin.sentinels import _copied


@dataclasses.dataclass(frozen=True)
class DataclassSpec:
    params: dict[str, object] = dataclasses.field(default_factory=dict)
    _idlist: list[str] = dataclasses.field(default_factory=list)
    names: tuple[str, ...] = ()


@attr.s(frozen=True, slots=True, auto_attribs=True)
class AttrsSpec:
    params: dict[str, object] = attr.Factory(dict)
    _idlist: list[str] = attr.Factory(list)  # its argument is `idlist`
    names: tuple[str, ...] = ()


@pytest.mark.parametrize("kind", [DataclassSpec, AttrsSpec])
def test_a_copy_is_equal_and_shares_no_container(kind: Any) -> None:
    value = object()
    record = kind({"n": value}, ["s7", "3"], ("a", "b"))
    copy = _copied(record)
    assert type(copy) is kind
    assert copy == record
    assert copy is not record
    assert copy.params is not record.params
    assert copy._idlist is not record._idlist
    assert copy.params["n"] is value  # the parameters themselves, as pytest shares them
    assert copy.names is record.names  # a tuple is kept: it cannot change


def test_pytests_own_records_copy(request: pytest.FixtureRequest) -> None:
    """This very test's fixture closure, as pytest resolved it."""
    node = request.node
    info = node._fixtureinfo
    copy = _copied(info)
    assert copy == info
    assert copy.names_closure is not info.names_closure
    assert copy.name2fixturedefs is not info.name2fixturedefs
