"""`selftest`'s scratch clone of ROOT: where every plant is committed and judged.

The clone sits at a path as deep as the user's work tree, in a folder of the same name, so
that nothing in a path tells a run that it is a selftest's. The user's tree is only read:
`git clone` copies its objects, and every later git call runs in the clone. The clone's
`origin` remote is removed, so nothing done in it can reach back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from three_ledger import git
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.runner import ChildHung, run_captured

GIT_TIMEOUT_S = 120.0
# The variables a commit's identity is taken from: HEAD's author and committer, not ours.
_IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


@frozen
class Scratch:
    """The clone: its work tree's top, ROOT inside it, and the commit every plant sits on."""

    top: Path
    root: Path
    head: str
    identity: dict[str, str]

    def git(self, *args: str) -> str:
        return run_git(self.top, args, self.identity)

    def reset(self) -> None:
        """Back to HEAD: tracked files as committed, nothing untracked or ignored left."""
        self.git("checkout", "--quiet", "--force", "--detach", self.head)
        self.git("clean", "--quiet", "-d", "--force", "-x")

    def commit(self, message: str) -> str:
        """Commit everything in the work tree (ignored files named by path too) on HEAD."""
        self.git("add", "--all", "--force", ".")
        self.git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def run_git(cwd: Path, args: Sequence[str], extra: dict[str, str] | None = None) -> str:
    """git in CWD with none of the machine's or the user's configuration; InfraFailure on error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")
    env.update(GIT_NO_REPLACE_OBJECTS="1", GIT_TERMINAL_PROMPT="0")
    env.update(extra or {})
    argv = ["git", "-c", "core.hooksPath=/dev/null", *args]
    try:
        done = run_captured(argv, cwd=cwd, env=env, timeout_s=GIT_TIMEOUT_S)
    except (ChildHung, OSError) as error:
        raise InfraFailure(f"selftest: git {args[0]} in {cwd}: {error}") from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = stderr[0] if stderr else f"exit {done.returncode}"
        raise InfraFailure(f"selftest: git {args[0]} failed in {cwd}: {why}")
    return done.stdout.decode("utf-8", "surrogateescape")


def same_depth_home(top: Path, work: Path) -> tuple[Path, Path]:
    """(folder to remove afterwards, path for the clone: as deep as TOP, named as TOP is).

    Under WORK, padded with folders until the depth matches; where WORK is already too deep,
    in a new folder beside TOP (never inside it), which then has TOP's depth itself.
    """
    padding = len(top.parts) - len(work.parts) - 2
    if padding >= 0:
        holder = work / "clone"
        return holder, holder.joinpath(*(["w"] * padding), top.name)
    holder = Path(tempfile.mkdtemp(prefix=f".{top.name}-", dir=top.parent))
    return holder, holder


@contextlib.contextmanager
def scratch_clone(root: Path, work: Path) -> Iterator[Scratch]:
    """Clone ROOT's repository at HEAD; the clone is removed afterwards."""
    top = git.work_tree_top(root).resolve()
    inside = root.resolve().relative_to(top)
    head = git.head_revision(root)
    holder, clone = same_depth_home(top, work)
    try:
        clone.parent.mkdir(parents=True, exist_ok=True)
        run_git(
            clone.parent,
            ["clone", "--quiet", "--no-hardlinks", "--no-checkout", str(top), str(clone)],
        )
        identity = _identity(clone, head)
        scratch = Scratch(clone, clone / inside, head, identity)
        scratch.git("remote", "remove", "origin")
        scratch.reset()
        yield scratch
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _identity(clone: Path, head: str) -> dict[str, str]:
    """HEAD's own author and committer: a plant commit looks like the project's commits."""
    shown = run_git(clone, ["show", "-s", "--format=%an%x00%ae%x00%cn%x00%ce", head])
    values = shown.rstrip("\n").split("\0")
    return dict(zip(_IDENTITY, values, strict=True))
