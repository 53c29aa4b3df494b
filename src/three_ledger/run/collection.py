"""The collection child of `plan`, `shard-plan` and `init`: the test command run with
`--collect-only` as `properties` runs it (the same staged plugin, environment and network
ban), and the tests it collected.

A module of its own so that `shard-plan` collects without importing what only `plan`'s
report needs (the JUnit reader, the pin matching, the product proposal).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.pins import FixturePin
from three_ledger.results import TestResult, merge_worst
from three_ledger.run import measurement
from three_ledger.run.child import Child, Measurement, exit_meaning, run_child
from three_ledger.run.preflight import Checks, Preflight
from three_ledger.run.staging import stage_plugin
from three_ledger.vocabulary import Enforcement, Outcome

# How much of the command's output a failed collection shows when no --log keeps it.
LOG_TAIL_LINES = 15


@frozen
class PlanRequest:
    pin_path: Path
    properties_path: Path
    command: list[str] | None
    root: Path
    flake_pin_path: Path | None
    timeout_s: float
    log_path: Path | None
    as_json: bool
    # A JUnit report from an earlier run, read instead of collecting (`--from-report`).
    report: Path | None = None
    # New test modules against this base are left out of the collection, as in `properties`.
    base: str | None = None
    # --keep-env: names of the job's environment the child keeps for this run.
    keep_env: tuple[str, ...] = ()

    def checks(self) -> Checks:
        """The checks `properties` makes before it runs, but those of the base and digest:
        the tests collect from the fixture tree, which must be the pinned one. plan writes
        no ledger, so the gate's own code in ROOT is no refusal here."""
        return Checks(
            root=self.root,
            pin_path=self.pin_path,
            properties_path=self.properties_path,
            flake_pin_path=self.flake_pin_path,
            own_code=False,
            runs_suite=self.report is None,
            # A flag that rewrites the oracles is refused as `properties` refuses it
            # (Pygments' `--update-goldens` collected here, then was refused there).
            command=self.command,
            keep_env=self.keep_env,
        )


@frozen
class Collection:
    """What a collection found, and what it executed or read under ROOT (when measured)."""

    tests: list[TestResult]
    uses: Mapping[str, str]
    # Why the collection's reads are not known, when they are not.
    unmeasured: str | None = None


@frozen
class CollectedIds:
    """A collection's node ids, each once and in collection order, and each one's property
    ids: all that `shard-plan` needs, read without a `TestResult` made for each test."""

    ids: list[str]
    property_ids: list[tuple[str, ...]]


def collect(
    request: PlanRequest,
    pins: Preflight,
    enforcement: Enforcement,
    ignore: tuple[str, ...] = (),
) -> CollectedIds:
    """Run the command with `--collect-only`; the ids it collected. The new test modules
    IGNORE names are left out, as the scored run leaves them out."""
    keep_env = (*pins.properties_pin.env, *request.keep_env)
    with _collected(request, pins.fixture_pin, keep_env, enforcement, ignore) as done:
        return read_collected_ids(done.collected, done.log_path)


def collect_measured(
    request: PlanRequest,
    pins: Preflight,
    enforcement: Enforcement,
    ignore: tuple[str, ...] = (),
) -> Collection:
    """The collected tests, with the audit hook of the closed oracle set armed in every
    process."""
    keep_env = (*pins.properties_pin.env, *request.keep_env)
    return run_collection(request, pins.fixture_pin, keep_env, enforcement, ignore, measure=True)


def run_collection(
    request: PlanRequest,
    fixture_pin: FixturePin,
    keep_env: tuple[str, ...],
    enforcement: Enforcement,
    ignore: tuple[str, ...] = (),
    *,
    measure: bool = False,
) -> Collection:
    """The command run with `--collect-only` on FIXTURE_PIN's tree, keeping KEEP_ENV of the
    job's environment (the properties pin's `env` and `--keep-env`); one test per node id."""
    with _collected(request, fixture_pin, keep_env, enforcement, ignore, measure) as done:
        tests = read_collected(done.collected, done.log_path)
        if done.measuring is None:
            return Collection(tests, {})
        try:
            return Collection(tests, measurement.read_measured(done.measuring, request.root))
        except InfraFailure as unmeasured:
            return Collection(tests, {}, unmeasured.message)


@frozen
class _Collected:
    """A collection run that succeeded: its collection file, its log, its measurement."""

    collected: Path
    log_path: Path
    measuring: Measurement | None


@contextmanager
def _collected(
    request: PlanRequest,
    fixture_pin: FixturePin,
    keep_env: tuple[str, ...],
    enforcement: Enforcement,
    ignore: tuple[str, ...],
    measure: bool = False,
) -> Iterator[_Collected]:
    """Run the collection in a private folder, which the block reads and which is removed
    after it; a run that failed is raised (InfraFailure) before the block."""
    with (
        tempfile.TemporaryDirectory(prefix="three-ledger-plan-") as private,
        open(os.devnull, "wb") as quiet,
    ):
        folder = Path(private)
        collected = folder / "collected.jsonl"
        log_path = request.log_path or folder / "plan.log"
        measuring = measurement.prepare(folder) if measure else None
        child = Child(
            command=request.command or (),
            root=request.root,
            fixture_pin=fixture_pin,
            enforcement=enforcement,
            timeout_s=request.timeout_s,
            log_path=log_path,
            plugin=stage_plugin(folder),
            results_path=folder / "unused.jsonl",
            collect_into=collected,
            console=quiet,
            ignore=ignore,
            measurement=measuring,
            keep_env=keep_env,
        )
        run = run_child(child)
        failure = run.failure()
        if failure is None and run.exit_code != 0:
            assert run.exit_code is not None  # no failure means the command exited
            failure = exit_meaning(run.exit_code, enforcement, log_path=log_path)
        if failure is not None:
            raise _collection_failed(failure, log_path, request)
        yield _Collected(collected, log_path, measuring)


