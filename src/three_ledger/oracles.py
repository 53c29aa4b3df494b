"""Command lines that would rewrite the oracles they are meant to be judged by."""

from __future__ import annotations

from collections.abc import Sequence

# Flags of snapshot and golden-file plugins that regenerate expected outputs in place:
# syrupy, pytest-snapshot, pytest-regressions, pytest-regtest, inline-snapshot, jest,
# vitest, insta and pytest-golden.
REWRITING_FLAGS = frozenset(
    {
        "--snapshot-update",
        "--force-regen",
        "--regen-all",
        "--update-snapshots",
        "--updateSnapshot",
        "--update-goldens",
        "--update-golden",
        "--accept",
    }
)
REWRITING_INLINE_SNAPSHOT = frozenset({"fix", "create", "update", "trim"})


def rewriting_flag(command: Sequence[str]) -> str | None:
    """The first oracle-rewriting flag in `command`, also inside a `sh -c '...'` string."""
    for word in (token for argument in command for token in argument.split()):
        name, _, value = word.partition("=")
        if name in REWRITING_FLAGS:
            return word
        if name == "--inline-snapshot" and REWRITING_INLINE_SNAPSHOT & set(value.split(",")):
            return word
    return None
