"""`three-ledger plan`: collect the tests (none runs) and show what each pinned property matches.

It runs the test command as `properties` does (the same staged plugin, environment and
network ban) with `--collect-only` added through PYTEST_ADDOPTS, so that a properties pin
can be written against the node ids the gate will see.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from three_ledger import git
from three_ledger.errors import InfraFailure
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.junit_report import read_junit_xml
from three_ledger.matching import (
    PinMatch,
    PropertyMatch,
    SelectorMatch,
    match_pin,
    skip_suggestion_lines,
    warning_lines,
)
from three_ledger.outputs import Output, refuse_unwritable
from three_ledger.paths import glob_matches
from three_ledger.pins import FixturePin
from three_ledger.product_guess import Proposal, propose
from three_ledger.results import TestResult, merge_worst
from three_ledger.run import measurement, network_namespace
from three_ledger.run.child import Child, exit_meaning, run_child
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Checks, Preflight, new_tests_left_out, preflight
from three_ledger.run.staging import stage_plugin
from three_ledger.selection import hashed_ids, ids_sha256
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
            keep_env=self.keep_env,
        )


def plan(request: PlanRequest) -> int:
    pin_paths = [request.pin_path, request.properties_path]
    if request.flake_pin_path is not None:
        pin_paths.append(request.flake_pin_path)
    if request.log_path is not None:
        refuse_unwritable([Output("--log", request.log_path)], pins=pin_paths)
    if request.report is not None:
        pins = preflight(request.checks())
        tests = read_junit_xml(request.report, request.root)
        source = ["JUnit report", str(request.report)]
    else:
        assert request.command is not None  # the CLI gives one or the other
        with ThreadPoolExecutor(max_workers=1) as background:
            probe = background.submit(network_namespace.namespace_available)
            pins = preflight(request.checks())
            network = pins.properties_pin.network
            enforcement = choose_enforcement(network, request.command, probe.result)
        ignore = new_tests_left_out(request.root, request.base, pins.properties_pin)
        collection = collect_measured(request, pins, enforcement, ignore)
        tests = collection.tests
        source = request.command
    match = match_pin(pins.properties_pin, pins.flake_selectors(), tests)
    modules = sorted({test.id.split("::", 1)[0] for test in tests})
    products = propose(request.root, [m for m in modules if m.endswith(".py")])
    owners = None
    if request.report is None:
        owners = oracle_owners(request.root, pins, collection, modules, products)
    if request.as_json:
        document = {**plan_document(match), "proposed_product_paths": _products(products)}
        if owners is not None:
            document["codeowners"] = owners.paths
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        text = plan_text(match, source) + _product_lines(products)
        sys.stdout.write(text + (owners.text() if owners is not None else ""))
        # Only a JUnit title can hold a `::` that is not a boundary; pytest's ids are exact.
        for line in ambiguous_titles(tests) if request.report is not None else ():
            print(line)
    return ExitCode.PROPERTY_MISS if match.unmatched_properties() else ExitCode.OK


def _products(products: Sequence[Proposal]) -> list[dict[str, str]]:
    return [{"glob": product.glob, "because": product.because} for product in products]


def _product_lines(products: Sequence[Proposal]) -> str:
    """The proposal for the properties pin's `product_paths`, each glob with its reason."""
    if not products:
        return "product_paths: nothing to propose (no package, src layout or imported module)\n"
    globs = json.dumps([product.glob for product in products])
    lines = [f"product_paths proposed for the pin: {globs}"]
    lines += [f"  {product.glob}: {product.because}" for product in products]
    return "\n".join(lines) + "\n"


def ambiguous_titles(tests: Sequence[TestResult]) -> list[str]:
    """A `::` inside a JUnit title is not a segment boundary: say where one would mislead."""
    lines = []
    for test in tests:
        owner, _, title = test.id.partition("::")
        if "::" in title:
            lines.append(
                f"note: {test.id}: its title holds '::', which is part of the title, not a "
                f"boundary: select it by its whole id, or by {owner!r} for the whole file"
            )
    return lines


