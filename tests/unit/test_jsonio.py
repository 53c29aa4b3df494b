"""`jsonio`'s fast paths against the references they stand in for.

The writer must give exactly `json.dumps(indent=2, ensure_ascii=False)` and a newline.
The compiled schema checks, and the bulk checks of long `files` arrays, must accept
and refuse exactly what the jsonschema validator does.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import itertools
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import fast_path_examples
from three_ledger import compiled_schema, jsonio
from three_ledger.errors import Refused

# A fast path held to its reference: see helpers.fast_path_examples.
EXAMPLES = fast_path_examples()

SCHEMAS = [
    "fixture-pin",
    "properties-pin",
    "flake-pin",
    "fixture-ledger",
    "property-ledger",
    "property-shard-ledger",
    "shard-plan",
    "dual-pin-ledger",
    "flake-ledger",
    "merge-decision",
]
HEX32 = "0123456789abcdef" * 2
HEX40 = "0123456789" * 4
HEX64 = "0123456789abcdef" * 4
STAMP = "2026-11-29T10:11:12.123456Z"


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


# --- the writer -----------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(codec=None, categories=None), max_size=8)
    | st.sampled_from([Colour.RED, Level.HIGH, "%s", "%%", "{}", "\n", '"', "\\", "\x7f"])
)
keys = st.text(max_size=6) | st.sampled_from(["path", "size", "sha256", "%s"])


def alike_objects(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Lists of objects that share their keys, in order: what `files` looks like."""
    return st.lists(keys, min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.lists(
            st.fixed_dictionaries({name: values for name in names}), min_size=1, max_size=6
        )
    )


json_like = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(keys, children, max_size=4)
        | st.dictionaries(st.integers() | st.booleans() | st.none(), children, max_size=2)
        | alike_objects(scalars)
        | alike_objects(st.text(max_size=4))
    ),
    max_leaves=20,
)


def reference(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


@settings(max_examples=EXAMPLES, deadline=None)
@given(json_like)
def test_dumps_is_the_standard_indented_encoding(document: Any) -> None:
    assert jsonio.dumps(document) == reference(document)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.dictionaries(keys, json_like, max_size=4))
def test_dump_chunks_joined_is_dumps_and_each_chunk_is_bounded(document: dict[str, Any]) -> None:
    chunks = list(jsonio.dump_chunks(document))
    assert "".join(chunks) == reference(document)
    assert all(chunks)


def files_array(count: int) -> list[dict[str, Any]]:
    names = ["a", "B", "\u00e9", "\u65e5", 'q"uote', "back\\slash", "%d"]
    return [
        {"path": f"fixtures/{name}{index}.json", "size": index, "sha256": HEX64}
        for index, name in zip(range(count), itertools.cycle(names))
    ]


def test_a_large_files_array_comes_out_in_pieces_that_match(tmp_path: Path) -> None:
    document = {"kind": "fixture", "files": files_array(20_000), "tool": {"name": "x"}}
    chunks = list(jsonio.dump_chunks(document))
    assert len(chunks) > 10
    assert max(map(len, chunks)) < 2 * jsonio.CHUNK_CHARS
    assert "".join(chunks) == reference(document)
    out = tmp_path / "out" / "ledger.json"
    jsonio.write_json(out, document)
    assert out.read_bytes() == reference(document).encode("utf-8")
    assert os.listdir(out.parent) == ["ledger.json"]


def test_write_json_leaves_the_old_file_when_encoding_fails(tmp_path: Path) -> None:
    out = tmp_path / "ledger.json"
    out.write_text("old\n")
    # A lone surrogate cannot be written as UTF-8: the failure comes mid-stream.
    document = {"files": [*files_array(5000), {"path": "\ud800", "size": 1, "sha256": "x"}]}
    with pytest.raises(UnicodeEncodeError):
        jsonio.write_json(out, document)
    assert out.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["ledger.json"]


# --- the compiled schema checks -------------------------------------------------------------------

