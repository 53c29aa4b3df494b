"""Strict JSON reading, JSON Schema validation and atomic writing for pins and ledgers."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from three_ledger.errors import Refused

# A fixture ledger takes about 170 bytes per pinned file, so this admits some 700,000
# files; anything larger is refused before it is parsed.
MAX_DOCUMENT_BYTES = 128 * 1024 * 1024
_MAX_MESSAGE_CHARS = 300
# CPython's own default limit on integer digits; no pin or ledger number comes near it.
_MAX_INTEGER_CHARS = 4300
# A \uD800-\uDFFF escape: valid JSON, but a lone one is not Unicode and cannot be written back.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_bytes_capped(path: Path, what: str) -> bytes:
    """The bytes of a small document, refused when unreadable or oversized."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except IsADirectoryError as exc:
        raise Refused(f"{path}: is a folder; give the {what} file itself") from exc
    except OSError as exc:
        raise Refused(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise Refused(f"{path}: {what} is larger than {MAX_DOCUMENT_BYTES} bytes")
    return data


def parse_json(data: bytes, source: Path, what: str) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys, no NaN or Infinity."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{source}: {what} is not valid UTF-8 (byte {exc.start})") from exc
    try:
        document = json.loads(
            text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_integer
        )
        if _SURROGATE_ESCAPE.search(text) and not _is_unicode(document):
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


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _plain_path(item: Any) -> bool:
    return isinstance(item, str) and item != ""


def _plain_file_entry(item: Any) -> bool:
    return (
        type(item) is dict
        and item.keys() == {"path", "size", "sha256"}
        and _plain_path(item["path"])
        and type(item["size"]) is int
        and item["size"] >= 0
        and isinstance(item["sha256"], str)
        and _HEX64.fullmatch(item["sha256"]) is not None
    )


# Arrays that grow with the fixture tree (100,000 entries and more), with a check that
# accepts an item only when its item schema would, and whether the array is unique.
_BULK_ARRAYS = {
    "fixture-pin": ("files", _plain_path, True),
    "fixture-ledger": ("files", _plain_file_entry, False),
}


def _bulk_checked(document: Any, schema_name: str) -> Any:
    """`document` with a long array cut to one item when every item passes the fast check.

    Per-item schema validation costs tens of microseconds; for a plain array the result is
    the same, and any array the fast check does not clear is validated in full, so the
    error message still names the offending item.
    """
    if schema_name not in _BULK_ARRAYS or not isinstance(document, dict):
        return document
    key, plain, unique = _BULK_ARRAYS[schema_name]
    items = document.get(key)
    if not isinstance(items, list) or len(items) < 2 or not all(map(plain, items)):
        return document
    if unique and len(set(items)) != len(items):
        return document
    return {**document, key: items[:1]}


def validate(document: Any, schema_name: str, source: Path, what: str) -> None:
    """Refuse `document` unless it satisfies the packaged schema `schema_name`."""
    validator = _validator(schema_name)
    try:
        errors = list(validator.iter_errors(_bulk_checked(document, schema_name)))
    except RecursionError as exc:
        raise Refused(f"{source}: {what} is nested too deeply") from exc
    if errors:
        from jsonschema.exceptions import best_match

        error = best_match(errors)
        raise Refused(f"{source}: {json_path(error.absolute_path)}: {_short(error.message)}")


def json_path(parts: Iterator[str | int] | Any) -> str:
    """Render a jsonschema path deque as `$.files[2]`."""
    rendered = "$"
    for part in parts:
        if isinstance(part, int):
            rendered += f"[{part}]"
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
    text = resources.files("three_ledger").joinpath(f"schemas/{schema_name}.schema.json")
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


@functools.cache
def _validator(schema_name: str) -> Any:
    # Imported here: only commands that read pins or ledgers pay for jsonschema.
    from jsonschema import Draft202012Validator, ValidationError, validators

    def ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
        # ECMA-262 `$` (what editors use) never matches before a trailing newline;
        # Python's does. Match the way the published schema reads.
        if not isinstance(instance, str):
            return
        if not re.search(pattern, instance) or (pattern.endswith("$") and instance.endswith("\n")):
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
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` so that `path` holds either its old content or all of the new one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise Refused(f"{path}: cannot write: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
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