@frozen
class Collection:
    """What a collection found, and what it executed or read under ROOT (when measured)."""

    tests: list[TestResult]
    uses: Mapping[str, str]
    # Why the collection's reads are not known, when they are not.
    unmeasured: str | None = None


def collect(
    request: PlanRequest,
    pins: Preflight,
    enforcement: Enforcement,
    ignore: tuple[str, ...] = (),
) -> list[TestResult]:
    """Run the command with `--collect-only`; the collected tests, one per node id. The new
    test modules IGNORE names are left out, as the scored run leaves them out."""
    keep_env = (*pins.properties_pin.env, *request.keep_env)
    return run_collection(request, pins.fixture_pin, keep_env, enforcement, ignore).tests


def collect_measured(
    request: PlanRequest,
    pins: Preflight,
    enforcement: Enforcement,
    ignore: tuple[str, ...] = (),
) -> Collection:
    """`collect`, with the audit hook of the closed oracle set armed in every process."""
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
    job's environment (the properties pin's `env` and `--keep-env`)."""
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
            failure = exit_meaning(run.exit_code, enforcement)
        if failure is not None:
            raise _collection_failed(failure, log_path, request)
        tests = read_collected(collected, log_path)
        if measuring is None:
            return Collection(tests, {})
        try:
            return Collection(tests, measurement.read_measured(measuring, request.root))
        except InfraFailure as unmeasured:
            return Collection(tests, {}, unmeasured.message)


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
    """The plugin's collection lines as tests: `skip` where the skip is known, else `pass`."""
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
    records = _parsed(label, lines)
    return merge_worst(
        _collected_test(label, number, record) for number, record in enumerate(records, 1)
    )


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


def _collected_test(label: str, number: int, record: Any) -> TestResult:
    if type(record) is dict:  # as JSON makes them: no subclass to look past
        test_id = record.get("id")
        property_ids = record.get("property_ids")
        reason = record.get("skip_reason")
        if (
            type(test_id) is str
            and type(property_ids) is list
            and all(type(p) is str for p in property_ids)
            and (reason is None or type(reason) is str)
        ):
            outcome = Outcome.PASS if reason is None else Outcome.SKIP
            return TestResult(test_id, tuple(property_ids), outcome, skip_reason=reason)
    raise InfraFailure(f"{label}: line {number}: not a collected test")


def plan_text(match: PinMatch, command: Sequence[str]) -> str:
    """The report for a person: per property, what it matches; then what matches nothing."""
    lines = [f"plan: {_count(match.tests, 'test')} collected by `{' '.join(command)}`", ""]
    for prop in match.properties:
        lines += _property_lines(prop)
    suggestions = skip_suggestion_lines(match)
    if suggestions:
        lines += [*suggestions, ""]
    warnings = warning_lines(match)
    if warnings:
        lines += ["warnings:", *(f"  {line}" for line in warnings), ""]
    lines.append(f"{_count(match.outside, 'test')} outside every property and flake entry")
    lines += [f"  {test_id}" for test_id in match.outside_examples]
    if match.outside > len(match.outside_examples):
        lines.append(f"  ... and {match.outside - len(match.outside_examples)} more")
    unmatched = match.unmatched_properties()
    if unmatched:
        lines.append(f"{_count(len(unmatched), 'property')} match no test: {', '.join(unmatched)}")
    return "\n".join(lines) + "\n"


def _property_lines(prop: PropertyMatch) -> list[str]:
    score = prop.score
    notes = [f"{prop.marked} by marker"] if prop.marked else []
    if score.expected_skips:
        notes.append(f"{score.expected_skips} expected skips left out")
    if prop.unaccepted_skips:
        notes.append(f"{prop.unaccepted_skips} skip at collection: it would score skip")
    if score.matched == 0:
        notes.append("it would be missing")
    elif score.missing_reason is not None:
        notes.append(f"it would be missing: {score.missing_reason}")
    shown = f" ({'; '.join(notes)})" if notes else ""
    lines = [f"{prop.id}: {_count(score.matched, 'test')}{shown}"]
    if len(prop.selectors) > 1:
        lines += [f"  selector {s.selector!r}: {_count(s.matched, 'test')}" for s in prop.selectors]
    lines += [f"  {test_id}" for test_id in prop.examples]
    if score.matched > len(prop.examples):
        lines.append(f"  ... and {score.matched - len(prop.examples)} more")
    if score.tests:
        proposal = {"min_tests": score.tests_matched, "tests_sha256": ids_sha256(score.tests)}
        lines.append(f"  proposed for the pin: {json.dumps(proposal)[1:-1]}")
    return [*lines, ""]