SEEDS: dict[str, list[dict[str, Any]]] = {
    "fixture-pin": [
        {
            "pin_id": "fix.pin-1",
            "algorithm": "sha256",
            "fixtures_dir": "fixtures",
            "digest": HEX64,
            "description": "d",
            "files": ["fixtures/a.json", "fixtures/b.json"],
        },
        {
            "pin_id": "fix.pin-2",
            "algorithm": "sha256",
            "fixtures_dirs": ["tests/spec", "tests/port/fixtures"],
            "files": ["tests/spec/a.json", "tests/port/fixtures/b.md"],
        },
    ],
    "properties-pin": [
        {
            "pin_id": "props",
            "fixture_pins": ["fix.pin-1"],
            "network": "banned",
            "oracle_paths": ["properties/"],
            "properties": [
                {
                    "id": "p.one",
                    "claim": "holds",
                    "domain": ["a.json"],
                    "test": "t::x",
                    "min_tests": 3,
                    "tests_sha256": HEX64,
                },
                {"id": "p.two", "claim": "also", "domain": ["b/"], "test": ["t::y", "u::*"]},
            ],
            "plugins": ["xdist", "hypothesis"],
            "expected_skips": [{"test": "t::y", "reason": "needs a GPU"}],
        }
    ],
    "flake-pin": [
        {
            "pin_id": "flakes",
            "flakes": [
                {
                    "test_id": "t::y",
                    "test": "t.py::y",
                    "accepted_revision": HEX40,
                    "review_by": "2026-12-01",
                    "owner": "o",
                    "note": "n",
                }
            ],
        }
    ],
    "fixture-ledger": [
        {
            "kind": "fixture",
            "ledger_id": HEX32,
            "pin_id": "fix.pin-1",
            "digest": HEX64,
            "algorithm": "sha256",
            "fixtures_dir": "fixtures",
            "files": files_array(3),
            "tool": {"name": "three-ledger", "version": "1.0"},
            "recorded_at": STAMP,
        }
    ],
    "property-ledger": [
        {
            "kind": "property",
            "ledger_id": HEX32,
            "pin_id": "fix.pin-1",
            "property_pin_id": "props",
            "property_pin_sha256": HEX64,
            "fixture_digest": HEX64,
            "status_by_id": {"p.one": "pass", "p.two": "missing"},
            "oracle_moved": True,
            "oracle_changes": ["properties/x.py"],
            "oracle_change_reasons": {"properties/x.py": "under oracle_paths"},
            "oracle_paths_unmatched": ["tests/"],
            "oracle_model": "closed",
            "untracked_reads": [".pytest_cache/v/cache/lastfailed"],
            "unscored_new_files": [],
            "base_revision": HEX40,
            "base_resolution": {
                "given": "refs/remotes/origin/main",
                "used": HEX40,
                "how": "merge-base",
            },
            "head_revision": HEX64,
            "command": ["pytest", "-q"],
            "command_exit": 0,
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
            "flake_results": {"t::y": "fail"},
            "tripwire": "sentinels",
            "harness": {
                "pytest": "8.3.0",
                "rootdir": ".",
                "config_file": None,
                "main": "pytest",
                "conftests": ["conftest.py"],
                "plugins": [{"name": "xdist", "source": "pytest-xdist 3.5"}],
                "pythonpath": ["src"],
                "addopts": ["-q"],
                "shadowing": {"json": "json.py"},
                "test_side_modules": ["helpers"],
            },
            "run_order": {
                "tests": 3,
                "seeds": {"gw0": {"plugin": "randomly", "seed": 7}},
                "workers": {"gw0": ["t::x", "t::y"], "gw1": ["t::z"]},
                "file": None,
            },
            "tests_matched": {"p.one": 3, "p.two": 0},
            "expected_skips_left_out": {"p.two": 2},
            "failing_tests": {
                "p.two": [
                    {"id": "t.py::a", "outcome": "skip", "reason": "no network"},
                    {"id": "t.py::b", "outcome": "fail", "reason": None},
                ]
            },
            "failing_counts": {"p.two": 2},
            "missing_reasons": {"p.two": "no test matched once 2 expected skip(s) were left out"},
            "unpinned_failures": {"count": 1, "first_ids": ["t.py::c"]},
            "shards": None,
            "recorded_at": STAMP,
        },
        {
            "kind": "property",
            "ledger_id": HEX32,
            "pin_id": "fix.pin-1",
            "property_pin_id": "props",
            "property_pin_sha256": HEX64,
            "fixture_digest": HEX64,
            "status_by_id": {},
            "oracle_moved": False,
            "oracle_changes": [],
            "oracle_change_reasons": {},
            "oracle_paths_unmatched": [],
            "oracle_model": "inferred",
            "untracked_reads": [],
            "unscored_new_files": [],
            "base_revision": HEX40,
            "base_resolution": {"given": HEX40, "used": HEX40, "how": "ancestor"},
            "head_revision": HEX40,
            "command": ["runner"],
            "command_exit": 1,
            "junit_report": {"path": "../report.xml", "size": 10, "sha256": HEX64},
            "duration_ms": 0,
            "network": "allowed",
            "network_enforcement": "none",
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
                "writable_reads": ["build/x"],
            },
            "flake_results": {},
            "tripwire": "none",
            "harness": None,
            "run_order": None,
            "tests_matched": {},
            "expected_skips_left_out": {},
            "failing_tests": {},
            "failing_counts": {},
            "missing_reasons": {},
            "unpinned_failures": {"count": 0, "first_ids": []},
            "shards": {
                "plan_sha256": HEX64,
                "total": 2,
                "ledger_ids": [HEX32, HEX32],
                "ledger_sha256s": [HEX64, HEX64],
            },
            "recorded_at": STAMP,
        },
    ],
    "property-shard-ledger": [
        {
            "kind": "property_shard",
            "ledger_id": HEX32,
            "shard": {"index": 0, "total": 2, "plan_sha256": HEX64},
            "pin_id": "fix.pin-1",
            "property_pin_id": "props",
            "property_pin_sha256": HEX64,
            "flake_pin_sha256": None,
            "fixture_digest": HEX64,
            "oracle_moved": False,
            "oracle_changes": [],
            "oracle_change_reasons": {},
            "oracle_paths_unmatched": [],
            "oracle_model": "closed",
            "untracked_reads": [],
            "unscored_new_files": [],
            "base_revision": HEX64,
            "base_resolution": {"given": "v1.0~2", "used": HEX64, "how": "ancestor"},
            "head_revision": HEX64,
            "command": ["pytest", "-q"],
            "command_exit": 1,
            "duration_ms": 5,
            "network": "banned",
            "network_enforcement": "socket-guard",
            "sandbox": {
                "layers": {
                    "environment": "held",
                    "no_new_privs": "held",
                    "pid": "missing: no /proc",
                    "mount": "held",
                    "file_commands": "held",
                },
                "env_removed": ["GITHUB_TOKEN"],
                "env_kept": [],
                "writable_reads": [],
            },
            "tripwire": "sentinels",
            "harness": None,
            "run_order": {
                "tests": 1,
                "seeds": {"main": {"plugin": "randomly", "seed": 42}},
                "workers": {"main": ["t.py::a"]},
                "file": None,
            },
            "tests_matched": {"p.one": 1},
            "ids_run": ["t.py::a"],
            "results": [
                {
                    "id": "t.py::a",
                    "property_ids": ["p.one"],
                    "outcome": "fail",
                    "skip_reason": None,
                    "xfail": True,
                }
            ],
            "recorded_at": STAMP,
        },
        {
            "kind": "property_shard",
            "ledger_id": HEX32,
            "shard": {"index": 1, "total": 3, "plan_sha256": HEX64},
            "pin_id": "fix.pin-1",
            "property_pin_id": "props",
            "property_pin_sha256": HEX64,
            "flake_pin_sha256": None,
            "fixture_digest": HEX64,
            "oracle_moved": False,
            "oracle_changes": [],
            "oracle_change_reasons": {},
            "oracle_paths_unmatched": ["tests/"],
            "oracle_model": "inferred",
            "untracked_reads": [],
            "unscored_new_files": [],
            "base_revision": HEX40,
            "base_resolution": {"given": HEX40, "used": HEX40, "how": "ancestor"},
            "head_revision": HEX40,
            "command": ["pytest", "-q"],
            "command_exit": 1,
            "duration_ms": 7,
            "network": "banned",
            "network_enforcement": "socket-guard",
            "sandbox": {
                "layers": {
                    "environment": "held",
                    "no_new_privs": "held",
                    "pid": "held",
                    "mount": "missing: old kernel",
                    "file_commands": "missing: no mount",
                },
                "env_removed": ["GITHUB_TOKEN"],
                "env_kept": [],
                "writable_reads": [],
            },
            "tripwire": "sentinels",
            "harness": None,
            "run_order": {
                "tests": 2,
                "seeds": {},
                "workers": None,
                "file": {"path": "shard.json.run-order.json", "sha256": "ab" * 32},
            },
            "tests_matched": {"p.one": 2, "p.two": 0},
            "ids_run": ["t.py::a", "t.py::b"],
            "results": [
                {
                    "id": "t.py::a",
                    "property_ids": ["p.one"],
                    "outcome": "pass",
                    "skip_reason": None,
                    "xfail": False,
                },
                {
                    "id": "t.py::b",
                    "property_ids": [],
                    "outcome": "skip",
                    "skip_reason": "later",
                    "xfail": False,
                },
            ],
            "recorded_at": STAMP,
        },
    ],
    "shard-plan": [
        {
            "kind": "shard_plan",
            "ledger_id": HEX32,
            "pin_id": "fix.pin-1",
            "fixture_digest": HEX64,
            "head_revision": HEX40,
            "property_pin_sha256": HEX64,
            "flake_pin_sha256": None,
            "properties_pin_text": "{}",
            "flake_pin_text": None,
            "command": ["pytest", "-q"],
            "all_tests": False,
            "balanced_by": "count",
            "slices": [["t.py::a", "t.py::b"], []],
            "recorded_at": STAMP,
        }
    ],
    "dual-pin-ledger": [
        {
            "kind": "dual_pin",
            "ledger_id": HEX32,
            "dual_pin": "run",
            "drift": True,
            "left_pin_id": "a",
            "right_pin_id": "b",
            "left_digest": HEX64,
            "right_digest": HEX64,
            "differences": {"p.one": {"left": "pass", "right": "absent"}},
            "recorded_at": STAMP,
        },
        {"kind": "dual_pin", "ledger_id": HEX32, "dual_pin": "not_run", "recorded_at": STAMP},
    ],
    "flake-ledger": [
        {
            "kind": "flake",
            "ledger_id": HEX32,
            "test_id": "t::y",
            "flake_pin_id": "flakes",
            "accepted_revision": HEX40,
            "review_by": "2026-12-01",
            "observed": "fail",
            "fixture_digest": HEX64,
            "property_ledger_sha256": HEX64,
            "recorded_at": STAMP,
        }
    ],
    "merge-decision": [
        {
            "kind": "merge",
            "ledger_id": HEX32,
            "posture": "reject",
            "row": 3,
            "reason": "r",
            "inputs": {
                "fixture": HEX64,
                "property": None,
                "dual_pin": None,
                "flakes": [HEX64],
                "flake_evidence": None,
            },
            "recorded_at": STAMP,
        }
    ],
}


