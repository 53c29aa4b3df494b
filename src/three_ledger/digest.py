"""The fixture digest: a closed-world check of the fixtures folder, then a streaming SHA-256."""

from __future__ import annotations

import hashlib
import os
import queue
import stat
import threading
import unicodedata
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from three_ledger.errors import Refused
from three_ledger.file_kinds import REGULAR_FILE, kind_of, pinned_file_problem
from three_ledger.frozen import frozen
from three_ledger.jsonio import HexDigests, Rows
from three_ledger.ledgers import FILE_ENTRY_KEYS, FileEntry
from three_ledger.pins import FixturePin

CHUNK_BYTES = 1024 * 1024
DIGEST_BYTES = HexDigests.DIGEST_BYTES
# Large files are read through this many chunk buffers, shared with the per-file hash thread.
RING_CHUNKS = 4
# Below this size a file is hashed inline: handing it to the thread costs more than it saves.
THREADED_MIN_BYTES = 64 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
# The kind `walk_entries` gives a regular file; every other kind is never a pinnable file.


@frozen
class LiveDigest:
    """The combined digest, and each file's size and own SHA-256, in digest order.

    Held as columns: a pin of 500,000 files makes no object per file until `files` is read,
    and each file's size and digest take 8 and 32 bytes.
    """

    digest: str
    paths: Sequence[str]
    sizes: array[int]
    sha256s: HexDigests

    @property
    def files(self) -> tuple[FileEntry, ...]:
        return tuple(map(FileEntry, self.paths, self.sizes, self.sha256s))

    def rows(self) -> Rows:
        """The file entries as `jsonio.Rows`, the form a fixture ledger writes them in."""
        return Rows(FILE_ENTRY_KEYS, (self.paths, self.sizes, self.sha256s))


def live_digest(root: Path, pin: FixturePin) -> LiveDigest:
    """Check the tree under ROOT against the pin, then hash the pinned bytes."""
    problems = tree_problems(root, pin)
    if problems:
        raise _refusal_with_hints(root, pin, problems)
    return hash_files(root, sorted(pin.files))


def _refusal_with_hints(root: Path, pin: FixturePin, problems: Sequence[str]) -> Refused:
    """The tree refusal, saying where a folder is or what git makes of an unpinned file."""
    from three_ledger import hints

    missing = _missing_folders(root, pin)
    if missing:
        refusal = tree_refusal(pin.source, problems)
        hint = hints.root_hint(root, missing[0], pin.source)
        refusal.notes.extend([hint] if hint is not None else [])
        return refusal
    annotated, notes = hints.annotate_unpinned(root, pin.fixtures_dirs, problems)
    refusal = tree_refusal(pin.source, annotated)
    refusal.notes.extend(notes)
    return refusal


def _missing_folders(root: Path, pin: FixturePin) -> list[str]:
    return [folder for folder in pin.fixtures_dirs if not is_real_directory(root, folder)]


def tree_refusal(source: Path, problems: Sequence[str]) -> Refused:
    """One headline naming the first problem, then every problem on its own line."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    details = problems if len(problems) > 1 else ()
    return Refused(f"fixture tree does not match {source}: {problems[0]}{more}", details)


def tree_problems(root: Path, pin: FixturePin) -> list[str]:
    """Everything that stops the tree from being exactly the pinned set of regular files:
    each of the pin's folders is closed."""
    missing = _missing_folders(root, pin)
    if missing:
        # A folder's own files are counted, not listed: chardet's 427 lines of "pinned file
        # is missing" came before the one line that said where the folder is.
        under = [f for f in pin.files if any(f.startswith(folder + "/") for folder in missing)]
        lines = [
            f"{folder}: fixtures folder is missing or not a plain folder, with the "
            f"{sum(f.startswith(folder + '/') for f in under)} pinned file(s) under it"
            for folder in missing
        ]
        rest = [f for f in pin.files if f not in set(under)]
        return [*lines, *pinned_problems(root, rest)]
    pinned = set(pin.files)
    # The pinned files a walk finds are counted, not kept: a pin of 500,000 files holds
    # no second list of its paths. Every pinned path found, and nothing more: then nothing
    # is unpinned.
    tree = _walk_folders(root, pin.fixtures_dirs, pinned)
    if tree.pinned_found == len(pinned) and not tree.files and not tree.others:
        return []
    tree = _walk_folders(root, pin.fixtures_dirs, None)
    files = set(tree.files)
    unpinned = {path: REGULAR_FILE for path in files - pinned}
    unpinned.update((path, kind) for path, kind in tree.others.items() if path not in pinned)
    return [
        *pinned_problems(root, pinned - files),
        *(f"{shown}: unpinned {unpinned[shown]}{_spelling(shown)}" for shown in sorted(unpinned)),
    ]


