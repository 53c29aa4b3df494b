from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fast_path_examples
from three_ledger.paths import (
    _PLAIN,
    all_plain_under,
    casefold_twins,
    glob_matches,
    is_under,
    path_problem,
)


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


# A fast path held to its reference: see helpers.fast_path_examples.
EXAMPLES = fast_path_examples()
# Characters that make paths plain or not: case pairs whose casefolds meet (ß and SS, the
# Kelvin sign and k, É and é), a decomposed accent, dots and what no path may hold.
_WORDY = "abkKsS_-~é\u00c9\u00df\u212a日"
_ODD = "./\u0301\n\\ \x00\x85\ud800"
_WORDY_SEGMENT = st.text(alphabet=st.sampled_from(_WORDY), min_size=1, max_size=3)
_PLAIN_SEGMENT = _WORDY_SEGMENT | st.tuples(_WORDY_SEGMENT, _WORDY_SEGMENT).map(".".join)
_ODD_SEGMENT = st.text(alphabet=st.sampled_from(_WORDY + _ODD), max_size=3) | st.sampled_from(
    ["", ".", "..", ".a", "a\n", "\u00df"]
)


def _paths(segments: st.SearchStrategy[str], min_size: int = 0) -> st.SearchStrategy[list[str]]:
    return st.lists(
        st.lists(segments, min_size=1, max_size=3).map("/".join), min_size=min_size, max_size=5
    )


def _under_fixtures(paths: list[str]) -> list[str]:
    return [f"fixtures/{path}" for path in paths]


def _with_one_more(paths_and_odd: tuple[list[str], str, int]) -> list[str]:
    paths, odd, index = paths_and_odd
    return [*paths[:index], odd, *paths[index:]]


def _with_a_twin(paths: list[str]) -> list[str]:
    """PATHS and one of them again, in capitals or with ss for ß: its casefold twin
    (or its duplicate, when it has no letter that changes)."""
    twin = paths[0].upper() if len(paths) % 2 else paths[0].replace("\u00df", "ss")
    return [*paths, twin]


# Pins of plain paths, the same with a casefold twin or one odd path among them, and
# anything at all.
_PINS = st.one_of(
    _paths(_PLAIN_SEGMENT, min_size=1).map(_under_fixtures),
    _paths(_PLAIN_SEGMENT, min_size=1).map(_with_a_twin).map(_under_fixtures),
    st.tuples(
        _paths(_PLAIN_SEGMENT).map(_under_fixtures),
        st.sampled_from(["fixtures/", "", "other/"]).flatmap(
            lambda top: _paths(_PLAIN_SEGMENT | _ODD_SEGMENT, min_size=1).map(
                lambda odd: top + odd[0]
            )
        ),
        st.integers(0, 5),
    ).map(_with_one_more),
    _paths(_PLAIN_SEGMENT | _ODD_SEGMENT),
)


def checked_one_by_one(paths: list[str], folders: tuple[str, ...]) -> bool:
    """What the bulk check must say: each path plain by the per-path fast test, under one of
    FOLDERS, and no casefold twins."""
    return (
        bool(paths)
        and all(_PLAIN.fullmatch(path) and unicodedata.is_normalized("NFC", path) for path in paths)
        and all(any(is_under(path, folder) for folder in folders) for path in paths)
        and not casefold_twins(paths)
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    _PINS,
    st.sampled_from(
        [("fixtures",), ("fixtures/",), ("fix",), ("other", "fixtures"), ("fix", "other/")]
    ),
)
def test_all_plain_under_says_what_the_per_path_checks_say(
    paths: list[str], folders: tuple[str, ...]
) -> None:
    assert all_plain_under(paths, folders) == checked_one_by_one(paths, folders)


@pytest.mark.parametrize(
    ("paths", "plain"),
    [
        (["fixtures/a/b.json", "fixtures/é/日.json", "fixtures/a/C.json"], True),
        (["fixtures/a\nfixtures/b"], False),
        (["fixtures/\u00c9\nfixtures/b"], False),
        (["fixtures/a", ""], False),
        (["fixtures/a", "fixtures/A"], False),
        (["fixtures/straße", "fixtures/STRASSE"], False),
        (["fixtures/\u212a", "fixtures/k"], False),
        (["fixtures/\u00c9", "fixtures/\u00e9"], False),
        (["fixtures/\u00c9", "fixtures/e"], True),
        (["fixtures/e\u0301"], False),
        (["fixtures/.hidden"], False),
        (["fixtures/a\ud800"], False),
        (["other/a"], False),
        ([], False),
    ],
)
def test_all_plain_under_on_chosen_pins(paths: list[str], plain: bool) -> None:
    assert all_plain_under(paths, ("fixtures",)) is plain
    assert checked_one_by_one(paths, ("fixtures",)) is plain


def test_all_plain_under_several_folders_takes_a_path_under_any_of_them() -> None:
    paths = ["tests/spec/a.json", "tests/port/fixtures/b.md"]
    assert all_plain_under(paths, ("tests/spec", "tests/port/fixtures"))
    assert not all_plain_under(paths, ("tests/spec",))
    assert not all_plain_under([*paths, "tests/port/c.py"], ("tests/spec", "tests/port/fixtures"))


def test_no_character_casefolds_to_a_newline() -> None:
    # The bulk twin check splits casefolded paths on newlines.
    assert not any("\n" in chr(code).casefold() for code in range(0x110000) if code != 0x0A)


@pytest.mark.parametrize(
    ("glob", "path", "covered"),
    [
        ("orders.py", "orders.py", True),
        ("orders.py", "orders.pyc", False),
        ("orders.py", "sub/orders.py", False),
        ("src/pkg/**", "src/pkg/a/b.py", True),
        ("src/pkg", "src/pkg/a.py", True),
        ("src/pkg/", "src/pkg/a.py", True),
        ("src/pkg", "src/pkgx/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/a/b.py", False),
        ("**/helpers.py", "helpers.py", True),
        ("**/helpers.py", "a/b/helpers.py", True),
        ("pkg/?.py", "pkg/a.py", True),
        ("pkg/?.py", "pkg/ab.py", False),
        ("a.b[1].py", "a.b[1].py", True),
        ("a.b[1].py", "a.bx1].py", False),
    ],
)
def test_a_product_glob_covers_its_files_and_folders(glob: str, path: str, covered: bool) -> None:
    assert glob_matches(glob, path) is covered
