"""Hypothesis over every parser of outside input: pins, ledgers, plugin result lines, JUnit XML.

Each example is written to disk and read the way the gate reads it. The outcome is always a
valid parse that passes an independent soundness check, or a clean refusal: exit 2 (4 for
test results), one stderr line naming the file, no traceback, nothing written.

The default run is bounded (profile `three-ledger-fuzz`, scaled by `--hypothesis-profile`).
A long campaign sets the examples per test, e.g.
`THREE_LEDGER_FUZZ_EXAMPLES=20000 .venv/bin/pytest tests/commands/test_fuzz.py -n 2`
(profile `three-ledger-fuzz-long`; the tests that start a child process per example run a
twentieth of that).
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import os
import re
import shlex
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from xml.sax.saxutils import quoteattr

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import PLUGIN_STAND_IN, RunCli, beside, write_json
from three_ledger import jsonio
from three_ledger.errors import GateError, InfraFailure, Refused
from three_ledger.junit_report import read_junit_report
from three_ledger.ledgers import FixtureLedger, PropertyLedger, RecordT, read_ledger
from three_ledger.other_ledgers import DualPinLedger, FlakeLedger, MergeDecision
from three_ledger.pins import load_fixture_pin, load_flake_pin, load_properties_pin
from three_ledger.results import TestResult, property_statuses, read_results_file
from three_ledger.vocabulary import Outcome

T = TypeVar("T")

# --- settings profiles ------------------------------------------------------------------------

LONG_EXAMPLES = int(os.environ.get("THREE_LEDGER_FUZZ_EXAMPLES") or 0)
_SLOW_HEALTH = [
    # tmp_path and run_cli are reused across examples on purpose: each example overwrites its files.
    HealthCheck.function_scoped_fixture,
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
]
settings.register_profile("three-ledger-fuzz", deadline=None, suppress_health_check=_SLOW_HEALTH)
settings.register_profile(
    "three-ledger-fuzz-long",
    deadline=None,
    suppress_health_check=_SLOW_HEALTH,
    max_examples=max(LONG_EXAMPLES, 1),
)


def fuzz(examples: int, *, per_example_process: bool = False) -> settings:
    """The bounded default, or the long campaign when THREE_LEDGER_FUZZ_EXAMPLES is set.

    The bounded count scales with the loaded Hypothesis profile: `quick` (make test) runs a
    fifth of `examples`, `thorough` (make test-e2e) and Hypothesis's default run all of them.
    """
    if not LONG_EXAMPLES:
        scaled = max(examples * settings().max_examples // 100, 5)
        return settings(settings.get_profile("three-ledger-fuzz"), max_examples=scaled)
    long_run = settings.get_profile("three-ledger-fuzz-long")
    share = LONG_EXAMPLES // 20 if per_example_process else LONG_EXAMPLES
    return settings(long_run, max_examples=max(examples, share))


# --- generic strategies -----------------------------------------------------------------------

# Strings a careless or hostile writer produces: NFD, controls, lone surrogates, newlines.
ODD_TEXT = st.sampled_from(
    ["", "\n", "x\n", "\x00", "e\u0301", "\u00e9", "\ud800", "a\udcff", "..", "/abs", "a\\b", "ß"]
)
TEXT = st.text(max_size=12) | ODD_TEXT
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT | st.just(1.0) | st.just(-1)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
# Stands in for a raw JSON text too big or too deep to build as a Python value.
MONSTER = "\x00three-ledger-monster\x00"


@st.composite
def monsters(draw: st.DrawFn) -> str:
    """Raw JSON: deep nesting, huge strings, keys and numbers, wide arrays."""
    size = draw(st.sampled_from([10, 1_000, 5_000, 100_000]))
    kind = draw(st.sampled_from(["list", "object", "string", "key", "number", "wide", "float"]))
    if kind == "list":
        return "[" * size + "]" * size
    if kind == "object":
        return '{"a":' * size + "1" + "}" * size
    if kind == "string":
        return json.dumps("x" * size * 5)
    if kind == "key":
        return "{" + json.dumps("k" * size) + ": 1}"
    if kind == "number":
        return "9" * size
    if kind == "float":
        return "1e" + "9" * min(size, 400)
    return "[" + ",".join(["0"] * min(size, 5_000)) + "]"


def _container_slots(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) pair in `document`, outermost first."""
    slots: list[tuple[Any, Any]] = []
    pending = [document]
    while pending:
        node = pending.pop(0)
        if isinstance(node, dict):
            keys: list[Any] = list(node)
        elif isinstance(node, list):
            keys = list(range(len(node)))
        else:
            continue
        for key in keys:
            slots.append((node, key))
            pending.append(node[key])
    return slots