def full_validator_accepts(document: Any, schema_name: str) -> bool:
    """The reference: the jsonschema validator, on the whole document."""
    return not any(True for _ in jsonio._validator(schema_name).iter_errors(document))


def leaf_variants(value: Any) -> list[Any]:
    """Values near `value` that a schema may or may not allow in its place."""
    near: list[Any] = [None, True, False, 0, -1, 1, 1.0, 1.5, math.inf, "", [], {}, [value]]
    if isinstance(value, str):
        near += [value + "\n", value.upper(), value[:-1], value + "0", "\n" + value, "x" + value]
        near += [value + "\u00e9", Colour.RED, value[:-1] + "g", value[:-1] + "\u00e9"]
    if isinstance(value, int) and not isinstance(value, bool):
        near += [value + 1, -value - 1, Level.HIGH, float(value), str(value)]
    if isinstance(value, list) and value:
        near += [value + value, value[:1], value[1:], [*value, None]]
    return near


def paths_in(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths_in(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths_in(value, (*prefix, index))
    return found


def at(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


@st.composite
def mutated(draw: st.DrawFn, schema_name: str) -> Any:
    """A seed document after a few edits: values swapped, keys dropped, added or renamed."""
    document = copy.deepcopy(draw(st.sampled_from(SEEDS[schema_name])))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths_in(document)))
        target = at(document, path)
        action = draw(st.sampled_from(["replace", "drop", "add", "anything"]))
        if not path or action == "anything":
            replacement = draw(json_like) if path else draw(st.dictionaries(keys, json_like))
        elif action == "replace":
            replacement = draw(st.sampled_from(leaf_variants(target)))
        else:
            replacement = None
        if not path:
            document = replacement
            continue
        parent = at(document, path[:-1])
        if action == "drop":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(keys | st.sampled_from(list(parent)))] = copy.deepcopy(target)
        elif action == "add":
            parent.append(copy.deepcopy(target))
        else:
            parent[path[-1]] = replacement
    return document


