"""The one rule of which tests a property answers for, and every consumer that counts by it.

`results.answers_for` and `results.pinned` are the only definition. `shard-plan`, `plan`,
`properties`, `combine` and `vet` each count through `results.ResultIndex` (`shard-plan`
through `results.CollectedIndex`, made from ids alone), which finds the same results by
lookup; these tests hold the index and each consumer's count to the rule on generated ids,
markers and selectors, so that none can drift.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from three_ledger import shards
from three_ledger.matching import match_pin
from three_ledger.pins import PropertiesPin, Property
from three_ledger.results import (
    CollectedIndex,
    ResultIndex,
    TestResult,
    answers_for,
    matching,
    pinned,
    score_properties,
    unpinned_failures,
)
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


@given(st.lists(test_results, max_size=6), pin_selectors, st.lists(selectors(), max_size=2))
def test_every_consumer_counts_by_the_one_rule(
    tests: list[TestResult], chosen: dict[str, tuple[str, ...]], flake_selectors: list[str]
) -> None:
    pin = properties_pin(chosen)
    kept = [t for t in tests if pinned(t, pin.selectors(), flake_selectors)]
    # shard-plan runs exactly the pinned tests; plan counts the rest as outside every entry.
    ids, marked = [t.id for t in tests], [t.property_ids for t in tests]
    assert shards.planned_ids(pin, flake_selectors, ids, marked) == [t.id for t in kept]
    assert match_pin(pin, flake_selectors, tests).outside == len(tests) - len(kept)
    # properties and combine score a property on exactly the results that answer for it.
    scores = score_properties(pin.selectors(), tests)
    for property_id, sel in chosen.items():
        answering = [t for t in tests if answers_for(t, property_id, sel)]
        assert scores[property_id].matched == len(answering)
        assert matching(property_id, sel, tests) == answering
    # A failure outside every entry is the unpinned kind; inside one, it is not.
    failed = [t for t in tests if t.outcome in (Outcome.FAIL, Outcome.ERROR)]
    assert unpinned_failures(pin.selectors(), flake_selectors, tests) == [
        t for t in failed if t not in kept
    ]


def test_a_marker_alone_makes_a_result_answer_for_its_property() -> None:
    marked = TestResult("tests/test_a.py::test_one", ("orders.total",), Outcome.PASS)
    assert answers_for(marked, "orders.total", ())
    assert not answers_for(marked, "orders.tax", ())
    assert answers_for(marked, "orders.tax", ("tests/test_a.py",))
    assert pinned(marked, {}, ("tests/test_a.py::test_one",))
    assert not pinned(marked, {"orders.tax": ()}, ())


# Ids built from the characters the rule cuts at, so that beginnings, overlapping `::`,
# parametrisations, wildcards and whitespace that JUnit normalises all come up; with the
# characters just past `[` and `:`, where the index's runs of one beginning end; and `/`
# and `.`, where a collector that failed to collect (an error without `::`) holds a selector.
TRICKY = st.lists(
    st.sampled_from(["a", ":", "::", "[", "]", "*", " ", "\t", "\\", ";", "/", "."]), max_size=6
).map("".join)


@st.composite
def tricky_results(draw: st.DrawFn) -> TestResult:
    junit = draw(st.booleans())
    return TestResult(
        id=draw(TRICKY),
        property_ids=tuple(draw(st.lists(PROPERTY_IDS, max_size=3))),
        outcome=draw(st.sampled_from(list(Outcome))),
        aliases=tuple(draw(st.lists(TRICKY, max_size=2))),
        groups=tuple(draw(st.lists(TRICKY, max_size=2))) if junit else None,
    )


@st.composite
def tricky_selectors(draw: st.DrawFn, tests: list[TestResult]) -> str:
    names = [name for test in tests for name in (test.id, *test.aliases, *(test.groups or ()))]
    cut: bool = draw(st.booleans())
    if names and cut:
        name = draw(st.sampled_from(names))
        return name[: draw(st.integers(0, len(name)))]
    return draw(TRICKY)


@given(st.data())
def test_the_index_chooses_exactly_what_the_rule_chooses(data: st.DataObject) -> None:
    tests = data.draw(st.lists(tricky_results(), max_size=8))
    index = ResultIndex(tests)
    for _ in range(6):
        selector = data.draw(tricky_selectors(tests))
        chosen = {position for position, test in enumerate(tests) if test.matches(selector)}
        assert index.selected(selector) == chosen, selector
    chosen_selectors = tuple(data.draw(st.lists(tricky_selectors(tests), max_size=3)))
    property_id = data.draw(PROPERTY_IDS)
    assert index.answering(property_id, chosen_selectors) == [
        test for test in tests if answers_for(test, property_id, chosen_selectors)
    ]
    properties = {property_id: chosen_selectors}
    flakes = data.draw(st.lists(tricky_selectors(tests), max_size=2))
    assert index.pinned(properties, flakes) == [t for t in tests if pinned(t, properties, flakes)]


@given(st.data())
def test_the_index_of_collected_ids_chooses_what_the_rule_chooses(data: st.DataObject) -> None:
    """`shard-plan`'s index, made from the ids and property ids alone, chooses what the rule
    chooses of the plugin results they stand for (no alias, no group; ids may repeat). A
    collection holds items alone, never a collector's error."""
    tests = [
        TestResult(test.id, test.property_ids, Outcome.PASS)
        for test in data.draw(st.lists(tricky_results(), max_size=8))
    ]
    index = CollectedIndex([t.id for t in tests], [t.property_ids for t in tests])
    for _ in range(6):
        selector = data.draw(tricky_selectors(tests))
        chosen = {position for position, test in enumerate(tests) if test.matches(selector)}
        assert index.selected(selector) == chosen, selector
    properties = {data.draw(PROPERTY_IDS): tuple(data.draw(st.lists(tricky_selectors(tests))))}
    flakes = data.draw(st.lists(tricky_selectors(tests), max_size=2))
    assert index.pinned_positions(properties, flakes) == {
        position for position, test in enumerate(tests) if pinned(test, properties, flakes)
    }


