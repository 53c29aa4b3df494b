"""Ledger records and merge evidence built in memory, each field overridable by keyword."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from three_ledger.base_resolution import BaseResolution
from three_ledger.ledgers import FileEntry, FixtureLedger, PropertyLedger, Sandbox
from three_ledger.merge_table import Evidence, FlakePinView, LiveTree, PinChanges, Reading
from three_ledger.other_ledgers import (
    CandidateEvidence,
    DualPinLedger,
    FlakeEvidenceLedger,
    FlakeLedger,
    ModeTally,
)
from three_ledger.pins import FlakeEntry, FlakePin
from three_ledger.vocabulary import BaseHow, FlakeVerdict, RerunMode

HEX = "ab" * 32
COMMIT = "cd" * 20
STAMP = "2026-09-25T12:00:00.123456Z"
# The layers of the process and mount namespaces, as a run with every layer records them.
HELD_LAYERS = {"pid": "held", "mount": "held", "file_commands": "held"}


def property_ledger(**change: Any) -> PropertyLedger:
    fields: dict[str, Any] = {
        "ledger_id": "0" * 32,
        "pin_id": "fixpin-a",
        "property_pin_id": "proppin",
        "property_pin_sha256": HEX,
        "fixture_digest": HEX,
        "status_by_id": {"orders.a": "pass", "orders.b": "fail"},
        "oracle_moved": False,
        "oracle_changes": (),
        "oracle_change_reasons": {},
        "oracle_paths_unmatched": (),
        "base_revision": COMMIT,
        "base_resolution": BaseResolution("HEAD", COMMIT, BaseHow.ANCESTOR),
        "head_revision": COMMIT,
        "command": ("python3", "-m", "pytest"),
        "command_exit": 1,
        "junit_report": None,
        "duration_ms": 12,
        "network": "banned",
        "network_enforcement": "netns",
        "sandbox": Sandbox(
            layers={"environment": "held", "no_new_privs": "held", **HELD_LAYERS},
            env_removed=("GITHUB_TOKEN",),
            env_kept=(),
        ),
        "flake_results": {},
        "tripwire": "sentinels",
        "harness": None,
        "recorded_at": STAMP,
    }
    return PropertyLedger(**{**fields, **change})


DIGEST = "aa" * 32
OTHER_DIGEST = "bb" * 32
PROP_SHA = "cc" * 32
TODAY = datetime.date(2026, 9, 25)
FLAKY = "orders.slow"


def stamp(micro: int) -> str:
    return f"2026-09-25T12:00:00.{micro:06d}Z"


def fixture_ledger(**change: Any) -> FixtureLedger:
    entry = FileEntry("fixtures/a.json", 2, DIGEST)
    fields: dict[str, Any] = {
        "ledger_id": "1" * 32, "pin_id": "fixpin-a", "digest": DIGEST, "fixtures_dir": "fixtures",
        "files": (entry,), "recorded_at": stamp(1),
    }  # fmt: skip
    return FixtureLedger(**{**fields, **change})


def dual_pin(**change: Any) -> DualPinLedger:
    fields: dict[str, Any] = {
        "ledger_id": "2" * 32, "drift": False, "left_pin_id": "fixpin-a",
        "right_pin_id": "fixpin-b", "left_digest": DIGEST, "right_digest": OTHER_DIGEST,
        "differences": {}, "recorded_at": stamp(3),
    }  # fmt: skip
    return DualPinLedger(**{**fields, **change})


def flake_ledger(**change: Any) -> FlakeLedger:
    fields: dict[str, Any] = {
        "ledger_id": "3" * 32, "test_id": FLAKY, "flake_pin_id": "flakepin", "accepted_revision":
        "abc", "review_by": "2026-12-31", "observed": "fail", "fixture_digest": DIGEST,
        "property_ledger_sha256": PROP_SHA, "recorded_at": stamp(4),
    }  # fmt: skip
    return FlakeLedger(**{**fields, **change})


def flake_pin(review_by: datetime.date = datetime.date(2026, 12, 31)) -> FlakePin:
    entry = FlakeEntry(FLAKY, FLAKY, "abc", review_by, None, None)
    return FlakePin(Path("pins/flakes.json"), "dd" * 32, "flakepin", (entry,))


def passing_property(**change: Any) -> Any:
    fields: dict[str, Any] = {
        "fixture_digest": DIGEST,
        "status_by_id": {"orders.a": "pass", "orders.b": "pass"},
        "flake_results": {FLAKY: "fail"},
        "recorded_at": stamp(2),
    }
    return property_ledger(**{**fields, **change})


def evidence(**change: Any) -> Evidence:
    """Evidence that reaches row 9; each test changes what it is about."""
    fields: dict[str, Any] = {
        "fixture": Reading(Path("f.json"), "11" * 32, fixture_ledger()),
        "prop": Reading(Path("p.json"), PROP_SHA, passing_property()),
        "dual_pin": Reading(Path("d.json"), "22" * 32, dual_pin()),
        "flakes": (Reading(Path("fl.json"), "33" * 32, flake_ledger()),),
        "live": LiveTree(Path("pins/fixtures.json"), "fixpin-a", DIGEST),
        "pin_changes": PinChanges(Path("pins"), "main", ()),
        "flake_pin": FlakePinView(Path("pins/flakes.json"), flake_pin()),
        "today": TODAY,
    }
    return Evidence(**{**fields, **change})


def prop_reading(**change: Any) -> Reading[Any]:
    return Reading(Path("p.json"), PROP_SHA, passing_property(**change))


def flake_reading(**change: Any) -> tuple[Reading[FlakeLedger], ...]:
    return (Reading(Path("fl.json"), "33" * 32, flake_ledger(**change)),)


def flake_evidence(
    verdict: FlakeVerdict,
    test: str = "orders.slow",
    failed: dict[RerunMode, int] | None = None,
    **change: Any,
) -> Reading[FlakeEvidenceLedger]:
    """`flake-evidence`'s ledger over this evidence's property ledger: one candidate, a flake
    entry's test, with VERDICT; FAILED, of three reruns in each mode it names (by default
    every one for a consistent failure, one for any other verdict, in order and alone)."""
    if failed is None:
        count = 3 if verdict is FlakeVerdict.CONSISTENT_FAILURE else 1
        failed = {RerunMode.ORIGINAL: count, RerunMode.ISOLATED: count}
    modes = {mode: ModeTally(3, count, 0, None) for mode, count in failed.items()}
    candidate = CandidateEvidence(
        id=test, reason="flake_entry", property_ids=(), worker="main", prefix=2,
        modes=modes, verdict=verdict,
        polluter=None, inputs_changed=(), unfinished=None, proposal=None,
    )  # fmt: skip
    fields: dict[str, Any] = {
        "ledger_id": "5" * 32, "pin_id": "fixpin-a", "property_pin_id": "proppin",
        "property_pin_sha256": HEX, "fixture_digest": DIGEST, "property_ledger_sha256": PROP_SHA,
        "head_revision": COMMIT, "command": ("pytest",), "confidence": "0.95", "reruns": 3,
        "budget_s": 60, "runs": 6, "duration_ms": 100, "network": "banned",
        "network_enforcement": "netns", "sandbox_layers": HELD_LAYERS,
        "candidates": (candidate,), "recorded_at": stamp(5),
    }  # fmt: skip
    return Reading(Path("fe.json"), "44" * 32, FlakeEvidenceLedger(**{**fields, **change}))
