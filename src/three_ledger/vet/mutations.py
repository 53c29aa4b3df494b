"""Mutation operators for `vet`: change pinned files so that a property able to fail would fail.

Malformed operators break a file's syntax (it no longer parses). Well-formed operators keep
it parseable (JSON stays valid JSON, text keeps its lines) and change only what it says:
they edit the bytes of a few chosen sites in place, so the rest of the file is unchanged.
Every choice is deterministic: the same bytes always give the same mutant.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import PurePosixPath

from three_ledger.frozen import frozen
from three_ledger.vocabulary import MutationKind

# The vet ledger records each mutant's kind: the enum lives with the ledger records.
Kind = MutationKind

# How many sites of a file one well-formed operator edits (spread over the file).
SITES = 3
BLOWN_UP = str(2**53 + 1)  # the first integer a double cannot hold


# Path to bytes, for every file an operator may change; it returns only the files it changed.
Files = Mapping[str, bytes]


@frozen
class Operator:
    name: str
    kind: Kind
    apply: Callable[[Files], dict[str, bytes]]


# --- malformed: the file no longer parses --------------------------------------------------


def _empty(data: bytes) -> bytes | None:
    return b"" if data else None


def _flip_middle_byte(data: bytes) -> bytes | None:
    if not data:
        return None
    middle = len(data) // 2
    # All eight bits: an ASCII byte becomes a lone byte that is not UTF-8 either.
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]


def _truncate_half(data: bytes) -> bytes | None:
    return data[: len(data) // 2] if data else None


# --- JSON: a parser that keeps where each value lies in the text --------------------------


@frozen
class _Node:
    """One JSON value and its span [start, end) in the text; `items` of an array or object."""

    kind: str  # object, array, string, number, true, false, null
    start: int
    end: int
    items: tuple[_Node, ...] = ()


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = ("true", "false", "null")


class _NotJSON(Exception):
    pass


def _json_tree(data: bytes) -> tuple[str, _Node] | None:
    """The text and value tree of a strict JSON document, or None for anything else."""
    try:
        text = data.decode("utf-8")
        json.loads(text, parse_constant=_refuse_constant)
        node, end = _value(text, _skip(text, 0))
    except (ValueError, RecursionError, _NotJSON):
        return None
    return (text, node) if _skip(text, end) == len(text) else None


def _refuse_constant(name: str) -> None:
    raise _NotJSON(name)  # NaN and Infinity are Python's, not JSON's


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


def _value(text: str, start: int) -> tuple[_Node, int]:
    head = text[start : start + 1]
    if head in ("[", "{"):
        return _container(text, start)
    pattern = _STRING if head == '"' else _NUMBER
    match = pattern.match(text, start)
    if match is not None:
        kind = "string" if head == '"' else "number"
        return _Node(kind, start, match.end()), match.end()
    for literal in _LITERALS:
        if text.startswith(literal, start):
            return _Node(literal, start, start + len(literal)), start + len(literal)
    raise _NotJSON(start)


def _container(text: str, start: int) -> tuple[_Node, int]:
    is_object = text[start] == "{"
    closing = "}" if is_object else "]"
    items: list[_Node] = []
    position = _skip(text, start + 1)
    while text[position] != closing:
        if is_object:  # the key and its colon; only values are mutated
            _key, position = _value(text, position)
            position = _skip(text, _skip(text, position) + 1)
        item, position = _value(text, position)
        items.append(item)
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return _Node(
        "object" if is_object else "array", start, position + 1, tuple(items)
    ), position + 1


def _walk(node: _Node) -> Iterator[_Node]:
    yield node
    for item in node.items:
        yield from _walk(item)


# An edit replaces text[start:end] with `new`.
_Edit = tuple[int, int, str]


def _spread(count: int) -> list[int]:
    """Up to SITES indexes spread over `count` candidates: near 1/6, 1/2 and 5/6 of the way."""
    return sorted({(2 * site + 1) * count // (2 * SITES) for site in range(min(SITES, count))})


def _apply_edits(text: str, edits: Sequence[_Edit]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _disjoint(groups: Sequence[Sequence[_Edit]]) -> list[_Edit]:
    """The edits of each group, skipping a group that overlaps one already taken."""
    taken: list[_Edit] = []
    for group in groups:
        if all(end <= s or start >= e for start, end, _ in group for s, e, _ in taken):
            taken.extend(group)
    return taken


_Sites = Callable[[str, _Node], list[list[_Edit]]]


def _json_mutation(candidates: _Sites) -> Callable[[bytes], bytes | None]:
    """A per-file mutation from a function listing each candidate site's edits."""

    def mutate(data: bytes) -> bytes | None:
        parsed = _json_tree(data)
        if parsed is None:
            return None
        text, tree = parsed
        sites = candidates(text, tree)
        edits = _disjoint([sites[index] for index in _spread(len(sites))])
        return _apply_edits(text, edits).encode("utf-8") if edits else None

    return mutate


