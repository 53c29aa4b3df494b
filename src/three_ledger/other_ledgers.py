"""The ledger records that neither `digest` nor `properties` writes: dual-pin, flake, merge,
shard plan, property shard, vet and flake evidence (SPEC 4, 5).

Kept apart from `ledgers.py`: a dataclass costs about 0.3 ms to make at import, and
`properties` would otherwise pay for these 18 on every run. They are read and written by
`ledgers.read_ledger` and `ledgers.write_ledger`, as every other record.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from three_ledger.base_resolution import BaseResolution
from three_ledger.frozen import frozen
from three_ledger.ledgers import Harness, RunOrder, Sandbox, _Encoded
from three_ledger.vocabulary import (
    DualPinState,
    Enforcement,
    FlakeVerdict,
    MutationKind,
    Network,
    OracleModel,
    Outcome,
    Posture,
    RerunMode,
    Status,
    Tripwire,
    VetVerdict,
)


@frozen
class StatusDifference:
    """One property's status on each side; `absent` where a side has no such property."""

    left: str
    right: str


@frozen(kw_only=True)
class DualPinLedger(_Encoded):
    """A dual-pin comparison; a `not_run` record holds only its identity and clock."""

    KIND: ClassVar[str] = "dual_pin"
    SCHEMA: ClassVar[str] = "dual-pin-ledger"
    ledger_id: str
    dual_pin: DualPinState = DualPinState.RUN
    drift: bool = False
    left_pin_id: str = ""
    right_pin_id: str = ""
    left_digest: str = ""
    right_digest: str = ""
    differences: dict[str, StatusDifference] = dataclasses.field(default_factory=dict)
    recorded_at: str

    @classmethod
    def not_run(cls, ledger_id: str, recorded_at: str) -> DualPinLedger:
        return cls(ledger_id=ledger_id, dual_pin=DualPinState.NOT_RUN, recorded_at=recorded_at)

    @property
    def run(self) -> bool:
        return self.dual_pin is DualPinState.RUN

    def to_json(self) -> dict[str, Any]:
        document = super().to_json()
        if self.run:
            return document
        kept = ("kind", "ledger_id", "dual_pin", "recorded_at")
        return {key: document[key] for key in kept}


@frozen(kw_only=True)
class FlakeLedger(_Encoded):
    """The flake ledger (SPEC 4.4): a pre-listed flaky test seen failing again."""

    KIND: ClassVar[str] = "flake"
    SCHEMA: ClassVar[str] = "flake-ledger"
    ledger_id: str
    test_id: str
    flake_pin_id: str
    accepted_revision: str
    review_by: str
    observed: Outcome
    fixture_digest: str
    property_ledger_sha256: str
    recorded_at: str


@frozen
class MergeInputs:
    """The SHA-256 of each ledger a merge decision was made from."""

    fixture: str | None
    property: str | None
    dual_pin: str | None
    flakes: tuple[str, ...]
    # `--flake-evidence`'s, where merge read one.
    flake_evidence: str | None = None


@frozen(kw_only=True)
class MergeDecision(_Encoded):
    """merge's decision (SPEC 4.5): the posture, the row of the table, and why."""

    KIND: ClassVar[str] = "merge"
    SCHEMA: ClassVar[str] = "merge-decision"
    ledger_id: str
    posture: Posture
    row: int
    reason: str
    inputs: MergeInputs
    recorded_at: str


@frozen(kw_only=True)
class ShardPlan(_Encoded):
    """The node ids one collection fixed, split into slices; shards name it by sha256.

    It carries the text of the pins it was made under, so that `combine` scores the merged
    results with exactly those pins.
    """

    KIND: ClassVar[str] = "shard_plan"
    SCHEMA: ClassVar[str] = "shard-plan"
    ledger_id: str
    pin_id: str
    fixture_digest: str
    head_revision: str
    property_pin_sha256: str
    flake_pin_sha256: str | None
    properties_pin_text: str
    flake_pin_text: str | None
    command: tuple[str, ...]
    all_tests: bool
    balanced_by: str
    slices: tuple[tuple[str, ...], ...]
    recorded_at: str


@frozen
class Shard:
    """Which shard of which plan a shard ledger scores."""

    index: int
    total: int
    plan_sha256: str


@frozen
class ShardResult:
    """One test a shard ran: its node id, marker property ids, outcome, skip reason, and
    whether its `fail` is an expected failure (xfail)."""

    id: str
    property_ids: tuple[str, ...]
    outcome: Outcome
    skip_reason: str | None = None
    xfail: bool = False


