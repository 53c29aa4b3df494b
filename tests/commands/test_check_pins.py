"""`three-ledger check-pins`: every kind of broken pin, every problem listed, expiry a warning."""

from __future__ import annotations

import datetime
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
    "domain spelled from ROOT": (
        lambda root: edit_pin(
            root,
            "properties.json",
            lambda pin: pin["properties"][0]["domain"].append("fixtures/orders_min.json"),
        ),
        "fixtures.json under 'fixtures': did you mean 'orders_min.json'?",
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
    "product code in a fixture pin": (
        lambda root: edit_pin(
            root,
            "properties.json",
            lambda pin: pin.update(product_paths=[*pin["product_paths"], "fixtures/*.json"]),
        ),
        "$.files[0]: 'fixtures/orders_min.json' is code under test by",
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


def _in_days(days: int) -> str:
    return (datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=days)).isoformat()


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("three-ledger: warning: ")]


def test_a_review_by_within_the_warning_days_is_a_warning(project: Path, run_cli: RunCli) -> None:
    edit_pin(project, "flakes.json", lambda pin: pin["flakes"][0].update(review_by=_in_days(5)))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    (warning,) = _warnings(result.err)
    assert f"$.flakes[0]: 'orders.boundary.timeout' has review_by {_in_days(5)}, " in warning
    assert "renew or remove it before then" in warning
    # A narrower window leaves it out; the default of 14 days takes in a date 5 days away.
    narrow = run_cli(
        "check-pins", "--pins-dir", project / "pins", "--root", project, "--warn-days", "2"
    )
    assert narrow.code == 0, narrow.err
    assert _warnings(narrow.err) == []


def test_a_review_by_beyond_the_warning_days_is_quiet(project: Path, run_cli: RunCli) -> None:
    edit_pin(project, "flakes.json", lambda pin: pin["flakes"][0].update(review_by=_in_days(20)))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    assert _warnings(result.err) == []
    wide = run_cli(
        "check-pins", "--pins-dir", project / "pins", "--root", project, "--warn-days", "30"
    )
    assert len(_warnings(wide.err)) == 1


def test_an_entry_with_no_owner_is_a_warning(project: Path, run_cli: RunCli) -> None:
    edit_pin(project, "flakes.json", lambda pin: pin["flakes"][0].pop("owner"))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    (warning,) = _warnings(result.err)
    assert warning.endswith(
        "$.flakes[0]: 'orders.boundary.timeout' has no owner: name who renews or removes it"
    )


def _add_entry(test_id: str, test: str) -> Callable[[dict[str, Any]], None]:
    def change(pin: dict[str, Any]) -> None:
        pin["flakes"].append({**pin["flakes"][0], "test_id": test_id, "test": test})

    return change


SAME_TEST = {
    "identical selectors": (
        "properties/test_orders.py::test_boundary_timeout",
        "the same selector 'properties/test_orders.py::test_boundary_timeout'",
    ),
    "a file covering the test": (
        "properties/test_orders.py",
        (
            "'properties/test_orders.py' matches every test "
            "'properties/test_orders.py::test_boundary_timeout' matches"
        ),
    ),
    "a glob covering the test": (
        "properties/*::test_boundary_*",
        (
            "'properties/*::test_boundary_*' matches every test "
            "'properties/test_orders.py::test_boundary_timeout' matches"
        ),
    ),
}


@pytest.mark.parametrize("selector", SAME_TEST.values(), ids=SAME_TEST.keys())
def test_two_entries_on_the_same_test_are_a_warning(
    selector: tuple[str, str], project: Path, run_cli: RunCli
) -> None:
    test, how = selector
    edit_pin(project, "flakes.json", _add_entry("orders.boundary.again", test))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    (warning,) = _warnings(result.err)
    assert (
        "$.flakes[0] 'orders.boundary.timeout' and $.flakes[1] 'orders.boundary.again' match "
        f"the same test: {how}; keep one entry"
    ) in warning


@pytest.mark.parametrize(
    "test",
    [
        # Neither selects any test the other selects.
        "properties/test_orders.py::test_boundary_timeout_*",
        "properties/test_orders.py::test_boundary",
        "other/test_orders.py::test_boundary_timeout",
    ],
)
def test_entries_on_different_tests_are_quiet(test: str, project: Path, run_cli: RunCli) -> None:
    edit_pin(project, "flakes.json", _add_entry("orders.boundary.other", test))
    result = run_cli("check-pins", "--pins-dir", project / "pins", "--root", project)
    assert result.code == 0, result.err
    assert _warnings(result.err) == []


@pytest.mark.parametrize("copied", ["files", "digest"])
def test_a_second_fixture_pin_that_pins_the_same_bytes_is_refused(
    project: Path, run_cli: RunCli, copied: str
) -> None:
    """Python-Markdown's trial: pin B a copy of pin A with another id passed, then every
    change was refused at row 6 as "one ledger replayed"."""
    first = json.loads((project / "pins/fixtures.json").read_text())
    keys = ("fixtures_dir", "files", "digest") if copied == "files" else ("digest",)
    edit_pin(project, "fixtures_b.json", lambda pin: pin.update({k: first[k] for k in keys}))
    code, details, err = check(run_cli, project)
    assert code == 2, err
    said = "the same files" if copied == "files" else f"the same digest {first['digest']}"
    assert details == [
        (
            f"{project / 'pins/fixtures_b.json'}: pins {said} as {project / 'pins/fixtures.json'}"
            ": a second pin must differ in its bytes, or every dual-pin comparison of the two is "
            "refused as one ledger replayed (merge row 6)"
        )
    ]
