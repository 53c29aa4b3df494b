from __future__ import annotations

import pytest

from three_ledger.paths import casefold_twins, is_under, path_problem


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("fixtures\\a.json", "backslash"),
        ("fixtures/../a.json", "'..'"),
        ("fixtures/./a.json", "'.'"),
        ("fixtures//a.json", "empty"),
        ("fixtures/a.json/", "empty"),
        ("fixtures/a\x00.json", "control"),
        ("fixtures/a\n.json", "control"),
        ("fixtures/a\x85.json", "control"),
        ("fixtures/cafe\u0301.json", "NFC"),
        ("fixtures/\ud800.json", "Unicode"),
    ],
)
def test_path_problem_names_the_rule(path: str, fragment: str) -> None:
    problem = path_problem(path)
    assert problem is not None
    assert fragment in problem


@pytest.mark.parametrize("path", ["fixtures/a.json", "fixtures/café/ß.json", "f/.hidden"])
def test_path_problem_accepts_plain_relative_paths(path: str) -> None:
    assert path_problem(path) is None


def test_casefold_twins_finds_case_and_sharp_s() -> None:
    twins = casefold_twins(["f/A.json", "f/b.json", "f/a.json", "f/STRASSE", "f/straße"])
    assert twins == [("f/A.json", "f/a.json"), ("f/STRASSE", "f/straße")]


def test_is_under_needs_a_whole_segment() -> None:
    assert is_under("fixtures/a.json", "fixtures")
    assert not is_under("fixtures2/a.json", "fixtures")
    assert not is_under("fixtures", "fixtures")
