"""The properties pin `init` drafts from a collection: one property per test module."""

from __future__ import annotations

from pathlib import Path

from three_ledger.draft_properties import draft_properties, oracle_paths, property_ids
from three_ledger.pins import PropertiesPin
from three_ledger.product_guess import Proposal
from three_ledger.results import TestResult
from three_ledger.vocabulary import Outcome

SOURCE = Path("pins.draft/properties.json")


def collected(test_id: str, skip: str | None = None) -> TestResult:
    outcome = Outcome.PASS if skip is None else Outcome.SKIP
    return TestResult(test_id, (), outcome, skip_reason=skip)


def draft(tests: list[TestResult], products: list[Proposal] | None = None) -> dict[str, object]:
    return draft_properties(
        pin_id="proppin-x",
        fixture_pin_id="fixpin-x",
        folders=("tests/data", "tests/port/fixtures"),
        tests=tests,
        products=products or [],
        source=SOURCE,
        root=SOURCE.parent.parent,
    ).document


def test_one_property_per_module_with_the_whole_pin_as_domain_and_its_count() -> None:
    document = draft(
        [
            collected("tests/test_spec.py::test_example[1]"),
            collected("tests/test_spec.py::test_example[2]"),
            collected("tests/port/test_fixtures.py::TestPort::test_one"),
            collected("README.md::README.md"),  # not a Python module
        ]
    )
    assert document == {
        "pin_id": "proppin-x",
        "fixture_pins": ["fixpin-x"],
        "network": "banned",
        "oracle_paths": ["tests"],
        "properties": [
            {
                "id": "port.test_fixtures",
                "claim": "The tests of tests/port/test_fixtures.py pass on the pinned fixtures.",
                "domain": ["tests/data/", "tests/port/fixtures/"],
                "test": "tests/port/test_fixtures.py",
                "min_tests": 1,
            },
            {
                "id": "test_spec",
                "claim": "The tests of tests/test_spec.py pass on the pinned fixtures.",
                "domain": ["tests/data/", "tests/port/fixtures/"],
                "test": "tests/test_spec.py",
                "min_tests": 2,
            },
        ],
    }
    PropertiesPin.from_json(document, SOURCE, "0" * 64)  # a valid pin as it stands


def test_skips_known_at_collection_become_expected_skips_and_leave_the_count() -> None:
    result = draft_properties(
        pin_id="proppin-x",
        fixture_pin_id="fixpin-x",
        folders=("tests/data",),
        tests=[
            collected("tests/test_a.py::test_runs"),
            collected("tests/test_a.py::TestWindows::test_paths", skip="Windows only"),
            collected("tests/test_a.py::TestWindows::test_drives", skip="Windows only"),
            collected("tests/test_gpu.py::test_kernel", skip="needs a GPU"),
        ],
        products=[],
        source=SOURCE,
        root=SOURCE.parent.parent,
    )
    assert result.document["expected_skips"] == [
        {"test": "tests/test_a.py::TestWindows", "reason": "Windows only"},
        {"test": "tests/test_gpu.py", "reason": "needs a GPU"},
    ]
    properties = result.document["properties"]
    assert [(p["test"], p["min_tests"]) for p in properties] == [("tests/test_a.py", 1)]
    assert result.notes == ("tests/test_gpu.py: no property drafted: its tests skip at collection",)


def test_a_product_glob_that_would_cover_a_test_module_is_left_out() -> None:
    products = [
        Proposal("mdit/**", "imported by tests/test_spec.py"),
        Proposal("pkg/**", "src layout"),
    ]
    document = draft([collected("tests/test_spec.py::t"), collected("pkg/check_x.py::t")], products)
    assert document["product_paths"] == ["mdit/**"]


def test_ids_come_from_the_module_path_and_stay_unique() -> None:
    assert property_ids(
        [
            "tests/test_a.py",
            "test/test_a.py",
            "tests/Sub Dir/test_B.py",
            "test_root.py",
            "tests/_private.py",
        ]
    ) == ["test_a", "test_a-2", "sub-dir.test_b", "test_root", "t_private"]


def test_oracle_paths_are_the_test_folders_or_the_modules_themselves() -> None:
    assert oracle_paths(
        ["tests/test_a.py", "tests/sub/test_b.py", "src/pkg/tests/test_c.py", "test_root.py"]
    ) == ["src/pkg/tests", "test_root.py", "tests"]


def test_test_helpers_inside_the_product_are_drafted_into_oracle_paths(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    for name in ("__init__.py", "core.py", "test_tools.py"):
        (tmp_path / "pkg" / name).write_text("")
    document = draft_properties(
        pin_id="proppin-x",
        fixture_pin_id="fixpin-x",
        folders=("tests/data",),
        tests=[collected("tests/test_a.py::test_runs")],
        products=[Proposal("pkg/**", "src layout")],
        source=SOURCE,
        root=tmp_path,
    ).document
    assert document["product_paths"] == ["pkg/**"]
    assert document["oracle_paths"] == ["pkg/test_tools.py", "tests"]
    PropertiesPin.from_json(document, SOURCE, "0" * 64)