def plan_document(match: PinMatch) -> dict[str, Any]:
    """The same report as one JSON document, for tooling."""
    return {
        "tests": match.tests,
        "outside": match.outside,
        "outside_examples": list(match.outside_examples),
        "properties": [_property_document(prop) for prop in match.properties],
        "unmatched_properties": match.unmatched_properties(),
        "unknown_marker_ids": match.unknown_markers,
        "expected_skips": [_selector_document(skip) for skip in match.expected_skips],
        "unlisted_skips": [
            {"test": s.test, "reason": s.reason, "count": s.count} for s in match.unlisted_skips
        ],
        "warnings": warning_lines(match),
    }


def _property_document(prop: PropertyMatch) -> dict[str, Any]:
    score = prop.score
    return {
        "id": prop.id,
        "matched": prop.score.matched,
        "examples": list(prop.examples),
        "selectors": [_selector_document(selector) for selector in prop.selectors],
        "marked": prop.marked,
        "expected_skips_left_out": prop.score.expected_skips,
        "unaccepted_skips": prop.unaccepted_skips,
        "tests_matched": score.tests_matched,
        "counted_ids": hashed_ids(score.tests),
        "proposed_min_tests": score.tests_matched or None,
        "proposed_tests_sha256": ids_sha256(score.tests) if score.tests else None,
        "missing_reason": score.missing_reason,
    }


def _selector_document(selector: SelectorMatch) -> dict[str, Any]:
    return {
        "selector": selector.selector,
        "matched": selector.matched,
        "did_you_mean": list(selector.did_you_mean),
    }


@frozen
class OracleOwners:
    """The oracles the collection showed, as paths for a CODEOWNERS file (from the top of the
    work tree), or why there are none."""

    paths: list[str]
    unmeasured: str | None = None

    def text(self) -> str:
        if self.unmeasured is not None:
            return f"oracles: not measured ({self.unmeasured}): no CODEOWNERS block\n"
        heading = (
            "oracles the collection executed or read, as a CODEOWNERS block (name their "
            "owners, and require code-owner review):"
        )
        lines = [heading, *(f"{path} @TEST-OWNERS" for path in self.paths)]
        return "\n".join(lines) + "\n"


def oracle_owners(
    root: Path,
    pins: Preflight,
    collection: Collection,
    modules: Sequence[str],
    products: Sequence[Proposal],
) -> OracleOwners:
    """Every file the collection executed or read, but the product and the pinned fixtures,
    with the collected test modules and the pin's `oracle_paths` (as folders or files).

    The product is the pin's `product_paths`, or, without them, the globs proposed for it.
    What the tests read only once they run is not seen here: `properties` measures that.
    """
    if collection.unmeasured is not None:
        return OracleOwners([], collection.unmeasured)
    pin = pins.properties_pin
    proposed = [product.glob for product in products]
    pinned = set(pins.fixture_pin.files)

    def is_product(path: str) -> bool:
        if pin.product_paths is not None:
            return pin.is_product(path)
        return any(glob_matches(glob, path) for glob in proposed)

    found = {path for path in collection.uses if not is_product(path) and path not in pinned}
    found.update(module for module in modules if module.endswith(".py"))
    for entry in pin.oracle_paths:
        folder = (root / entry).is_dir()
        found.add(entry.rstrip("/") + ("/" if folder else ""))
    top = git.work_tree_top(root)
    prefix = Path(os.path.relpath(root.resolve(), top)).as_posix()
    anchored = [f"/{path}" if prefix == "." else f"/{prefix}/{path}" for path in sorted(found)]
    return OracleOwners(anchored)


def _count(number: int, noun: str) -> str:
    if number == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {plural}"
