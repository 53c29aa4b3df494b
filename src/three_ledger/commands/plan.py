"""`three-ledger plan`: collect the tests (none runs) and show what each pinned property matches.

It runs the test command as `properties` does (the same staged plugin, environment and
network ban) with `--collect-only` added through PYTEST_ADDOPTS, so that a properties pin
can be written against the node ids the gate will see.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from three_ledger import git
from three_ledger.background import Background
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.junit_report import read_junit_report
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
from three_ledger.product_guess import TEST_FOLDERS, Proposal, propose, test_like_under
from three_ledger.results import TestResult
from three_ledger.run import network_namespace
from three_ledger.run.collection import Collection, PlanRequest, collect_measured
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Preflight, new_tests_left_out, preflight
from three_ledger.selection import TestsRequirement, hashed_ids, ids_sha256

# Python's bytecode and pytest's cache: what the run writes for itself, never a change's.
_CACHE_FOLDERS = frozenset({"__pycache__", ".pytest_cache"})


def plan(request: PlanRequest) -> int:
    pin_paths = [request.pin_path, request.properties_path]
    if request.flake_pin_path is not None:
        pin_paths.append(request.flake_pin_path)
    if request.log_path is not None:
        refuse_unwritable([Output("--log", request.log_path)], pins=pin_paths)
    if request.report is not None:
        pins = preflight(request.checks())
        reading = read_junit_report(request.report, request.root)
        for warning in reading.warnings:
            print(f"three-ledger: warning: {warning}", file=sys.stderr)
        tests = reading.results
        source = ["JUnit report", str(request.report)]
    else:
        assert request.command is not None  # the CLI gives one or the other
        with Background() as background:
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
    pin = pins.properties_pin
    helpers = _unlisted_helpers(request.root, pin.product_paths, products, pin.oracle_paths)
    imported = []
    if request.report is None:
        imported = _imported_helpers(request.root, collection, modules, pin.oracle_paths, helpers)
    if request.as_json:
        document = {
            **plan_document(match),
            "proposed_product_paths": _products(products),
            "proposed_oracle_paths": sorted({*helpers, *imported}),
        }
        if owners is not None:
            document["codeowners"] = owners.paths
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        declared = pins.properties_pin.product_paths
        text = plan_text(match, source) + _product_lines(products, declared)
        text += _helper_lines(helpers, declared) + _imported_helper_lines(imported)
        sys.stdout.write(text + (owners.text() if owners is not None else ""))
        # Only a JUnit title can hold a `::` that is not a boundary; pytest's ids are exact.
        for line in ambiguous_titles(tests) if request.report is not None else ():
            print(line)
    return ExitCode.PROPERTY_MISS if match.missing_properties() else ExitCode.OK


def _products(products: Sequence[Proposal]) -> list[dict[str, str]]:
    return [{"glob": product.glob, "because": product.because} for product in products]


def _product_lines(products: Sequence[Proposal], declared: Sequence[str] | None) -> str:
    """The proposal for the properties pin's `product_paths`, each glob with its reason; what
    the pin declares, where it declares them."""
    if declared is not None:
        return f"product_paths: the pin declares {json.dumps(list(declared))}\n"
    if not products:
        return (
            "product_paths: nothing to propose "
            "(no package, src layout, package_dir or imported module)\n"
        )
    globs = json.dumps([product.glob for product in products])
    lines = [f"product_paths proposed for the pin: {globs}"]
    lines += [f"  {product.glob}: {product.because}" for product in products]
    return "\n".join(lines) + "\n"


def _unlisted_helpers(
    root: Path,
    declared: Sequence[str] | None,
    products: Sequence[Proposal],
    oracle_paths: Sequence[str],
) -> list[str]:
    """Test-like files inside the product's folders (declared, else proposed) that no
    `oracle_paths` entry holds."""
    globs = declared if declared is not None else [product.glob for product in products]
    return [
        path
        for path in test_like_under(root, globs)
        if not any(
            path == o.rstrip("/") or path.startswith(o.rstrip("/") + "/") for o in oracle_paths
        )
    ]


def _helper_lines(helpers: Sequence[str], declared: Sequence[str] | None) -> str:
    """Where the product's folders hold test-like files: they belong in `oracle_paths`."""
    if not helpers:
        return ""
    whose = "the pin's product_paths" if declared is not None else "the proposed product_paths"
    return (
        f"oracle_paths: add {json.dumps(helpers)}: named like tests inside {whose}; where the "
        "tests assert through one, an edit to it is theirs, never the product's, and only "
        "oracle_paths says so\n"
    )


