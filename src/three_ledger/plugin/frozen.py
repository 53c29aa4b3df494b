"""`@frozen`: an immutable dataclass that compiles nothing when it is defined.

`@dataclass(frozen=True)` compiles six methods for every class it decorates (`__init__`,
`__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`), 0.6 to 1.2 ms a class
with Python 3.11 as the machine goes. The gate defines some sixty records before its test
run starts, and making them was two fifths of its imports (issue 25). `@frozen` lets
`dataclasses` read the fields and gives the class all six as closures over them, which
cost nothing to compile:

- `__init__` takes what a dataclass's takes (positional fields, then keyword-only ones,
  defaults and factories, `__post_init__`) and sets the fields in their order;
- `__eq__` and `__hash__` compare and hash the fields a dataclass would (`compare=True`,
  and `hash=` where it is set), between instances of the same class only;
- `__repr__` prints what a dataclass prints;
- `__setattr__` lets each field be set once, by `__init__`, and refuses every later
  assignment with `dataclasses.FrozenInstanceError`; `__delattr__` always refuses.

Everything else is the dataclass's: fields, defaults, `field()`, `kw_only`,
`__post_init__`, `dataclasses.replace`, `asdict` and `fields` (not `InitVar`, which no
record uses). Type checkers read `@frozen` as a frozen dataclass (`dataclass_transform`),
so an assignment to a field, or a call with a wrong argument, is an error before it runs.
A method the class defines itself is kept, as a dataclass keeps it.
`tests/unit/test_frozen.py` holds `@frozen` to `@dataclass(frozen=True)`.

It is a plugin-side module (standard library only; see run/staging.py), so that the plugin's
own records are made the same way in every test child; the gate imports it as
`three_ledger.frozen`.

A subclass of a `@frozen` record is `@frozen` too: `dataclasses` refuses to make a frozen
dataclass of it, since it reads the base as a dataclass that is not frozen.

The price is paid when a record is made: the arguments are matched to the fields in a
Python loop, a few times the compiled `__init__`'s cost. A record made once per test or per
file (`TestResult`, `FileEntry`) stays a `@dataclass(frozen=True, slots=True)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

ClassT = TypeVar("ClassT", bound=type)


@overload
def frozen(cls: ClassT, /) -> ClassT: ...


@overload
def frozen(*, kw_only: bool = False) -> Callable[[ClassT], ClassT]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: type | None = None, /, *, kw_only: bool = False) -> Any:
    """Make CLS an immutable dataclass; `@frozen(kw_only=True)` for keyword-only fields."""

    def wrap(cls: type) -> type:
        own = cls.__dict__
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"@frozen class {cls.__qualname__} defines {name}")
        explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        keep = {name for name in ("__eq__", "__repr__") if name in own}
        if explicit_hash:
            keep.add("__hash__")
        if "__init__" in own:
            keep.add("__init__")
        documented = bool(own.get("__doc__"))
        if not documented:
            # `dataclasses` would write one from `inspect.signature`: importing `inspect`
            # (with `ast`, `dis` and `tokenize`) for a docstring nobody reads.
            cls.__doc__ = cls.__name__
        cls = dataclasses.dataclass(cls, init=False, eq=False, repr=False, kw_only=kw_only)
        fields = dataclasses.fields(cls)
        if not documented:
            shown = ", ".join(f"{field.name}: {field.type}" for field in fields if field.init)
            cls.__doc__ = f"{cls.__name__}({shown})"
        methods = _methods(fields)
        methods["__init__"] = _init(cls.__qualname__, fields, hasattr(cls, "__post_init__"))
        for name, method in methods.items():
            if name not in keep:
                setattr(cls, name, method)
        return cls

    return wrap if cls is None else wrap(cls)


def _init(
    qualname: str, fields: tuple[dataclasses.Field[Any], ...], post_init: bool
) -> Callable[..., None]:
    """The `__init__` a dataclass would compile, as one closure over the fields: positional
    parameters, then keyword-only ones; defaults and factories; a field left out of `__init__`
    set from its factory (its default stays the class attribute); then `__post_init__`.
    Fields are set in their order."""
    missing = dataclasses.MISSING
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    accepted = frozenset(f.name for f in fields if f.init)
    # (name, taken from the arguments, default, factory) in field order.
    steps = [(f.name, f.init, f.default, f.default_factory) for f in fields]
    set_field = object.__setattr__

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"{qualname}.__init__() takes {len(positional)} positional arguments but "
                f"{len(args)} were given"
            )
        given = dict(zip(positional, args, strict=False))
        for name, value in kwargs.items():
            if name not in accepted:
                raise TypeError(
                    f"{qualname}.__init__() got an unexpected keyword argument {name!r}"
                )
            if name in given:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
            given[name] = value
        for name, from_arguments, default, factory in steps:
            if from_arguments and name in given:
                value = given[name]
            elif factory is not missing:
                value = factory()
            elif not from_arguments:
                # As a dataclass leaves it: its default is the class attribute, and
                # `__post_init__` may set it.
                continue
            elif default is not missing:
                value = default
            else:
                raise TypeError(f"{qualname}.__init__() missing required argument: {name!r}")
            set_field(self, name, value)
        if post_init:
            self.__post_init__()  # type: ignore[attr-defined]

    return __init__


def _values(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The values of NAMES of an instance, as one tuple."""
    if not names:
        return lambda _instance: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda instance: (one(instance),)
    return attrgetter(*names)


def _methods(fields: tuple[dataclasses.Field[Any], ...]) -> dict[str, Any]:
    names = frozenset(field.name for field in fields)
    compared = _values(tuple(field.name for field in fields if field.compare))
    hashed = _values(
        tuple(
            field.name for field in fields if (field.compare if field.hash is None else field.hash)
        )
    )
    shown = tuple(field.name for field in fields if field.repr)

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(hashed(self))

    def __repr__(self: object) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({values})"

    def __setattr__(self: object, name: str, value: object) -> None:
        if name not in names or name in self.__dict__:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self: object, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    return {
        "__eq__": __eq__,
        "__hash__": __hash__,
        "__repr__": __repr__,
        "__setattr__": __setattr__,
        "__delattr__": __delattr__,
    }