def test_every_packaged_schema_is_valid_and_compiles() -> None:
    from jsonschema import Draft202012Validator

    for schema_name in SCHEMAS:
        schema = jsonio.load_schema(schema_name)
        Draft202012Validator.check_schema(schema)
        assert jsonio._compiled(schema_name) is not None, schema_name
        for seed in SEEDS[schema_name]:
            assert full_validator_accepts(seed, schema_name), (schema_name, seed)
            assert jsonio._passes_compiled(seed, schema_name), (schema_name, seed)


@pytest.mark.parametrize("schema_name", SCHEMAS)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_the_compiled_check_agrees_with_jsonschema(schema_name: str, data: st.DataObject) -> None:
    document = data.draw(mutated(schema_name) | json_like)
    check = jsonio._compiled(schema_name)
    assert check is not None
    expected = full_validator_accepts(document, schema_name)
    with contextlib.suppress(compiled_schema.Unsure):
        assert check(document) == expected
    refused = refusal(lambda: jsonio.validate(document, schema_name, Path("doc.json"), "doc"))
    assert refused == (not expected)


def refusal(action: Callable[[], None]) -> bool:
    try:
        action()
    except Refused:
        return True
    return False


@pytest.mark.parametrize("schema_name", ["fixture-pin", "fixture-ledger"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_the_bulk_check_of_long_files_arrays_agrees_with_jsonschema(
    schema_name: str, data: st.DataObject
) -> None:
    document = copy.deepcopy(SEEDS[schema_name][0])
    files: list[Any] = (
        [f"fixtures/{index}.json" for index in range(40)]
        if schema_name == "fixture-pin"
        else files_array(40)
    )
    for _ in range(data.draw(st.integers(0, 2))):
        index = data.draw(st.integers(0, len(files) - 1))
        item: Any = files[index]
        if isinstance(item, dict) and data.draw(st.booleans()):
            key = data.draw(st.sampled_from([*item, "extra"]))
            if key in item and data.draw(st.booleans()):
                item = {name: value for name, value in item.items() if name != key}
            else:
                variant = data.draw(st.sampled_from(leaf_variants(item.get(key, 0))))
                item = {**item, key: variant}
        else:
            item = data.draw(st.sampled_from([*leaf_variants(item), files[0], item]))
        files[index] = item
    document["files"] = files
    expected = full_validator_accepts(document, schema_name)
    refused = refusal(lambda: jsonio.validate(document, schema_name, Path("doc.json"), "doc"))
    assert refused == (not expected)


def results_array(count: int) -> list[dict[str, Any]]:
    outcomes = itertools.cycle(["pass", "fail", "skip", "error"])
    return [
        {
            "id": f"t.py::test_{index}[\u00e9]",
            "property_ids": ["p.one"] * (index % 3),
            "outcome": outcome,
            "skip_reason": "later" if outcome == "skip" else None,
            "xfail": outcome == "fail" and index % 2 == 1,
        }
        for index, outcome in zip(range(count), outcomes, strict=False)
    ]


# A long per-test array of each ledger that has one, as its writer makes it.
PER_TEST_ARRAYS: dict[tuple[str, str], Callable[[], list[Any]]] = {
    ("property-shard-ledger", "results"): lambda: results_array(40),
    ("property-shard-ledger", "ids_run"): lambda: [f"t.py::test_{i}" for i in range(40)],
    ("shard-plan", "slices"): lambda: [
        [f"t.py::test_{i}" for i in range(k, 40, 3)] for k in range(3)
    ],
}


def spoiled(data: st.DataObject, item: Any) -> Any:
    """ITEM with one edit that its item schema may or may not allow."""
    if isinstance(item, dict) and data.draw(st.booleans()):
        key = data.draw(st.sampled_from([*item, "extra"]))
        if key in item and data.draw(st.booleans()):
            return {name: value for name, value in item.items() if name != key}
        return {**item, key: data.draw(st.sampled_from(leaf_variants(item.get(key, 0))))}
    if isinstance(item, list) and item and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(item) - 1))
        return [*item[:index], spoiled(data, item[index]), *item[index + 1 :]]
    return data.draw(st.sampled_from(leaf_variants(item)))