def test_the_index_finds_every_beginning_the_rule_cuts_at() -> None:
    tests = [
        TestResult("t.py::test_a[1]", (), Outcome.PASS),
        TestResult("t.py::test_ab", (), Outcome.PASS),
        TestResult("a:::b", (), Outcome.PASS),
        TestResult("j.Case::test_a[x]", (), Outcome.PASS, groups=("j.Case",)),
    ]
    index = ResultIndex(tests)
    assert index.selected("t.py") == {0, 1}
    assert index.selected("t.py::test_a") == {0}
    assert index.selected("a:") == {2}
    assert index.selected("j.Case") == {3}
    assert index.selected("j.Case::test_a") == {3}
    assert index.selected("t.py::test_*") == {0, 1}


def test_a_selector_chooses_the_error_of_a_collector_it_lies_under() -> None:
    """Under xdist a module that failed to collect is an error under its id, and its tests
    are not there: each selector inside it chooses the error in their place."""
    tests = [
        TestResult("tests/test_ok.py::test_a", (), Outcome.PASS),
        TestResult("tests/test_broken.py", (), Outcome.ERROR),
        TestResult("tests/sub", (), Outcome.ERROR),
        TestResult("tests/test_other.py", (), Outcome.PASS),  # no error: nothing held
    ]
    index = ResultIndex(tests)
    assert index.selected("tests/test_broken.py::test_x[1]") == {1}
    assert index.selected("tests/test_broken.py") == {1}
    assert index.selected("tests/sub/test_c.py::test_c") == {2}
    assert index.selected("tests/*::test_x") == {1, 2}  # tests/sub/ may hold one too
    assert index.selected("tests/test_broken.py::*") == {1}
    assert index.selected("tests/test_ok.py::test_a") == {0}
    assert index.selected("tests/test_other.py::test_b") == set()
    assert index.selected("tests/test_broken_too.py::test_x") == set()
    assert index.selected("other/test_broken.py::test_x") == set()
    scores = score_properties({"p": ("tests/test_ok.py::test_a", "tests/test_broken.py::t")}, tests)
    assert scores["p"].status.value == "error"
    assert [r.id for r in scores["p"].non_pass] == ["tests/test_broken.py"]
