"""What a path on disk is: a regular file reached without links, or what else.

Standard library only and cheap to import: `check-pins` needs it without the digest.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# The kind of a regular file, as a walk of the fixture tree reports each entry.
REGULAR_FILE = "file"


def pinned_file_problem(root: Path, path: str) -> str | None:
    """Why ROOT/path is not a regular file reached without links, or None."""
    current = root
    parts = path.split("/")
    for index, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return "pinned file is missing"
        except OSError as exc:
            return f"cannot inspect: {exc.strerror or exc}"
        if stat.S_ISLNK(mode):
            return (
                "is a symbolic link" if index == len(parts) - 1 else f"{part}/ is a symbolic link"
            )
        if index < len(parts) - 1 and not stat.S_ISDIR(mode):
            return f"{part} is not a folder"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"is not a regular file ({kind_of(mode)})"
    return None


def kind_of(mode: int) -> str:
    """What a file of MODE is, in words: REGULAR_FILE, `symbolic link`, `FIFO`, ..."""
    if stat.S_ISREG(mode):
        return REGULAR_FILE
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"
