"""GitHub workflow commands (`::error file=...::message`), escaped as the runner parses them.

Ids and file names come from the change under review: a `%`, CR or LF in a message, or a
`:` or `,` in a property, would otherwise end the command early or forge another one.
Everything else the gate prints is kept from reading as a command (`console_guard.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from three_ledger.frozen import frozen

# The levels of GitHub's annotation commands.
Level = Literal["error", "warning", "notice"]

# GitHub shows at most 10 annotations of each level per step; more are dropped silently.
MAX_PER_KIND = 10


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@frozen
class Annotation:
    level: Level
    title: str
    message: str
    file: str | None = None

    def command(self) -> str:
        properties = [("title", self.title)]
        if self.file is not None:
            properties.insert(0, ("file", self.file))
        joined = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
        return f"::{self.level} {joined}::{escape_data(self.message)}"


def annotations_of_kind(
    level: Level, title: str, items: Sequence[tuple[str, str]], limit: int = MAX_PER_KIND
) -> list[Annotation]:
    """One annotation per (file, message), at most LIMIT; the last one says how many were left."""
    shown = [Annotation(level, title, message, file) for file, message in items[:limit]]
    hidden = len(items) - limit
    if hidden > 0:
        file, message = items[limit - 1]
        shown[-1] = Annotation(level, title, f"{message} (and {hidden} more)", file)
    return shown


def commands(annotations: Iterable[Annotation]) -> str:
    return "".join(annotation.command() + "\n" for annotation in annotations)
