"""Strict JSON reading, JSON Schema validation and atomic writing for pins and ledgers."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import operator
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring as _json_string
from pathlib import Path
from typing import Any, overload

from three_ledger import compiled_schema, json_stream
from three_ledger.errors import Refused
from three_ledger.frozen import frozen

# A fixture ledger takes about 170 bytes per pinned file, so this admits some 700,000
# files; anything larger is refused before it is parsed.
MAX_DOCUMENT_BYTES = 128 * 1024 * 1024
_MAX_MESSAGE_CHARS = 300
# CPython's own default limit on integer digits; no pin or ledger number comes near it.
_MAX_INTEGER_CHARS = 4300
_SCHEMAS = Path(__file__).parent / "schemas"


def read_bytes_capped(path: Path, what: str) -> bytes:
    """The bytes of a small document, refused when unreadable or oversized."""
    try:
        with path.open("rb") as stream:
            # A buffer the size of the file, not of the cap; one that grows while it is
            # read, or is not a regular file (size 0), is read on up to the cap.
            expected = os.fstat(stream.fileno()).st_size
            data = stream.read(min(expected, MAX_DOCUMENT_BYTES) + 1)
            if len(data) > expected:
                data += stream.read(MAX_DOCUMENT_BYTES + 1 - len(data))
    except IsADirectoryError as exc:
        raise Refused(f"{path}: is a folder; give the {what} file itself") from exc
    except OSError as exc:
        raise Refused(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise Refused(
            f"{path}: {what} is larger than {_byte_count(MAX_DOCUMENT_BYTES)}, "
            "the most a pin or ledger may hold"
        )
    return data


def _byte_count(count: int) -> str:
    mebibytes, rest = divmod(count, 1024 * 1024)
    return f"{count} bytes" if rest else f"{mebibytes} MiB ({count} bytes)"


def parse_json(data: bytes, source: Path, what: str) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys, no NaN or Infinity."""
    return parse_json_text(utf8_text(data, source, what), source, what)


def read_json_object(path: Path, what: str) -> Any:
    """The document at PATH, as `parse_json` reads it, refusals and all. A well-formed
    object is read a piece at a time, so that its text is never held whole beside it: a
    fixture pin of 500,000 paths is some 30 MB of text. Anything else is read whole."""
    streamed = json_stream.read_object(path, _strict_decoder(), MAX_DOCUMENT_BYTES)
    if streamed is not None:
        document, surrogate_escapes = streamed
        if not surrogate_escapes or _is_unicode(document):
            return document
    return parse_json(read_bytes_capped(path, what), path, what)


@functools.cache
def _strict_decoder() -> json.JSONDecoder:
    """The decoder `parse_json_text` has `json.loads` make (which also refuses a byte order
    mark: the streamed reader declines one)."""
    return json.JSONDecoder(**_STRICT_HOOKS)


