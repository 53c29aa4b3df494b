"""`pin_folder.scan`: each file of the pins folder sorted into its kind, with the folders a
fixture pin names, as written, for the gate to route a change before any pin is checked."""

from __future__ import annotations

import json
from pathlib import Path

from three_ledger.pin_folder import FIXTURE, PROPERTIES, scan


def write(folder: Path, name: str, document: object) -> None:
    (folder / name).write_text(json.dumps(document), encoding="utf-8")


def test_a_fixture_pin_carries_its_folders_in_either_spelling(tmp_path: Path) -> None:
    write(tmp_path, "one.json", {"pin_id": "a", "fixtures_dir": "fixtures", "files": []})
    write(tmp_path, "two.json", {"pin_id": "b", "fixtures_dirs": ["x", "y/z"], "files": []})
    found = {pin.path.name: (pin.kind, pin.folders) for pin in scan(tmp_path).files}
    assert found == {"one.json": (FIXTURE, ("fixtures",)), "two.json": (FIXTURE, ("x", "y/z"))}


def test_folders_that_are_not_strings_route_nothing(tmp_path: Path) -> None:
    write(tmp_path, "bad.json", {"pin_id": "a", "fixtures_dirs": "fixtures", "files": []})
    write(tmp_path, "mixed.json", {"pin_id": "b", "fixtures_dirs": ["ok", 3], "files": []})
    write(tmp_path, "none.json", {"pin_id": "c", "files": []})
    found = {pin.path.name: pin.folders for pin in scan(tmp_path).files}
    assert found == {"bad.json": (), "mixed.json": ("ok",), "none.json": ()}


def test_other_pins_carry_no_folders(tmp_path: Path) -> None:
    write(tmp_path, "p.json", {"pin_id": "p", "fixtures_dir": "f", "properties": []})
    (pin,) = scan(tmp_path).files
    assert (pin.kind, pin.folders) == (PROPERTIES, ())