@st.composite
def mutated(draw: st.DrawFn, valid: dict[str, Any], known_keys: list[str]) -> Any:
    """`valid` with up to four mutations: values replaced, keys dropped, added or misspelt."""
    document: Any = copy.deepcopy(valid)
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)  # not even the right shape
    if draw(st.booleans()):
        # A random key set drawn from the real keys and a few typos of them.
        typos = [key[:-1] for key in known_keys] + [key.upper() for key in known_keys]
        keys = draw(st.sets(st.sampled_from(known_keys + typos), max_size=len(known_keys) + 2))
        document = {key: copy.deepcopy(valid.get(key, draw(JSON_VALUES))) for key in sorted(keys)}
    for _ in range(draw(st.integers(0, 4))):
        slots = _container_slots(document)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(["replace", "replace", "monster", "drop", "add"]))
        if action == "replace":
            container[key] = draw(JSON_VALUES)
        elif action == "monster":
            container[key] = MONSTER
        elif action == "drop":
            del container[key]
        elif isinstance(container, dict):
            container[draw(TEXT)] = draw(JSON_VALUES)
        else:
            container.append(draw(JSON_VALUES))
    return document


@st.composite
def encoded(draw: st.DrawFn, document: Any) -> bytes:
    """The bytes of `document` as JSON, sometimes damaged: noise, truncation, BOM, UTF-16."""
    text = json.dumps(document, allow_nan=True, ensure_ascii=draw(st.booleans()))
    while json.dumps(MONSTER) in text:
        text = text.replace(json.dumps(MONSTER), draw(monsters()), 1)
    # Lone surrogates become bytes that are not UTF-8, as a broken writer would leave them.
    data = text.encode("utf-8", "surrogatepass")
    return draw(damaged(data))


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    damage = draw(st.sampled_from(["none", "none", "none", "insert", "cut", "bom", "utf16"]))
    if damage == "insert":
        where = draw(st.integers(0, len(data)))
        noise = draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b"\xff", b"\xc3", b"\0"]))
        return data[:where] + noise + data[where:]
    if damage == "cut":
        return data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    if damage == "bom":
        return b"\xef\xbb\xbf" + data
    if damage == "utf16":
        return data.decode("utf-8", "replace").encode("utf-16")
    return data