def _imported_helpers(
    root: Path,
    collection: Collection,
    modules: Sequence[str],
    oracle_paths: Sequence[str],
    named: Sequence[str],
) -> list[str]:
    """The Python files the collection imported from a test folder (`tests`, `test`,
    `testing`) that are no test module, no conftest, and that no `oracle_paths` entry holds:
    helpers the tests assert through (pycodestyle's `testing/support.py`). A file of the
    product's never lies in such a folder by this rule, so none is proposed as an oracle."""
    if collection.unmeasured is not None:
        return []
    collected = set(modules)
    found = {
        path
        for path in collection.uses
        if path.endswith(".py")
        and TEST_FOLDERS & set(PurePosixPath(path).parts[:-1])
        and PurePosixPath(path).name != "conftest.py"
        and path not in collected
        and path not in named
        and not any(
            path == o.rstrip("/") or path.startswith(o.rstrip("/") + "/") for o in oracle_paths
        )
    }
    return sorted(_repository_files(root, found))


def _imported_helper_lines(imported: Sequence[str]) -> str:
    if not imported:
        return ""
    return (
        f"oracle_paths: add {json.dumps(list(imported))}: imported by the collection from a "
        "test folder, and no test module: where the tests assert through one, an edit to it "
        "alone goes to the test owners before anything runs\n"
    )


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
    if prop.expected_failures:
        notes.append(
            f"{prop.expected_failures} marked xfail: it would score fail, since an expected "
            "failure counts as fail; leave them out of its selectors"
        )
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
    lines += [f"  marked xfail: {test_id}" for test_id in prop.expected_failure_examples]
    if score.tests:
        lines.append(_proposal_line(prop))
    return [*lines, ""]


def _proposal_line(prop: PropertyMatch) -> str:
    """The figures of the tests counted now, for the pin; where the pin already holds each
    figure it asks for, that it holds (pycodestyle's trial: seven properties proposed for,
    none of them differing, none marked)."""
    score = prop.score
    proposal = {"min_tests": score.tests_matched, "tests_sha256": ids_sha256(score.tests)}
    pinned = prop.requirement or TestsRequirement()
    asked = {
        key: value
        for key, value in (("min_tests", pinned.min_tests), ("tests_sha256", pinned.tests_sha256))
        if value is not None
    }
    if asked and all(proposal[key] == value for key, value in asked.items()):
        said = f"  the pin's {' and '.join(asked)} match the tests counted now"
    else:
        differing = [key for key, value in asked.items() if proposal[key] != value]
        said = f"  proposed for the pin: {json.dumps(proposal)[1:-1]}"
        said += f" (the pin's {' and '.join(differing)} differ)" if differing else ""
    unseen = prop.expected_skips_unseen
    if unseen:
        # idna's trial: 485 vectors skip as they run, and the figures counted them.
        said += (
            f"; {_count(unseen, 'test')} counted here an expected skip names did not skip at "
            "collection: each that skips as it runs is left out of the run's count and hash, "
            "which the `missing` reason of a run with these figures gives"
        )
    return said


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
        "expected_failures": prop.expected_failures,
        "tests_matched": score.tests_matched,
        "counted_ids": hashed_ids(score.tests),
        "proposed_min_tests": score.tests_matched or None,
        "proposed_tests_sha256": ids_sha256(score.tests) if score.tests else None,
        "missing_reason": score.missing_reason,
        "expected_skips_unseen": prop.expected_skips_unseen,
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

    measured = {path for path in collection.uses if not is_product(path) and path not in pinned}
    found = _repository_files(root, measured)
    found.update(module for module in modules if module.endswith(".py"))
    for entry in pin.oracle_paths:
        folder = (root / entry).is_dir()
        found.add(entry.rstrip("/") + ("/" if folder else ""))
    # A folder's line covers every file under it: those files are not listed again.
    folders = tuple(path for path in found if path.endswith("/"))
    found = {path for path in found if path in folders or not path.startswith(folders)}
    top = git.work_tree_top(root)
    prefix = Path(os.path.relpath(root.resolve(), top)).as_posix()
    anchored = [f"/{path}" if prefix == "." else f"/{prefix}/{path}" for path in sorted(found)]
    return OracleOwners(anchored)


def _repository_files(root: Path, paths: set[str]) -> set[str]:
    """Those of PATHS a change could touch: files of the tree that git does not ignore, out of
    Python's and pytest's caches. A collection with the cache provider on reads
    `.pytest_cache` (its own, private to the run), and an installed project may read a file
    its build generated; no CODEOWNERS line guards either."""
    kept = {
        path
        for path in paths
        if not _CACHE_FOLDERS.intersection(PurePosixPath(path).parts[:-1])
        and (root / path).is_file()
    }
    return kept - git.ignored_among(root, sorted(kept))


def _count(number: int, noun: str) -> str:
    if number == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {plural}"
