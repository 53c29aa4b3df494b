"""`three-ledger check-pins`: every kind of broken pin, every problem listed, expiry a warning."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import EXAMPLE, RunCli, write_json


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the example project, whose pins are all valid."""
    root = tmp_path / "orders"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def edit_pin(root: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    path = root / "pins" / name
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    write_json(path, document)


def check(run_cli: RunCli, root: Path) -> tuple[int, list[str], str]:
    result = run_cli("check-pins", "--pins-dir", root / "pins", "--root", root)
    details = [line.strip() for line in result.err.splitlines()[1:] if line.startswith("  ")]
    return result.code, details, result.err


def test_the_example_pins_are_valid(project: Path, run_cli: RunCli) -> None:
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    assert result.out == f"check-pins: 4 pin(s) in {project / 'pins'} are valid\n"


BROKEN: dict[str, tuple[Callable[[Path], object], str]] = {
    "not JSON": (
        lambda root: (root / "pins" / "fixtures_b.json").write_text("{", encoding="utf-8"),
        "fixtures_b.json: pin is not valid JSON",
    ),
    "schema": (
        lambda root: edit_pin(root, "fixtures.json", lambda pin: pin.update(fixture_dir="x")),
        "fixtures.json",
    ),
    "not a pin": (
        lambda root: write_json(root / "pins" / "notes.json", {"hello": 1}),
        "notes.json: $: none of the keys `files`, `properties`, `flakes`: not a pin",
    ),
    "fixture_pins reference": (
        lambda root: edit_pin(
            root, "properties.json", lambda pin: pin["fixture_pins"].append("fixpin-gone")
        ),
        "$.fixture_pins[2]: 'fixpin-gone' names no valid fixture pin in the folder",
    ),
    "domain": (
        lambda root: edit_pin(
            root, "properties.json", lambda pin: pin["properties"][0]["domain"].append("nope.json")
        ),
        "$.properties[0].domain[2]: 'nope.json' names no file pinned by",
    ),
    "pinned path": (
        lambda root: (root / "fixtures" / "orders_min.json").unlink(),
        "$.files[0]: 'fixtures/orders_min.json' pinned file is missing",
    ),
    "two properties pins": (
        lambda root: shutil.copy(root / "pins" / "properties.json", root / "pins" / "more.json"),
        "holds 2 properties pins",
    ),
    "no properties pin": (
        lambda root: (root / "pins" / "properties.json").unlink(),
        "holds 0 properties pins (none); gate needs one",
    ),
    "two flake pins": (
        lambda root: shutil.copy(root / "pins" / "flakes.json", root / "pins" / "flakes2.json"),
        "holds 2 flake pins",
    ),
    "min_tests below 1": (
        lambda root: edit_pin(
            root, "properties.json", lambda pin: pin["properties"][1].update(min_tests=0)
        ),
        "$.properties[1].min_tests: 0 is less than the minimum of 1",
    ),
    "tests_sha256 not lowercase hex": (
        lambda root: edit_pin(
            root, "properties.json", lambda pin: pin["properties"][0].update(tests_sha256="A" * 64)
        ),
        "$.properties[0].tests_sha256: 'AAAA",
    ),
    "repeated fixture pin id": (
        lambda root: edit_pin(
            root, "fixtures_b.json", lambda pin: pin.update(pin_id="fixpin-orders-a")
        ),
        "fixture pin id 'fixpin-orders-a' is used by",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_each_kind_of_broken_pin_is_refused(project: Path, run_cli: RunCli, kind: str) -> None:
    breaks, expected = BROKEN[kind]
    breaks(project)
    code, details, err = check(run_cli, project)
    assert code == 2
    assert err.startswith("three-ledger: refused: check-pins: ")
    assert any(expected in line for line in details), err


def test_every_problem_is_listed_not_just_the_first(project: Path, run_cli: RunCli) -> None:
    for kind in ("not a pin", "domain", "pinned path", "two flake pins"):
        BROKEN[kind][0](project)
    code, details, err = check(run_cli, project)
    assert code == 2
    # The bad domain entry is reported once per fixture pin it is checked against.
    assert "check-pins: 5 problem(s) in" in err.splitlines()[0]
    assert len(details) == 5
    assert sum("nope.json" in line for line in details) == 2


def test_min_tests_and_tests_sha256_of_the_right_form_are_valid(
    project: Path, run_cli: RunCli
) -> None:
    edit_pin(
        project,
        "properties.json",
        lambda pin: pin["properties"][0].update(min_tests=1, tests_sha256="0f" * 32),
    )
    code, _, err = check(run_cli, project)
    assert code == 0, err


def test_an_expired_review_by_is_a_warning_only(project: Path, run_cli: RunCli) -> None:
    edit_pin(project, "flakes.json", lambda pin: pin["flakes"][0].update(review_by="2020-01-31"))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0
    assert "warning: " in result.err
    assert "'orders.boundary.timeout' has review_by 2020-01-31, which has passed" in result.err


def test_a_fixture_pin_without_a_reviewed_digest_is_a_warning_only(
    project: Path, run_cli: RunCli
) -> None:
    edit_pin(project, "fixtures_b.json", lambda pin: pin.pop("digest"))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    assert result.out == f"check-pins: 4 pin(s) in {project / 'pins'} are valid\n"
    (warning,) = result.err.splitlines()
    pin = project / "pins" / "fixtures_b.json"
    assert warning.startswith(f"three-ledger: warning: {pin}: no reviewed `digest`: ")
    assert "could change with the code unreviewed" in warning
    assert f"`three-ledger digest --pin {pin} --out LEDGER`" in warning
    assert "fixtures.json:" not in warning.replace(str(pin), "")


def test_a_missing_pins_folder_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli("check-pins", "--pins-dir", tmp_path / "pins", "--root", tmp_path)
    assert result.code == 2
    assert result.first_error_line.endswith("pins: no such folder")
