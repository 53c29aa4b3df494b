"""The JUnit report's folder: emptied before the command, so that whatever is there after it
was written while the command ran.

Removing files is the one thing here that could cost a user work, so the gate removes only
what it can show is disposable, and refuses (exit 2, nothing removed) a folder that holds
anything else. Disposable: the file at the report's path (unless git tracks it, which
`junit_evidence` refuses), and files directly in the folder that git ignores. Refused: a
folder that is ROOT or holds it, that also holds `--out` or `--log` (the gate's own ledgers),
and a folder holding a subfolder (a `.venv`, `node_modules`, the pins or the fixtures), a file
git tracks, an untracked file git does not ignore (someone's new work), or, outside the git
work tree, any file at all (git cannot say there what is a stale report).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from three_ledger import git
from three_ledger.errors import InfraFailure, Refused
from three_ledger.frozen import frozen


@frozen
class Entry:
    """One entry of the report's folder other than the report, and whether it is a folder."""

    path: Path
    is_folder: bool


def refuse_shared_folder(label: str, report: Path, root: Path, outputs: Iterable[Path]) -> None:
    """Refuse a report folder the gate may not empty: ROOT, one holding ROOT, or the folder of
    another output (`gate --out-dir` holds the fixture ledgers)."""
    folder = Path(os.path.realpath(report.parent))
    real_root = Path(os.path.realpath(root))
    if folder == real_root:
        raise Refused(
            f"--junit-xml {label} lies directly in ROOT: put the report in a folder of its own "
            "(test-results/junit.xml, say, listed in .gitignore), which the gate empties before "
            "the command"
        )
    if real_root.is_relative_to(folder):
        raise Refused(
            f"--junit-xml {label}: its folder {folder} holds ROOT: put the report in a folder "
            "of its own, which the gate empties before the command"
        )
    for output in outputs:
        if Path(os.path.realpath(output.parent)) == folder:
            raise Refused(
                f"--junit-xml {label} shares its folder with {output}, which the gate writes: "
                "the gate empties the report's folder before the command; put the report in a "
                "folder of its own"
            )


def disposable_files(label: str, report: Path, root: Path) -> list[Path]:
    """The files to remove from the report's folder, the report's own path first if present.

    Refused (exit 2) when the folder holds anything the gate must not remove; `report` is an
    absolute path.
    """
    folder = report.parent
    entries = _entries(label, folder)
    others = [entry for entry in entries if entry.path != report]
    problems = [f"{entry.path}: a folder" for entry in others if entry.is_folder]
    files = [entry.path for entry in others if not entry.is_folder]
    problems += _kept_by_git(root, folder, files)
    if problems:
        raise Refused(
            f"--junit-xml {label}: the gate empties the report's folder {folder} before the "
            "command, and it holds what the gate will not remove; give the report a folder of "
            "its own, listed in .gitignore",
            problems,
        )
    return [report, *files] if len(others) < len(entries) else files


def _entries(label: str, folder: Path) -> list[Entry]:
    try:
        with os.scandir(folder) as listing:
            found = [Entry(Path(item.path), item.is_dir(follow_symlinks=False)) for item in listing]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise InfraFailure(
            f"--junit-xml {label}: cannot list its folder ({error.strerror})"
        ) from None
    return sorted(found, key=lambda entry: entry.path)


def _kept_by_git(root: Path, folder: Path, files: Sequence[Path]) -> list[str]:
    """Why each of FILES may not be removed: tracked, not ignored, or beyond git's sight."""
    if not files:
        return []
    top = Path(os.path.realpath(git.work_tree_top(root)))
    real_folder = Path(os.path.realpath(folder))
    if not real_folder.is_relative_to(top):
        return [
            f"{path}: outside the git work tree, so git cannot tell a stale report from your files"
            for path in files
        ]
    relative = {(real_folder / path.name).relative_to(top).as_posix(): path for path in files}
    tracked = {path.as_posix() for path in git.tracked_among(top, [Path(p) for p in relative])}
    ignored = git.ignored_among(top, list(relative))
    problems = []
    for name, path in relative.items():
        if name in tracked:
            problems.append(f"{path}: tracked by git")
        elif name not in ignored:
            problems.append(f"{path}: neither tracked nor ignored by git (new work?)")
    return problems


def remove(label: str, paths: Sequence[Path]) -> None:
    """Remove PATHS (files and links, never folders); one that is already gone is fine."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            raise InfraFailure(
                f"{label}: cannot remove {path} from the report's folder before the run "
                f"({error.strerror}); no property ledger written"
            ) from None
