"""`product_paths` globs, matched the same way by the gate and by the plugin.

Standard library only (a plugin-side module; see run/staging.py): the tripwire reads the
pin's `product_paths` in the test child, and the gate imports it as `three_ledger.paths`.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=256)
def _glob_pattern(glob: str) -> re.Pattern[str]:
    parts = []
    for token in re.split(r"(\*\*/|\*\*|\*|\?)", glob.removesuffix("/")):
        if token == "**/":
            parts.append("(?:.*/)?")
        elif token == "**":
            parts.append(".*")
        elif token == "*":
            parts.append("[^/]*")
        elif token == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(token))
    # A glob names its file, or a folder and everything under it.
    return re.compile("".join(parts) + "(?:/.*)?")


def glob_matches(glob: str, path: str) -> bool:
    """Whether a `product_paths` GLOB covers PATH (POSIX, relative to ROOT).

    `*` and `?` stay within one segment; `**` spans any number of them; a glob that names a
    folder covers everything under it.
    """
    return _glob_pattern(glob).fullmatch(path) is not None
