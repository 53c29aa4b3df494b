"""How a properties pin names tests: its selectors (SPEC 4.2 step 7), the skips it
expects, and what it asks of the tests a property counts.

Apart from `results`, which reads what a run gave: reading a pin (`check-pins`, `digest`,
every command's start) needs these and nothing of the results.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from three_ledger.frozen import frozen
from three_ledger.plugin.wire import Outcome

if TYPE_CHECKING:
    from three_ledger.results import TestResult

# What a property's `test` may be in a pin: one selector, several, or none (markers only).
Selectors = str | Sequence[str] | None


def selects(selector: str, test_id: str) -> bool:
    """Whether SELECTOR selects the test TEST_ID (SPEC 4.2 step 7, with `*`).

    It selects an id equal to it, or that begins with it followed by `[` (a parametrised
    instance) or `::` (what a file or class selector holds). A `*` stands for any run of
    characters, `/` and `::` included; it is the only wildcard, since `[` already starts a
    parametrisation suffix.
    """
    if "*" not in selector:
        return test_id == selector or test_id.startswith((selector + "[", selector + "::"))
    return _wildcard(selector).fullmatch(test_id) is not None


def held(selector: str, collector: str) -> bool:
    """Whether SELECTOR chooses tests inside COLLECTOR, a module or folder that failed to
    collect (the plugin's `error` under the collector's id, which holds no `::`).

    Under xdist, pytest runs the other modules and the collector's tests are simply not
    there: a property counts its error in their place, where it would read `missing` or
    pass on the tests left. A selector without `*` is held by the collectors it begins
    under (its folders, its file; `.` is the session); one with `*`, where what comes
    before its first `::` matches the collector (a `*` there may stand for the file).
    """
    if "::" in collector:
        return False
    if collector == ".":
        return True
    if "*" not in selector:
        return selector.startswith((collector + "::", collector + "/"))
    path = selector.split("::", 1)[0]
    return _wildcard(path).fullmatch(collector) is not None or held(
        path.split("*", 1)[0], collector
    )


@functools.lru_cache(maxsize=4096)
def _wildcard(selector: str) -> re.Pattern[str]:
    body = ".*".join(re.escape(part) for part in selector.split("*"))
    return re.compile(rf"{body}(?:\[.*|::.*)?", re.DOTALL)


def selector_tuple(selectors: Selectors) -> tuple[str, ...]:
    """A pin's `test` value as a tuple: one selector, several, or none."""
    if selectors is None:
        return ()
    if isinstance(selectors, str):
        return (selectors,)
    return tuple(selectors)


@frozen
class ExpectedSkip:
    """A skip the properties pin accepts: a test (no `*`) and the start of its skip reason."""

    test: str
    reason: str

    def covers(self, result: TestResult) -> bool:
        """A skip of a listed test whose recorded reason begins with the pinned one."""
        return (
            result.outcome is Outcome.SKIP
            and result.skip_reason is not None
            and result.skip_reason.startswith(self.reason)
            and result.matches(self.test)
        )


@frozen
class TestsRequirement:
    """What a properties pin asks of the tests a property counts: at least `min_tests` of
    them and, with `tests_sha256`, exactly the ids that hash to it (see `ids_sha256`)."""

    __test__: ClassVar[bool] = False  # a record, not a test class for pytest to collect

    min_tests: int | None = None
    tests_sha256: str | None = None

    def unmet(self, tests: Sequence[str], left_out: int) -> list[str]:
        """Why TESTS (the counted ids) fall short, one reason per key; none when they do not.

        LEFT_OUT is how many results were left out as expected skips, named with the count.
        """
        reasons = []
        if self.min_tests is not None and len(tests) < self.min_tests:
            reasons.append(
                f"{count_matched(len(tests), left_out)}, the pin asks for at least {self.min_tests}"
            )
        pinned = self.tests_sha256
        if tests and pinned is not None and (found := ids_sha256(tests)) != pinned:
            # `plan` counts at collection: a skip decided as a test runs is among its ids.
            listed = (
                "`three-ledger plan --json` lists the ids it counts at collection: "
                "counted_ids, where a test an expected skip accepts only once it runs is "
                "still one"
                if left_out
                else "`three-ledger plan --json` lists the ids: counted_ids"
            )
            reasons.append(
                f"the {_tests(len(tests))} it matched hash to {found}, the pin's tests_sha256 "
                f"is {pinned} ({listed})"
            )
        return reasons


def hashed_ids(tests: Iterable[str]) -> list[str]:
    """The ids `tests_sha256` is taken over: distinct, each as a ledger writes it, sorted by
    code point."""
    from three_ledger.ledgers import ledger_text

    return sorted(set(ledger_text(list(tests))))


def ids_sha256(ids: Iterable[str]) -> str:
    """The sha256 a pin's `tests_sha256` holds: of the `hashed_ids` joined by one LF, UTF-8,
    with no trailing LF."""
    import hashlib  # here: `check-pins` reads this module, and loads no OpenSSL

    return hashlib.sha256("\n".join(hashed_ids(ids)).encode("utf-8")).hexdigest()


def _tests(count: int) -> str:
    return "1 test" if count == 1 else f"{count} tests"


def count_matched(count: int, left_out: int) -> str:
    """How many tests a property matched, and the expected skips left out of them."""
    matched = "no test matched" if count == 0 else f"{_tests(count)} matched"
    return f"{matched} once {left_out} expected skip(s) were left out" if left_out else matched