def _literal(text: str, node: _Node) -> str:
    return text[node.start : node.end]


def _numbers(tree: _Node) -> Iterator[_Node]:
    return (node for node in _walk(tree) if node.kind == "number")


def _negate_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    sites = []
    for node in _numbers(tree):
        literal = _literal(text, node)
        if Decimal(literal) != 0:
            negated = literal[1:] if literal.startswith("-") else "-" + literal
            sites.append([(node.start, node.end, negated)])
    return sites


def _zero_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    return [
        [(node.start, node.end, "0")]
        for node in _numbers(tree)
        if Decimal(_literal(text, node)) != 0
    ]


def _bump_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    sites = []
    for node in _numbers(tree):
        literal = _literal(text, node)
        bumped = _plus_one(literal)
        if bumped is not None:
            sites.append([(node.start, node.end, bumped)])
    return sites


def _plus_one(literal: str) -> str | None:
    """LITERAL + 1 as a JSON number (exact for integers), or None when it would not change."""
    if _NUMBER.fullmatch(literal) and not any(mark in literal for mark in ".eE"):
        return str(int(literal) + 1)
    try:
        bumped = str(Decimal(literal) + 1)
    except InvalidOperation:
        return None
    if Decimal(bumped) == Decimal(literal) or not _NUMBER.fullmatch(bumped):
        return None
    return bumped


def _blow_up_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    return [
        [(node.start, node.end, BLOWN_UP)]
        for node in _numbers(tree)
        if _literal(text, node) != BLOWN_UP
    ]


def _drop_element_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    sites = []
    for node in _walk(tree):
        if node.kind != "array":
            continue
        items = node.items
        for index, item in enumerate(items):
            if index + 1 < len(items):  # the element, its comma and the space up to the next
                sites.append([(item.start, items[index + 1].start, "")])
            elif index > 0:  # the last element and the comma before it
                sites.append([(items[index - 1].end, item.end, "")])
            else:  # the only element
                sites.append([(item.start, item.end, "")])
    return sites


def _leaf_type(text: str, node: _Node) -> str | None:
    """The type two values must share to be swapped: string, integer, real or boolean."""
    if node.kind == "string":
        return "string"
    if node.kind in ("true", "false"):
        return "boolean"
    if node.kind == "number":
        literal = _literal(text, node)
        return "real" if any(mark in literal for mark in ".eE") else "integer"
    return None


def _swap_sites(text: str, tree: _Node) -> list[list[_Edit]]:
    """Each value with the previous value of its type, where the two read differently."""
    last_of_type: dict[str, _Node] = {}
    sites = []
    for node in _walk(tree):
        kind = _leaf_type(text, node)
        if kind is None:
            continue
        earlier = last_of_type.get(kind)
        last_of_type[kind] = node
        if earlier is None:
            continue
        first, second = _literal(text, earlier), _literal(text, node)
        if first != second:
            sites.append([(earlier.start, earlier.end, second), (node.start, node.end, first)])
    return sites


# --- line-based text -------------------------------------------------------------------------


def _text_lines(data: bytes) -> list[str] | None:
    """The lines (with their endings) of UTF-8 text that is not JSON and has two or more."""
    if b"\0" in data or _json_tree(data) is not None:
        return None
    try:
        lines = data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None
    return lines if sum(1 for line in lines if line.strip()) >= 2 else None


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _drop_lines(data: bytes) -> bytes | None:
    lines = _text_lines(data)
    if lines is None:
        return None
    filled = [index for index, line in enumerate(lines) if line.strip()]
    # Never every line: an empty file is the malformed `empty` operator's mutant.
    dropped = {filled[index] for index in _spread(len(filled) - 1)}
    return "".join(line for index, line in enumerate(lines) if index not in dropped).encode()


def _swap_lines(data: bytes) -> bytes | None:
    lines = _text_lines(data)
    if lines is None:
        return None
    pairs = [
        index
        for index in range(len(lines) - 1)
        if _body(lines[index]).strip() and _body(lines[index]) != _body(lines[index + 1])
    ]
    taken: set[int] = set()
    for index in (pairs[position] for position in _spread(len(pairs))):
        if index in taken or index + 1 in taken:
            continue
        taken.update((index, index + 1))
        first, second = lines[index], lines[index + 1]
        # Each line keeps its own ending, so a last line without one stays without one.
        lines[index] = _body(second) + first[len(_body(first)) :]
        lines[index + 1] = _body(first) + second[len(_body(second)) :]
    return "".join(lines).encode() if taken else None