def documents_from(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    keys = list(valid)
    return mutated(valid, keys).flatmap(encoded) | st.binary(max_size=64)


# --- valid starting points --------------------------------------------------------------------

HEX_A, HEX_B, HEX_C = "a" * 64, "b" * 64, "c" * 64
COMMIT = "d" * 40
STAMP = "2026-09-25T12:00:00.123456Z"

FIXTURE_PIN = {
    "pin_id": "fixpin-fuzz",
    "algorithm": "sha256",
    "fixtures_dir": "fixtures",
    "digest": HEX_A,
    "description": "fuzzed",
    "files": ["fixtures/a.json", "fixtures/sub/b.json"],
}
# The same, as several closed folders.
FIXTURE_PIN_DIRS = {
    "pin_id": "fixpin-fuzz",
    "algorithm": "sha256",
    "fixtures_dirs": ["fixtures", "tests/data"],
    "files": ["fixtures/a.json", "tests/data/sub/b.json"],
}
PROPERTIES_PIN = {
    "pin_id": "proppin-fuzz",
    "fixture_pins": ["fixpin-fuzz"],
    "network": "allowed",
    "oracle_paths": ["properties", "tests/"],
    "properties": [
        {"id": "p.one", "claim": "One.", "domain": ["a.json"], "test": "t.py::test_one"},
        {"id": "p.two", "claim": "Two.", "domain": ["sub/"]},
    ],
}
FLAKE_PIN = {
    "pin_id": "flakepin-fuzz",
    "flakes": [
        {
            "test_id": "t.slow",
            "test": "t.py::test_slow",
            "accepted_revision": COMMIT,
            "review_by": "2027-01-31",
            "owner": "o",
            "note": "n",
        }
    ],
}
FIXTURE_LEDGER = {
    "kind": "fixture",
    "ledger_id": "0" * 32,
    "pin_id": "fixpin-fuzz",
    "digest": HEX_A,
    "algorithm": "sha256",
    "fixtures_dir": "fixtures",
    "files": [{"path": "fixtures/a.json", "size": 2, "sha256": HEX_B}],
    "tool": {"name": "three-ledger", "version": "0.1.0"},
    "recorded_at": STAMP,
}
# A fixture ledger of a pin with several folders: `fixtures_dirs` in place of `fixtures_dir`.
FIXTURE_LEDGER_DIRS = {
    ("fixtures_dirs" if key == "fixtures_dir" else key): (
        ["fixtures", "tests/data"] if key == "fixtures_dir" else value
    )
    for key, value in FIXTURE_LEDGER.items()
}
PROPERTY_LEDGER = {
    "kind": "property",
    "ledger_id": "1" * 32,
    "pin_id": "fixpin-fuzz",
    "property_pin_id": "proppin-fuzz",
    "property_pin_sha256": HEX_B,
    "fixture_digest": HEX_A,
    "status_by_id": {"p.one": "pass", "p.two": "fail"},
    "oracle_moved": False,
    "oracle_changes": [],
    "oracle_change_reasons": {},
    "oracle_paths_unmatched": [],
    "oracle_model": "inferred",
    "untracked_reads": [],
    "unscored_new_files": [],
    "base_revision": COMMIT,
    "base_resolution": {"given": "refs/remotes/origin/main", "used": COMMIT, "how": "ancestor"},
    "head_revision": COMMIT,
    "command": ["pytest", "-q"],
    "command_exit": 1,
    "junit_report": None,
    "duration_ms": 12,
    "network": "banned",
    "network_enforcement": "netns",
    "sandbox": {
        "layers": {
            "environment": "held",
            "no_new_privs": "held",
            "pid": "held",
            "mount": "held",
            "file_commands": "held",
        },
        "env_removed": ["GITHUB_TOKEN"],
        "env_kept": [],
        "writable_reads": [],
    },
    "flake_results": {"t.slow": "fail"},
    "tripwire": "sentinels",
    "harness": None,
    "run_order": {"tests": 1, "seeds": {}, "workers": {"main": ["t.py::test_one"]}, "file": None},
    "tests_matched": {"p.one": 3, "p.two": 1},
    "expected_skips_left_out": {"p.one": 2},
    "failing_tests": {"p.two": [{"id": "t.py::test_two", "outcome": "fail", "reason": None}]},
    "failing_counts": {"p.two": 1},
    "missing_reasons": {},
    "unpinned_failures": {"count": 1, "first_ids": ["t.py::test_other"]},
    "shards": None,
    "recorded_at": STAMP,
}
DUAL_PIN_LEDGER = {
    "kind": "dual_pin",
    "ledger_id": "2" * 32,
    "dual_pin": "run",
    "drift": True,
    "left_pin_id": "fixpin-a",
    "right_pin_id": "fixpin-b",
    "left_digest": HEX_A,
    "right_digest": HEX_B,
    "differences": {"p.two": {"left": "pass", "right": "absent"}},
    "recorded_at": STAMP,
}
FLAKE_LEDGER = {
    "kind": "flake",
    "ledger_id": "3" * 32,
    "test_id": "t.slow",
    "flake_pin_id": "flakepin-fuzz",
    "accepted_revision": COMMIT,
    "review_by": "2027-01-31",
    "observed": "fail",
    "fixture_digest": HEX_A,
    "property_ledger_sha256": HEX_C,
    "recorded_at": STAMP,
}
MERGE_DECISION = {
    "kind": "merge",
    "ledger_id": "4" * 32,
    "posture": "reject",
    "row": 7,
    "reason": "property miss stands: p.two is fail",
    "inputs": {
        "fixture": HEX_A,
        "property": HEX_B,
        "dual_pin": None,
        "flakes": [HEX_C],
        "flake_evidence": None,
    },
    "recorded_at": STAMP,
}

# --- independent soundness checks of what a reader accepted ------------------------------------

PIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
PROPERTY_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX32 = re.compile(r"[0-9a-f]{32}")
REVISION = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
OUTCOMES = {"pass", "fail", "error", "skip"}
STATUSES = OUTCOMES | {"missing"}


def is_text(value: object) -> bool:
    """A str that can be written as UTF-8: no lone surrogate."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def one_line(value: object) -> bool:
    return is_text(value) and re.fullmatch(r"[^\n\r]+", str(value)) is not None


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def sound_path(path: object) -> bool:
    """SPEC 3.1's path rules, written again from the SPEC."""
    if not isinstance(path, str) or not is_text(path) or path == "":
        return False
    return (
        not path.startswith("/")
        and "\\" not in path
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in path)
        and all(segment not in ("", ".", "..") for segment in path.split("/"))
        and unicodedata.normalize("NFC", path) == path
    )


def unique_list(value: object, item_ok: Callable[[object], bool], *, empty: bool = False) -> bool:
    if not isinstance(value, list) or (not value and not empty):
        return False
    return all(item_ok(item) for item in value) and len(set(map(str, value))) == len(value)


def has_keys(document: object, required: set[str], optional: frozenset[str] = frozenset()) -> bool:
    return isinstance(document, dict) and required <= document.keys() <= required | optional


def sound_oracle_path(path: object) -> bool:
    return isinstance(path, str) and sound_path(path.removesuffix("/"))


def sound_pin_id(pin_id: object) -> bool:
    return isinstance(pin_id, str) and is_text(pin_id) and PIN_ID.fullmatch(pin_id) is not None