def _walk_folders(root: Path, folders: Sequence[str], pinned: set[str] | None) -> Tree:
    """One walk of each folder, into one tree (see `walk_tree`)."""
    tree = Tree(files=[], others={}, pinned=pinned)
    for folder in folders:
        walk_tree(root / folder, folder, tree)
    return tree


def _spelling(shown: str) -> str:
    """Spell out a name that is not in NFC: it prints just like its NFC twin in the pin."""
    if unicodedata.is_normalized("NFC", shown):
        return ""
    return f" (its name is not in Unicode NFC: {shown!a})"


def pinned_problems(root: Path, paths: Iterable[str]) -> list[str]:
    """Why each pinned path, in sorted order, is not a regular file reached without links.

    Each path is inspected component by component; the caller leaves out the paths the
    walk found as regular files, since the walk enters real folders only.
    """
    return [
        f"{path}: {problem}"
        for path in sorted(paths)
        if (problem := pinned_file_problem(root, path)) is not None
    ]


@dataclass
class Tree:
    """What a walk found: the regular files, and every other non-folder entry with its kind
    (`symbolic link`, `FIFO`, a folder that cannot be listed, ...). Paths as shown.

    Given `pinned`, a regular file among them is only counted (`pinned_found`), not listed.
    """

    files: list[str]
    others: dict[str, str]
    pinned: set[str] | None = None
    pinned_found: int = 0


def walk_entries(folder: Path, shown_prefix: str) -> Iterator[tuple[str, str]]:
    """Every non-folder entry under `folder`, without following links, as (path, kind).

    The kind is REGULAR_FILE for a regular file, else what the entry is (`symbolic link`, ...).
    """
    tree = walk_tree(folder, shown_prefix)
    yield from ((path, REGULAR_FILE) for path in tree.files)
    yield from tree.others.items()


def walk_tree(folder: Path, shown_prefix: str, tree: Tree | None = None) -> Tree:
    """Every non-folder entry under `folder`, without following links, folder by folder,
    added to TREE (a new one if not given).

    Names are read as bytes so that a name that is not valid UTF-8 is reported, not skipped.
    """
    tree = Tree(files=[], others={}) if tree is None else tree
    stack = [(os.fsencode(folder), shown_prefix)]
    while stack:
        raw_folder, shown_folder = stack.pop()
        try:
            listing = os.scandir(raw_folder)
        except OSError as exc:
            # What cannot be listed cannot be shown to hold only pinned files.
            tree.others[shown_folder] = f"folder that cannot be listed ({exc.strerror or exc})"
            continue
        with listing as entries:
            folders = _list_folder(entries, shown_folder + "/", tree)
        stack.extend((entry.path, f"{shown_folder}/{name}") for entry, name in folders)
    return tree


def _list_folder(
    entries: Iterator[os.DirEntry[bytes]], shown_prefix: str, tree: Tree
) -> list[tuple[os.DirEntry[bytes], str]]:
    """Add one folder's files and other entries to `tree`; return its subfolders and names."""
    file_names: list[bytes] = []
    folders: list[tuple[os.DirEntry[bytes], str]] = []
    for entry in entries:
        # The listing already says which entries are regular files: no stat for them.
        if entry.is_file(follow_symlinks=False):
            file_names.append(entry.name)
        elif (name := _decoded(entry.name)) is None:
            tree.others[f"{shown_prefix}{entry.name!r}"] = "entry whose name is not valid UTF-8"
        elif entry.is_dir(follow_symlinks=False):
            folders.append((entry, name))
        else:
            tree.others[shown_prefix + name] = _entry_kind(entry)
    _add_files(file_names, shown_prefix, tree)
    return folders


def _add_files(raw_names: list[bytes], shown_prefix: str, tree: Tree) -> None:
    """Add a folder's regular files to `tree`, decoded all at once when all are UTF-8."""
    if not raw_names:
        return
    # No name holds a slash, and UTF-8 is self-synchronising: the joined names decode
    # exactly when each name does.
    names = _decoded(b"/".join(raw_names))
    if names is None:
        for raw_name in raw_names:
            _add_file(raw_name, shown_prefix, tree)
        return
    shown = list(map(shown_prefix.__add__, names.split("/")))
    if tree.pinned is None:
        tree.files.extend(shown)
        return
    found = len(tree.pinned.intersection(shown))
    tree.pinned_found += found
    if found != len(shown):
        tree.files.extend(path for path in shown if path not in tree.pinned)


def _add_file(raw_name: bytes, shown_prefix: str, tree: Tree) -> None:
    name = _decoded(raw_name)
    if name is None:
        tree.others[f"{shown_prefix}{raw_name!r}"] = "entry whose name is not valid UTF-8"
    elif tree.pinned is not None and shown_prefix + name in tree.pinned:
        tree.pinned_found += 1
    else:
        tree.files.append(shown_prefix + name)