def utf8_text(data: bytes, source: Path, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{source}: {what} is not valid UTF-8 (byte {exc.start})") from exc


def parse_json_text(text: str, source: Path, what: str) -> Any:
    """`parse_json` for a text already decoded by `utf8_text`."""
    try:
        document = json.loads(text, **_STRICT_HOOKS)
        if json_stream.SURROGATE_ESCAPE.search(text) and not _is_unicode(document):
            raise _StrictJSONError("a string holds a lone surrogate escape, which is not Unicode")
    except json.JSONDecodeError as exc:
        raise Refused(
            f"{source}: {what} is not valid JSON at line {exc.lineno}, column {exc.colno}: "
            f"{plain_json_error(exc.msg)}"
        ) from exc
    except _StrictJSONError as exc:
        raise Refused(f"{source}: {what} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise Refused(f"{source}: {what} is nested too deeply") from exc
    return document


# Python's JSON messages, in the words of someone who edits a pin by hand.
_PLAIN_JSON_ERRORS = {
    "Expecting ',' delimiter": "a comma is missing between two items",
    "Expecting ':' delimiter": "a colon is missing after a key",
    "Expecting property name enclosed in double quotes": (
        "a key in double quotes is expected here (single quotes, or a comma before a closing "
        "brace, are not JSON)"
    ),
    "Expecting value": (
        "a value is expected here (a comma before a closing bracket, a single-quoted string "
        "or a comment is not JSON)"
    ),
    "Extra data": "the document goes on after its end (a second document, or a stray bracket)",
    "Unterminated string starting at": "a string is not closed by a double quote",
    "Invalid control character at": (
        "a string holds a line break or a tab; write it as \\n or \\t"
    ),
    "Invalid \\escape": "a backslash starts an escape JSON does not know; write \\\\ for one",
    "Illegal trailing comma before end of object": "a comma before a closing brace is not allowed",
    "Illegal trailing comma before end of array": "a comma before a closing bracket is not allowed",
}


def plain_json_error(message: str) -> str:
    """Python's JSONDecodeError message in plain words, the original kept in parentheses."""
    plain = _PLAIN_JSON_ERRORS.get(message)
    return f"{plain} ({message})" if plain else message


def _is_unicode(document: Any) -> bool:
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _StrictJSONError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _StrictJSONError(f"duplicate key {key!r}")
        document[key] = value
    return document


def _no_constant(name: str) -> Any:
    raise _StrictJSONError(f"{name} is not a JSON number")


def _integer(digits: str) -> int:
    # int() raises a bare ValueError past the interpreter's digit limit, and is slow without one.
    try:
        if len(digits) <= _MAX_INTEGER_CHARS:
            return int(digits)
    except ValueError:
        pass
    raise _StrictJSONError(f"a number of {len(digits)} digits is too long")


# What makes `json` strict here; every reading of a document goes through these.
_STRICT_HOOKS: dict[str, Any] = {
    "object_pairs_hook": _unique_keys,
    "parse_constant": _no_constant,
    "parse_int": _integer,
}


@frozen
class Rows:
    """An array of objects that share their keys, held as one list of values per key.

    A fixture ledger's `files` is written as one: checked and formatted column by column,
    it never exists as 100,000 dicts. `dumps` writes it as the array of `objects()`, and
    `validate` reads a top-level one as that array.
    """

    keys: tuple[str, ...]
    columns: tuple[Sequence[Any], ...]

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def objects(self, stop: int | None = None) -> list[dict[str, Any]]:
        """The objects (the first STOP of them), one dict each."""
        return _objects(self.keys, [column[:stop] for column in self.columns])


def _objects(keys: tuple[str, ...], columns: list[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]


class HexDigests(Sequence[str]):
    """A column of SHA-256 digests held end to end as raw bytes, read as lowercase hex.

    500,000 of them take 16 MB this way, against about 60 MB as strings; a slice is made
    into strings only when it is written. Being made from bytes, they need no hex check.
    """

    DIGEST_BYTES = 32

    def __init__(self, raw: bytes | bytearray) -> None:
        if len(raw) % self.DIGEST_BYTES:
            raise ValueError(f"{len(raw)} bytes is not a whole number of digests")
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw) // self.DIGEST_BYTES

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[each] for each in range(start, stop, step)]
            return self._hex(start, max(start, stop))
        position = range(len(self))[index]  # an IndexError past either end
        return self._hex(position, position + 1)[0]

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _BATCH_ITEMS):
            yield from self._hex(start, start + _BATCH_ITEMS)

    def _hex(self, start: int, stop: int) -> list[str]:
        """Digests START to STOP as strings: one `hex` call, then cut every 64 digits."""
        width = 2 * self.DIGEST_BYTES
        text = self._raw[start * self.DIGEST_BYTES : stop * self.DIGEST_BYTES].hex()
        return [text[at : at + width] for at in range(0, len(text), width)]


_HEX_DIGITS = b"0123456789abcdef"
_ENTRY_KEYS = ("path", "size", "sha256")


def _plain_paths(items: Sequence[Any]) -> bool:
    """Whether every item is a non-empty string (the loops run in C: 100,000 in ms)."""
    return _all_of_type(items, str) and all(items)