# --- operators over a property's files ------------------------------------------------------


def _each_file(mutate: Callable[[bytes], bytes | None]) -> Callable[[Files], dict[str, bytes]]:
    def apply(files: Files) -> dict[str, bytes]:
        changed = {}
        for path, data in files.items():
            mutated = mutate(data)
            if mutated is not None and mutated != data:
                changed[path] = mutated
        return changed

    return apply


def _swap_files(files: Files) -> dict[str, bytes]:
    """Swap the contents of files in pairs: neighbours in path order with the same suffix."""
    by_suffix: dict[str, list[str]] = {}
    for path in sorted(files):
        by_suffix.setdefault(PurePosixPath(path).suffix, []).append(path)
    changed = {}
    for paths in by_suffix.values():
        for first, second in zip(paths[::2], paths[1::2], strict=False):
            if files[first] != files[second]:
                changed[first], changed[second] = files[second], files[first]
    return changed


def _json(sites: _Sites) -> Callable[[Files], dict[str, bytes]]:
    return _each_file(_json_mutation(sites))


# --- entries: the parts of a file that the property's own tests consume -------------------
#
# A test parametrised over a file's entries names the entry in its id: `test_spec[entry42]`
# for element 42 of a JSON list, `test_x[deposit]` for a member or a TOML table of that
# name, `test_table[12-Simple:-...]` for the Markdown fixture block whose first separator is
# line 12 (counted from 0, as markdown-it-py's `read_fixture_file` counts, or from 1). An
# entry mutant edits only those entries, and keeps the file well-formed: every string of the
# entry gains a character, every number grows by one, every boolean turns.

# The words of a parametrisation id: pytest joins the ids of several arguments with `-`.
_ID_WORD = re.compile(r"[^-]+")
_INDEXED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*?([0-9]+)")
_MARK = "~"


def entry_words(test_ids: Iterable[str]) -> frozenset[str]:
    """Every word of the parametrisation part (`[...]`) of TEST_IDS."""
    words: set[str] = set()
    for test_id in test_ids:
        if test_id.endswith("]") and "[" in test_id:
            words.update(_ID_WORD.findall(test_id[test_id.index("[") + 1 : -1]))
    return frozenset(words)


def _entry_edits(text: str, node: _Node) -> list[_Edit]:
    edits: list[_Edit] = []
    for leaf in _walk(node):
        literal = _literal(text, leaf)
        if leaf.kind == "string":
            edits.append((leaf.end - 1, leaf.end - 1, _MARK))
        elif leaf.kind == "number" and (bumped := _plus_one(literal)) is not None:
            edits.append((leaf.start, leaf.end, bumped))
        elif leaf.kind in ("true", "false"):
            edits.append((leaf.start, leaf.end, "false" if leaf.kind == "true" else "true"))
    return edits


def _json_entries(data: bytes, words: frozenset[str]) -> tuple[str, bytes] | None:
    parsed = _json_tree(data)
    if parsed is None:
        return None
    text, tree = parsed
    chosen: list[_Node] = []
    if tree.kind == "array":
        indexes = {int(m.group(1)) for word in words if (m := _INDEXED.fullmatch(word))}
        chosen = [item for index, item in enumerate(tree.items) if index in indexes]
        name = "entry.json_element"
    elif tree.kind == "object":
        keys = list(json.loads(text))
        if len(keys) == len(tree.items):
            chosen = [item for key, item in zip(keys, tree.items, strict=True) if key in words]
        name = "entry.json_member"
    edits = [edit for node in chosen for edit in _entry_edits(text, node)]
    if not edits:
        return None
    return name, _apply_edits(text, edits).encode("utf-8")


