"""Calls run in threads of their own, each waited for by `result()`, and all of them by the
end of the `with` block: the part of `concurrent.futures` that `properties` uses, without its
import (`logging`, `queue` and the rest: about 3 ms of every start, `benchmarks/README.md`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """One call running in its own thread; `result()` waits for it, then returns or raises."""

    def __init__(self, call: Callable[..., T], args: tuple[Any, ...]) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(call, args), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._value = call(*args)
        except BaseException as error:  # noqa: BLE001 - raised again by result(), in the caller
            self._error = error

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> T:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set by _run when nothing was raised


class Background:
    """`with Background() as background: background.submit(call, *args)`; leaving the block
    waits for every call submitted, as `ThreadPoolExecutor`'s does."""

    def __init__(self) -> None:
        self._pending: list[Pending[Any]] = []

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for pending in self._pending:
            pending.wait()

    def submit(self, call: Callable[..., T], *args: Any) -> Pending[T]:
        pending = Pending(call, args)
        self._pending.append(pending)
        return pending
