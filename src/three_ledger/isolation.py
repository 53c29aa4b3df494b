"""The gate must not run code from the tree it judges.

Run as the console script from an environment of its own, three-ledger imports nothing from
ROOT. Run as `python -m three_ledger` from ROOT, or beside an editable install of the project
under test, it could: ROOT (or a folder in it) is then on its `sys.path`, and a patch could
replace a module the gate relies on (its JSON Schema validator, say). Every command that takes
`--root` checks this first and refuses to judge.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from three_ledger import git
from three_ledger.errors import Refused

ADVICE = (
    "install three-ledger into an environment of its own and run its console script, or "
    "`python -P -m three_ledger` (-P keeps the current folder off sys.path)"
)
# When the entry came from PYTHONPATH, which the job may set for its tests: the gate's own
# Python can ignore it while the test run keeps it.
PYTHONPATH_ADVICE = (
    "it comes from PYTHONPATH: run the gate as `python -I -m three_ledger` with the Python of "
    "its own environment (-I ignores PYTHON* variables for the gate alone; the test run still "
    "gets PYTHONPATH), or give the tests their path with pytest's `pythonpath` setting"
)


def refuse_code_from_root(root: Path) -> None:
    """Refused when ROOT, or a folder of tracked files in it, is on the gate's sys.path, or
    when a module the gate imported is a file git tracks under ROOT."""
    top = root.resolve()
    inside = [entry for entry in sys.path if _resolved(entry).is_relative_to(top)]
    if any(_resolved(entry) == top for entry in inside):
        raise Refused(
            f"ROOT {root} is on three-ledger's own sys.path: a module in the change under "
            f"review could stand in for the gate's own; {_advice(top)}"
        )
    imported = _modules_under(top)
    if not inside and not imported:
        return
    work_tree = _work_tree(top)
    if work_tree is None:
        return  # no git work tree: nothing under ROOT is tracked
    for entry in inside:
        if git.tracked_among(work_tree, [_resolved(entry).relative_to(work_tree)]):
            raise Refused(
                f"{entry} is on three-ledger's own sys.path and holds files git tracks under "
                f"ROOT {root} (an editable install of the project under test?); "
                f"{_advice(_resolved(entry))}"
            )
    tracked = _tracked(work_tree, imported)
    if tracked:
        name, path = tracked[0]
        raise Refused(
            f"three-ledger imported {name} from {path}, a file git tracks under ROOT {root}: "
            f"the gate would run code from the change it judges; {ADVICE}"
        )


def _advice(entry: Path) -> str:
    """How to keep ENTRY (resolved) off the gate's sys.path."""
    listed = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if any(item and _resolved(item) == entry for item in listed):
        return PYTHONPATH_ADVICE
    pth = _pth_naming(entry)
    if pth is not None:
        return (
            f"it comes from {pth}, a .pth file of three-ledger's own environment (an editable "
            "install of the project beside the gate): the console script and `-P` keep it; "
            "install three-ledger into an environment of its own, without the project"
        )
    return ADVICE


def _pth_naming(entry: Path) -> Path | None:
    """The .pth file of a site folder of this Python whose line puts ENTRY on sys.path."""
    import site  # loaded at start-up already, unless Python ran with -S

    folders = [*site.getsitepackages(), site.getusersitepackages()]
    for folder in folders:
        try:
            files = sorted(Path(folder).glob("*.pth"))
        except OSError:
            continue
        for pth in files:
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for raw in lines:
                line = raw.strip()
                skipped = not line or line.startswith(("#", "import ", "import\t"))
                if not skipped and _resolved(os.path.join(folder, line)) == entry:
                    return pth
    return None


def _resolved(entry: str) -> Path:
    return Path(entry or os.getcwd()).resolve()


def _work_tree(top: Path) -> Path | None:
    try:
        return git.work_tree_top(top).resolve()
    except Refused:
        return None


def _modules_under(top: Path) -> dict[str, Path]:
    found = {}
    folders: dict[str, str] = {}  # each folder resolved once: a run has loaded ~200 modules
    prefix = os.path.join(str(top), "")
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        resolved = _realpath(os.fspath(file), folders)
        if resolved == str(top) or resolved.startswith(prefix):
            found[name] = Path(resolved)
    return found


def _realpath(file: str, folders: dict[str, str]) -> str:
    """`os.path.realpath(FILE)`, its folder looked up in (and added to) FOLDERS."""
    folder, name = os.path.split(os.path.abspath(file))
    if not name or name in (".", "..") or os.path.islink(file):
        return os.path.realpath(file)
    if folder not in folders:
        folders[folder] = os.path.realpath(folder)
    return os.path.join(folders[folder], name)


def _tracked(work_tree: Path, imported: dict[str, Path]) -> list[tuple[str, Path]]:
    """Those of IMPORTED that git tracks (a virtual environment inside ROOT is not tracked)."""
    relative = {name: path.relative_to(work_tree) for name, path in imported.items()}
    known = set(git.tracked_among(work_tree, list(relative.values())))
    return sorted((name, imported[name]) for name, path in relative.items() if path in known)
