from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def rules_broken(path: str) -> bool:
    """SPEC 3.1's path rules, spelled out independently of the fast path in paths.py."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return (
        path == ""
        or path.startswith("/")
        or "\\" in path
        or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in path)
        or any(segment in ("", ".", "..") for segment in path.split("/"))
        or unicodedata.normalize("NFC", path) != path
    )


@given(st.text(alphabet=st.sampled_from("ab.-_/\\~é\u0301\x00 Z9"), max_size=12) | st.text())
def test_path_problem_agrees_with_the_rules_on_any_text(path: str) -> None:
    assert (path_problem(path) is not None) == rules_broken(path)


@pytest.mark.parametrize("path", ["f/\u212b.json", "f/\u00c5.json", "f/e\u0301", "f/\u00e9"])
def test_fast_path_still_checks_normalisation(path: str) -> None:
    assert (path_problem(path) is None) == (unicodedata.normalize("NFC", path) == path)
