"""`@frozen` behaves as `@dataclass(frozen=True)`: equality, hashing, repr, immutability.

Each pair of classes below declares the same fields twice, once with each decorator;
Hypothesis draws field values and compares what the two give.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from three_ledger.frozen import frozen


@frozen
class Point:
    """A record with a default, a field left out of comparison and one left out of repr."""

    x: int
    y: str = "origin"
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@dataclass(frozen=True)
class PointDataclass:
    """`Point` as a dataclass: the yardstick."""

    x: int
    y: str = "origin"
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@frozen(kw_only=True)
class Named:
    """Keyword-only fields, one with a factory."""

    name: str
    tags: tuple[str, ...] = field(default_factory=tuple)


@frozen
class Custom:
    """A record that defines its own `__eq__`, `__hash__` and `__repr__`: they are kept."""

    value: int

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Custom) and abs(self.value) == abs(other.value)

    def __hash__(self) -> int:
        return hash(abs(self.value))

    def __repr__(self) -> str:
        return f"<{self.value}>"


@frozen
class Child(Point):
    """A subclass adds a field; its instances compare with their own class only."""

    z: int = 0


def assign(record: object, name: str, value: object) -> None:
    """`record.<name> = value`, for a field no test reads otherwise."""
    setattr(record, name, value)


def as_point(values: tuple[int, str, str, str]) -> tuple[Point, PointDataclass]:
    return Point(*values), PointDataclass(*values)


points = st.tuples(st.integers(), st.text(), st.text(), st.text())


@given(points, points)
def test_equality_and_hash_are_the_dataclass_s(first: tuple, second: tuple) -> None:  # type: ignore[type-arg]
    ours_a, theirs_a = as_point(first)
    ours_b, theirs_b = as_point(second)
    assert (ours_a == ours_b) == (theirs_a == theirs_b)
    assert (ours_a != ours_b) == (theirs_a != theirs_b)
    if ours_a == ours_b:
        assert hash(ours_a) == hash(ours_b)


@given(points)
def test_repr_is_the_dataclass_s(values: tuple) -> None:  # type: ignore[type-arg]
    ours, theirs = as_point(values)
    assert repr(ours) == repr(theirs).replace("PointDataclass(", "Point(", 1)


def test_a_field_left_out_of_comparison_does_not_count() -> None:
    assert Point(1, "a", note="one") == Point(1, "a", note="two")
    assert len({Point(1, "a", note="one"), Point(1, "a", note="two")}) == 1


def test_no_instance_equals_another_class_s() -> None:
    others: list[object] = [PointDataclass(1), (1, "origin", "", "")]
    assert all(Point(1) != other for other in others)
    assert Point(1) != Child(1)
    assert Child(1, z=2) == Child(1, z=2)
    assert Child(1, z=2) != Child(1, z=3)


def test_a_field_cannot_be_assigned_or_deleted() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="'y'"):
        assign(point, "y", "set after init")
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        del point.x
    with pytest.raises(dataclasses.FrozenInstanceError, match="'other'"):
        point.other = 1  # type: ignore[attr-defined]
    assert point == Point(1)


def test_a_subclass_field_is_frozen_too() -> None:
    child = Child(1, z=2)
    assert child.z == 2
    with pytest.raises(dataclasses.FrozenInstanceError, match="'z'"):
        assign(child, "z", 3)


def test_keyword_only_fields_and_factories() -> None:
    with pytest.raises(TypeError):
        Named("positional")  # type: ignore[call-arg]
    assert Named(name="a") == Named(name="a", tags=())
    assert Named(name="a").tags == ()


def test_methods_the_class_defines_are_kept() -> None:
    assert Custom(-2) == Custom(2)
    assert hash(Custom(-2)) == hash(Custom(2))
    assert repr(Custom(3)) == "<3>"


def test_a_class_defining_setattr_is_refused() -> None:
    class Mutable:
        value: int

        def __setattr__(self, name: str, value: object) -> None:
            object.__setattr__(self, name, value)

    with pytest.raises(TypeError, match="defines __setattr__"):
        frozen(Mutable)


def test_dataclass_helpers_work() -> None:
    point = Point(1, "a", note="n")
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "note", "secret"]
    assert dataclasses.replace(point, x=5) == Point(5, "a")
    assert dataclasses.asdict(point) == {"x": 1, "y": "a", "note": "n", "secret": ""}
    assert (point.y, point.secret) == ("a", "")


def test_copies_and_pickles_are_equal_and_still_frozen() -> None:
    point = Point(1, "a", note="n")
    for twin in (copy.copy(point), copy.deepcopy(point), pickle.loads(pickle.dumps(point))):
        assert twin == point
        assert twin.note == "n"
        with pytest.raises(dataclasses.FrozenInstanceError):
            twin.x = 3  # type: ignore[misc]


@frozen
class Derived:
    """A field `__post_init__` derives, as a frozen dataclass sets one."""

    text: str
    length: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "length", len(self.text))


def test_post_init_can_set_a_derived_field_once() -> None:
    derived = Derived("four")
    assert derived.length == 4
    assert derived == Derived("four")
    with pytest.raises(dataclasses.FrozenInstanceError):
        derived.length = 5  # type: ignore[misc]


def test_a_subclass_must_be_frozen_too() -> None:
    """`dataclasses` reads a `@frozen` base as not frozen, and refuses a frozen subclass."""

    class Plain(Point):
        pass

    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen"):
        dataclass(frozen=True)(Plain)
    made = frozen(Plain)
    assert made(1) == made(1)


T = TypeVar("T")


class Mixin:
    """A base that holds no fields, with the `__post_init__` of its subclasses."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seen", True)


