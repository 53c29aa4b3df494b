"""`three-ledger check-pins`: validate every pin in a pins folder, listing every problem.

Checked: each pin parses and matches its schema; there is one properties pin and at most
one flake pin; fixture pin ids are unique; every `fixture_pins` id names a fixture pin of
the folder; every domain entry names files that pin lists; every pinned path is a regular
file under ROOT, and none is code under test by `product_paths`. An expired `review_by` is a
warning only: such an entry already counts as not listed wherever it is read. So is a fixture
pin without a reviewed `digest`: its bytes are then bound only by the base they are compared
with.

The flake pin's hygiene is warned about too (exit 0): a `review_by` within `warn_days`, an
entry with no owner, and two entries whose selectors match the same test. Without a list of
collected tests, "the same test" is decided statically (`selector_covers`).
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.file_kinds import pinned_file_problem
from three_ledger.pin_folder import FIXTURE, FLAKE, PROPERTIES, PinFile, PinFolder, scan
from three_ledger.pins import (
    FixturePin,
    FlakePin,
    PropertiesPin,
    domain_base,
    domain_covers,
    domain_hint,
    load_fixture_pin,
    load_flake_pin,
    load_properties_pin,
    utc_today,
)
from three_ledger.selection import selects

PinT = TypeVar("PinT", FixturePin, PropertiesPin, FlakePin)


def check_pins(
    *,
    pins_dir: Path,
    root: Path,
    today: datetime.date | None = None,
    warn_days: int = 14,  # as `check-pins --warn-days` (cli/parser.py) defaults
) -> int:
    folder = scan(pins_dir)
    problems = [pin.problem or "" for pin in folder.unsorted()]
    fixtures = _load_all(folder.of_kind(FIXTURE), load_fixture_pin, problems)
    properties = _load_all(folder.of_kind(PROPERTIES), load_properties_pin, problems)
    flakes = _load_all(folder.of_kind(FLAKE), load_flake_pin, problems)
    problems += count_problems(folder)
    for properties_pin in properties:
        problems += reference_problems(properties_pin, fixtures)
        problems += product_problems(properties_pin, fixtures)
        problems += twin_problems(properties_pin, fixtures)
    for fixture_pin in fixtures:
        problems += missing_file_problems(root, fixture_pin)
    warnings = [
        *digest_warnings(fixtures),
        *expiry_warnings(flakes, today or utc_today()),
        *hygiene_warnings(flakes, today or utc_today(), warn_days),
    ]
    for warning in warnings:
        print(f"three-ledger: warning: {warning}", file=sys.stderr)
    if problems:
        raise Refused(f"check-pins: {len(problems)} problem(s) in {pins_dir}", problems)
    print(f"check-pins: {len(folder.files)} pin(s) in {pins_dir} are valid")
    return ExitCode.OK


def _load_all(
    pins: Sequence[PinFile], load: Callable[[Path], PinT], problems: list[str]
) -> list[PinT]:
    loaded: list[PinT] = []
    for pin in pins:
        try:
            loaded.append(load(pin.path))
        except Refused as refusal:
            problems.append(_one_line(refusal))
    return loaded


def _one_line(refusal: Refused) -> str:
    return "; ".join([refusal.message, *refusal.details])


def count_problems(folder: PinFolder) -> list[str]:
    """One properties pin, at most one flake pin, and one file per fixture pin id."""
    problems = []
    properties = folder.of_kind(PROPERTIES)
    if len(properties) != 1:
        names = ", ".join(str(pin.path) for pin in properties) or "none"
        problems.append(
            f"{folder.folder}: holds {len(properties)} properties pins ({names}); gate needs one"
        )
    flakes = folder.of_kind(FLAKE)
    if len(flakes) > 1:
        names = ", ".join(str(pin.path) for pin in flakes)
        problems.append(f"{folder.folder}: holds {len(flakes)} flake pins ({names}); at most one")
    for pin_id, pins in sorted(folder.fixture_pins_by_id().items()):
        if len(pins) > 1:
            names = ", ".join(str(pin.path) for pin in pins)
            problems.append(f"{folder.folder}: fixture pin id {pin_id!r} is used by {names}")
    return problems


def reference_problems(properties_pin: PropertiesPin, fixtures: Sequence[FixturePin]) -> list[str]:
    """Every `fixture_pins` id must name a fixture pin; every domain entry, files it lists."""
    by_id = {pin.pin_id: pin for pin in fixtures}
    source = properties_pin.source
    problems = []
    for index, pin_id in enumerate(properties_pin.fixture_pins):
        fixture_pin = by_id.get(pin_id)
        if fixture_pin is None:
            problems.append(
                f"{source}: $.fixture_pins[{index}]: {pin_id!r} names no valid fixture pin in "
                "the folder"
            )
            continue
        problems += domain_problems(properties_pin, fixture_pin)
    return problems


def product_problems(properties_pin: PropertiesPin, fixtures: Sequence[FixturePin]) -> list[str]:
    """No fixture pin lists code under test: code shipped as fixtures would change with only
    a pin owner's review, never the properties' judgement."""
    if not properties_pin.product_paths:
        return []
    return [
        f"{fixture_pin.source}: $.files[{index}]: {path!r} is code under test by "
        f"{properties_pin.source} $.product_paths: a fixture pin never lists product code"
        for fixture_pin in fixtures
        for index, path in enumerate(fixture_pin.files)
        if properties_pin.is_product(path)
    ]


def twin_problems(properties_pin: PropertiesPin, fixtures: Sequence[FixturePin]) -> list[str]:
    """No two fixture pins of one properties pin pin the same bytes: their digests would be
    equal, and `merge` refuses every dual-pin comparison of them as one ledger replayed."""
    by_id = {pin.pin_id: pin for pin in fixtures}
    listed = [by_id[pin_id] for pin_id in properties_pin.fixture_pins if pin_id in by_id]
    problems = []
    for later, pin in enumerate(listed):
        for earlier in listed[:later]:
            same_files = (pin.fixtures_dirs, sorted(pin.files)) == (
                earlier.fixtures_dirs,
                sorted(earlier.files),
            )
            if same_files or (pin.digest is not None and pin.digest == earlier.digest):
                what = "the same files" if same_files else f"the same digest {pin.digest}"
                problems.append(
                    f"{pin.source}: pins {what} as {earlier.source}: a second pin must differ "
                    "in its bytes, or every dual-pin comparison of the two is refused as one "
                    "ledger replayed (merge row 6)"
                )
    return problems


def domain_problems(properties_pin: PropertiesPin, fixture_pin: FixturePin) -> list[str]:
    return [
        f"{properties_pin.source}: $.properties[{index}].domain[{position}]: {entry!r} names "
        f"no file pinned by {fixture_pin.source} {domain_base(fixture_pin)}"
        f"{domain_hint(entry, fixture_pin)}"
        for index, prop in enumerate(properties_pin.properties)
        for position, entry in enumerate(prop.domain)
        if not domain_covers(entry, fixture_pin)
    ]


def missing_file_problems(root: Path, fixture_pin: FixturePin) -> list[str]:
    return [
        f"{fixture_pin.source}: $.files[{index}]: {path!r} {problem}"
        for index, path in enumerate(fixture_pin.files)
        if (problem := pinned_file_problem(root, path)) is not None
    ]


def digest_warnings(fixture_pins: Sequence[FixturePin]) -> list[str]:
    return [
        f"{pin.source}: no reviewed `digest`: its pinned fixtures could change with the code "
        "unreviewed (only a comparison with the base catches it); add the digest that "
        f"`three-ledger digest --pin {pin.source} --out LEDGER` prints as the pin's `digest`, "
        "in a reviewed change"
        for pin in fixture_pins
        if pin.digest is None
    ]


def expiry_warnings(flake_pins: Sequence[FlakePin], today: datetime.date) -> list[str]:
    return [
        f"{pin.source}: $.flakes[{index}]: {entry.test_id!r} has review_by "
        f"{entry.review_by.isoformat()}, which has passed (today is {today.isoformat()} UTC): "
        "the entry counts as not listed until a person renews or removes it"
        for pin in flake_pins
        for index, entry in enumerate(pin.flakes)
        if entry.expired(today)
    ]


def hygiene_warnings(
    flake_pins: Sequence[FlakePin], today: datetime.date, warn_days: int
) -> list[str]:
    """A flake pin's loose ends: review due soon, no owner, two entries on one test."""
    warnings: list[str] = []
    for pin in flake_pins:
        for index, entry in enumerate(pin.flakes):
            where = f"{pin.source}: $.flakes[{index}]: {entry.test_id!r}"
            days_left = (entry.review_by - today).days
            if 0 <= days_left <= warn_days:
                warnings.append(
                    f"{where} has review_by {entry.review_by.isoformat()}, {_days(days_left)} "
                    f"away (today is {today.isoformat()} UTC): renew or remove it before then"
                )
            if not (entry.owner or "").strip():
                warnings.append(f"{where} has no owner: name who renews or removes it")
        warnings += _overlap_warnings(pin)
    return warnings


