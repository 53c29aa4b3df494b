"""The pins folder as `gate` and `check-pins` see it: which file is which kind of pin.

A pin carries no `kind` key, so a file is sorted by the key only its kind has: `properties`
(a properties pin), `flakes` (a flake pin), `files` (a fixture pin). Sorting reads the JSON
only; each pin is validated against its schema by whoever loads it.
"""

from __future__ import annotations

from pathlib import Path

from three_ledger import jsonio
from three_ledger.errors import Refused
from three_ledger.frozen import frozen

FIXTURE = "fixture pin"
PROPERTIES = "properties pin"
FLAKE = "flake pin"
# The key that marks each kind, checked in this order.
_MARKS = (("properties", PROPERTIES), ("flakes", FLAKE), ("files", FIXTURE))


@frozen
class PinFile:
    """A file in the pins folder, and which pin it is (None: not a pin)."""

    path: Path
    kind: str | None
    # As written in the file, when it is a string; the schema check comes later.
    pin_id: str | None
    problem: str | None = None
    # A fixture pin's folders as written, when they are strings (routing only: the schema
    # check comes later).
    folders: tuple[str, ...] = ()


@frozen
class PinFolder:
    """The pins folder and the files it holds."""

    folder: Path
    files: tuple[PinFile, ...]

    def of_kind(self, kind: str) -> list[PinFile]:
        return [pin for pin in self.files if pin.kind == kind]

    def unsorted(self) -> list[PinFile]:
        return [pin for pin in self.files if pin.kind is None]

    def fixture_pins_by_id(self) -> dict[str, list[PinFile]]:
        by_id: dict[str, list[PinFile]] = {}
        for pin in self.of_kind(FIXTURE):
            if pin.pin_id is not None:
                by_id.setdefault(pin.pin_id, []).append(pin)
        return by_id


def scan(folder: Path) -> PinFolder:
    """Every `*.json` file directly in FOLDER, sorted into pin kinds; refused if no folder."""
    if not folder.is_dir():
        raise Refused(f"--pins-dir {folder}: no such folder")
    try:
        paths = sorted(path for path in folder.iterdir() if path.name.endswith(".json"))
    except OSError as exc:
        raise Refused(f"--pins-dir {folder}: cannot list: {exc.strerror or exc}") from exc
    return PinFolder(folder, tuple(_sort(path) for path in paths))


def fixture_folders(data: bytes, source: Path) -> tuple[str, ...]:
    """The folders a fixture pin's bytes name, when they parse (else none): `gate` reads the
    base's version of a pin with it."""
    try:
        document = jsonio.parse_json(data, source, "pin")
    except Refused:
        return ()
    if not isinstance(document, dict) or any(key in document for key in ("properties", "flakes")):
        return ()
    return _folders(document) if "files" in document else ()


def _folders(document: dict[str, object]) -> tuple[str, ...]:
    listed = document.get("fixtures_dirs", [document.get("fixtures_dir")])
    if not isinstance(listed, list):
        return ()
    return tuple(folder for folder in listed if isinstance(folder, str))


def _sort(path: Path) -> PinFile:
    try:
        document = jsonio.parse_json(jsonio.read_bytes_capped(path, "pin"), path, "pin")
    except Refused as exc:
        return PinFile(path, None, None, exc.message)
    if not isinstance(document, dict):
        return PinFile(path, None, None, f"{path}: $: a pin is a JSON object")
    pin_id = document.get("pin_id")
    pin_id = pin_id if isinstance(pin_id, str) else None
    for key, kind in _MARKS:
        if key in document:
            return PinFile(
                path, kind, pin_id, folders=_folders(document) if kind == FIXTURE else ()
            )
    problem = f"{path}: $: none of the keys `files`, `properties`, `flakes`: not a pin"
    return PinFile(path, None, pin_id, problem)
