"""The outcome vocabulary and its one severity order."""

from __future__ import annotations

import json

from three_ledger.vocabulary import Outcome, Status, status_of, worst


def test_worst_orders_error_fail_skip_pass() -> None:
    assert worst([Outcome.PASS, Outcome.SKIP]) is Outcome.SKIP
    assert worst([Outcome.SKIP, Outcome.FAIL, Outcome.PASS]) is Outcome.FAIL
    assert worst([Outcome.FAIL, Outcome.ERROR]) is Outcome.ERROR
    assert worst([]) is Outcome.PASS


def test_a_property_matching_nothing_is_missing_never_pass() -> None:
    assert status_of([]) is Status.MISSING
    assert status_of(iter([Outcome.PASS, Outcome.PASS])) is Status.PASS
    assert status_of([Outcome.PASS, Outcome.SKIP]) is Status.SKIP


def test_the_words_are_the_ledger_words() -> None:
    assert json.dumps({"s": Status.MISSING, "o": Outcome.ERROR}) == '{"s": "missing", "o": "error"}'
    assert {status.value for status in Status} == {o.value for o in Outcome} | {"missing"}