@frozen
class Box(Mixin, Generic[T]):
    """A generic record whose `__post_init__` comes from a base that is no dataclass."""

    item: T
    seen: bool = field(default=False, compare=False)


def test_a_generic_record_with_an_inherited_post_init() -> None:
    box = Box[int](3)
    assert box.item == 3
    assert box.seen
    assert Box("x") == Box("x")


# Calls to the two classes' `__init__`: positional values, then keyword ones.
CALLS = st.tuples(
    st.lists(st.integers() | st.text(max_size=2), max_size=5),
    st.dictionaries(st.sampled_from(["x", "y", "note", "secret", "z"]), st.text(max_size=2)),
)


def made(cls: type, args: list[object], kwargs: dict[str, object]) -> object:
    """The fields of `cls(*args, **kwargs)`, or the kind of error it raised."""
    try:
        return dataclasses.astuple(cls(*args, **kwargs))
    except TypeError:
        return TypeError


@given(CALLS)
def test_init_takes_what_the_dataclass_s_takes(call: tuple) -> None:  # type: ignore[type-arg]
    args, kwargs = call
    assert made(Point, args, kwargs) == made(PointDataclass, args, kwargs)


@frozen(kw_only=True)
class Config:
    """Keyword-only fields, a factory, and one field left out of `__init__`."""

    name: str
    tags: list[str] = field(default_factory=list)
    origin: str = field(default="pin", init=False)


@dataclass(frozen=True, kw_only=True)
class ConfigDataclass:
    name: str
    tags: list[str] = field(default_factory=list)
    origin: str = field(default="pin", init=False)


@given(CALLS)
def test_keyword_only_init_takes_what_the_dataclass_s_takes(call: tuple) -> None:  # type: ignore[type-arg]
    args, kwargs = call
    kwargs = {
        ("name" if key == "x" else "tags" if key == "y" else key): v for key, v in kwargs.items()
    }
    assert made(Config, args, kwargs) == made(ConfigDataclass, args, kwargs)


def test_a_factory_makes_a_fresh_value_for_each_record() -> None:
    first, second = Config(name="a"), Config(name="b")
    assert first.tags == []
    assert first.tags is not second.tags
    assert first.origin == "pin"
    assert "origin" not in vars(first)
    with pytest.raises(TypeError, match=r"Config.__init__\(\) missing required argument: 'name'"):
        Config()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes 0 positional arguments but 1 were given"):
        Config("a")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'origin'"):
        Config(name="a", origin="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]


def test_an_undocumented_record_is_documented_by_its_fields() -> None:
    """Without a docstring, `dataclasses` would import `inspect` to write one."""

    @frozen
    class Bare:
        x: int
        y: str = "a"

    @frozen
    class Told:
        """Its own words."""

        x: int

    assert Bare.__doc__ == "Bare(x: int, y: str)"
    assert Told.__doc__ == "Its own words."
