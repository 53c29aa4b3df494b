"""The one rule of which tests a property answers for, against the four it replaced.

`results.answers_for` and `results.pinned` are the only definition; this test showed that the
four earlier copies (in `results`, `matching`, `shards` and the `properties` command) agreed
with them on generated ids, markers and selectors before the copies were deleted.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from three_ledger import matching, shards
from three_ledger import results as results_module
from three_ledger.commands import properties as properties_command
from three_ledger.pins import FlakeEntry, FlakePin, PropertiesPin, Property
from three_ledger.results import TestResult, answers_for, pinned
from three_ledger.vocabulary import Network, Outcome

# Few names, so that generated selectors often hit generated ids.
FILES = st.sampled_from(["tests/test_a.py", "tests/test_b.py", "t/x.py"])
NAMES = st.sampled_from(["test_one", "test_two", "Case::test_one", "test_one[1]"])
PROPERTY_IDS = st.sampled_from(["orders.total", "orders.tax", "other"])


@st.composite
def node_ids(draw: st.DrawFn) -> str:
    return f"{draw(FILES)}::{draw(NAMES)}"


@st.composite
def selectors(draw: st.DrawFn) -> str:
    node = draw(node_ids())
    form = draw(st.sampled_from(["id", "file", "class", "star", "parametrised-prefix"]))
    file = node.partition("::")[0]
    return {
        "id": node,
        "file": file,
        "class": f"{file}::Case",
        "star": f"{file[:7]}*one",
        "parametrised-prefix": f"{file}::test_one",
    }[form]


test_results = st.builds(
    TestResult,
    id=node_ids(),
    property_ids=st.lists(PROPERTY_IDS, max_size=2, unique=True).map(tuple),
    outcome=st.sampled_from(list(Outcome)),
)
pin_selectors = st.dictionaries(PROPERTY_IDS, st.lists(selectors(), max_size=3).map(tuple))


def properties_pin(chosen: dict[str, tuple[str, ...]]) -> PropertiesPin:
    props = tuple(Property(pid, "a claim", ("orders.json",), sel) for pid, sel in chosen.items())
    return PropertiesPin(Path("properties.json"), "0" * 64, "p1", ("a",), Network.BANNED, (), props)


def flake_pin(flake_selectors: list[str]) -> FlakePin:
    entries = tuple(
        FlakeEntry(f"flake-{n}", test, "0" * 40, datetime.date(2027, 1, 1), None, None)
        for n, test in enumerate(flake_selectors)
    )
    return FlakePin(Path("flakes.json"), "0" * 64, "flakes", entries)


@given(st.lists(test_results, max_size=6), pin_selectors, st.lists(selectors(), max_size=2))
def test_the_four_copies_agree_with_the_one_rule(
    tests: list[TestResult], chosen: dict[str, tuple[str, ...]], flake_selectors: list[str]
) -> None:
    pin = properties_pin(chosen)
    expected_pinned = [t.id for t in tests if pinned(t, pin.selectors(), flake_selectors)]
    for result in tests:
        for property_id, sel in chosen.items():
            expected = answers_for(result, property_id, sel)
            assert results_module._belongs(result, property_id, sel) is expected
            assert matching._belongs(result, property_id, sel) is expected
        inside = matching._inside(result, pin, flake_selectors)
        assert inside is pinned(result, pin.selectors(), flake_selectors)
    assert shards.planned_ids(pin, flake_selectors, tests) == expected_pinned
    scored = _Scored(pin, flake_pin(flake_selectors))
    assert [r.id for r in properties_command.pinned_results(scored, tests)] == expected_pinned  # type: ignore[arg-type]


class _Scored:
    """The two fields `properties.pinned_results` reads of its pre-run record."""

    def __init__(self, properties_pin: PropertiesPin, flakes: FlakePin) -> None:
        self.properties_pin = properties_pin
        self.flake_pin = flakes
