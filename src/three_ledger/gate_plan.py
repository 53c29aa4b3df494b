"""What `gate` will run, decided before anything runs: the pins, the base, the kind of change.

Problems found here are the gate's own inputs being unusable (no pins folder, no properties
pin, no base): `gate` turns each into a reject decision saying why, never into a skip.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger import git
from three_ledger.base_resolution import BaseChoice, BaseResolution, choose_base
from three_ledger.bytecode import is_compiled
from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.pin_folder import FLAKE, PROPERTIES, PinFile, PinFolder, scan
from three_ledger.pins import PropertiesPin, load_properties_pin
from three_ledger.vocabulary import BaseHow

# `dual-pin` compares two property ledgers: a properties pin naming more would leave one unscored.
MAX_FIXTURE_PINS = 2


class Unusable(Exception):
    """The gate's own inputs cannot be used; the message says why, in one line."""


@frozen
class FixtureSide:
    """One fixture pin the properties are scored on: `A` is merge's, `B` the dual-pin's other."""

    label: str
    pin_id: str
    path: Path
    # Its folders as the pin writes them (routing a change; `digest` checks the pin).
    folders: tuple[str, ...] = ()

    @property
    def slug(self) -> str:
        return self.label.lower()


@frozen
class Change:
    """The change under test: its base, and every path that differs from it."""

    # The base commit (resolution.used) and where it came from, naming the merge-base when
    # HEAD does not descend from the revision asked for.
    base: str
    base_source: str
    resolution: BaseResolution
    # Paths (relative to the work tree top) that differ from the base, outputs left out.
    changed: tuple[str, ...]
    pins_dir_in_top: str
    root_in_top: str
    # Of CHANGED, the paths git does not track: part of the change all the same.
    untracked: tuple[str, ...] = ()

    @property
    def pin_change_only(self) -> bool:
        """The change touches the pins folder and nothing else: pin owners review it.

        Never a change that holds bytecode or native code, wherever it lies: it is scored, and
        refused there.
        """
        pins = self.pins_dir_in_top
        # A pins folder at the top (or outside the work tree) would hold every change.
        if pins in ("", ".") or pins.startswith("/") or not self.changed:
            return False
        if any(is_compiled(path) for path in self.changed):
            return False
        return all(_inside(path, pins) for path in self.changed)

    def changed_pins(self) -> list[str]:
        return [path for path in self.changed if _inside(path, self.pins_dir_in_top)]

    def changed_pin_names(self) -> frozenset[str]:
        """File names, in the pins folder itself, of the pins that differ from the base."""
        prefix = self.pins_dir_in_top.rstrip("/") + "/"
        names = (path.removeprefix(prefix) for path in self.changed_pins())
        return frozenset(name for name in names if "/" not in name)

    def in_top(self, path: str) -> str:
        """A path relative to ROOT, made relative to the work tree top."""
        return f"{self.root_in_top}/{path}" if self.root_in_top else path


@frozen
class Plan:
    """The pins a scored change runs on."""

    sides: tuple[FixtureSide, ...]
    properties_pin: PropertiesPin
    flake_pin: Path | None


def find_change(
    pins_dir: Path, root: Path, base: str | None, outputs: Sequence[Path], env: Mapping[str, str]
) -> Change:
    """Resolve the base and list what differs from it; Unusable when there is no base."""
    choice = _choice(base, env)
    top = _top(root)
    resolution = _resolve(root, choice)
    source = choice.source
    if resolution.how is BaseHow.MERGE_BASE:
        source += f"; HEAD's merge-base with {choice.revision}"
    changed, untracked = _changed(top, resolution.used, outputs)
    return Change(
        base=resolution.used,
        base_source=source,
        resolution=resolution,
        changed=tuple(changed),
        pins_dir_in_top=_relative(pins_dir, top),
        root_in_top=_relative(root, top),
        untracked=tuple(untracked),
    )


def find_pins(pins_dir: Path) -> Plan:
    """The properties pin, the fixture pins it names, the flake pin; Unusable when unclear."""
    folder = _scan(pins_dir)
    properties_pin = _properties_pin(folder)
    return Plan(_sides(folder, properties_pin), properties_pin, _flake_pin(folder))


