"""Tests for three_ledger.vet.baseline_slices: the checks that a baseline's slices ran one
suite, and what they recorded taken as one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from three_ledger.errors import InfraFailure
from three_ledger.ledgers import Harness, PluginSource
from three_ledger.vet.baseline_slices import collected, merged_reads, same_suite, united

HARNESS = Harness(
    pytest="8.3.0",
    rootdir=".",
    config_file="pytest.ini",
    main="<pytest>",
    conftests=("tests/conftest.py",),
    plugins=(PluginSource("b", "dist b"),),
    pythonpath=(),
    addopts=(),
    shadowing={},
    test_side_modules=("tests/helpers.py",),
)


def test_collected_is_every_id_any_process_of_the_slice_collected(tmp_path: Path) -> None:
    (tmp_path / "collected-10.json").write_text('["t.py::a", "t.py::b"]\n')
    (tmp_path / "collected-11.json").write_text('["t.py::b"]\n["t.py::c"]\n')
    assert collected(tmp_path) == frozenset({"t.py::a", "t.py::b", "t.py::c"})


def test_a_slice_no_process_of_which_collected_has_no_suite(tmp_path: Path) -> None:
    assert collected(tmp_path) is None
    assert not same_suite([None, frozenset({"t.py::a"})])


def test_a_line_that_is_no_list_of_ids_is_an_infrastructure_failure(tmp_path: Path) -> None:
    (tmp_path / "collected-10.json").write_text('["t.py::a"]\n{"t.py::b"\n')
    with pytest.raises(InfraFailure, match=r"collected-10\.json: line 2"):
        collected(tmp_path)


def test_slices_ran_one_suite_only_when_they_collected_the_same_ids() -> None:
    suite = frozenset({"t.py::a", "t.py::b"})
    assert same_suite([suite, frozenset({"t.py::b", "t.py::a"})])
    assert not same_suite([suite, frozenset({"t.py::a"})])


def test_harnesses_unite_what_tests_load_and_nothing_fixed_before_them() -> None:
    other = dataclasses.replace(
        HARNESS,
        conftests=("conftest.py",),
        plugins=(PluginSource("a", "dist a"),),
        shadowing={"json.py": "shadows json"},
        test_side_modules=("tests/helpers.py", "tests/more.py"),
    )
    one = united([HARNESS, other])
    assert one is not None
    assert one.conftests == ("conftest.py", "tests/conftest.py")
    assert [plugin.name for plugin in one.plugins] == ["a", "b"]
    assert one.shadowing == {"json.py": "shadows json"}
    assert one.test_side_modules == ("tests/helpers.py", "tests/more.py")
    assert united([HARNESS]) == HARNESS
    assert united([HARNESS, dataclasses.replace(HARNESS, addopts=("-x",))]) is None
    assert united([HARNESS, dataclasses.replace(HARNESS, config_file=None)]) is None


def test_read_maps_merge_by_item() -> None:
    first = {"t.py::a": frozenset({"f/1.json"})}
    second = {"t.py::a": frozenset({"f/2.json"}), "t.py::b": frozenset()}
    assert merged_reads([first, second]) == {
        "t.py::a": frozenset({"f/1.json", "f/2.json"}),
        "t.py::b": frozenset(),
    }