@pytest.mark.parametrize(("schema_name", "key"), list(PER_TEST_ARRAYS))
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_the_bulk_check_of_per_test_arrays_agrees_with_jsonschema(
    schema_name: str, key: str, data: st.DataObject
) -> None:
    document = copy.deepcopy(SEEDS[schema_name][0])
    items = PER_TEST_ARRAYS[(schema_name, key)]()
    for _ in range(data.draw(st.integers(0, 2))):
        index = data.draw(st.integers(0, len(items) - 1))
        items[index] = spoiled(data, items[index])
    document[key] = items
    expected = full_validator_accepts(document, schema_name)
    refused = refusal(lambda: jsonio.validate(document, schema_name, Path("doc.json"), "doc"))
    assert refused == (not expected)


def test_the_bulk_check_knows_the_outcomes_the_schema_allows() -> None:
    schema = jsonio.load_schema("property-shard-ledger")
    outcome = schema["properties"]["results"]["items"]["properties"]["outcome"]
    assert set(outcome["enum"]) == jsonio.RESULT_OUTCOMES


def test_a_spoiled_result_is_still_named_by_its_place() -> None:
    document = copy.deepcopy(SEEDS["property-shard-ledger"][0])
    document["results"] = results_array(500)
    document["results"][321]["outcome"] = "xfail"
    with pytest.raises(Refused) as caught:
        jsonio.validate(document, "property-shard-ledger", Path("s.json"), "ledger")
    assert str(caught.value).startswith("s.json: $.results[321].outcome: ")


