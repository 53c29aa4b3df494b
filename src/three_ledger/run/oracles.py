"""Command lines that would rewrite the oracles they are meant to be judged by."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from three_ledger.run.runner_config import analyse, read_package

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
        "--update-snapshot",
        "--update-goldens",
        "--update-golden",
        "--accept",
    }
)
REWRITING_INLINE_SNAPSHOT = frozenset({"fix", "create", "update", "trim"})
# jest's `-u` and vitest's `-u`/`--update[=new|all]`; alone or in a group of short flags.
SNAPSHOT_RUNNERS = frozenset({"jest", "vitest"})
_SHORT_GROUP_WITH_U = re.compile(r"-[A-Za-z]*u[A-Za-z]*")
_VITEST_UPDATE_OFF = frozenset({"none", "false"})
# The Go convention for golden files (`go test ./... -update`, also after `-args`).
GO_REWRITING_FLAGS = frozenset({"-update", "--update", "-update-golden", "-golden", "-regen"})
# Environment assignments (`env NAME=VALUE cmd`) that make snapshot libraries write.
REWRITING_ENVIRONMENT = {
    "INSTA_UPDATE": frozenset({"always", "unseen", "force", "new", "auto"}),
    "INSTA_FORCE_PASS": None,
    "UPDATE_EXPECT": None,
    "SNAPSHOT_UPDATE": None,
    "UPDATE_SNAPSHOTS": None,
}


def rewriting_flag(command: Sequence[str], root: Path | None = None) -> str | None:
    """The first oracle-rewriting flag in `command`, also inside a `sh -c '...'` string and,
    with ROOT, inside the package.json scripts that `npm test` or `npm run X` would run.
    """
    package = read_package(root) if root is not None else {}
    run = analyse(command, package)
    runs_go = _runs_go_test(run.words)
    for word in run.words:
        if _rewrites(word) or (runs_go and word in GO_REWRITING_FLAGS):
            return word
        if run.runners & SNAPSHOT_RUNNERS and _snapshot_update(word):
            return word
    return None


def _rewrites(word: str) -> bool:
    name, equals, value = word.partition("=")
    if name in REWRITING_FLAGS:
        return True
    if name == "--inline-snapshot":
        return bool(REWRITING_INLINE_SNAPSHOT & set(value.split(",")))
    if equals and name in REWRITING_ENVIRONMENT:
        allowed = REWRITING_ENVIRONMENT[name]
        return value not in ("", "0", "no", "false") if allowed is None else value in allowed
    return False


def _snapshot_update(word: str) -> bool:
    name, equals, value = word.partition("=")
    if name == "--update":
        return not equals or value not in _VITEST_UPDATE_OFF
    return _SHORT_GROUP_WITH_U.fullmatch(word) is not None


def _runs_go_test(words: Sequence[str]) -> bool:
    programs = [os.path.basename(word) for word in words]
    return "gotestsum" in programs or any(
        program == "go" and following == "test"
        for program, following in zip(programs, words[1:], strict=False)
    )
