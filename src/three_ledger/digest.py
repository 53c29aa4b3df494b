"""The fixture digest: a closed-world check of the fixtures folder, then a streaming SHA-256."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from three_ledger.errors import Refused
from three_ledger.ledgers import FileEntry
from three_ledger.pins import FixturePin

CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LiveDigest:
    digest: str
    files: tuple[FileEntry, ...]


def live_digest(root: Path, pin: FixturePin) -> LiveDigest:
    """Check the tree under ROOT against the pin, then hash the pinned bytes."""
    problems = tree_problems(root, pin)
    if problems:
        raise tree_refusal(pin.source, problems)
    return hash_files(root, sorted(pin.files))


def tree_refusal(source: Path, problems: Sequence[str]) -> Refused:
    """One headline naming the first problem, then every problem on its own line."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    details = problems if len(problems) > 1 else ()
    return Refused(f"fixture tree does not match {source}: {problems[0]}{more}", details)


def tree_problems(root: Path, pin: FixturePin) -> list[str]:
    """Everything that stops the tree from being exactly the pinned set of regular files."""
    problems = [
        f"{path}: {problem}"
        for path in sorted(pin.files)
        if (problem := pinned_file_problem(root, path)) is not None
    ]
    fixtures_dir = root / pin.fixtures_dir
    if not _is_real_directory(root, pin.fixtures_dir):
        return [f"{pin.fixtures_dir}: fixtures folder is missing or not a plain folder", *problems]
    pinned = set(pin.files)
    problems.extend(
        f"{shown}: {kind}"
        for shown, kind in walk_entries(fixtures_dir, pin.fixtures_dir)
        if shown not in pinned
    )
    return problems


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
        return f"is not a regular file ({_kind_of(mode)})"
    return None


def walk_entries(folder: Path, shown_prefix: str) -> Iterator[tuple[str, str]]:
    """Every non-folder entry under `folder`, without following links, as (path, kind).

    Names are read as bytes so that a name that is not valid UTF-8 is reported, not skipped.
    """
    stack = [(os.fsencode(folder), shown_prefix)]
    while stack:
        raw_folder, shown_folder = stack.pop()
        with os.scandir(raw_folder) as entries:
            for entry in entries:
                try:
                    name = entry.name.decode("utf-8")
                except UnicodeDecodeError:
                    yield f"{shown_folder}/{entry.name!r}", "unpinned, name is not valid UTF-8"
                    continue
                shown = f"{shown_folder}/{name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, shown))
                else:
                    yield shown, f"unpinned {_kind_of(entry.stat(follow_symlinks=False).st_mode)}"


def hash_files(root: Path, paths: Sequence[str]) -> LiveDigest:
    """SHA-256 over, for each path in order: UTF-8 path bytes, NUL, file bytes.

    Each file is also hashed on its own, so a ledger can say which file moved. Reads go
    through one reused buffer: memory stays flat whatever the file sizes.
    """
    combined = hashlib.sha256()
    buffer = bytearray(CHUNK_BYTES)
    view = memoryview(buffer)
    entries = []
    for path in paths:
        combined.update(path.encode("utf-8") + b"\0")
        own = hashlib.sha256()
        size = _stream_into(root / path, view, (combined, own), path)
        entries.append(FileEntry(path=path, size=size, sha256=own.hexdigest()))
    return LiveDigest(digest=combined.hexdigest(), files=tuple(entries))


def _stream_into(
    file_path: Path, view: memoryview, hashes: tuple[hashlib._Hash, ...], shown: str
) -> int:
    # O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO after the tree check
    # is refused instead of followed or waited on.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file_path, flags)
    except OSError as exc:
        raise Refused(f"{shown}: cannot read pinned fixture: {exc.strerror or exc}") from exc
    with open(fd, "rb", buffering=0) as stream:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise Refused(f"{shown}: pinned fixture is not a regular file")
        try:
            size = 0
            while count := stream.readinto(view):
                chunk = view[:count]
                for digest in hashes:
                    digest.update(chunk)
                size += count
        except OSError as exc:
            raise Refused(f"{shown}: cannot read pinned fixture: {exc.strerror or exc}") from exc
        after = os.fstat(fd)
    if size != after.st_size or (before.st_mtime_ns, before.st_size) != (
        after.st_mtime_ns,
        after.st_size,
    ):
        raise Refused(f"{shown}: pinned fixture changed while it was being hashed")
    return size


def _is_real_directory(root: Path, relative: str) -> bool:
    return pinned_file_problem(root, relative) == "is a folder, not a file"


def _kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def refuse_unreviewed(root: Path, pin: FixturePin, live: LiveDigest, base: str | None) -> None:
    """Refuse a live digest that differs from the pin's reviewed `digest`, naming moved files."""
    if pin.digest is None or live.digest == pin.digest:
        return
    headline = (
        f"{pin.source}: live digest {live.digest} differs from the reviewed digest {pin.digest}"
    )
    if base is None:
        raise Refused(f"{headline}; give --base REV to name the files that moved")
    from three_ledger import git

    commit = git.resolve_commit(root, base)
    moved = git.paths_differing_from(root, commit, sorted(pin.files))
    raise Refused(
        f"{headline}; {len(moved)} pinned file(s) differ from {base}",
        [f"moved since {base}: {path}" for path in moved],
    )