def _plain_file_entries(items: list[Any]) -> bool:
    """Whether every item is an object the fixture ledger's `files` item schema accepts."""
    # Three keys, and each of the three can be looked up: exactly the three.
    if not _all_of_type(items, dict) or set(map(len, items)) != {len(_ENTRY_KEYS)}:
        return False
    try:
        paths, sizes, digests = (list(map(operator.itemgetter(key), items)) for key in _ENTRY_KEYS)
    except KeyError:
        return False
    return _plain_columns(paths, sizes, digests)


def _plain_columns(paths: Sequence[Any], sizes: Sequence[Any], digests: Sequence[Any]) -> bool:
    """Whether file entries held as columns are plain: paths, sizes >= 0, 64-hex digests."""
    return (
        _plain_paths(paths)
        and _all_of_type(sizes, int)
        and min(sizes) >= 0
        and _hex_digests(digests)
    )


def _hex_digests(digests: Sequence[Any]) -> bool:
    """Whether every item is 64 lowercase hex digits (`HexDigests` are, being made so)."""
    if type(digests) is HexDigests:
        return True
    return (
        _all_of_type(digests, str)
        and set(map(len, digests)) == {64}
        and _only_hex_digits("".join(digests))
    )


def _only_hex_digits(text: str) -> bool:
    """Whether TEXT holds only 0-9 and a-f: nothing is left once they are deleted."""
    try:
        return not text.encode("ascii").translate(None, _HEX_DIGITS)
    except UnicodeEncodeError:
        return False


def _plain_file_rows(rows: Rows) -> bool:
    """`_plain_file_entries` for the same entries held as columns."""
    if sorted(rows.keys) != sorted(_ENTRY_KEYS) or len(rows) == 0:
        return False
    paths, sizes, digests = (rows.columns[rows.keys.index(key)] for key in _ENTRY_KEYS)
    return _plain_columns(paths, sizes, digests)


def _all_of_type(items: Iterable[Any], kind: type) -> bool:
    """Whether every item is exactly of `kind` (not a subclass: bool is not an integer here)."""
    return set(map(type, items)) == {kind}


_RESULT_KEYS = ("id", "property_ids", "outcome", "skip_reason")
# The outcomes a shard ledger's `results` item schema allows (a unit test holds them to it).
RESULT_OUTCOMES = frozenset({"pass", "fail", "error", "skip"})


def _plain_test_results(items: list[Any]) -> bool:
    """Whether every item is an object a shard ledger's `results` item schema accepts."""
    if not _all_of_type(items, dict) or set(map(len, items)) != {len(_RESULT_KEYS)}:
        return False
    try:
        ids, markers, outcomes, reasons = (
            list(map(operator.itemgetter(key), items)) for key in _RESULT_KEYS
        )
    except KeyError:
        return False
    return (
        _plain_paths(ids)
        and _all_of_type(markers, list)
        and set(map(type, itertools.chain.from_iterable(markers))) <= {str}
        and _all_of_type(outcomes, str)
        and set(outcomes) <= RESULT_OUTCOMES
        and set(map(type, reasons)) <= {str, type(None)}
    )


def _plain_slices(items: list[Any]) -> bool:
    """Whether every item is a shard plan's slice: a list of non-empty strings."""
    return _all_of_type(items, list) and _plain_paths(list(itertools.chain.from_iterable(items)))


# Arrays that grow with the fixture tree or the suite (100,000 entries and more): per
# schema, each such key, with a check that accepts the items only when the item schema
# accepts every one, and whether the schema asks for unique items.
_BULK_ARRAYS: dict[str, tuple[tuple[str, Callable[[list[Any]], bool], bool], ...]] = {
    "fixture-pin": (("files", _plain_paths, True),),
    "fixture-ledger": (("files", _plain_file_entries, False),),
    "property-shard-ledger": (
        ("ids_run", _plain_paths, False),
        ("results", _plain_test_results, False),
    ),
    "shard-plan": (("slices", _plain_slices, False),),
}


