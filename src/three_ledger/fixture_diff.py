"""Which pinned files moved between two fixture ledgers, or between a ledger and live bytes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from three_ledger.frozen import frozen
from three_ledger.ledgers import FileEntry
from three_ledger.paths import printable

# Stands for the side of a change where the file is absent.
ABSENT = "-"


@frozen
class FileChange:
    """One pinned path whose entry differs: absent before (added), after (removed), or neither."""

    path: str
    before: FileEntry | None
    after: FileEntry | None

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed"

    def line(self) -> str:
        """`KIND<TAB>PATH<TAB>size BEFORE -> AFTER<TAB>sha256 BEFORE -> AFTER`, `-` when absent.

        Tabs separate the fields because a pinned path may hold spaces but never a tab.
        """
        sizes = _before_after(self.before, self.after, lambda entry: str(entry.size))
        hashes = _before_after(self.before, self.after, lambda entry: entry.sha256)
        return f"{self.kind}\t{printable(self.path)}\tsize {sizes}\tsha256 {hashes}"


def file_changes(before: Sequence[FileEntry], after: Sequence[FileEntry]) -> list[FileChange]:
    """Every path added, removed or changed from `before` to `after`, sorted like the digest."""
    old = {entry.path: entry for entry in before}
    new = {entry.path: entry for entry in after}
    return [
        FileChange(path, old.get(path), new.get(path))
        for path in sorted(old.keys() | new.keys())
        if old.get(path) != new.get(path)
    ]


def repeated_paths(files: Sequence[FileEntry]) -> list[str]:
    """Paths listed more than once: a ledger written by `digest` never has any."""
    counts = Counter(entry.path for entry in files)
    return sorted(path for path, count in counts.items() if count > 1)


def _before_after(
    before: FileEntry | None, after: FileEntry | None, field: Callable[[FileEntry], str]
) -> str:
    left = ABSENT if before is None else field(before)
    right = ABSENT if after is None else field(after)
    return f"{left} -> {right}"