def test_a_refusal_still_names_the_offending_item() -> None:
    document = copy.deepcopy(SEEDS["fixture-ledger"][0])
    document["files"] = files_array(500)
    document["files"][321]["sha256"] = HEX64.upper()
    with pytest.raises(Refused) as caught:
        jsonio.validate(document, "fixture-ledger", Path("l.json"), "ledger")
    assert str(caught.value).startswith("l.json: $.files[321].sha256: ")


def test_a_keyword_the_checks_do_not_know_is_not_compiled() -> None:
    with pytest.raises(compiled_schema.Unsupported):
        compiled_schema.compile_schema({"type": "object", "patternProperties": {"^x": {}}})
    with pytest.raises(compiled_schema.Unsupported):
        compiled_schema.compile_schema({"if": {"type": "string"}})


def test_unique_numbers_are_left_to_jsonschema() -> None:
    check = compiled_schema.compile_schema({"uniqueItems": True})
    assert check(["a", "b"]) is True
    assert check(["a", "a"]) is False
    with pytest.raises(compiled_schema.Unsure):
        check([1, True])


@pytest.mark.parametrize(("key", "value"), [("pin_id", "fix.pin-1\n"), ("digest", HEX64 + "\n")])
def test_a_pattern_dollar_does_not_match_before_a_trailing_newline(key: str, value: str) -> None:
    document = {**SEEDS["fixture-pin"][0], key: value}
    with pytest.raises(Refused) as caught:
        jsonio.validate(document, "fixture-pin", Path("p.json"), "fixture pin")
    assert str(caught.value).startswith(f"p.json: $.{key}: ")
    assert "does not match" in str(caught.value)


