"""Where the tripwire's two sentinels go, and what they are: test functions of the project's own
modules, made the way pytest makes the project's.

A sentinel is a `pytest.Function` whose parent is one of the project's test modules or classes
(the one beside it in the run), named from the words of its neighbours' names
(`test_total_stable` beside `test_total_non_negative` and `test_id_stable`), taking the same
arguments and marks as its neighbour, with a function compiled under the neighbour's file and
line. pytest's own constructor makes it, as `_genfunctions` makes each item of a test
function, from what pytest resolved for the neighbour: copies of its parametrisation (its
callspec: parameters, ids, marks) and of its fixture closure. So it has the same fixtures
and parameters, whatever made them (marks, `pytest_generate_tests` hooks), and the cost is
one item's, where parametrising the function again cost as many sets as the neighbour's
function has. Its file is the neighbour's: tracked by git, on the project's mount. Nothing
is written to disk.

Its position is drawn at random among the first K items, K being the number of items that run
before the first one that could stop the session: every item of the run, unless `-x`,
`--maxfail=N` or stepwise stop it at the first or the Nth failure (K = 0, N - 1, 0). A product
that spares a fixed window of items (the first few, where the basic sentinels are) then spares
real tests with it.

A neighbour qualifies when it is a `pytest.Function` of a module or class (not unittest's
items, doctests or a plugin's own items) with no skip, skipif or xfail mark on its module,
its class or its parameters. Where no position has one, or pytest cannot make the items,
the sentinels are the basic ones: items of a class of their own, parented to the session,
listed first (`tripwire: "basic"`). Standard library and pytest only (a plugin-side module;
see run/staging.py).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Sequence
from typing import Any

import pytest

from .frozen import frozen

PASS, FAIL = "pass", "fail"
# How many slots drawn at random may lack a host before every spot is listed.
_TRIES = 32
# The ledger's words for the two mechanisms (vocabulary.Tripwire).
SENTINELS, BASIC = "sentinels", "basic"
MUST_FAIL_MESSAGE = "three-ledger tripwire: this item must fail, and its failure is not counted"
# Marks a sentinel does not copy from its neighbour: it must run.
_NOT_COPIED = frozenset({"skip", "skipif", "xfail"})


class Sentinel(pytest.Item):
    """A basic sentinel: its own item class, parented to the session; `must` is pass or fail."""

    def __init__(self, *, must: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.must = must

    def runtest(self) -> None:
        if self.must == FAIL:
            pytest.fail(MUST_FAIL_MESSAGE, pytrace=False)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"three-ledger tripwire (must {self.must})"


@frozen
class Placed:
    """The sentinels of one collection: node id to what it must do, and how they were made."""

    musts: dict[str, str]
    mechanism: str


@frozen
class _Spot:
    """An insertion point and the project item beside it whose parent the sentinel shares."""

    position: int
    neighbour: pytest.Function
    # The sentinel goes after its neighbour (position - 1), else before it (position).
    after: bool


def place(session: pytest.Session, items: list[pytest.Item], seed: bytes) -> Placed:
    """Insert both sentinels into ITEMS. SEED is the run's: xdist workers collect the same
    items and must insert the same sentinels."""
    rng = random.Random(seed)
    limit, hosts = _limit(session.config, len(items)), _Hosts()
    chosen = [(must, _draw(rng, items, limit, hosts)) for must in (PASS, FAIL)]
    spots = [(must, spot) for must, spot in chosen if spot is not None]
    if len(spots) == len(chosen):
        made = _made(rng, items, spots)
        if made is not None:
            return made
    return _basic(rng, session, items)


def _limit(config: pytest.Config, count: int) -> int:
    """K: how many project items may run before the sentinels; none of them may stop the
    session."""
    limit = count
    maxfail = getattr(config.option, "maxfail", 0) or 0
    if maxfail > 0:
        limit = min(limit, maxfail - 1)
    if getattr(config.option, "stepwise", False) or getattr(config.option, "stepwise_skip", False):
        limit = 0
    return max(limit, 0)


def _draw(
    rng: random.Random, items: Sequence[pytest.Item], limit: int, hosts: _Hosts
) -> _Spot | None:
    """One spot, drawn uniformly among every spot of the first LIMIT + 1 positions; None when
    there is none.

    A slot (a position, after the item before it or before the item at it) is drawn and kept
    when an item there can host a sentinel, which most can: a constant number of items judged,
    not all of them. After _TRIES misses, every spot is listed and one drawn from the list.
    Either way each spot is equally likely, as when the whole list was always made.
    """
    slots = 2 * (limit + 1)
    for _ in range(_TRIES):
        position, before = divmod(rng.randrange(slots), 2)
        spot = _spot(items, position, after=not before, hosts=hosts)
        if spot is not None:
            return spot
    spots = _spots(items, limit, hosts)
    return spots[rng.randrange(len(spots))] if spots else None


def _spots(items: Sequence[pytest.Item], limit: int, hosts: _Hosts) -> list[_Spot]:
    spots = []
    for position in range(limit + 1):
        for after in (True, False):
            spot = _spot(items, position, after, hosts)
            if spot is not None:
                spots.append(spot)
    return spots


def _spot(items: Sequence[pytest.Item], position: int, after: bool, hosts: _Hosts) -> _Spot | None:
    """The spot at POSITION, after the item before it or before the item at it, if that item
    can host a sentinel."""
    index = position - 1 if after else position
    if not 0 <= index < len(items):
        return None
    neighbour = hosts.host(items[index])
    return None if neighbour is None else _Spot(position, neighbour, after)


class _Hosts:
    """Which items a sentinel can be made beside, as pytest made them; parents judged once."""

    def __init__(self) -> None:
        self.parents: dict[int, bool] = {}

    def host(self, item: pytest.Item) -> pytest.Function | None:
        parent = item.parent
        if type(item) is not pytest.Function or parent is None:
            return None
        fit = self.parents.get(id(parent))
        if fit is None:
            fit = self.parents[id(parent)] = _hosts_sentinels(parent)
        # Its parameters come with the sentinel, and their marks (`pytest.param(marks=...)`).
        callspec = getattr(item, "callspec", None)
        if callspec is not None and any(mark.name in _NOT_COPIED for mark in callspec.marks):
            return None
        return item if fit else None


def _hosts_sentinels(parent: pytest.Collector) -> bool:
    """A test module or class (not unittest's), with no skip, skipif or xfail mark on it or
    above it."""
    if not isinstance(parent, pytest.Module | pytest.Class):
        return False
    chain = parent.listchain()
    return not any(mark.name in _NOT_COPIED for node in chain for mark in node.own_markers)


def _made(
    rng: random.Random, items: list[pytest.Item], chosen: list[tuple[str, _Spot]]
) -> Placed | None:
    """Make and insert the sentinels at CHOSEN; None (and nothing inserted) where pytest fails
    to make them."""
    added: list[tuple[Any, str]] = []
    placed: list[tuple[_Spot, pytest.Item, str]] = []
    try:
        for must, spot in chosen:
            owner = spot.neighbour.parent.obj  # type: ignore[union-attr]
            name = _fresh_name(rng, owner, spot.neighbour, items, {n for _, n in added})
            added.append((owner, name))
            placed.append((spot, _sentinel(spot.neighbour, name, must), must))
    except Exception:  # noqa: BLE001 - a project whose items pytest cannot make gets basic ones
        for owner, name in added:
            if name in vars(owner):
                delattr(owner, name)
        return None
    # Later positions first, so that earlier ones still mean what they meant; at one position,
    # a sentinel that follows its neighbour goes before one that precedes its own.
    order = sorted(placed, key=lambda p: (p[0].position, not p[0].after, rng.random()))
    for spot, sentinel, _ in reversed(order):
        items.insert(spot.position, sentinel)
    return Placed({sentinel.nodeid: must for _, sentinel, must in placed}, SENTINELS)


def _sentinel(neighbour: pytest.Function, name: str, must: str) -> pytest.Item:
    """The item NAME beside NEIGHBOUR, made by pytest from a function put in its parent, with
    copies of what pytest resolved for the neighbour: its parametrisation and its fixtures."""
    parent = neighbour.parent
    assert isinstance(parent, pytest.Module | pytest.Class)
    setattr(parent.obj, name, _function(name, neighbour, must))
    # What follows the function's name in the neighbour's: its ids, "[...]", or nothing.
    suffix = neighbour.name[len(neighbour.originalname) :]
    fixtureinfo = _copied(neighbour._fixtureinfo)
    callspec = getattr(neighbour, "callspec", None)
    if callspec is None:
        return pytest.Function.from_parent(parent, name=name, fixtureinfo=fixtureinfo)
    callspec = _copied(callspec)
    return pytest.Function.from_parent(
        parent,
        name=name + suffix,
        callspec=callspec,
        fixtureinfo=fixtureinfo,
        keywords={callspec.id: True},
        originalname=name,
    )


def _copied(record: Any) -> Any:
    """A copy of one of pytest's records, each dict and list in it copied too, as pytest makes
    one for each item: nothing of the sentinel's is the neighbour's object. The records are
    dataclasses, or attrs classes before pytest 7.3 (attrs names the argument of a private
    field without its underscore)."""
    if dataclasses.is_dataclass(record):
        names = {field.name: field.name for field in dataclasses.fields(record) if field.init}
    else:
        attributes = type(record).__attrs_attrs__
        names = {
            a.name: getattr(a, "alias", None) or a.name.lstrip("_") for a in attributes if a.init
        }
    arguments = {}
    for name, argument in names.items():
        value = getattr(record, name)
        arguments[argument] = type(value)(value) if type(value) in (dict, list) else value
    return type(record)(**arguments)


def _fresh_name(
    rng: random.Random,
    owner: object,
    neighbour: pytest.Function,
    items: Sequence[pytest.Item],
    taken: set[str],
) -> str:
    """A name made of the words of the names beside NEIGHBOUR, with its first word, that
    OWNER has no attribute of."""
    parent = neighbour.parent
    siblings = [
        item.originalname
        for item in items
        if item.parent is parent and isinstance(item, pytest.Function)
    ]
    head = neighbour.originalname.split("_", 1)[0]
    shapes = sorted({tuple(word for word in name.split("_")[1:] if word) for name in siblings})
    words = sorted({word for shape in shapes for word in shape})

    def free(candidate: str) -> bool:
        return candidate.isidentifier() and candidate not in taken and not hasattr(owner, candidate)

    for attempt in range(50):
        if not words:
            break
        # As long as a sibling's name; later one word longer, where those are all taken.
        length = min(max(len(rng.choice(shapes)), 1) + attempt // 25, len(words), 4)
        candidate = "_".join([head, *rng.sample(words, length)])
        if free(candidate):
            return candidate
    word = rng.choice(words) if words else "case"
    number = 2
    while not free(f"{head}_{word}_{number}"):
        number += 1
    return f"{head}_{word}_{number}"


def _function(name: str, neighbour: pytest.Function, must: str) -> Any:
    """A function NAME with NEIGHBOUR's arguments and marks, compiled under its file and line,
    in its module's namespace: it passes, or fails as a plain assertion does."""
    path, line = neighbour.reportinfo()[:2]
    fixture_info = getattr(neighbour, "_fixtureinfo", None)
    arguments = list(getattr(fixture_info, "argnames", ()))
    if isinstance(neighbour.parent, pytest.Class):
        arguments.insert(0, "self")
    # `raise`, not `assert`: an honest run under `python -O` must still fail it. Hidden from
    # the traceback, which would show the neighbour's lines.
    body = "__tracebackhide__ = True" + ("" if must == PASS else "; raise AssertionError")
    source = "\n" * (line or 0) + f"def {name}({', '.join(arguments)}): {body}\n"
    code = compile(source, os.fspath(path), "exec", dont_inherit=True)
    module = neighbour.module
    namespace: dict[str, Any] = {}
    exec(code, vars(module) if module is not None else {}, namespace)
    function = namespace[name]
    if isinstance(neighbour.parent, pytest.Class):
        function.__qualname__ = f"{neighbour.parent.obj.__qualname__}.{name}"
    marks = getattr(neighbour.obj, "pytestmark", [])
    function.pytestmark = [mark for mark in marks if mark.name not in _NOT_COPIED]
    return function


def _basic(rng: random.Random, session: pytest.Session, items: list[pytest.Item]) -> Placed:
    """Today's sentinels: their own class, parented to the session, listed first."""
    names = [f"test_{rng.getrandbits(48):012x}" for _ in (PASS, FAIL)]
    sentinels = [
        Sentinel.from_parent(session, name=name, nodeid=name, must=must)
        for name, must in zip(names, (PASS, FAIL), strict=True)
    ]
    items[:0] = sentinels
    return Placed({sentinel.nodeid: sentinel.must for sentinel in sentinels}, BASIC)