_TOML_TABLE = re.compile(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?")
_TOML_VALUE = re.compile(r'(\s*[A-Za-z0-9_."-]+\s*=\s*)("(?:[^"\\]|\\.)*"|-?[0-9]+|true|false)(.*)')


def _toml_value(value: str) -> str:
    if value.startswith('"'):
        return value[:-1] + _MARK + '"'
    if value in ("true", "false"):
        return "false" if value == "true" else "true"
    return str(int(value) + 1)


def _toml_entries(data: bytes, words: frozenset[str]) -> tuple[str, bytes] | None:
    lines = _text_lines(data)
    if lines is None:
        return None
    inside, changed = False, False
    out = []
    for line in lines:
        table = _TOML_TABLE.fullmatch(line.rstrip("\r\n"))
        if table is not None:
            name = table.group(1).strip().strip('"')
            inside = name in words or name.rsplit(".", 1)[-1] in words
        elif inside and (value := _TOML_VALUE.fullmatch(line.rstrip("\r\n"))) is not None:
            ending = line[len(line.rstrip("\r\n")) :]
            line = value.group(1) + _toml_value(value.group(2)) + value.group(3) + ending
            changed = True
        out.append(line)
    return ("entry.toml_table", "".join(out).encode("utf-8")) if changed else None


def _markdown_entries(data: bytes, words: frozenset[str]) -> tuple[str, bytes] | None:
    """Markdown fixture blocks (`title`, `.`, input, `.`, expected, `.`): the expected part of
    each block a test names by its first separator's line, gains a character per line."""
    lines = _text_lines(data)
    if lines is None:
        return None
    numbers = {int(word) for word in words if word.isdigit()}
    separators = [index for index, line in enumerate(lines) if line.rstrip() == "."]
    changed = False
    for first, second, third in zip(
        separators[::3], separators[1::3], separators[2::3], strict=False
    ):
        if first not in numbers and first + 1 not in numbers:
            continue
        for index in range(second + 1, third):
            body = lines[index].rstrip("\r\n")
            lines[index] = body + _MARK + lines[index][len(body) :]
            changed = True
    return ("entry.markdown_block", "".join(lines).encode("utf-8")) if changed else None


_ENTRY_FORMATS: dict[str, Callable[[bytes, frozenset[str]], tuple[str, bytes] | None]] = {
    ".json": _json_entries,
    ".toml": _toml_entries,
    ".md": _markdown_entries,
    ".markdown": _markdown_entries,
    ".txt": _markdown_entries,
}


def entry_operators(words: Mapping[str, frozenset[str]], files: Files) -> tuple[Operator, ...]:
    """The entry mutants of FILES, one operator per kind of entry, for the entries WORDS (per
    file: the parametrisation words of the tests that read it) name."""
    by_name: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        mutate = _ENTRY_FORMATS.get(PurePosixPath(path).suffix.lower())
        found = mutate(data, words.get(path, frozenset())) if mutate else None
        if found is not None and found[1] != data:
            by_name.setdefault(found[0], {})[path] = found[1]
    return tuple(
        Operator(name, Kind.WELL_FORMED, _fixed(mutation)) for name, mutation in by_name.items()
    )


def _fixed(mutation: dict[str, bytes]) -> Callable[[Files], dict[str, bytes]]:
    def apply(files: Files) -> dict[str, bytes]:
        return {path: data for path, data in mutation.items() if path in files}

    return apply


# The order they are tried in: the well-formed first, most likely killers first, so that a
# strong property costs one run; then the malformed, for properties no meaning change kills.
WELL_FORMED = (
    Operator("json.negate_number", Kind.WELL_FORMED, _json(_negate_sites)),
    Operator("json.drop_element", Kind.WELL_FORMED, _json(_drop_element_sites)),
    Operator("json.swap_values", Kind.WELL_FORMED, _json(_swap_sites)),
    Operator("text.drop_line", Kind.WELL_FORMED, _each_file(_drop_lines)),
    Operator("text.swap_lines", Kind.WELL_FORMED, _each_file(_swap_lines)),
    Operator("json.zero_number", Kind.WELL_FORMED, _json(_zero_sites)),
    Operator("json.bump_number", Kind.WELL_FORMED, _json(_bump_sites)),
    Operator("json.blow_up_number", Kind.WELL_FORMED, _json(_blow_up_sites)),
    Operator("swap_files", Kind.WELL_FORMED, _swap_files),
)
MALFORMED = (
    Operator("empty", Kind.MALFORMED, _each_file(_empty)),
    Operator("flip_middle_byte", Kind.MALFORMED, _each_file(_flip_middle_byte)),
    Operator("truncate_half", Kind.MALFORMED, _each_file(_truncate_half)),
)
OPERATORS = WELL_FORMED + MALFORMED


def mutants(
    files: Files, first: Sequence[Operator] = ()
) -> Iterator[tuple[Operator, dict[str, bytes]]]:
    """Each operator's mutant of FILES, in trial order (FIRST, the entry operators, before the
    rest); none that changes nothing or repeats."""
    seen: set[str] = set()
    for operator in (*first, *OPERATORS):
        mutation = operator.apply(files)
        key = _fingerprint(mutation)
        if mutation and key not in seen:
            seen.add(key)
            yield operator, mutation


def _fingerprint(mutation: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for path, data in sorted(mutation.items()):
        digest.update(f"{path}\0{len(data)}\0".encode("utf-8", "surrogateescape") + data)
    return digest.hexdigest()