def test_not_inverts_its_subschema() -> None:
    check = compiled_schema.compile_schema({"not": {"required": ["a"]}})
    assert check({"b": 1}) is True
    assert check({"a": 1}) is False
    assert check([]) is False  # `required` holds for anything but an object


@pytest.mark.parametrize(
    ("folders", "valid"),
    [
        ({}, True),
        ({"fixtures_dir": "f"}, True),
        ({"fixtures_dirs": ["f", "g"]}, True),
        ({"fixtures_dir": "f", "fixtures_dirs": ["g"]}, False),
        ({"fixtures_dirs": []}, False),
        ({"fixtures_dirs": ["f", "f"]}, False),
    ],
)
def test_a_fixture_pin_names_one_folder_or_a_list_never_both(
    folders: dict[str, Any], valid: bool
) -> None:
    document = {"pin_id": "p", "algorithm": "sha256", "files": ["f/a"], **folders}
    check = jsonio._compiled("fixture-pin")
    assert check is not None
    assert check(document) is valid
    assert full_validator_accepts(document, "fixture-pin") is valid


def test_one_of_means_exactly_one() -> None:
    check = compiled_schema.compile_schema({"oneOf": [{"type": "string"}, {"minLength": 2}]})
    assert check("a") is True  # the first only
    assert check(3) is True  # the second only: minLength says nothing about a number
    assert check("ab") is False  # both


# --- reading -------------------------------------------------------------------------------------


def test_a_document_is_read_whole_whatever_its_size_says(tmp_path: Path) -> None:
    document = tmp_path / "pin.json"
    document.write_bytes(b"x" * 1000)
    assert jsonio.read_bytes_capped(document, "pin") == b"x" * 1000
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    writer = os.fork()
    if writer == 0:  # a FIFO's size is 0: what comes through it is read all the same
        with fifo.open("wb") as stream:
            stream.write(b"y" * 5000)
        os._exit(0)
    try:
        assert jsonio.read_bytes_capped(fifo, "pin") == b"y" * 5000
    finally:
        os.waitpid(writer, 0)


def test_a_document_over_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonio, "MAX_DOCUMENT_BYTES", 100)
    document = tmp_path / "pin.json"
    document.write_bytes(b"x" * 101)
    with pytest.raises(Refused, match="pin is larger than 100 bytes"):
        jsonio.read_bytes_capped(document, "pin")
    document.write_bytes(b"x" * 100)
    assert len(jsonio.read_bytes_capped(document, "pin")) == 100