def _days(count: int) -> str:
    if count == 0:
        return "today, the last day it counts,"
    return "1 day" if count == 1 else f"{count} days"


def _overlap_warnings(pin: FlakePin) -> list[str]:
    warnings = []
    for first, one in enumerate(pin.flakes):
        for second in range(first + 1, len(pin.flakes)):
            other = pin.flakes[second]
            if one.test == other.test:
                how = f"the same selector {one.test!r}"
            elif selector_covers(one.test, other.test):
                how = f"{one.test!r} matches every test {other.test!r} matches"
            elif selector_covers(other.test, one.test):
                how = f"{other.test!r} matches every test {one.test!r} matches"
            else:
                continue
            warnings.append(
                f"{pin.source}: $.flakes[{first}] {one.test_id!r} and $.flakes[{second}] "
                f"{other.test_id!r} match the same test: {how}; keep one entry"
            )
    return warnings


def selector_covers(wide: str, narrow: str) -> bool:
    """Whether selector WIDE selects every test id that selector NARROW can select.

    NARROW is read with each `*` as a character no selector holds: WIDE selects that id
    only when a `*` of its own takes the place of each, so it selects the id whatever each
    `*` of NARROW stands for, and (as a selector that selects an id selects its
    parametrised instances and what it holds) whatever suffix NARROW's ids carry.
    """
    stand_in = next(chr(code) for code in range(0xE000, 0xF900) if chr(code) not in wide)
    return selects(wide, narrow.replace("*", stand_in))
