"""One real `vet` run in the fast layers: a suite of properties that cannot fail.

A ceremony, a property that never reads its domain, one that skips on broken input, and one
whose fixture is loaded at import. One vet run scores all four, so the vet side (and the
plugin side that records reads) is measured where it runs; `tests/e2e/test_vet_runs.py`
holds the rest of vet's real runs.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from helpers.vet_suites import claim, ledger, make_suite, run_vet

pytestmark = pytest.mark.pytest_child


# --- what cannot fail: ceremony, unread, skipping; an import-time loader ---------------------

HOLLOW = """
def test_ceremony():
    (FIXTURES / "ceremony.json").read_bytes()  # read, and nothing asserted about it


def test_unread():
    assert FIXTURES.is_dir()


def test_skipping():
    try:
        document = load("skipping.json")
    except ValueError:
        pytest.skip("broken input")
    assert isinstance(document, dict)
"""
LOADER = """
LOADED = load("loaded.json")  # at import: a malformed file breaks collection


def test_loaded():
    assert LOADED["ok"] is True
"""


@pytest.fixture(scope="module")
def hollow(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    root = make_suite(
        tmp_path_factory.mktemp("hollow") / "suite",
        {
            "ceremony.json": b'{"total": 5, "lines": [1, 2]}\n',
            "unread.json": b'{"total": 5}\n',
            "skipping.json": b'{"total": 5, "lines": [1, 2]}\n',
            "loaded.json": b'{"ok": true}\n',
            "nobody.json": b"{}\n",
        },
        {"test_hollow.py": HOLLOW, "test_loader.py": LOADER},
        [
            claim("hollow.ceremony", "properties/test_hollow.py::test_ceremony", "ceremony.json"),
            claim("hollow.unread", "properties/test_hollow.py::test_unread", "unread.json"),
            claim("hollow.skipping", "properties/test_hollow.py::test_skipping", "skipping.json"),
            claim("hollow.loaded", "properties/test_loader.py::test_loaded", "loaded.json"),
        ],
    )
    done = run_vet(root)
    return done, ledger(root)


def test_a_ceremony_property_survives_every_operator_and_exit_1_names_it(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    assert done.returncode == 1, done.stderr
    found = written["properties"]["hollow.ceremony"]
    assert found["verdict"] == "survived"
    assert found["killed_by"] == []
    assert found["statuses_seen"] == ["pass"]
    assert len(found["operators_tried"]) >= 6  # every well-formed and malformed operator
    assert "survived  hollow.ceremony: cannot fail on its fixtures: not a gate" in done.stdout
    verdict = done.stderr.splitlines()[-1]
    assert verdict.startswith(
        "three-ledger: 3 propert(ies) are not a gate: 3 cannot fail on their fixtures: "
    )
    assert "hollow.ceremony, hollow.unread, hollow.skipping" in verdict


def test_a_property_that_never_opens_its_domain_is_reported_unread(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    assert written["properties"]["hollow.unread"]["unread_domain_files"] == ["fixtures/unread.json"]
    assert written["properties"]["hollow.ceremony"]["unread_domain_files"] == []
    assert (
        "hollow.unread never read 1 of its 1 domain file(s):\n  fixtures/unread.json" in done.stderr
    )
    assert "read none of its domain files: not a gate" in done.stdout
    assert written["unread_pinned_files"] == ["fixtures/nobody.json", "fixtures/unread.json"]


def test_a_property_that_skips_on_broken_input_is_reported_as_skipping(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    found = written["properties"]["hollow.skipping"]
    assert found["verdict"] == "survived"
    assert found["statuses_seen"] == ["pass", "skip"]
    skipped = [t["operator"] for t in found["trials"] if t["status"] == "skip"]
    assert skipped == ["empty", "flip_middle_byte", "truncate_half"]
    line = next(line for line in done.stdout.splitlines() if "hollow.skipping" in line)
    assert line.endswith("; skip under empty, flip_middle_byte, truncate_half")


def test_a_collection_error_under_mutation_is_a_kill(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    found = written["properties"]["hollow.loaded"]
    assert found["verdict"] == "weak"
    assert found["killed_by"] == ["empty"]
    assert found["trials"][-1]["command_exit"] == 2
    assert found["unread_domain_files"] == []  # read at import, attributed to its items
    assert "(empty: error: the run exited 2)" in done.stdout