def test_a_local_ref_is_followed_even_when_it_refers_to_itself() -> None:
    tree = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    check = compiled_schema.compile_schema(tree)
    assert check({"next": {"next": {}}}) is True
    assert check({"next": {"next": 3}}) is False
    with pytest.raises(compiled_schema.Unsupported):
        compiled_schema.compile_schema({"$ref": "https://example.com/schema"})


# --- Rows: objects held as columns ----------------------------------------------------------------


@st.composite
def rows(draw: st.DrawFn) -> jsonio.Rows:
    names = tuple(draw(st.lists(keys, max_size=3, unique=True)))
    count = draw(st.integers(0, 1200)) if names else 0
    values = st.one_of(scalars, json_like) if draw(st.booleans()) else st.text(max_size=3)
    columns = tuple(
        draw(st.lists(values, min_size=min(count, 3), max_size=min(count, 3))) * (count // 3)
        + draw(st.lists(values, min_size=count % 3, max_size=count % 3))
        for _ in names
    )
    return jsonio.Rows(names, columns)


@settings(max_examples=EXAMPLES, deadline=None)
@given(rows())
def test_rows_are_written_as_their_objects(value: jsonio.Rows) -> None:
    assert jsonio.dumps({"files": value, "n": 1}) == reference({"files": value.objects(), "n": 1})


@pytest.mark.parametrize("schema_name", ["fixture-ledger", "property-ledger", "fixture-pin"])
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_rows_are_validated_as_their_objects(schema_name: str, data: st.DataObject) -> None:
    document = copy.deepcopy(SEEDS[schema_name][0])
    objects = files_array(data.draw(st.integers(0, 30)))
    spoil: bool = data.draw(st.booleans())
    if objects and spoil:
        index = data.draw(st.integers(0, len(objects) - 1))
        key = data.draw(st.sampled_from(sorted(objects[index])))
        objects[index][key] = data.draw(st.sampled_from(leaf_variants(objects[index][key])))
    names = ("path", "size", "sha256")
    held = jsonio.Rows(names, tuple([item[name] for item in objects] for name in names))
    as_rows = refusal(
        lambda: jsonio.validate({**document, "files": held}, schema_name, Path("d"), "d")
    )
    as_list = refusal(
        lambda: jsonio.validate({**document, "files": objects}, schema_name, Path("d"), "d")
    )
    assert (
        as_rows
        == as_list
        == (not full_validator_accepts({**document, "files": objects}, schema_name))
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), max_size=1100), st.data())
def test_hex_digests_read_as_the_hex_of_each_digest(
    digests: list[bytes], data: st.DataObject
) -> None:
    column = jsonio.HexDigests(b"".join(digests))
    as_strings = [digest.hex() for digest in digests]
    assert len(column) == len(as_strings)
    assert list(column) == as_strings
    start, stop = data.draw(st.integers(-1200, 1200)), data.draw(st.integers(-1200, 1200))
    step = data.draw(st.sampled_from([None, 1, 2, -1]))
    assert column[start:stop:step] == as_strings[start:stop:step]
    index = data.draw(st.integers(-1200, 1200))
    if -len(as_strings) <= index < len(as_strings):
        assert column[index] == as_strings[index]
    else:
        with pytest.raises(IndexError):
            column[index]


def test_hex_digests_refuse_a_partial_digest() -> None:
    with pytest.raises(ValueError, match="33 bytes is not a whole number of digests"):
        jsonio.HexDigests(bytes(33))


@pytest.mark.parametrize("differences", [{None: {}, 1: None, "": {}}, {0: None}])
def test_a_record_with_keys_json_cannot_hold_is_refused_not_a_crash(differences: Any) -> None:
    """Hypothesis's thorough profile: jsonschema's ranking of errors compared an int with a
    str in their paths, and `validate` raised a TypeError for a record built wrong."""
    document = {**SEEDS["dual-pin-ledger"][0], "drift": True, "differences": differences}
    with pytest.raises(Refused, match=r"^doc\.json: \$"):
        jsonio.validate(document, "dual-pin-ledger", Path("doc.json"), "doc")