def _bulk_checked(document: Any, schema_name: str) -> Any:
    """`document` with a long array cut to one item when every item passes the fast check.

    Per-item schema validation costs tens of microseconds; for a plain array the result is
    the same, and any array the fast check does not clear is validated in full, so the
    error message still names the offending item.
    """
    if not isinstance(document, dict):
        return document
    document = _listed(document, schema_name)
    for key, plain, unique in _BULK_ARRAYS.get(schema_name, ()):
        items = document.get(key)
        if not isinstance(items, list) or len(items) < 2 or not plain(items):
            continue
        if unique and not _no_repeats(items):
            continue
        # A shard plan's slice is itself long: its first id stands for the rest.
        first = items[0][:1] if type(items[0]) is list else items[0]
        document = {**document, key: [first]}
    return document


def _no_repeats(items: list[Any]) -> bool:
    """Whether no item of ITEMS (hashable, comparable) comes twice: at once when they are in
    strictly rising order, as `draft-pin` writes a pin's paths, with no set of 500,000 paths
    made beside them (some 40 B a path at the peak); through a set otherwise."""
    if all(map(operator.lt, items, itertools.islice(items, 1, None))):
        return True
    return len(set(items)) == len(items)


def _listed(document: dict[str, Any], schema_name: str) -> dict[str, Any]:
    """`document` with each `Rows` as its objects; a fixture ledger's `files` that its fast
    check clears, as its first object only (the rest are like it)."""
    if not any(isinstance(value, Rows) for value in document.values()):
        return document
    listed = {}
    for key, value in document.items():
        if isinstance(value, Rows):
            cleared = (schema_name, key) == ("fixture-ledger", "files") and _plain_file_rows(value)
            value = value.objects(1 if cleared else None)
        listed[key] = value
    return listed


def validate(document: Any, schema_name: str, source: Path, what: str) -> None:
    """Refuse `document` unless it satisfies the packaged schema `schema_name`."""
    checked = _bulk_checked(document, schema_name)
    if _passes_compiled(checked, schema_name):
        return
    validator = _validator(schema_name)
    try:
        errors = list(validator.iter_errors(checked))
    except RecursionError as exc:
        raise Refused(f"{source}: {what} is nested too deeply") from exc
    if errors:
        from jsonschema.exceptions import best_match

        try:
            error = best_match(errors)
        except TypeError:
            # Its ranking compares paths, and an object key that is not a string (a record
            # built wrong; JSON itself has none) cannot be compared with an index.
            error = errors[0]
        raise Refused(f"{source}: {json_path(error.absolute_path)}: {_short(error.message)}")


def json_path(parts: Iterator[str | int] | Any) -> str:
    """Render a jsonschema path deque as `$.files[2]`."""
    rendered = "$"
    for part in parts:
        if isinstance(part, int):
            rendered += f"[{part}]"
        elif not isinstance(part, str):
            rendered += f"[{part!r}]"  # a key no JSON document holds
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            rendered += f".{part}"
        else:
            rendered += f"[{json.dumps(part)}]"
    return rendered


def _short(message: str) -> str:
    message = message.replace("\n", " ")
    if len(message) > _MAX_MESSAGE_CHARS:
        return message[: _MAX_MESSAGE_CHARS - 3] + "..."
    return message