def _scan(pins_dir: Path) -> PinFolder:
    try:
        folder = scan(pins_dir)
    except Refused as exc:
        raise Unusable(exc.message) from None
    unsorted = folder.unsorted()
    if unsorted:
        raise Unusable(f"{unsorted[0].problem} (run `three-ledger check-pins`)")
    return folder


def _properties_pin(folder: PinFolder) -> PropertiesPin:
    pins = folder.of_kind(PROPERTIES)
    if len(pins) != 1:
        names = ", ".join(str(pin.path) for pin in pins) or "none"
        raise Unusable(f"{folder.folder} must hold one properties pin; found {len(pins)} ({names})")
    try:
        return load_properties_pin(pins[0].path)
    except Refused as exc:
        raise Unusable("; ".join([exc.message, *exc.details])) from None


def _sides(folder: PinFolder, properties_pin: PropertiesPin) -> tuple[FixtureSide, ...]:
    named = properties_pin.fixture_pins
    if len(named) > MAX_FIXTURE_PINS:
        raise Unusable(
            f"{properties_pin.source} names {len(named)} fixture pins; gate scores one or two "
            "(dual-pin compares two)"
        )
    by_id = folder.fixture_pins_by_id()
    sides = []
    for label, pin_id in zip("AB", named, strict=False):
        pin = _one_pin(by_id.get(pin_id, []), pin_id, folder)
        sides.append(FixtureSide(label, pin_id, pin.path, pin.folders))
    return tuple(sides)


def _one_pin(pins: Sequence[PinFile], pin_id: str, folder: PinFolder) -> PinFile:
    if len(pins) != 1:
        found = "no file" if not pins else ", ".join(str(pin.path) for pin in pins)
        raise Unusable(
            f"fixture pin {pin_id!r}, named by the properties pin, must be one file in "
            f"{folder.folder}; found {found}"
        )
    return pins[0]


def _flake_pin(folder: PinFolder) -> Path | None:
    pins = folder.of_kind(FLAKE)
    if len(pins) > 1:
        names = ", ".join(str(pin.path) for pin in pins)
        raise Unusable(f"{folder.folder} holds {len(pins)} flake pins ({names}); at most one")
    return pins[0].path if pins else None


def _choice(base: str | None, env: Mapping[str, str]) -> BaseChoice:
    try:
        choice = choose_base(base, env)
    except Refused as exc:
        raise Unusable(exc.message) from None
    if choice is None:
        raise Unusable(
            "no base revision: pass --base REV, or run on a GitHub pull_request, merge_group "
            "or push event, or in a GitLab merge request pipeline"
        )
    return choice


def _top(root: Path) -> Path:
    try:
        return git.work_tree_top(root)
    except Refused as exc:
        raise Unusable(exc.message) from None


def _resolve(root: Path, choice: BaseChoice) -> BaseResolution:
    """The chosen base by its full name, as `properties` resolves it; refusals say why."""
    try:
        return git.resolve_choice(root, choice)
    except Refused as exc:
        raise Unusable(exc.message) from None


def _changed(top: Path, base: str, outputs: Sequence[Path]) -> tuple[list[str], list[str]]:
    """The paths that differ from BASE, and those of them git does not track, but OUTPUTS."""
    try:
        changed, untracked = git.changed_and_untracked(top, base, ["."])
    except Refused as exc:
        raise Unusable(exc.message) from None
    owned = [_relative(path, top) for path in outputs]
    changed = [path for path in changed if not any(_same_or_inside(path, o) for o in owned)]
    kept = set(changed)
    return changed, [path for path in untracked if path in kept]


def _relative(path: Path, top: Path) -> str:
    try:
        relative = path.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return os.fspath(path.resolve())
    return "" if relative == "." else relative


def _inside(path: str, folder: str) -> bool:
    return folder == "" or path.startswith(folder.rstrip("/") + "/")


def _same_or_inside(path: str, output: str) -> bool:
    return output != "" and (path == output or _inside(path, output))