def _decoded(raw_name: bytes) -> str | None:
    try:
        return raw_name.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _entry_kind(entry: os.DirEntry[bytes]) -> str:
    return kind_of(entry.stat(follow_symlinks=False).st_mode)


def hash_files(root: Path, paths: Sequence[str]) -> LiveDigest:
    """SHA-256 over, for each path in order: UTF-8 path bytes, NUL, file bytes.

    Each file is also hashed on its own, so a ledger can say which file moved. Large
    files go through a few reused buffers: memory stays flat whatever the file sizes.
    """
    combined = hashlib.sha256()
    prefix = os.fsencode(root) + b"/"
    # Made at their full size: columns that grow file by file are copied as they grow.
    sizes = array("Q", bytes(8 * len(paths)))
    own_digests = bytearray(DIGEST_BYTES * len(paths))
    # A large file's own hash, finished by the thread, and where its digest goes.
    unfinished: list[tuple[int, hashlib._Hash]] = []
    with _FileHasher() as hasher:
        for index, path in enumerate(paths):
            sizes[index], own = _hash_file(prefix, path, combined, hasher)
            offset = index * DIGEST_BYTES
            if isinstance(own, bytes):
                own_digests[offset : offset + DIGEST_BYTES] = own
            else:
                unfinished.append((offset, own))
    # The thread has finished: every large file's own hash has seen all of its bytes.
    for offset, own in unfinished:
        own_digests[offset : offset + DIGEST_BYTES] = own.digest()
    return LiveDigest(combined.hexdigest(), paths, sizes, HexDigests(own_digests))


def _hash_file(
    prefix: bytes, path: str, combined: hashlib._Hash, hasher: _FileHasher
) -> tuple[int, bytes | hashlib._Hash]:
    """Feed one file to the combined hash; its size and own SHA-256, or for a large file
    the hash object that the thread finishes."""
    encoded = path.encode("utf-8")
    combined.update(encoded + b"\0")
    fd = _open_pinned(prefix + encoded, path)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise Refused(f"{path}: pinned fixture is not a regular file")
        own: bytes | hashlib._Hash
        if before.st_size < THREADED_MIN_BYTES:
            data = _read_small(fd, before.st_size, path)
            combined.update(data)
            size, own = len(data), hashlib.sha256(data).digest()
        else:
            size, own = hasher.hash_large(fd, combined, path)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if not size == before.st_size == after.st_size or before.st_mtime_ns != after.st_mtime_ns:
        raise Refused(f"{path}: pinned fixture changed while it was being hashed")
    return size, own


def _read_small(fd: int, expected: int, shown: str) -> bytes:
    """The bytes of a file `fstat` said holds `expected`, or one byte more if it grew.

    One `read` of one byte more than expected ends at the end of the file, so no second
    `read` is needed to see it; the caller's second `fstat` refuses a file that changed
    size, or was rewritten, after this read.
    """
    try:
        data = os.read(fd, expected + 1)
        # A short read that is not the end of the file: rare (signals, network filesystems).
        while len(data) < expected and (more := os.read(fd, expected + 1 - len(data))):
            data += more
    except OSError as exc:
        raise _unreadable(shown, exc) from exc
    return data


def _unreadable(shown: str, error: OSError) -> Refused:
    return Refused(f"{shown}: cannot read pinned fixture: {error.strerror or error}")


def _open_pinned(raw_path: bytes, shown: str) -> int:
    # O_NOFOLLOW and O_NONBLOCK: a file swapped for a link or a FIFO after the tree check
    # is refused instead of followed or waited on.
    try:
        return os.open(raw_path, _OPEN_FLAGS)
    except OSError as exc:
        raise _unreadable(shown, exc) from exc


def _read_into(fd: int, view: memoryview, shown: str) -> int:
    try:
        return os.readv(fd, [view])
    except OSError as exc:
        raise _unreadable(shown, exc) from exc


