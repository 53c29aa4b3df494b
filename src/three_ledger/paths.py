"""The rules every path written in a pin must follow (SPEC 3.1)."""

from __future__ import annotations

import itertools
import re
import string
import unicodedata
from collections.abc import Iterable, Sequence

from three_ledger.plugin.globs import glob_matches as glob_matches

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Segments of word characters that do not start with a dot: in NFC, such a path breaks no
# rule, and checking it with one match keeps pins of 100,000 paths cheap to load.
_PLAIN = re.compile(r"[\w+=,@~-][\w.+=,@~-]*(?:/[\w+=,@~-][\w.+=,@~-]*)*")


def path_problem(path: str) -> str | None:
    """Say what is wrong with a pinned path, or return None when it is acceptable."""
    if _PLAIN.fullmatch(path) and unicodedata.is_normalized("NFC", path):
        return None
    if not path:
        return "is empty"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode"
    if path.startswith("/"):
        return "is absolute; pinned paths are relative to ROOT"
    if "\\" in path:
        return "contains a backslash; pinned paths use '/'"
    if _CONTROL.search(path):
        return "contains a control character"
    if any(segment in ("", ".", "..") for segment in path.split("/")):
        return "has an empty, '.' or '..' segment"
    if not unicodedata.is_normalized("NFC", path):
        return "is not in Unicode NFC"
    return None


# The ASCII characters `_PLAIN` admits; every other character it admits is a word character.
_PLAIN_ASCII = (string.ascii_letters + string.digits + "_.+=,@~-/").encode()
_WORD_CHARACTERS = re.compile(r"\w*")
# Newlines as slashes: in plain paths joined by newlines, an empty segment or path then
# shows as "//", a segment that starts with a dot as "/.".
_NEWLINE_AS_SLASH = bytes.maketrans(b"\n", b"/")


def all_plain_under(paths: Sequence[str], folders: tuple[str, ...]) -> bool:
    """Whether every path passes `path_problem`'s fast test and lies under one of `folders`,
    and no two are casefold twins: then checking them one by one would find nothing.

    The paths are checked a batch at a time, each batch joined by newlines, in a few passes
    over one string (a pin of 100,000 paths in milliseconds, and no copy of them all held
    at once). False says only that they must be checked one by one, which also names the
    first problem.
    """
    if not paths or not all(map(str.startswith, paths, itertools.repeat(_prefixes(folders)))):
        return False
    for start in range(0, len(paths), _BATCH_PATHS):
        if not _plain_batch(paths[start : start + _BATCH_PATHS]):
            return False
    return not _any_casefold_twins(paths)


# How many paths `all_plain_under` checks at once: long strings, a few hundred KiB each.
_BATCH_PATHS = 4096
# The bits of `_any_casefold_twins`'s bitmap (2 MiB): 500,000 paths share a bit in about
# 7,500 pairs, whose paths alone are compared exactly.
_FOLD_BITS = 1 << 24


def _any_casefold_twins(paths: Sequence[str]) -> bool:
    """Whether `casefold_twins` finds a pair among PATHS, all in NFC.

    Each path's casefold hash sets one bit of a bitmap, which costs 2 MiB, where a set of
    the hashes would cost about 70 B a path; only the paths whose bits were set twice are
    compared exactly.
    """
    seen = bytearray(_FOLD_BITS // 8)
    again: set[int] = set()
    for bit in map((_FOLD_BITS - 1).__and__, map(hash, map(str.casefold, paths))):
        byte, flag = bit >> 3, 1 << (bit & 7)
        if seen[byte] & flag:
            again.add(bit)
        seen[byte] |= flag
    if not again:
        return False
    suspects = [path for path in paths if hash(path.casefold()) & (_FOLD_BITS - 1) in again]
    return bool(casefold_twins(suspects))


def _plain_batch(paths: Sequence[str]) -> bool:
    """Whether every path passes `path_problem`'s fast test."""
    data = _joined_in_nfc(paths)
    if data is None or data.count(b"\n") != len(paths) - 1:  # a path that holds a newline
        return False
    segments = b"/" + data.translate(_NEWLINE_AS_SLASH) + b"/"
    if b"//" in segments or b"/." in segments:
        return False
    others = data.translate(None, _PLAIN_ASCII + b"\n").decode("utf-8")
    return _WORD_CHARACTERS.fullmatch(others) is not None


def _prefixes(folders: tuple[str, ...]) -> tuple[str, ...]:
    """What a path under one of FOLDERS starts with: `str.startswith` takes the tuple."""
    return tuple(folder.rstrip("/") + "/" for folder in folders)


def _joined_in_nfc(paths: Sequence[str]) -> bytes | None:
    """The paths joined by newlines, as UTF-8, when all are in NFC."""
    joined = "\n".join(paths)
    # Newline is a starter that composes with nothing: the whole is in NFC when each path is.
    if not unicodedata.is_normalized("NFC", joined):
        return None
    try:
        return joined.encode("utf-8")
    except UnicodeEncodeError:
        return None


def casefold_twins(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of paths that would be one file on a case-insensitive filesystem."""
    first_seen: dict[str, str] = {}
    twins: list[tuple[str, str]] = []
    for path in paths:
        key = unicodedata.normalize("NFC", path).casefold()
        if key in first_seen:
            twins.append((first_seen[key], path))
        else:
            first_seen[key] = path
    return twins


def is_under(path: str, folder: str) -> bool:
    """Whether relative POSIX `path` lies strictly inside relative POSIX `folder`."""
    return path.startswith(folder.rstrip("/") + "/")


def printable(text: str) -> str:
    """TEXT as one safe line: a name holding a newline or other control character is shown
    escaped, so that it can neither split a one-per-line list nor forge a line of its own,
    nor read as a GitHub workflow command (`neutral`)."""
    return neutral(text if text.isprintable() else ascii(text))


_OLD_COMMAND = "##["


def neutral(line: str) -> str:
    """LINE with what would make GitHub's runner read it as a workflow command shown as an
    escape: a `:` that starts a line, or a part of one after a CR (leading blanks dropped),
    as `\\u003a`, and each `##[` as `##\\u005b`. The escapes are JSON's own: inside a JSON
    string they read back as the same characters, so a JSON document stays the same
    document (`console_guard.py`)."""
    if "\r" in line:  # the runner ends a line at a CR too
        return "\r".join(map(neutral, line.split("\r")))
    if _OLD_COMMAND in line:
        line = line.replace(_OLD_COMMAND, "##\\u005b")
    stripped = line.lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + "\\u003a" + stripped[1:]
    return line