def assert_sound_fixture_pin(doc: Any) -> None:
    optional = frozenset({"fixtures_dir", "fixtures_dirs", "digest", "description"})
    assert has_keys(doc, {"pin_id", "algorithm", "files"}, optional)
    assert not {"fixtures_dir", "fixtures_dirs"} <= doc.keys()
    assert sound_pin_id(doc["pin_id"])
    assert doc["algorithm"] == "sha256"
    folders = doc["fixtures_dirs"] if "fixtures_dirs" in doc else [doc.get("fixtures_dir", "")]
    if "fixtures_dir" not in doc and "fixtures_dirs" not in doc:
        folders = ["fixtures"]
    assert unique_list(folders, sound_path)
    folded = [folder.casefold() for folder in folders]
    for inner, outer in itertools.permutations(folded, 2):
        assert inner != outer
        assert not inner.startswith(outer + "/")
    files = doc["files"]
    assert unique_list(
        files, lambda path: sound_path(path) and any(str(path).startswith(f + "/") for f in folders)
    )
    assert len({unicodedata.normalize("NFC", path).casefold() for path in files}) == len(files)
    assert "digest" not in doc or (is_text(doc["digest"]) and HEX64.fullmatch(doc["digest"]))
    assert "description" not in doc or is_text(doc["description"])


def assert_sound_properties_pin(doc: Any) -> None:
    optional = frozenset({"network", "oracle_paths"})
    assert has_keys(doc, {"pin_id", "fixture_pins", "properties"}, optional)
    assert sound_pin_id(doc["pin_id"])
    assert unique_list(doc["fixture_pins"], sound_pin_id)
    assert doc.get("network", "banned") in ("banned", "allowed")
    assert unique_list(doc.get("oracle_paths", ["properties", "tests"]), sound_oracle_path)
    entries = doc["properties"]
    assert isinstance(entries, list)
    assert entries
    for entry in entries:
        assert has_keys(entry, {"id", "claim", "domain"}, frozenset({"test"}))
        assert is_text(entry["id"])
        assert PROPERTY_ID.fullmatch(entry["id"])
        assert one_line(entry["claim"])
        assert unique_list(entry["domain"], sound_oracle_path)
        assert "test" not in entry or (is_text(entry["test"]) and entry["test"])
    assert len({entry["id"] for entry in entries}) == len(entries)


def assert_sound_flake_pin(doc: Any) -> None:
    assert has_keys(doc, {"pin_id", "flakes"})
    assert sound_pin_id(doc["pin_id"])
    assert isinstance(doc["flakes"], list)
    for entry in doc["flakes"]:
        required = {"test_id", "accepted_revision", "review_by"}
        assert has_keys(entry, required, frozenset({"test", "owner", "note"}))
        assert one_line(entry["test_id"])
        assert one_line(entry["accepted_revision"])
        assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", entry["review_by"])
        datetime.date.fromisoformat(entry["review_by"])
        assert "test" not in entry or (is_text(entry["test"]) and entry["test"])
        assert all(is_text(entry[key]) for key in ("owner", "note") if key in entry)
    assert len({entry["test_id"] for entry in doc["flakes"]}) == len(doc["flakes"])


