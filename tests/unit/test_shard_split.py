"""How a shard plan splits its ids: the heap of slices against the plain search it replaced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given
from hypothesis import strategies as st

from three_ledger.shards import split


def split_by_search(
    ids: Sequence[str], shards: int, seconds: Mapping[str, float]
) -> list[list[str]]:
    """The rule read plainly: longest first, each into the lightest slice of them all
    (fewest ids, then lowest index, on a tie), each slice in collection order."""
    known = [seconds[test_id] for test_id in ids if test_id in seconds]
    default = sum(known) / len(known) if known else 1.0
    weight = {test_id: seconds.get(test_id, default) for test_id in ids}
    position = {test_id: number for number, test_id in enumerate(ids)}
    loads = [0.0] * shards
    slices: list[list[str]] = [[] for _ in range(shards)]
    for test_id in sorted(ids, key=lambda t: (-weight[t], position[t])):
        lightest = min(range(shards), key=lambda k: (loads[k], len(slices[k]), k))
        slices[lightest].append(test_id)
        loads[lightest] += weight[test_id]
    return [sorted(chosen, key=position.__getitem__) for chosen in slices]


ids = st.lists(st.sampled_from([f"t.py::test_{n}" for n in range(12)]), unique=True)
durations = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])


@given(ids, st.integers(1, 5), st.data())
def test_the_heap_splits_as_the_plain_search_does(
    chosen: list[str], shards: int, data: st.DataObject
) -> None:
    known = data.draw(st.lists(st.sampled_from(chosen), unique=True)) if chosen else []
    # A durations file may also name tests this plan does not run.
    elsewhere = data.draw(st.lists(st.sampled_from(["u.py::gone", "u.py::other"]), unique=True))
    seconds = {test_id: data.draw(durations) for test_id in (*known, *elsewhere)}
    assert split(chosen, shards, seconds) == split_by_search(chosen, shards, seconds)


def test_without_durations_the_slices_differ_by_one_at_most() -> None:
    slices = split([f"t.py::test_{n}" for n in range(10)], 4, {})
    assert [len(chosen) for chosen in slices] == [3, 3, 2, 2]
    assert slices[0] == ["t.py::test_0", "t.py::test_4", "t.py::test_8"]
