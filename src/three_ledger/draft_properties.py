"""The properties pin `init` drafts from a collection: one property per test module.

Each property selects its module, claims its domain is the whole fixture pin (one
`folder/` entry per folder), and asks for at least as many tests as the module has now
(`min_tests`). Skips known at collection become `expected_skips`, as `plan` suggests them,
so that the draft scores as it stands; a module whose every test skips gets no property.
`product_paths` is what `plan` proposes, less any glob that would cover a test module.
A draft for a person to review: the claims especially are theirs to write.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from three_ledger import jsonio
from three_ledger.frozen import frozen
from three_ledger.matching import match_pin
from three_ledger.paths import glob_matches, printable
from three_ledger.pins import PropertiesPin
from three_ledger.product_guess import TEST_FOLDERS, Proposal, test_like_under
from three_ledger.results import TestResult

_NOT_IN_AN_ID = re.compile(r"[^a-z0-9_.-]+")


@frozen
class PropertiesDraft:
    document: dict[str, Any]
    # What a reviewer should know: modules left out, and why.
    notes: tuple[str, ...]


def draft_properties(
    *,
    pin_id: str,
    fixture_pin_id: str,
    folders: Sequence[str],
    tests: Sequence[TestResult],
    products: Sequence[Proposal],
    source: Path,
    root: Path,
) -> PropertiesDraft:
    """The draft for TESTS, the collection of a pytest run in ROOT, scored against FOLDERS."""
    modules = test_modules(tests)
    kept = [p for p in products if not any(glob_matches(p.glob, m) for m in modules)]
    helpers = test_like_under(root, (p.glob for p in kept))
    document: dict[str, Any] = {
        "pin_id": pin_id,
        "fixture_pins": [fixture_pin_id],
        "network": "banned",
        # The test-like files inside the product's folders too: the tests may assert
        # through them, and under `oracle_paths` an edit to one is never the product's.
        "oracle_paths": sorted({*oracle_paths(modules), *helpers}),
    }
    if kept:
        document["product_paths"] = [p.glob for p in kept]
    domain = [f"{folder}/" for folder in folders]
    document["properties"] = [
        {"id": pid, "claim": claim(module), "domain": domain, "test": module}
        for pid, module in zip(property_ids(modules), modules, strict=True)
    ]
    skips = _expected_skips(document, tests, source)
    if skips:
        document["expected_skips"] = skips
    return _with_counts(document, tests, source)


def test_modules(tests: Sequence[TestResult]) -> list[str]:
    """The Python test modules the collection found, sorted."""
    return sorted({test.id.split("::", 1)[0] for test in tests if ".py::" in test.id})


def property_ids(modules: Sequence[str]) -> list[str]:
    """One id per module, from its path (`tests/test_port/test_fixtures.py` ->
    `test_port.test_fixtures`), unique."""
    taken: set[str] = set()
    ids = []
    for module in modules:
        parts = list(PurePosixPath(module).with_suffix("").parts)
        if len(parts) > 1 and parts[0] in TEST_FOLDERS:
            parts = parts[1:]
        base = _NOT_IN_AN_ID.sub("-", ".".join(parts).lower()).strip("-.") or "tests"
        base = base if base[0].isalnum() else f"t{base}"
        chosen, number = base, 1
        while chosen in taken:
            number += 1
            chosen = f"{base}-{number}"
        taken.add(chosen)
        ids.append(chosen)
    return ids


def claim(module: str) -> str:
    return f"The tests of {printable(module)} pass on the pinned fixtures."


def oracle_paths(modules: Sequence[str]) -> list[str]:
    """Where the tests live: each module's test folder (`tests`), or the module itself."""
    found = set()
    for module in modules:
        parts = PurePosixPath(module).parts
        folder = next((i for i, part in enumerate(parts[:-1]) if part in TEST_FOLDERS), None)
        found.add("/".join(parts[: folder + 1]) if folder is not None else module)
    return sorted(p for p in found if not any(p.startswith(f"{o}/") for o in found))


def _loaded(document: dict[str, Any], source: Path) -> PropertiesPin:
    """The draft as the gate will read it: every rule of a properties pin applies."""
    jsonio.validate(document, "properties-pin", source, "drafted properties pin")
    text = json.dumps(document).encode()
    return PropertiesPin.from_json(document, source, hashlib.sha256(text).hexdigest())


def _expected_skips(
    document: dict[str, Any], tests: Sequence[TestResult], source: Path
) -> list[dict[str, str]]:
    """The skips known at collection, as `plan` suggests them (no `*`, a reason given)."""
    match = match_pin(_loaded(document, source), (), tests)
    return [
        {"test": skip.test, "reason": skip.reason}
        for skip in match.unlisted_skips
        if "*" not in skip.test and skip.reason
    ]


def _with_counts(
    document: dict[str, Any], tests: Sequence[TestResult], source: Path
) -> PropertiesDraft:
    """Each property with `min_tests`, the count it has now; those that count none left out."""
    match = match_pin(_loaded(document, source), (), tests)
    counts = {prop.id: prop.score.tests_matched for prop in match.properties}
    by_id = {prop.id: prop for prop in match.properties}
    kept, notes = [], []
    for prop in document["properties"]:
        matched = by_id[prop["id"]]
        if matched.expected_failures:
            notes.append(
                f"{prop['test']}: no property drafted: {matched.expected_failures} of its tests "
                "are marked xfail, and an expected failure scores fail: pin the others by hand"
            )
        elif counts[prop["id"]] and not matched.unaccepted_skips:
            kept.append({**prop, "min_tests": counts[prop["id"]]})
        else:
            notes.append(f"{prop['test']}: no property drafted: its tests skip at collection")
    return PropertiesDraft({**document, "properties": kept}, tuple(notes))
