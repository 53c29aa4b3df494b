"""The gate's reading of the tripwire's record (run/tripwire.py): machinery findings refuse the
run first, then every session's sentinels must have their outcomes, and the ledger gets the
weakest mechanism."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from three_ledger.errors import InfraFailure
from three_ledger.plugin.wire import failed_id_digest
from three_ledger.results import TestResult
from three_ledger.run.tripwire import checked_and_removed, environment, read_record
from three_ledger.vocabulary import Outcome, Tripwire, weakest_tripwire

MUST = {"t.py::test_a_b": "pass", "t.py::test_b_a[1]": "fail"}


def result(test_id: str, outcome: Outcome) -> TestResult:
    return TestResult(test_id, (), outcome)


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def honest(*others: TestResult) -> list[TestResult]:
    return [
        result("t.py::test_a_b", Outcome.PASS),
        result("t.py::test_b_a[1]", Outcome.FAIL),
        *others,
    ]


def test_the_sentinels_are_checked_and_removed(tmp_path: Path) -> None:
    record = read_record(write(tmp_path / "r", {"sentinels": MUST, "mechanism": "sentinels"}))
    own = result("t.py::test_real", Outcome.FAIL)
    assert checked_and_removed(honest(own), record) == ([own], Tripwire.SENTINELS)


def test_a_forced_must_fail_sentinel_refuses_the_run(tmp_path: Path) -> None:
    record = read_record(write(tmp_path / "r", {"sentinels": MUST, "mechanism": "sentinels"}))
    forced = [result(test_id, Outcome.PASS) for test_id in MUST]
    with pytest.raises(InfraFailure) as refused:
        checked_and_removed([*forced, result("t.py::test_real", Outcome.PASS)], record)
    assert refused.value.message.startswith(
        "tripwire: sentinel t.py::test_b_a[1] must fail but was recorded as pass"
    )


@pytest.mark.parametrize("seen", [Outcome.ERROR, Outcome.SKIP])
def test_sentinels_that_error_or_skip_with_the_projects_fixtures_rewrite_nothing(
    tmp_path: Path, seen: Outcome
) -> None:
    """A fixture file `vet` empties breaks the sentinels' fixtures as it breaks the tests'."""
    record = read_record(write(tmp_path / "r", {"sentinels": MUST, "mechanism": "sentinels"}))
    own = result("t.py::test_real", Outcome.ERROR)
    broken = [result(test_id, seen) for test_id in MUST]
    assert checked_and_removed([*broken, own], record) == ([own], Tripwire.SENTINELS)


def test_a_must_pass_sentinel_that_fails_refuses_the_run(tmp_path: Path) -> None:
    record = read_record(write(tmp_path / "r", {"sentinels": MUST, "mechanism": "sentinels"}))
    flipped = [result("t.py::test_a_b", Outcome.FAIL), result("t.py::test_b_a[1]", Outcome.FAIL)]
    with pytest.raises(InfraFailure, match=r"t\.py::test_a_b must pass but was recorded as fail"):
        checked_and_removed([*flipped, result("t.py::test_real", Outcome.PASS)], record)


@pytest.mark.parametrize(
    "musts",
    [
        {**MUST, "t.py::test_real": "fail"},
        {"t.py::test_a_b": "pass"},
        {"t.py::test_a_b": "fail", "t.py::test_b_a[1]": "fail"},
    ],
    ids=["a third, which would take a real failure out", "one", "two that must fail"],
)
def test_a_session_whose_sentinels_are_not_the_two_the_plugin_places_refuses_the_run(
    tmp_path: Path, musts: dict[str, str]
) -> None:
    """Every recorded outcome matches what it must do, so only the set itself gives it away."""
    record = read_record(write(tmp_path / "r", {"sentinels": musts, "mechanism": "sentinels"}))
    results = [result(name, Outcome(must)) for name, must in musts.items()]
    results.append(result("t.py::test_other", Outcome.PASS))
    with pytest.raises(InfraFailure) as refused:
        checked_and_removed(results, record)
    assert refused.value.message.startswith(f"tripwire: a session recorded {len(musts)} sentinels")
    assert "where the plugin places one that must pass and one that must fail" in (
        refused.value.message
    )


def test_a_finding_refuses_the_run_before_the_sentinels_are_looked_at(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r",
        {"machinery": "_pytest.runner.call_and_report replaced", "by": "orders (orders.py:3)"},
        {"machinery": "hook implementation pytest_runtest_makereport of x added", "by": None},
        {"sentinels": MUST, "mechanism": "sentinels"},
    )
    with pytest.raises(InfraFailure) as refused:
        checked_and_removed(honest(result("t.py::test_real", Outcome.PASS)), read_record(path))
    assert refused.value.message == (
        "the run's machinery was modified: _pytest.runner.call_and_report replaced, by orders "
        "(orders.py:3)"
    )
    assert refused.value.details[0] == "hook implementation pytest_runtest_makereport of x added"


@pytest.mark.parametrize(
    "lines",
    [[], [{"sentinels": {}, "mechanism": None}]],
    ids=["no record", "a session that selected nothing"],
)
def test_no_sentinel_at_all_refuses_the_run(tmp_path: Path, lines: list[object]) -> None:
    record = read_record(write(tmp_path / "r", *lines))
    with pytest.raises(InfraFailure, match="tripwire: no sentinel was recorded"):
        checked_and_removed([result("t.py::test_real", Outcome.PASS)], record)


def test_a_missing_record_is_an_empty_one(tmp_path: Path) -> None:
    assert read_record(tmp_path / "absent") == read_record(write(tmp_path / "empty"))


def test_every_session_is_checked_and_the_weakest_mechanism_wins(tmp_path: Path) -> None:
    second = {"t.py::test_c": "pass", "test_0123456789ab": "fail"}
    path = write(
        tmp_path / "r",
        {"sentinels": MUST, "mechanism": "sentinels"},
        {"sentinels": second, "mechanism": "basic"},
    )
    record = read_record(path)
    own = result("t.py::test_real", Outcome.PASS)
    first_only = [*honest(own), result("t.py::test_c", Outcome.PASS)]
    with pytest.raises(InfraFailure, match="test_0123456789ab must fail but was not recorded"):
        checked_and_removed(first_only, record)
    both = [*first_only, result("test_0123456789ab", Outcome.FAIL)]
    assert checked_and_removed(both, record) == ([own], Tripwire.BASIC)


@pytest.mark.parametrize(
    "text",
    [
        "not json\n",
        "[1]\n",
        '{"machinery": 3, "by": null}\n',
        '{"sentinels": {"a": "maybe"}, "mechanism": "sentinels"}\n',
        '{"sentinels": {"a": "pass"}, "mechanism": "magic"}\n',
    ],
)
def test_a_malformed_record_is_an_infrastructure_failure(tmp_path: Path, text: str) -> None:
    path = tmp_path / "r"
    path.write_text(text)
    with pytest.raises(InfraFailure, match="tripwire: line 1 of its record"):
        read_record(path)


def test_an_empty_shard_slice_keeps_only_the_sentinels(tmp_path: Path) -> None:
    record = read_record(write(tmp_path / "r", {"sentinels": MUST, "mechanism": "basic"}))
    with pytest.raises(InfraFailure, match="no result besides the tripwire's sentinels"):
        checked_and_removed(honest(), record)
    assert checked_and_removed(honest(), record, allow_empty=True) == ([], Tripwire.BASIC)


def test_each_run_gets_a_fresh_seed_and_its_record() -> None:
    first, second = environment(Path("r"), None), environment(Path("r"), ("pkg/**",))
    assert first["THREE_LEDGER_TRIPWIRE"] == "r"
    assert first["THREE_LEDGER_TRIPWIRE_SEED"] != second["THREE_LEDGER_TRIPWIRE_SEED"]
    assert len(first["THREE_LEDGER_TRIPWIRE_SEED"]) == 32
    # The pin's product_paths, for the tripwire's test-side rule, where the pin has them.
    assert "THREE_LEDGER_PRODUCT_PATHS" not in first
    assert json.loads(second["THREE_LEDGER_PRODUCT_PATHS"]) == ["pkg/**"]


def test_the_weakest_tripwire() -> None:
    assert weakest_tripwire([Tripwire.SENTINELS, Tripwire.BASIC]) is Tripwire.BASIC
    assert weakest_tripwire([Tripwire.SENTINELS, Tripwire.NONE]) is Tripwire.NONE
    assert weakest_tripwire([Tripwire.SENTINELS]) is Tripwire.SENTINELS


def test_results_holding_fewer_failures_than_pytest_reported_refuse_the_run(
    tmp_path: Path,
) -> None:
    """Python-Markdown's trial: product code rewrote the results file at exit, its failures
    made passes; pytest's own count of failing tests, in the tripwire's record, tells."""
    session = {"sentinels": MUST, "mechanism": "sentinels", "failed": 2}
    record = read_record(write(tmp_path / "r", session))
    failing = [result("t.py::test_x", Outcome.FAIL), result("t.py::test_y", Outcome.ERROR)]
    assert checked_and_removed(honest(*failing), record)[0] == failing
    rewritten = [result("t.py::test_x", Outcome.FAIL), result("t.py::test_y", Outcome.PASS)]
    with pytest.raises(InfraFailure, match="pytest reported 2 of the project's tests failing"):
        checked_and_removed(honest(*rewritten), record)
    # Two sessions of one command: the same test failing in both is one failing result.
    twice = write(tmp_path / "r2", session, {**session, "failed": 1})
    assert checked_and_removed(honest(*failing), read_record(twice))[0] == failing
    # An xfail the results score `fail`, which pytest does not count failed: more is fine.
    fewer = read_record(write(tmp_path / "r3", {**session, "failed": 0}))
    assert checked_and_removed(honest(*failing), fewer)[0] == failing


def test_results_whose_failures_pytest_did_not_report_refuse_the_run(tmp_path: Path) -> None:
    """The red team's rewrite: a property's failures made passes, and as many failures added
    under ids pytest never ran, the count kept. The ids pytest reported must fail."""
    reported = ["t.py::test_x", "t.py::test_y"]
    session = {"sentinels": MUST, "mechanism": "sentinels", "failed": 2, "failed_ids": reported}
    record = read_record(write(tmp_path / "r", session))
    failing = [result("t.py::test_x", Outcome.FAIL), result("t.py::test_y", Outcome.ERROR)]
    assert checked_and_removed(honest(*failing), record)[0] == failing
    swapped = [
        result("t.py::test_x", Outcome.FAIL),
        result("t.py::test_y", Outcome.PASS),
        result("t.py::test_cleanup", Outcome.FAIL),
    ]
    with pytest.raises(InfraFailure, match=r"pytest reported t\.py::test_y failing, the results"):
        checked_and_removed(honest(*swapped), record)
    # Too many ids to list: a digest of each, checked as the ids are.
    digests = [failed_id_digest(test_id) for test_id in reported]
    hashed = {**session, "failed_ids": None, "failed_digests": digests}
    by_digest = read_record(write(tmp_path / "r2", hashed))
    assert checked_and_removed(honest(*failing), by_digest)[0] == failing
    with pytest.raises(InfraFailure, match=r"1 of the tests pytest reported failing \(too many"):
        checked_and_removed(honest(*swapped), by_digest)
    # A record of an older plugin, which said neither: the count alone is checked.
    counted = read_record(write(tmp_path / "r3", {**session, "failed_ids": None}))
    assert checked_and_removed(honest(*swapped), counted)[0] == swapped


def test_an_ids_digest_is_32_hex_digits_whatever_its_length() -> None:
    assert failed_id_digest("t.py::test_x") == hashlib.sha256(b"t.py::test_x").hexdigest()[:32]
    assert len(failed_id_digest("t.py::test_x[" + "x" * (1 << 20) + "]")) == 32
    assert failed_id_digest("t.py::test_\udcff") != failed_id_digest("t.py::test_?")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("failed_ids", "t.py::test_x"),
        ("failed_ids", [1]),
        ("failed_ids", {"t.py::test_x": None}),
        ("failed_digests", "ab" * 16),
        ("failed_digests", ["AB" * 16]),
        ("failed_digests", ["ab" * 15]),
        ("failed_digests", [1]),
        ("failed_digests", ["g" * 32]),
    ],
)
def test_failed_ids_or_digests_that_are_not_a_list_of_them_are_a_malformed_record(
    tmp_path: Path, key: str, value: object
) -> None:
    session = {"sentinels": MUST, "mechanism": "sentinels", "failed": 1, key: value}
    with pytest.raises(InfraFailure, match="line 1 of its record is malformed"):
        read_record(write(tmp_path / "r", session))