class _FileHasher:
    """Feeds each file to the combined hash, and hashes it on its own, in reused buffers.

    A large file's own hash runs on a second core: hashlib releases the GIL on large
    updates, so both hashes of a chunk run at once. Its chunks are read into a ring of
    buffers, and a buffer is read into again only once the thread has hashed it. A small
    file is hashed inline, since handing it to the thread would cost more than it saves.
    """

    def __init__(self) -> None:
        self._ring: list[memoryview] = []
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in range(RING_CHUNKS):
            self._free.put(index)
        self._work: queue.SimpleQueue[tuple[hashlib._Hash, memoryview, int] | None]
        self._work = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _FileHasher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._thread is not None:
            self._work.put(None)
            self._thread.join()

    def hash_large(self, fd: int, combined: hashlib._Hash, shown: str) -> tuple[int, hashlib._Hash]:
        """Stream the file through the ring; its own hash is complete once the thread ends."""
        if self._thread is None:
            # Allocated on the first large file: a tree of small files never needs them.
            self._ring = [memoryview(bytearray(CHUNK_BYTES)) for _ in range(RING_CHUNKS)]
            self._thread = threading.Thread(target=self._hash_chunks, daemon=True)
            self._thread.start()
        own = hashlib.sha256()
        size = 0
        while True:
            index = self._free.get()
            count = _read_into(fd, self._ring[index], shown)
            if not count:
                self._free.put(index)
                return size, own
            chunk = self._ring[index][:count]
            self._work.put((own, chunk, index))
            combined.update(chunk)
            size += count

    def _hash_chunks(self) -> None:
        while (work := self._work.get()) is not None:
            own, chunk, index = work
            own.update(chunk)
            self._free.put(index)


def is_real_directory(root: Path, relative: str) -> bool:
    """Whether ROOT/relative is a folder reached without passing through a link."""
    return pinned_file_problem(root, relative) == "is a folder, not a file"


def refuse_unreviewed(
    root: Path,
    pin: FixturePin,
    live: LiveDigest,
    base: str | None,
    commit: str | None = None,
    changed: Sequence[str] | None = None,
) -> None:
    """Refuse pinned bytes that are not the reviewed ones, naming the files that moved.

    The reviewed bytes are those of the pin's `digest`; for a pin without one, given BASE, the
    base's: pinned fixtures are left out of the oracles only because their pin binds them.
    COMMIT is BASE's commit where the caller resolved it already (`git.resolve_base_commit`),
    and CHANGED every path that differs from it (`git.changed_paths` of "."), where the caller
    asked git for them already.
    """
    if pin.digest is None:
        if base is not None:
            _refuse_moved_without_digest(root, pin, base, commit, changed)
        return
    if live.digest == pin.digest:
        return
    headline = (
        f"{pin.source}: live digest {live.digest} differs from the reviewed digest {pin.digest}"
    )
    if base is None:
        raise Refused(f"{headline}; give --base REV to name the files that moved")
    from three_ledger import git

    commit = commit or git.resolve_base_commit(root, base)
    moved = git.paths_differing_from(root, commit, sorted(pin.files))
    refusal = Refused(
        f"{headline}; {len(moved)} pinned file(s) differ from {base}",
        [f"moved since {base}: {path}" for path in moved],
    )
    if moved and _line_endings_only(root, commit, moved[0]):
        refusal.notes.append(
            f"{moved[0]} differs from its blob at {base} in its line endings alone: the "
            "checkout converts them (`core.autocrlf`, or `text` in .gitattributes); mark the "
            "fixture folders `-text` in .gitattributes, and check them out again"
        )
    raise refusal


def _line_endings_only(root: Path, commit: str, path: str) -> bool:
    """Whether PATH's bytes under ROOT are its blob at COMMIT with CRLF line endings:
    chardet's trial, in a clone with `core.autocrlf=true`, saw 404 fixtures "moved"."""
    from three_ledger import git

    try:
        blob = git.file_at(root, commit, path)
        data = (root / path).read_bytes()
    except (OSError, Refused):
        return False
    return blob is not None and data != blob and data.replace(b"\r\n", b"\n") == blob


def _refuse_moved_without_digest(
    root: Path, pin: FixturePin, base: str, commit: str | None, changed: Sequence[str] | None
) -> None:
    """Without a reviewed `digest`, a pinned file that differs from BASE moved unreviewed.

    As git tells a change from its base (committed, staged, unstaged, or new and not
    ignored), from its index: a pinned file git ignores is not part of any change.
    """
    from three_ledger import git

    pinned = set(pin.files)
    if changed is None:
        commit = commit or git.resolve_base_commit(root, base)
        changed = git.changed_paths(root, commit, list(pin.fixtures_dirs))
    # Every pinned file lies under fixtures_dirs (pins.py): the whole tree's list serves too.
    moved = [path for path in changed if path in pinned]
    if not moved:
        return
    more = f" (and {len(moved) - 1} more)" if len(moved) > 1 else ""
    refusal = Refused(
        f"{pin.source}: pinned fixture {moved[0]} differs from {base}{more}, and the pin has "
        "no reviewed digest: a fixture moved without review",
        [f"moved since {base}: {path}" for path in moved] if len(moved) > 1 else [],
    )
    refusal.notes.append(
        "fixtures change in a change of their own, which the pin owners review; a reviewed "
        "`digest` in the pin (`three-ledger digest --pin PIN --out LEDGER` prints it) binds "
        "the bytes without a base"
    )
    raise refusal
