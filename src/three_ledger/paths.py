"""The rules every path written in a pin must follow (SPEC 3.1)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

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
    escaped, so that it can neither split a one-per-line list nor forge a line of its own."""
    return text if text.isprintable() else ascii(text)
