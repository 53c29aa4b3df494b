"""`vet`'s result cache: each subject's trials, reused while nothing that decides them changed.

An entry is keyed on everything the mutant runs depend on: the fixture digest, the
properties pin, the git blob id of every file under ROOT the baseline run imported or read
(outside the pinned fixtures, which the digest covers) and of every measured oracle
(config, conftests, plugins, test-side modules), the command, the gate's version, the
Python and pytest versions of the run and its plugins' versions, the network enforcement,
the timeout, the test modules left out, the values of the environment names the run keeps,
and the subject itself. A change to any of them is another key.

The cache lives in the user's cache folder, outside ROOT, and is only ever read from there:
an artifact restored from another run cannot stand in for it. Each entry is written to a
temporary file beside it and renamed into place, so a reader sees a whole entry or none; an
entry that does not read back whole is ignored (and written again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from three_ledger.frozen import frozen
from three_ledger.ledgers import decode, encode
from three_ledger.other_ledgers import VetTrial

# Bumped when an entry's layout or the meaning of a trial changes.
ENTRY_VERSION = 1


def result_cache_folder(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/three-ledger/vet, or ~/.cache/three-ledger/vet."""
    base = environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "three-ledger" / "vet"


def blob_id(data: bytes) -> str:
    """The git blob id of DATA (what `git hash-object` prints for a file holding it)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def blob_ids(tree: Path, paths: Iterable[str]) -> dict[str, str]:
    """Each path under TREE with the blob id of its bytes; a path gone since: `missing`."""
    found = {}
    for path in sorted(set(paths)):
        try:
            found[path] = blob_id((tree / path).read_bytes())
        except OSError:
            found[path] = "missing"
    return found


@frozen
class Entry:
    """What a subject's mutants gave: each property's trials, and how many runs that took."""

    trials: dict[str, tuple[VetTrial, ...]]
    runs: int


class ResultCache:
    """The entries in FOLDER whose keys start from the run-wide KEY_PARTS."""

    def __init__(self, folder: Path, key_parts: Mapping[str, Any]) -> None:
        self.folder = folder
        self._base = _sha256(key_parts)

    @staticmethod
    def digest_of(parts: Mapping[str, Any]) -> str:
        return _sha256(parts)

    def key(self, subject_parts: Mapping[str, Any]) -> str:
        return _sha256({"run": self._base, "subject": subject_parts, "v": ENTRY_VERSION})

    def load(self, key: str) -> Entry | None:
        """The entry under KEY, or None when there is none or it does not read back whole."""
        try:
            document = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            if document["key"] != key or document["version"] != ENTRY_VERSION:
                return None
            trials = {
                pid: tuple(decode(VetTrial, trial) for trial in found)
                for pid, found in document["trials"].items()
            }
            runs = document["runs"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return Entry(trials, runs) if isinstance(runs, int) else None

    def store(self, key: str, entry: Entry) -> None:
        """Write the entry atomically; a cache that cannot be written is only not written."""
        document = {
            "version": ENTRY_VERSION,
            "key": key,
            "runs": entry.runs,
            "trials": {
                pid: [encode(trial) for trial in found] for pid, found in entry.trials.items()
            },
        }
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{key}.", dir=self.folder)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    json.dump(document, stream, sort_keys=True)
                os.replace(temporary, self.folder / f"{key}.json")
            except OSError:
                Path(temporary).unlink(missing_ok=True)
                raise


def _sha256(parts: Mapping[str, Any]) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=list)
    return hashlib.sha256(text.encode()).hexdigest()
