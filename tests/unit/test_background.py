"""`Background`: each call's value or exception reaches `result()`; the block waits for all."""

from __future__ import annotations

import threading
import time

import pytest

from three_ledger.background import Background


def test_a_result_is_the_calls_value() -> None:
    with Background() as background:
        pending = background.submit(pow, 2, 10)
        assert pending.result() == 1024


def test_a_calls_exception_is_raised_by_result() -> None:
    def broken() -> None:
        raise LookupError("no such base")

    with Background() as background:
        pending = background.submit(broken)
        with pytest.raises(LookupError, match="no such base"):
            pending.result()


def test_leaving_the_block_waits_for_every_call() -> None:
    finished = threading.Event()

    def slow() -> None:
        time.sleep(0.05)
        finished.set()

    def caller() -> None:
        with Background() as background:
            background.submit(slow)
            raise RuntimeError("the caller failed")

    with pytest.raises(RuntimeError, match="the caller failed"):
        caller()
    assert finished.is_set()
