"""The trampoline's own JSON: the plan it reads and the probe's answer it writes, held to `json`.

The trampoline imports neither `json` nor `re` (each start would pay for them), so it reads
and writes the little JSON it speaks itself; these tests hold both to the standard library.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from three_ledger.run import trampoline

# Every code point, lone surrogates and control characters included: paths come from the OS.
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=20)
STEP = st.lists(st.one_of(TEXT, st.lists(TEXT, max_size=3)), min_size=1, max_size=4)


@given(st.lists(STEP, max_size=5), st.booleans())
def test_a_plan_reads_as_json_wrote_it(plan: list[list[Any]], ascii_only: bool) -> None:
    assert trampoline.parse_plan(json.dumps(plan, ensure_ascii=ascii_only)) == plan


@given(st.lists(STEP, max_size=3), st.sampled_from([None, 2]))
def test_a_plan_with_other_spacing_reads_the_same(
    plan: list[list[Any]], indent: int | None
) -> None:
    assert trampoline.parse_plan(json.dumps(plan, indent=indent, separators=(",", ":"))) == plan


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[1]",
        "[[1]]",
        '"a"',
        '["a"]',
        "{}",
        '[["a", [["b"]]]]',  # deeper than a step's list of kept paths
        '[["a"]] x',
        '[["a",]]',
        '[["a"]',
        '[["a\\x"]]',
        '[["\\u12"]]',
        '[["a\nb"]]',  # a raw control character: JSON escapes it
        "[[null]]",
        "[[true]]",
    ],
)
def test_anything_but_a_plan_is_refused(text: str) -> None:
    assert trampoline.parse_plan(text) is None


@given(st.dictionaries(TEXT, st.one_of(st.none(), TEXT), max_size=4))
def test_the_probes_answer_is_json(found: dict[str, str | None]) -> None:
    written = trampoline.json_object(found)
    assert written.isascii()
    assert "\n" not in written
    assert json.loads(written) == found