@frozen(kw_only=True)
class PropertyShardLedger(_Encoded):
    """One slice of a shard plan, run; `combine` turns all of them into a property ledger."""

    KIND: ClassVar[str] = "property_shard"
    SCHEMA: ClassVar[str] = "property-shard-ledger"
    ledger_id: str
    shard: Shard
    pin_id: str
    property_pin_id: str
    property_pin_sha256: str
    flake_pin_sha256: str | None
    fixture_digest: str
    oracle_moved: bool
    oracle_changes: tuple[str, ...]
    oracle_change_reasons: dict[str, str]
    oracle_paths_unmatched: tuple[str, ...]
    oracle_model: OracleModel = OracleModel.INFERRED
    untracked_reads: tuple[str, ...] = ()
    unscored_new_files: tuple[str, ...] = ()
    base_revision: str
    base_resolution: BaseResolution
    head_revision: str
    command: tuple[str, ...]
    command_exit: int
    duration_ms: int
    network: Network
    network_enforcement: Enforcement
    sandbox: Sandbox
    tripwire: Tripwire
    harness: Harness | None
    run_order: RunOrder | None = None
    # Per property, the distinct results of this slice it counted (expected skips left out).
    tests_matched: dict[str, int]
    ids_run: tuple[str, ...]
    results: tuple[ShardResult, ...]
    recorded_at: str


@frozen
class VetTrial:
    """One mutant a property met: the operator, how many files it changed, the outcome."""

    operator: str
    kind: MutationKind
    files_mutated: int
    status: Status
    command_exit: int


@frozen
class PropertyVet:
    """vet's finding on one property: whether any mutation of its fixtures made it fail."""

    baseline: Status
    verdict: VetVerdict
    # Counted as a gate: killed (strong, or weak without --strict), reading a domain file.
    gate: bool
    operators_tried: tuple[str, ...]
    killed_by: tuple[str, ...]
    survived: tuple[str, ...]
    statuses_seen: tuple[Status, ...]
    trials: tuple[VetTrial, ...]
    domain_files: int
    unread_domain_files: tuple[str, ...]


@frozen
class FileVet:
    """`--per-file`: one file mutated alone, and the properties that noticed (failed)."""

    path: str
    operators_tried: tuple[str, ...]
    noticed_by: tuple[str, ...]


@frozen
class PerFileVet:
    """`--per-file`: each requested file mutated alone, and the files nothing noticed."""

    requested: int
    files: tuple[FileVet, ...]
    unnoticed: tuple[str, ...]


@frozen(kw_only=True)
class VetLedger(_Encoded):
    """The vet ledger: how strong each property is on its own fixtures."""

    KIND: ClassVar[str] = "vet"
    SCHEMA: ClassVar[str] = "vet-ledger"
    ledger_id: str
    pin_id: str
    property_pin_id: str
    property_pin_sha256: str
    fixture_digest: str
    command: tuple[str, ...]
    network: Network
    network_enforcement: Enforcement
    strict: bool
    runs: int
    duration_ms: int
    harness: Harness
    properties: dict[str, PropertyVet]
    unread_pinned_files: tuple[str, ...]
    per_file: PerFileVet | None
    recorded_at: str
    # Mutant runs whose results were reused from the result cache rather than made again.
    reused_runs: int = 0


@frozen
class ModeTally:
    """One rerun mode of a candidate: its runs, how many failed (fail or error), how many
    broke as a whole, and the failure rate's bound, in words that say one- or two-sided."""

    runs: int
    failed: int
    broken: int
    bound: str | None


@frozen
class FlakeProposal:
    """A flake pin entry for a person to paste; FILL-IN fields the flake pin schema refuses."""

    test_id: str
    test: str
    accepted_revision: str
    review_by: str
    note: str


@frozen
class CandidateEvidence:
    """flake-evidence's reruns of one candidate, and the verdict they give."""

    id: str
    # Why it is a candidate: flake_entry, property, unpinned or given (--candidates).
    reason: str
    property_ids: tuple[str, ...]
    worker: str
    prefix: int
    modes: dict[RerunMode, ModeTally]
    verdict: FlakeVerdict
    # For a victim: the test whose run before it makes it fail, when the budget found it.
    polluter: str | None
    # Pinned files or oracles a rerun changed in the scratch copy (restored before the next).
    inputs_changed: tuple[str, ...]
    # What the budget left undone; None when every rerun planned ran.
    unfinished: str | None
    proposal: FlakeProposal | None


@frozen(kw_only=True)
class FlakeEvidenceLedger(_Encoded):
    """Reruns of flake candidates in the sandbox of `properties`; merge reads it only for the
    flake notes whose test failed every rerun."""

    KIND: ClassVar[str] = "flake_evidence"
    SCHEMA: ClassVar[str] = "flake-evidence-ledger"
    ledger_id: str
    pin_id: str
    property_pin_id: str
    property_pin_sha256: str
    fixture_digest: str
    property_ledger_sha256: str
    head_revision: str
    command: tuple[str, ...]
    # The interval level, as given (`0.95`): ledgers hold no floats.
    confidence: str
    reruns: int
    budget_s: int
    runs: int
    duration_ms: int
    network: Network
    network_enforcement: Enforcement
    sandbox_layers: dict[str, str]
    candidates: tuple[CandidateEvidence, ...]
    recorded_at: str