def assert_sound_ledger(doc: Any, valid: dict[str, Any]) -> None:
    """Exactly the kind's keys, each of the type the valid example holds; no float anywhere."""
    if doc.get("dual_pin") == "not_run":
        assert set(doc) == {"kind", "ledger_id", "dual_pin", "recorded_at"}
    else:
        assert set(doc) == set(valid)
    assert doc["kind"] == valid["kind"]
    assert HEX32.fullmatch(doc["ledger_id"])
    datetime.datetime.strptime(doc["recorded_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    for key, value in doc.items():
        assert type(value) is type(valid[key]) or valid[key] is None or value is None, key
        assert is_text(json.dumps(value, ensure_ascii=False))
    assert not any(isinstance(leaf, float) for leaf in _leaves(doc))
    for key in ("digest", "fixture_digest", "property_pin_sha256", "property_ledger_sha256"):
        assert key not in doc or HEX64.fullmatch(doc[key])
    for key in ("base_revision", "head_revision"):
        assert key not in doc or REVISION.fullmatch(doc[key])
    for key in ("command_exit", "duration_ms", "row"):
        assert key not in doc or is_int(doc[key])
    if doc["kind"] == "property":
        assert doc["base_resolution"]["used"] == doc["base_revision"]
        assert doc["base_resolution"]["how"] in ("ancestor", "merge-base")
        assert all(PROPERTY_ID.fullmatch(k) for k in doc["status_by_id"])
        assert set(doc["status_by_id"].values()) <= STATUSES
        assert set(doc["flake_results"].values()) <= OUTCOMES
        assert doc["duration_ms"] >= 0
        assert doc["command"]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def outcome_of(read: Callable[[], T]) -> tuple[T | None, GateError | None]:
    """What a reader returned, or the refusal it raised; any other exception propagates."""
    try:
        return read(), None
    except GateError as refusal:
        return None, refusal


def assert_one_line_refusal(stderr: str, path: Path, label: str = "refused:") -> None:
    """Exactly one stderr line, which says what happened and names the file first."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"three-ledger: {label} {path}: "), stderr


# --- pins -------------------------------------------------------------------------------------


@fuzz(100)
@given(data=documents_from(FIXTURE_PIN) | documents_from(FIXTURE_PIN_DIRS))
def test_fixture_pin_is_refused_cleanly_or_sound(
    run_cli: RunCli, tmp_path: Path, data: bytes
) -> None:
    pin = tmp_path / "pins" / "fixtures.json"
    pin.parent.mkdir(exist_ok=True)
    pin.write_bytes(data)
    out = tmp_path / "out" / "fixture.json"
    out.unlink(missing_ok=True)  # the previous example's
    try:
        load_fixture_pin(pin)
    except Refused:
        result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
        assert result.code == 2
        assert_one_line_refusal(result.err, pin)
        assert not out.exists()
        return
    assert_sound_fixture_pin(json.loads(data))
    # The tree holds none of the pinned files: a refusal about the tree, never a crash.
    result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
    assert result.code == 2
    assert result.first_error_line.startswith("three-ledger: refused: fixture tree does not match")
    assert not out.exists()


def _fixture_pin_without_digest(tmp_path: Path) -> Path:
    document = {key: value for key, value in FIXTURE_PIN.items() if key != "digest"}
    return write_json(tmp_path / "pins/fixtures.json", document)


def run_properties_refused(
    run_cli: RunCli, tmp_path: Path, *, properties: Path, flake_pin: Path | None = None
) -> tuple[int, str, Path]:
    """`properties` with a wrong --expect-digest: it always refuses before running anything."""
    fixture_pin = _fixture_pin_without_digest(tmp_path)
    out = tmp_path / "out" / "p.json"
    extra: list[str | Path] = ["--flake-pin", flake_pin] if flake_pin else []
    result = run_cli(
        "properties", "--pin", fixture_pin, "--expect-digest", "0" * 64,
        "--properties", properties, "--command", "false", "--root", tmp_path,
        "--out", out, "--base", "HEAD", *extra,
    )  # fmt: skip
    assert not out.exists()
    return result.code, result.err, out


@fuzz(100)
@given(data=documents_from(PROPERTIES_PIN))
def test_properties_pin_is_refused_cleanly_or_sound(
    run_cli: RunCli, tmp_path: Path, data: bytes
) -> None:
    pin = tmp_path / "props" / "properties.json"
    pin.parent.mkdir(exist_ok=True)
    pin.write_bytes(data)
    try:
        load_properties_pin(pin)
    except Refused:
        code, err, _ = run_properties_refused(run_cli, tmp_path, properties=pin)
        assert code == 2
        assert_one_line_refusal(err, pin)
        return
    assert_sound_properties_pin(json.loads(data))
    code, err, _ = run_properties_refused(run_cli, tmp_path, properties=pin)
    assert code == 2
    assert err.startswith("three-ledger: refused: ")


@fuzz(100)
@given(data=documents_from(FLAKE_PIN))
def test_flake_pin_is_refused_cleanly_or_sound(
    run_cli: RunCli, tmp_path: Path, data: bytes
) -> None:
    pin = tmp_path / "flakes" / "flakes.json"
    pin.parent.mkdir(exist_ok=True)
    pin.write_bytes(data)
    properties = write_json(tmp_path / "props" / "properties.json", PROPERTIES_PIN)
    try:
        load_flake_pin(pin)
    except Refused:
        code, err, _ = run_properties_refused(
            run_cli, tmp_path, properties=properties, flake_pin=pin
        )
        assert code == 2
        assert_one_line_refusal(err, pin)
        return
    assert_sound_flake_pin(json.loads(data))
    code, err, _ = run_properties_refused(run_cli, tmp_path, properties=properties, flake_pin=pin)
    assert code == 2
    assert "fixture tree does not match" in err


# --- ledgers ----------------------------------------------------------------------------------

LEDGER_KINDS: list[tuple[type[Any], dict[str, Any]]] = [
    (FixtureLedger, FIXTURE_LEDGER),
    (FixtureLedger, FIXTURE_LEDGER_DIRS),
    (PropertyLedger, PROPERTY_LEDGER),
    (DualPinLedger, DUAL_PIN_LEDGER),
    (FlakeLedger, FLAKE_LEDGER),
    (MergeDecision, MERGE_DECISION),
]


LEDGER_IDS = [
    kind.KIND + ("-dirs" if "fixtures_dirs" in valid else "") for kind, valid in LEDGER_KINDS
]


@pytest.mark.parametrize(("kind", "valid"), LEDGER_KINDS, ids=LEDGER_IDS)
def test_valid_ledger_examples_are_read(tmp_path: Path, kind: type[Any], valid: Any) -> None:
    """The starting points of the ledger fuzzing are accepted (else it fuzzes nothing)."""
    path = write_json(tmp_path / "l.json", valid)
    assert read_ledger(path, kind).record.to_json() == valid


@pytest.mark.parametrize(("kind", "valid"), LEDGER_KINDS, ids=LEDGER_IDS)
@fuzz(100)
@given(data=st.data())
def test_ledger_reader_refuses_cleanly_or_reads_a_sound_ledger(
    tmp_path: Path, kind: type[RecordT], valid: dict[str, Any], data: st.DataObject
) -> None:
    raw = data.draw(documents_from(valid))
    path = tmp_path / "ledger.json"
    path.write_bytes(raw)
    ledger, refusal = outcome_of(lambda: read_ledger(path, kind))
    if refusal is not None:
        assert refusal.message.startswith(f"{path}: ")
        assert "\n" not in refusal.message
        assert not refusal.details
        return
    assert ledger is not None
    assert_sound_ledger(json.loads(raw), valid)
    assert ledger.record.to_json() == json.loads(raw)


@fuzz(100)
@given(data=documents_from(PROPERTY_LEDGER))
def test_dual_pin_refuses_a_malformed_property_ledger_in_one_line(
    run_cli: RunCli, tmp_path: Path, data: bytes
) -> None:
    left = tmp_path / "left.json"
    left.write_bytes(data)
    right = write_json(
        tmp_path / "right.json",
        {**PROPERTY_LEDGER, "pin_id": "fixpin-b", "fixture_digest": HEX_C, "ledger_id": "5" * 32,
         "recorded_at": "2026-09-25T12:00:01.000000Z"},
    )  # fmt: skip
    out = tmp_path / "drift.json"
    out.unlink(missing_ok=True)  # the previous example's
    result = run_cli("dual-pin", "--left", left, "--right", right, "--out", out)
    try:
        read_ledger(left, PropertyLedger)
    except Refused:
        assert result.code == 2
        assert_one_line_refusal(result.err, left)
        assert not out.exists()
        return
    assert result.code in (0, 2, 3)
    assert out.exists() == (result.code != 2)


def test_ledger_over_the_size_cap_is_refused_unparsed(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A smaller cap keeps the test light; the check is the same at 128 MiB.
    monkeypatch.setattr(jsonio, "MAX_DOCUMENT_BYTES", 64 * 1024)
    left = tmp_path / "left.json"
    left.write_bytes(b'{"kind": "property", "pad": "' + b"x" * jsonio.MAX_DOCUMENT_BYTES + b'"}')
    right = write_json(tmp_path / "right.json", PROPERTY_LEDGER)
    result = run_cli("dual-pin", "--left", left, "--right", right, "--out", tmp_path / "d.json")
    assert result.code == 2
    assert_one_line_refusal(result.err, left)
    assert "larger than" in result.err


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b'{"kind": "property", "command_exit": ' + b"9" * 5000 + b"}", "5000 digits is too long"),
        (b'{"kind": "property", "x": "\\ud800"}', "lone surrogate"),
        (b'{"kind": "property", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "too deeply"),
    ],
    ids=["integer-past-the-digit-limit", "lone-surrogate-escape", "deep-nesting"],
)
def test_fuzz_findings_in_json_are_refusals(
    run_cli: RunCli, tmp_path: Path, raw: bytes, fragment: str
) -> None:
    """Found by this fuzzing: each of these once crashed the gate (exit 70) or slipped through."""
    left = tmp_path / "left.json"
    left.write_bytes(raw)
    right = write_json(tmp_path / "right.json", PROPERTY_LEDGER)
    result = run_cli("dual-pin", "--left", left, "--right", right, "--out", tmp_path / "d.json")
    assert result.code == 2
    assert_one_line_refusal(result.err, left)
    assert fragment in result.err


def test_a_float_is_not_an_integer_in_a_ledger(tmp_path: Path) -> None:
    """Ledgers hold no floats (SPEC 4); JSON Schema alone would take 1.0 as an integer."""
    path = write_json(tmp_path / "p.json", {**PROPERTY_LEDGER, "command_exit": 1.0})
    with pytest.raises(Refused, match=r"\$\.command_exit: 1\.0 is not of type 'integer'"):
        read_ledger(path, PropertyLedger)


# --- test results: plugin lines and JUnit XML ---------------------------------------------------

PROPERTY_IDS = ["p.one", "p.two"]
TEST_IDS = ["t.py::test_one", "t.py::test_one[1]", "t.py::test_slow", "t.py::Class::test_x"]


@st.composite
def result_records(draw: st.DrawFn) -> Any:
    record: dict[str, Any] = {
        "id": draw(st.sampled_from(TEST_IDS) | TEXT | JSON_VALUES),
        "property_ids": draw(
            st.lists(st.sampled_from(PROPERTY_IDS) | TEXT | JSON_VALUES, max_size=3) | JSON_VALUES
        ),
        "outcome": draw(st.sampled_from(sorted(OUTCOMES)) | TEXT | JSON_VALUES),
    }
    return draw(mutated(record, list(record))) if draw(st.booleans()) else record


@st.composite
def result_files(draw: st.DrawFn) -> bytes:
    """Plugin JSON lines: good and bad records, noise, an unfinished last line."""
    lines = [
        draw(st.sampled_from([b"", b"\xff\xfe", b"[]", b"{}"]) | result_records().flatmap(encoded))
        if draw(st.integers(0, 4)) == 0
        else json.dumps(draw(result_records())).encode()
        for _ in range(draw(st.integers(0, 6)))
    ]
    tail = draw(st.sampled_from([b"\n", b"", b'\n{"id": "t.py::te']))
    return b"\n".join(lines) + tail


def assert_sound_results(results: list[TestResult]) -> None:
    assert results
    for result in results:
        assert isinstance(result.id, str)
        assert result.id
        assert isinstance(result.outcome, Outcome)
        assert all(isinstance(prop_id, str) for prop_id in result.property_ids)
    # One result per id and aliases: mocha's xunit gives two titles of one file one id.
    assert len({(result.id, result.aliases) for result in results}) == len(results)


@fuzz(200)
@given(data=result_files())
def test_results_reader_refuses_cleanly_or_reads(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(data)
    results, failure = outcome_of(lambda: read_results_file(path))
    if failure is not None:
        assert failure.message.startswith(f"results file {path}: ")
        assert "\n" not in failure.message
        return
    assert results is not None
    assert_sound_results(results)


@st.composite
def junit_documents(draw: st.DrawFn) -> bytes:
    """JUnit XML from a small grammar, with hostile prologs, encodings, depth and size."""
    children = st.sampled_from(
        ["<failure/>", "<error>e</error>", "<skipped/>", '<skipped type="pytest.xfail"/>',
         "<system-out>out</system-out>", "<flakyFailure/>", "<rerunError/>", "<other/>", ""]
    )  # fmt: skip
    attribute_values = st.sampled_from([*TEST_IDS, "", "t", "t.py", "Class"]) | TEXT
    cases = []
    for _ in range(draw(st.integers(0, 5))):
        attributes = "".join(
            f" {name}={quoteattr(draw(attribute_values))}"
            for name in ("name", "classname", "file")
            if draw(st.integers(0, 3))
        )
        body = "".join(draw(st.lists(children, max_size=3)))
        cases.append(f"<testcase{attributes}>{body}</testcase>")
    depth = draw(st.sampled_from([0, 0, 0, 50, 100_000]))
    body = "<x>" * depth + "".join(cases) + "</x>" * depth
    root = draw(st.sampled_from(["testsuites", "testsuite", "testsuite", "report"]))
    encoding = draw(st.sampled_from(["utf-8", "latin-1", "utf-16", "x-no-such-codec"]))
    prolog = draw(
        st.sampled_from(
            ["", f'<?xml version="1.0" encoding="{encoding}"?>', "<!DOCTYPE testsuites>",
             '<!DOCTYPE t [<!ENTITY e "e">]>', "<?pi x?>"]
        )
    )  # fmt: skip
    text = f"{prolog}<{root} name='s'>{body}</{root}>"
    raw = text.encode(draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1"])), "replace")
    return draw(damaged(raw))


@fuzz(200)
@given(data=junit_documents())
def test_junit_reader_refuses_cleanly_or_reads(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "junit.xml"
    path.write_bytes(data)
    results, failure = outcome_of(lambda: read_junit_report(path).results)
    if failure is not None:
        assert failure.message.startswith(f"JUnit XML {path}: ")
        assert "\n" not in failure.message
        return
    assert results is not None
    assert_sound_results(results)
    assert b"<!DOCTYPE" not in data


@pytest.mark.parametrize(
    ("name", "raw", "fragment"),
    [
        (
            "results.jsonl",
            b'{"id": "a", "outcome": "pass", "n": ' + b"9" * 5000 + b"}\n",
            "too long",
        ),
        (
            "results.jsonl",
            b'{"id": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
            "deeply",
        ),
        ("results.jsonl", b'{"id": "a", "property_ids": [], "outcome": []}\n', "'outcome' must"),
        ("junit.xml", b'<?xml version="1.0" encoding="x-no-such-codec"?><testsuite/>', "encoding"),
    ],
    ids=[
        "integer-past-the-digit-limit",
        "deep-nesting",
        "unhashable-outcome",
        "unknown-xml-encoding",
    ],
)
def test_fuzz_findings_in_results_are_infrastructure_failures(
    tmp_path: Path, name: str, raw: bytes, fragment: str
) -> None:
    """Found by this fuzzing: each of these once crashed the gate (exit 70) after the run."""
    path = tmp_path / name
    path.write_bytes(raw)
    reader: Callable[[Path], object] = (
        read_junit_report if name.endswith(".xml") else read_results_file
    )
    with pytest.raises(InfraFailure, match=fragment):
        reader(path)


# --- results through the whole `properties` command -----------------------------------------------


@pytest.fixture
def scoring_repo(orders_repo: Path, run_cli: RunCli) -> tuple[Path, str]:
    """The example with the network allowed (no namespace per example) and its live digest."""
    pin = orders_repo / "pins/properties.json"
    pin.write_text(pin.read_text().replace('"banned"', '"allowed"'))
    result = run_cli(
        "digest", "--pin", orders_repo / "pins/fixtures.json", "--root", orders_repo,
        "--out", orders_repo.parent / "f.json",
    )  # fmt: skip
    assert result.code == 0
    return orders_repo, result.out.strip()


COPY_IN = """
with open(os.environ["THREE_LEDGER_RESULTS"], "ab") as out, open(sys.argv[1], "rb") as src:
    out.write(src.read())
"""


def score_with(
    run_cli: RunCli, repo: Path, digest: str, command: list[str], *extra: str | Path
) -> tuple[int, str, Path]:
    out = repo.parent / "ledgers" / "p.json"
    out.unlink(missing_ok=True)  # the previous example's
    result = run_cli(
        "properties", "--pin", repo / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo / "pins/properties.json", "--command", shlex.join(command),
        "--root", repo, "--base", "HEAD", "--out", out, *extra,
    )  # fmt: skip
    return result.code, result.err, out


def example_selectors(repo: Path) -> dict[str, str | None]:
    document = json.loads((repo / "pins/properties.json").read_text())
    return {entry["id"]: entry.get("test") for entry in document["properties"]}


EXAMPLE_TEST_IDS = [
    "properties/test_orders.py::test_total_non_negative[orders_min.json]",
    "properties/test_orders.py::test_id_stable",
    "properties/test_orders.py::test_round_trip[orders_boundary.json]",
]


@st.composite
def example_result_files(draw: st.DrawFn) -> bytes:
    """Result lines naming the example's real tests and property ids, among noise."""
    records = [
        {
            "id": draw(st.sampled_from(EXAMPLE_TEST_IDS)),
            "property_ids": draw(st.lists(st.just("orders.json.round_trip"), max_size=1)),
            "outcome": draw(st.sampled_from(sorted(OUTCOMES))),
        }
        for _ in range(draw(st.integers(0, 4)))
    ]
    good = b"".join(json.dumps(record).encode() + b"\n" for record in records)
    return draw(st.just(good) | result_files() | damaged(good))


@fuzz(25, per_example_process=True)
@given(data=example_result_files())
def test_properties_turns_any_results_file_into_exit_4_or_a_true_ledger(
    run_cli: RunCli, scoring_repo: tuple[Path, str], data: bytes
) -> None:
    repo, digest = scoring_repo
    source = beside(repo, "results.src", data)
    # What pytest with the plugin would write: the tripwire's two lines, then the results.
    copy_in = [sys.executable, "-c", PLUGIN_STAND_IN + COPY_IN, str(source)]
    code, err, out = score_with(run_cli, repo, digest, copy_in)
    try:
        results = read_results_file(source)
    except InfraFailure:
        assert code == 4, err
        # The file's own refusal, or, when it holds nothing, that only the tripwire spoke,
        # after the line that said the command started.
        said = "\n".join(line for line in err.splitlines() if line.startswith("three-ledger"))
        assert said.startswith(
            (
                "three-ledger: infrastructure failure: results file ",
                "three-ledger: infrastructure failure: the run recorded no result besides",
            )
        )
        assert not out.exists()
        return
    assert code in (0, 1), err
    ledger = json.loads(out.read_text())
    assert ledger["status_by_id"] == property_statuses(example_selectors(repo), results)


@fuzz(25, per_example_process=True)
@given(data=junit_documents())
def test_properties_turns_any_junit_file_into_exit_4_or_a_true_ledger(
    run_cli: RunCli, scoring_repo: tuple[Path, str], data: bytes
) -> None:
    repo, digest = scoring_repo
    junit, source = repo.parent / "report/junit.xml", beside(repo, "junit.src", data)
    copy_in = ["sh", "-c", 'cat "$0" > "$1"', str(source), str(junit)]
    code, err, out = score_with(run_cli, repo, digest, copy_in, "--junit-xml", junit)
    try:
        results = read_junit_report(source, repo).results
    except InfraFailure:
        assert code == 4, err
        assert_one_line_refusal(err, junit, "infrastructure failure: JUnit XML")
        assert not out.exists()
        return
    assert code in (0, 1), err
    ledger = json.loads(out.read_text())
    assert ledger["status_by_id"] == property_statuses(example_selectors(repo), results)