def load_schema(schema_name: str) -> dict[str, Any]:
    """The JSON Schema shipped in the package as `schemas/<schema_name>.schema.json`."""
    # Beside this module, read as a file: `importlib.resources` would cost the start-up of
    # every command its readers (and zipfile) for a package that is never run from a zip.
    text = (_SCHEMAS / f"{schema_name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _passes_compiled(document: Any, schema_name: str) -> bool:
    """Whether the compiled check clears `document`; if not, jsonschema has the last word."""
    check = _compiled(schema_name)
    try:
        return check is not None and check(document)
    except (compiled_schema.Unsure, RecursionError):
        return False


@functools.cache
def _compiled(schema_name: str) -> compiled_schema.Check | None:
    try:
        return compiled_schema.compile_schema(load_schema(schema_name))
    except compiled_schema.Unsupported:
        return None


def load_validator_code() -> None:
    """Import now what a validation that the compiled checks do not clear imports later, and
    the `inspect` that `dataclasses` imports at its first use
    (`cli.import_dataclasses_without_inspect`)."""
    _validator("property-ledger")
    import inspect  # noqa: F401

    from jsonschema.exceptions import best_match  # noqa: F401


@functools.cache
def _validator(schema_name: str) -> Any:
    # Imported here: only a document the compiled check does not clear pays for jsonschema.
    from jsonschema import Draft202012Validator, ValidationError, validators

    def ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
        # ECMA-262 `$` (what editors use) never matches before a trailing newline;
        # Python's does. Match the way the published schema reads.
        if isinstance(instance, str) and not compiled_schema.pattern_matches(pattern, instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    # Ledgers hold no floats (SPEC 4): 1.0 is not an integer here, as JSON Schema would allow.
    type_checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, instance: isinstance(instance, int) and not isinstance(instance, bool)
    )
    strict = validators.extend(
        Draft202012Validator, {"pattern": ecma_pattern}, type_checker=type_checker
    )
    schema = load_schema(schema_name)
    Draft202012Validator.check_schema(schema)
    return strict(schema)


def dumps(document: Mapping[str, Any]) -> str:
    """The on-disk form of every file the gate writes: 2-space indent, trailing newline."""
    return "".join(dump_chunks(document))


def dump_chunks(document: Mapping[str, Any]) -> Iterator[str]:
    """`json.dumps(document, indent=2, ensure_ascii=False)` and a newline, in pieces.

    With an indent, `json.dumps` leaves its C encoder for a pure-Python one that builds
    a million small strings for a ledger of 100,000 files. Here an object whose values
    are all strings, integers, booleans or null (a `files` entry) is formatted in one
    step, and the text comes out in pieces of about CHUNK_CHARS, never as one string.
    """
    pending: list[str] = []
    size = 0
    for piece in _encode(document, ""):
        pending.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield "".join(pending)
            pending.clear()
            size = 0
    pending.append("\n")
    yield "".join(pending)


# How much text `dump_chunks` gathers before handing it on.
CHUNK_CHARS = 64 * 1024
# Array items are formatted this many at a time: fast, and the memory of one batch only.
_BATCH_ITEMS = 512
_INDENT = "  "


def _encode(value: Any, indent: str) -> Iterator[str]:
    """The pieces of `value` as it reads at nesting `indent` in an indented document."""
    if type(value) is dict and value and all(type(key) is str for key in value):
        inner = indent + _INDENT
        opening = "{\n"
        for key, item in value.items():
            yield f"{opening}{inner}{_json_string(key)}: "
            yield from _encode(item, inner)
            opening = ",\n"
        yield f"\n{indent}}}"
    elif type(value) is list and value:
        inner = indent + _INDENT
        yield f"[\n{inner}"
        for start in range(0, len(value), _BATCH_ITEMS):
            if start:
                yield f",\n{inner}"
            yield from _encode_items(value[start : start + _BATCH_ITEMS], inner)
        yield f"\n{indent}]"
    elif isinstance(value, Rows) and len(value):
        inner = indent + _INDENT
        yield f"[\n{inner}"
        for start in range(0, len(value), _BATCH_ITEMS):
            if start:
                yield f",\n{inner}"
            yield from _encode_rows(value, start, start + _BATCH_ITEMS, inner)
        yield f"\n{indent}]"
    elif isinstance(value, Rows):
        yield "[]"
    else:
        # Scalars, empty containers and anything unusual (tuples, non-string keys): the
        # standard encoder, whose newlines fall only between tokens (never in a string),
        # so indenting it is a matter of what follows each newline.
        yield json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def _encode_items(items: list[Any], indent: str) -> Iterator[str]:
    """Array items at nesting `indent`, with the separators between them."""
    separator = f",\n{indent}"
    if set(map(type, items)) == {str}:
        # Node ids and paths (a shard plan's slices, a shard's ids_run): one C loop.
        yield separator.join(map(_json_string, items))
        return
    alike = _alike_objects(items, indent)
    if alike is not None:
        yield separator.join(alike)
        return
    for position, item in enumerate(items):
        if position:
            yield separator
        flat = _flat_object(item, indent)
        if flat is None:
            yield from _encode(item, indent)
        else:
            yield flat


def _encode_rows(rows: Rows, start: int, stop: int, indent: str) -> Iterator[str]:
    """Objects START to STOP of `rows`, with the separators between them."""
    columns = [column[start:stop] for column in rows.columns]
    alike = _formatted_columns(rows.keys, columns, indent)
    if alike is None:
        yield from _encode_items(_objects(rows.keys, columns), indent)
    else:
        yield f",\n{indent}".join(alike)


def _alike_objects(items: list[Any], indent: str) -> Iterator[str] | None:
    """Objects with the same keys in the same order, each key's values of one scalar type.

    A `files` array is one: its items are then formatted column by column, in C loops.
    """
    first = items[0]
    if type(first) is not dict or not first or set(map(type, items)) != {dict}:
        return None
    keys = tuple(first)
    if not all(map(operator.eq, map(tuple, items), itertools.repeat(keys))):
        return None
    columns: list[Sequence[Any]] = [list(map(operator.itemgetter(key), items)) for key in keys]
    return _formatted_columns(keys, columns, indent)


def _formatted_columns(
    keys: tuple[Any, ...], columns: list[Sequence[Any]], indent: str
) -> Iterator[str] | None:
    """Objects given as one list of values per key, when each list holds one scalar type."""
    template = _object_template(keys, indent) if keys else None
    if template is None:
        return None
    texts = []
    for values in columns:
        kinds = set(map(type, values))
        to_text = _SCALAR_TEXT.get(kinds.pop()) if len(kinds) == 1 else None
        if to_text is None:
            return None
        texts.append(map(to_text, values))
    return map(template.__mod__, zip(*texts, strict=True))


def _flat_object(item: Any, indent: str) -> str | None:
    """A non-empty object of string keys and scalar values, at nesting `indent`; else None."""
    if type(item) is not dict or not item:
        return None
    template = _object_template(tuple(item), indent)
    if template is None:
        return None
    try:
        return template % tuple([_SCALAR_TEXT[type(value)](value) for value in item.values()])
    except KeyError:
        return None


def _bool_text(value: bool) -> str:
    return "true" if value else "false"


def _null_text(_: None) -> str:
    return "null"


# What `json.dumps` writes for each scalar type, looked up by exact type: floats,
# subclasses (enums) and containers take the general path.
_SCALAR_TEXT: dict[type, Callable[[Any], str]] = {
    str: _json_string,
    int: int.__repr__,
    bool: _bool_text,
    type(None): _null_text,
}


@functools.lru_cache(maxsize=256)
def _object_template(keys: tuple[Any, ...], indent: str) -> str | None:
    """A `%` template for an object with these keys (strings only), one `%s` per value."""
    if not all(type(key) is str for key in keys):
        return None
    inner = indent + _INDENT
    lines = ",\n".join(f"{inner}{_json_string(key).replace('%', '%%')}: %s" for key in keys)
    return f"{{\n{lines}\n{indent}}}"


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Write `document` atomically in its on-disk form, without building it as one string."""
    write_atomic_chunks(path, dump_chunks(document))


def write_atomic(path: Path, text: str) -> None:
    """Write `text` so that `path` holds either its old content or all of the new one."""
    write_atomic_chunks(path, (text,))


def write_atomic_chunks(path: Path, chunks: Iterable[str]) -> None:
    """Write the concatenated `chunks` so that `path` holds its old content or all the new."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only a command that writes pays for it

        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise Refused(f"{path}: cannot write: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            for chunk in chunks:
                stream.write(chunk)
            stream.flush()
            os.fchmod(stream.fileno(), 0o666 & ~_umask())
            os.fsync(stream.fileno())
        os.replace(temp_name, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        if isinstance(exc, OSError):
            raise Refused(f"{path}: cannot write: {exc.strerror or exc}") from exc
        raise
    _fsync_directory(path.parent)


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _fsync_directory(folder: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse to open a directory.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
