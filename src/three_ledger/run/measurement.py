"""The audit hook's records, read after a run: every file under ROOT it executed or read.

Each Python process of the run wrote one file (`plugin/measure.py`): a header, then a line
per file under ROOT the first time it was imported or opened for reading. A process whose
header names modules of ROOT already loaded when the hook was armed was measured too late
(a `.pth` file, or an interpreter started with `-S`, ran project code first): the run is not
evidence (exit 4). So is a run in which no process was measured at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from three_ledger.errors import InfraFailure
from three_ledger.run.child import Measurement
from three_ledger.run.staging import stage_measurement

# How a file was used, the stronger first: a file imported and read counts as imported.
_STRENGTH = {"imported": 2, "executed": 1, "read": 0}
# Never part of the closed world: git's own files, and bytecode (what it was compiled from
# is recorded as imported).
_LEFT_OUT_FOLDERS = frozenset({".git", "__pycache__"})


def prepare(private: Path, written: Path | None = None) -> Measurement:
    """Stage the hook in PRIVATE and make its empty records folder in WRITTEN (the folder the
    child may write; PRIVATE itself when not given)."""
    records = (written or private) / "measured"
    records.mkdir()
    return Measurement(stage_measurement(private), records)


def read_measured(measurement: Measurement, root: Path) -> dict[str, str]:
    """What the run used under ROOT: each file (relative, POSIX) and how it was used,
    `imported` winning over `executed`, and both over `read`. InfraFailure when no process
    was measured, or one was measured too late."""
    uses: dict[str, str] = {}
    prefixes: set[str] = set()
    files = sorted(measurement.records.glob("*.jsonl"))
    if not files:
        raise InfraFailure(
            "the measurement did not start: no Python process of the run imported the gate's "
            "sitecustomize (does the command start Python with -S or -I, or clear PYTHONPATH?)"
        )
    for path in files:
        header, lines = _read(path)
        late = header.get("loaded_before") or []
        if late:
            raise InfraFailure(
                f"the measurement started late: {late[0]} was loaded from {root} before the "
                "audit hook was armed (a .pth file or a site hook imports project code first), "
                "so what it did is not measured"
            )
        prefixes.update(str(prefix) for prefix in header.get("prefixes", ()))
        for line in lines:
            used, how = line["path"], line["how"]
            if _STRENGTH.get(how, 0) >= _STRENGTH.get(uses.get(used, "read"), 0):
                uses[used] = how
    # Only an environment inside ROOT is left out: one that holds ROOT would hide it all.
    top = str(root.resolve())
    inside = tuple(prefix.rstrip("/") + "/" for prefix in prefixes if prefix.startswith(top + "/"))
    return {p: how for p, how in uses.items() if not _left_out(p, top, inside)}


def interpreters(measurement: Measurement) -> tuple[str, ...]:
    """The `sys.version` of every measured process of the run, distinct and sorted."""
    found = {str(_read(path)[0].get("python")) for path in measurement.records.glob("*.jsonl")}
    return tuple(sorted(found))


def _read(path: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    try:
        raw = path.read_text(encoding="utf-8").splitlines()
        header = json.loads(raw[0]) if raw else {}
        lines = [json.loads(text) for text in raw[1:] if text.endswith("}")]
    except (OSError, ValueError) as error:
        raise InfraFailure(f"the measurement record {path.name} is unreadable: {error}") from None
    if not isinstance(header, dict) or not all(
        isinstance(line, dict) and {"path", "how"} <= line.keys() for line in lines
    ):
        raise InfraFailure(f"the measurement record {path.name} is malformed")
    return header, lines


def _left_out(path: str, top: str, prefixes: tuple[str, ...]) -> bool:
    """Git's files, bytecode, and the interpreter's own environment (a `.venv` in ROOT).

    TOP is ROOT resolved, PREFIXES the environment folders inside it, each ending in `/`.
    """
    # Split by hand, not by PurePosixPath (2.6 us a path, and a suite reads thousands): the
    # empty and `.` parts that splitting keeps name no folder left out.
    if not _LEFT_OUT_FOLDERS.isdisjoint(path.split("/")):
        return True
    return bool(prefixes) and f"{top}/{path}".startswith(prefixes)
