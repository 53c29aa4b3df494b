"""The packaged JSON Schemas compiled to plain checks: valid documents pass without jsonschema.

`jsonschema` costs some 70 ms to import, and a few ms per validator, on every command
that reads a pin or writes a ledger. A document these checks accept is one the
jsonschema validator of `jsonio` accepts too; anything else goes to that validator,
which says what is wrong. A check gives the validator's own answer for every keyword
it knows, or raises `Unsure`; a schema that uses any other keyword is not compiled.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that never change whether a document is valid (`$defs` only holds subschemas).
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default"})
# A pointer into this schema's own `$defs`, in names that need no escaping.
_LOCAL_REF = re.compile(r"#/\$defs/[A-Za-z0-9_.-]+")
_TYPES: Mapping[str, Check] = {
    "object": lambda instance: isinstance(instance, dict),
    "array": lambda instance: isinstance(instance, list),
    "string": lambda instance: isinstance(instance, str),
    # As `jsonio` redefines it: ledgers hold no floats, so 1.0 is not an integer.
    "integer": lambda instance: isinstance(instance, int) and not isinstance(instance, bool),
    "boolean": lambda instance: isinstance(instance, bool),
    "null": lambda instance: instance is None,
}


class Unsupported(Exception):
    """The schema uses a keyword or a form these checks do not cover."""


class Unsure(Exception):
    """This document is outside what the checks decide exactly (say, unique numbers)."""


def pattern_matches(pattern: str, text: str) -> bool:
    """`pattern` as ECMA-262 reads it: its `$` never matches before a trailing newline."""
    return re.search(pattern, text) is not None and not (
        pattern.endswith("$") and text.endswith("\n")
    )


def compile_schema(schema: Any) -> Check:
    """One check for `schema`: true exactly when the schema holds, or `Unsure` is raised."""
    return _Scope(schema).compile(schema)


class _Scope:
    """The document a schema and its subschemas belong to: where `$ref`s point."""

    def __init__(self, root: Any) -> None:
        self._root = root
        self._refs: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check:
        if not isinstance(schema, dict):
            raise Unsupported(f"schema {schema!r} is not an object")
        checks = [
            self._keyword(name, value, schema)
            for name, value in schema.items()
            if name not in _ANNOTATIONS
        ]
        return lambda instance: all(check(instance) for check in checks)

    def _keyword(self, name: str, value: Any, schema: Mapping[str, Any]) -> Check:
        if name not in _COMPILERS:
            raise Unsupported(f"keyword {name!r}")
        return _COMPILERS[name](value, schema, self)

    def ref(self, pointer: Any) -> Check:
        """The check of the subschema at a local pointer (`#/$defs/name`), compiled once."""
        if not isinstance(pointer, str) or not _LOCAL_REF.fullmatch(pointer):
            raise Unsupported(f"$ref {pointer!r}")
        if pointer not in self._refs:
            # Compiled on first use: a schema that refers to itself compiles all the same.
            self._refs[pointer] = lambda instance: self._refs[pointer](instance)
            target = self._root
            for part in pointer.removeprefix("#/").split("/"):
                if not isinstance(target, dict) or part not in target:
                    raise Unsupported(f"$ref {pointer!r} points at nothing")
                target = target[part]
            self._refs[pointer] = self.compile(target)
        return self._refs[pointer]


def _type(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(name in _TYPES for name in names):
        raise Unsupported(f"type {value!r}")
    checks = [_TYPES[name] for name in names]
    return lambda instance: any(check(instance) for check in checks)


def _strings(value: Any, keyword: str) -> list[str]:
    # String constants only: jsonschema compares them to anything with plain `==`.
    if not isinstance(value, list) or not all(type(each) is str for each in value):
        raise Unsupported(f"{keyword} {value!r}")
    return value


def _const(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    expected = _strings([value], "const")[0]
    return lambda instance: bool(instance == expected)


def _enum(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    allowed = _strings(value, "enum")
    return lambda instance: any(instance == each for each in allowed)


def _pattern(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    re.compile(value)
    return lambda instance: not isinstance(instance, str) or pattern_matches(value, instance)


def _count(value: Any, keyword: str) -> int:
    if type(value) is not int or value < 0:
        raise Unsupported(f"{keyword} {value!r}")
    return value


def _min_length(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    least = _count(value, "minLength")
    return lambda instance: not isinstance(instance, str) or len(instance) >= least


def _min_items(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    least = _count(value, "minItems")
    return lambda instance: not isinstance(instance, list) or len(instance) >= least


def _max_items(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    most = _count(value, "maxItems")
    return lambda instance: not isinstance(instance, list) or len(instance) <= most


def _unique_items(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    if value is not True:
        raise Unsupported(f"uniqueItems {value!r}")
    return _unique


def _unique(instance: Any) -> bool:
    if not isinstance(instance, list):
        return True
    # Strings compare with plain `==` in jsonschema; numbers (1 and True), lists and
    # objects compare its own way, so they are left to it.
    if not all(isinstance(item, str) for item in instance):
        raise Unsure("uniqueItems over items that are not all strings")
    return len(set(instance)) == len(instance)


def _number(instance: Any) -> bool:
    """Whether jsonschema takes `instance` for a number; Unsure for numbers JSON lacks."""
    if isinstance(instance, bool) or not isinstance(instance, numbers.Number):
        return False
    if not isinstance(instance, (int, float)):
        raise Unsure(f"a number of type {type(instance).__name__}")
    return True


def _minimum(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    if type(value) not in (int, float):
        raise Unsupported(f"minimum {value!r}")
    return lambda instance: not _number(instance) or not instance < value


def _maximum(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    if type(value) not in (int, float):
        raise Unsupported(f"maximum {value!r}")
    return lambda instance: not _number(instance) or not instance > value


def _required(value: Any, _: Mapping[str, Any], __: _Scope) -> Check:
    names = _strings(value, "required")
    return lambda instance: (
        not isinstance(instance, dict) or all(name in instance for name in names)
    )


def _properties(value: Any, _: Mapping[str, Any], scope: _Scope) -> Check:
    if not isinstance(value, dict):
        raise Unsupported(f"properties {value!r}")
    checks = {name: scope.compile(subschema) for name, subschema in value.items()}
    return lambda instance: (
        not isinstance(instance, dict)
        or all(check(instance[name]) for name, check in checks.items() if name in instance)
    )


def _additional_properties(value: Any, schema: Mapping[str, Any], scope: _Scope) -> Check:
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    known = frozenset(schema.get("properties", {}))
    if value is False:
        return lambda instance: not isinstance(instance, dict) or instance.keys() <= known
    check = scope.compile(value)
    return lambda instance: (
        not isinstance(instance, dict)
        or all(check(item) for name, item in instance.items() if name not in known)
    )


def _property_names(value: Any, _: Mapping[str, Any], scope: _Scope) -> Check:
    check = scope.compile(value)
    return lambda instance: not isinstance(instance, dict) or all(map(check, instance))


def _items(value: Any, schema: Mapping[str, Any], scope: _Scope) -> Check:
    if "prefixItems" in schema:
        raise Unsupported("prefixItems")
    check = scope.compile(value)
    return lambda instance: not isinstance(instance, list) or all(map(check, instance))


def _one_of(value: Any, _: Mapping[str, Any], scope: _Scope) -> Check:
    if not isinstance(value, list) or not value:
        raise Unsupported(f"oneOf {value!r}")
    checks = [scope.compile(subschema) for subschema in value]
    return lambda instance: [check(instance) for check in checks].count(True) == 1


def _not(value: Any, _: Mapping[str, Any], scope: _Scope) -> Check:
    check = scope.compile(value)
    return lambda instance: not check(instance)


def _ref(value: Any, _: Mapping[str, Any], scope: _Scope) -> Check:
    return scope.ref(value)


_COMPILERS: Mapping[str, Callable[[Any, Mapping[str, Any], _Scope], Check]] = {
    "$ref": _ref,
    "type": _type,
    "const": _const,
    "enum": _enum,
    "pattern": _pattern,
    "minLength": _min_length,
    "minItems": _min_items,
    "maxItems": _max_items,
    "uniqueItems": _unique_items,
    "minimum": _minimum,
    "maximum": _maximum,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "propertyNames": _property_names,
    "items": _items,
    "oneOf": _one_of,
    "not": _not,
}