def _collection_failed(failure: str, log_path: Path, request: PlanRequest) -> InfraFailure:
    """The failure; without --log, the end of the command's output goes to stdout first."""
    if request.log_path is not None:
        return InfraFailure(f"collection failed: {failure} (log: {log_path})")
    if request.as_json:
        return InfraFailure(f"collection failed: {failure}; give --log PATH to see its output")
    tail = _log_tail(log_path)
    sys.stdout.write("".join(f"{line}\n" for line in tail))
    return InfraFailure(
        f"collection failed: {failure}; the last {len(tail)} lines of its output are on "
        "stdout (give --log PATH to keep all of it)"
    )


def _log_tail(log_path: Path) -> list[str]:
    try:
        text = log_path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-LOG_TAIL_LINES:]


def read_collected(path: Path, log_path: Path) -> list[TestResult]:
    """The plugin's collection lines as tests: `skip` where the skip is known, `fail` where an
    expected failure is (the run scores an xfail `fail`), else `pass`."""
    ids, property_ids, reasons, xfails = _read_lines(path, log_path)
    return merge_worst(
        TestResult(test_id, marked, Outcome.SKIP, (), None, reason)
        if reason is not None
        else TestResult(test_id, marked, Outcome.FAIL if xfail else Outcome.PASS, xfail=xfail)
        for test_id, marked, reason, xfail in zip(ids, property_ids, reasons, xfails, strict=True)
    )


def read_collected_ids(path: Path, log_path: Path) -> CollectedIds:
    """The ids of the plugin's collection lines, each once, with its property ids united
    over its lines (as `read_collected` unites them)."""
    ids, property_ids, _, _ = _read_lines(path, log_path)
    if len(set(ids)) == len(ids):
        return CollectedIds(ids, property_ids)
    # The same node id on more than one line (pytest given a file twice, or a second run).
    united: dict[str, tuple[str, ...]] = {}
    for test_id, marked in zip(ids, property_ids, strict=True):
        united[test_id] = tuple(dict.fromkeys((*united.get(test_id, ()), *marked)))
    return CollectedIds(list(united), list(united.values()))


def _read_lines(
    path: Path, log_path: Path
) -> tuple[list[str], list[tuple[str, ...]], list[str | None], list[bool]]:
    """Each line's id, property ids, skip reason (None where no skip is known) and whether an
    expected failure is known."""
    label = f"collection file {path.name}"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InfraFailure(
            f"{label}: the plugin wrote nothing: is the command pytest, and does it keep the "
            "environment (PYTHONPATH, PYTEST_PLUGINS, PYTEST_ADDOPTS)? plan needs pytest",
            [f"log: {log_path}"],
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InfraFailure(f"{label}: cannot be read ({error})") from None
    return _columns(label, _parsed(label, lines))


def _parsed(label: str, lines: list[str]) -> list[Any]:
    """Each line's JSON value. All lines are parsed in one call, as the items of one list (a
    shard plan's 20,000 lines took 20,000 calls of json.loads: about 40 ms); where that does
    not give one object per line, line by line, which names the line that is not JSON. (A
    file made to join into as many objects as it has lines reads as those objects: the
    plugin writes one per line, and a run that can write this file can write any lines.)"""
    try:
        records = json.loads(f"[{','.join(lines)}]")
    except ValueError:
        records = None
    if (
        isinstance(records, list)
        and len(records) == len(lines)
        and all(type(record) is dict for record in records)
    ):
        return records
    parsed = []
    for number, raw in enumerate(lines, 1):
        try:
            parsed.append(json.loads(raw))
        except ValueError:
            raise InfraFailure(f"{label}: line {number}: not valid JSON") from None
    return parsed


def _columns(
    label: str, records: list[Any]
) -> tuple[list[str], list[tuple[str, ...]], list[str | None], list[bool]]:
    """Each record's id, property ids, skip reason and xfail mark; the first record that is
    not the plugin's collection line is refused.

    One loop, no call per record: this runs for every collected test of a `shard-plan`."""
    ids: list[str] = []
    property_ids: list[tuple[str, ...]] = []
    reasons: list[str | None] = []
    xfails: list[bool] = []
    for number, record in enumerate(records, 1):
        if type(record) is dict:  # as JSON makes them: no subclass to look past
            test_id = record.get("id")
            marked = record.get("property_ids")
            reason = record.get("skip_reason")
            xfail = record.get("xfail", False)
            if (
                type(test_id) is str
                and type(marked) is list
                and (not marked or all(type(p) is str for p in marked))
                and (reason is None or type(reason) is str)
                and type(xfail) is bool
            ):
                ids.append(test_id)
                property_ids.append(tuple(marked))
                reasons.append(reason)
                xfails.append(xfail)
                continue
        raise InfraFailure(f"{label}: line {number}: not a collected test")
    return ids, property_ids, reasons, xfails
