"""`three-ledger combine`: prove the shards covered their plan, then score them as one run.

Refused (exit 2, nothing written) unless every slice ran exactly once, exactly its planned
ids, on one head, base, digest, pin set, command and harness, with no oracle moved and no
ledger replayed. The output is a normal property ledger whose `shards` names the plan and
the shard ledgers; its statuses are scored from the union of the per-test results.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from three_ledger import run_order
from three_ledger.errors import Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import (
    LedgerFile,
    PropertyLedger,
    RunOrder,
    Sandbox,
    ShardsProvenance,
    fresh_recorded_at,
    new_ledger_id,
    read_ledger,
)
from three_ledger.other_ledgers import PropertyShardLedger, ShardPlan
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import FlakePin, PropertiesPin, load_flake_pin, load_properties_pin
from three_ledger.report.findings import findings, plain_lines, status_lines
from three_ledger.results import TestResult, scored_fields
from three_ledger.run_order import write_with_order
from three_ledger.vocabulary import LAYER_HELD, Enforcement, Outcome, weakest_tripwire

# Weakest first: the merged ledger records the weakest enforcement any shard ran under.
_ENFORCEMENT_STRENGTH = {Enforcement.NONE: 0, Enforcement.SOCKET_GUARD: 1, Enforcement.NETNS: 2}
# Keys every shard must agree on, with each other and (where the plan has it) with the plan.
_AGREED = (
    "head_revision",
    "base_revision",
    "base_resolution",
    "pin_id",
    "fixture_digest",
    "property_pin_id",
    "property_pin_sha256",
    "flake_pin_sha256",
    "command",
    "network",
    "harness",
    "oracle_model",
    "unscored_new_files",
)
_FROM_PLAN = ("head_revision", "pin_id", "fixture_digest", "property_pin_sha256", "command")


def combine(plan_path: Path, shard_paths: Sequence[Path], out: Path) -> int:
    refuse_unwritable([Output("--out", out)], inputs=[plan_path, *shard_paths])
    with nothing_left_on_failure(out):
        plan_file = read_ledger(plan_path, ShardPlan)
        shards = [read_ledger(path, PropertyShardLedger) for path in shard_paths]
        ordered = check_shards(plan_file, shards)
        properties_pin, flake_pin = plan_pins(plan_file.record)
        ledger = merged_ledger(plan_file, ordered, properties_pin, flake_pin)
        ledger = write_with_order(out, ledger)
    for line in status_lines(ledger):
        print(line, file=sys.stderr)
    for line in plain_lines(findings(ledger)):
        print(f"three-ledger: {line}" if not line.startswith(" ") else line, file=sys.stderr)
    failing = ledger.failing_ids()
    print(
        f"three-ledger: {len(ordered)} shards combined into {out}; "
        f"{len(failing)} pinned propert(ies) not pass",
        file=sys.stderr,
    )
    return ExitCode.PROPERTY_MISS if failing else ExitCode.OK


def check_shards(
    plan_file: LedgerFile[ShardPlan], shards: Sequence[LedgerFile[PropertyShardLedger]]
) -> list[LedgerFile[PropertyShardLedger]]:
    """The shards in index order, once every refusal of `combine` is ruled out."""
    plan = plan_file.record
    total = len(plan.slices)
    for shard in shards:
        record = shard.record
        if record.shard.plan_sha256 != plan_file.sha256:
            raise Refused(
                f"{shard.path}: $.shard.plan_sha256 is {record.shard.plan_sha256}, not the "
                f"sha256 of {plan_file.path} ({plan_file.sha256}): a shard of another plan"
            )
        if record.shard.total != total:
            raise Refused(
                f"{shard.path}: $.shard.total is {record.shard.total}; {plan_file.path} has "
                f"{total} slices"
            )
    _refuse_repeats(shards, total, plan_file.path)
    ordered = sorted(shards, key=lambda shard: shard.record.shard.index)
    for shard in ordered:
        _refuse_disagreement(plan, plan_file.path, ordered[0], shard)
        _refuse_wrong_ids(plan, shard)
        if shard.record.oracle_moved:
            changed = ", ".join(shard.record.oracle_changes)
            raise Refused(f"{shard.path}: $.oracle_moved is true ({changed}): nothing to combine")
    return ordered


def _refuse_repeats(
    shards: Sequence[LedgerFile[PropertyShardLedger]], total: int, plan_path: Path
) -> None:
    indices = Counter(shard.record.shard.index for shard in shards)
    twice = sorted(index for index, count in indices.items() if count > 1)
    if twice:
        raise Refused(f"shard index {twice[0]} appears {indices[twice[0]]} times among the shards")
    absent = [index for index in range(total) if index not in indices]
    if absent:
        raise Refused(
            f"shard(s) {', '.join(map(str, absent))} of {total} missing for {plan_path}: a "
            "missing shard is a refusal, never a pass"
        )
    for key in ("ledger_id", "recorded_at"):
        values = Counter(getattr(shard.record, key) for shard in shards)
        repeated = [value for value, count in values.items() if count > 1]
        if repeated:
            raise Refused(f"two shard ledgers share {key} {repeated[0]!r}: a replayed ledger")


def _refuse_disagreement(
    plan: ShardPlan,
    plan_path: Path,
    first: LedgerFile[PropertyShardLedger],
    shard: LedgerFile[PropertyShardLedger],
) -> None:
    for key in _FROM_PLAN:
        if getattr(shard.record, key) != getattr(plan, key):
            raise Refused(
                f"{shard.path}: $.{key} is {getattr(shard.record, key)!r}; {plan_path} has "
                f"{getattr(plan, key)!r}"
            )
    if shard.record.flake_pin_sha256 != plan.flake_pin_sha256:
        raise Refused(
            f"{shard.path}: $.flake_pin_sha256 is {shard.record.flake_pin_sha256!r}; "
            f"{plan_path} has {plan.flake_pin_sha256!r}"
        )
    for key in _AGREED:
        if getattr(shard.record, key) != getattr(first.record, key):
            raise Refused(
                f"{shard.path}: $.{key} differs from shard {first.record.shard.index} "
                f"({first.path}): every shard must run on the same tree, pins and harness"
            )


def _refuse_wrong_ids(plan: ShardPlan, shard: LedgerFile[PropertyShardLedger]) -> None:
    record = shard.record
    planned = plan.slices[record.shard.index]
    result_ids = [result.id for result in record.results]
    if sorted(result_ids) != sorted(record.ids_run) or len(set(result_ids)) != len(result_ids):
        raise Refused(f"{shard.path}: $.results do not match $.ids_run one to one: edited")
    fewer = sorted(set(planned) - set(record.ids_run))
    more = sorted(set(record.ids_run) - set(planned))
    if fewer:
        raise Refused(
            f"{shard.path}: shard {record.shard.index} ran {len(fewer)} planned id(s) fewer "
            f"than its slice, first {fewer[0]!r}"
        )
    if more:
        raise Refused(
            f"{shard.path}: shard {record.shard.index} ran {len(more)} id(s) outside its "
            f"slice, first {more[0]!r}"
        )


def plan_pins(plan: ShardPlan) -> tuple[PropertiesPin, FlakePin | None]:
    """The pins the plan carries, loaded and checked as pins are (their sha256 included)."""
    with tempfile.TemporaryDirectory(prefix="three-ledger-combine-") as private:
        path = Path(private) / "properties.json"
        path.write_bytes(plan.properties_pin_text.encode("utf-8"))
        properties_pin = load_properties_pin(path)
        flake_pin = None
        if plan.flake_pin_text is not None:
            flake_path = Path(private) / "flakes.json"
            flake_path.write_bytes(plan.flake_pin_text.encode("utf-8"))
            flake_pin = load_flake_pin(flake_path)
    if properties_pin.sha256 != plan.property_pin_sha256:
        raise Refused("shard plan: $.properties_pin_text does not hash to property_pin_sha256")
    if flake_pin is not None and flake_pin.sha256 != plan.flake_pin_sha256:
        raise Refused("shard plan: $.flake_pin_text does not hash to flake_pin_sha256")
    return properties_pin, flake_pin


def merged_ledger(
    plan_file: LedgerFile[ShardPlan],
    shards: Sequence[LedgerFile[PropertyShardLedger]],
    properties_pin: PropertiesPin,
    flake_pin: FlakePin | None,
) -> PropertyLedger:
    first = shards[0].record
    results = [
        TestResult(
            result.id,
            result.property_ids,
            result.outcome,
            skip_reason=result.skip_reason,
            xfail=result.xfail and result.outcome is Outcome.FAIL,
        )
        for shard in shards
        for result in shard.record.results
    ]
    weakest = min(
        (shard.record.network_enforcement for shard in shards),
        key=_ENFORCEMENT_STRENGTH.__getitem__,
    )
    unmatched = sorted({entry for s in shards for entry in s.record.oracle_paths_unmatched})
    return PropertyLedger(
        ledger_id=new_ledger_id(),
        pin_id=first.pin_id,
        property_pin_id=first.property_pin_id,
        property_pin_sha256=first.property_pin_sha256,
        fixture_digest=first.fixture_digest,
        oracle_moved=False,
        oracle_changes=(),
        oracle_change_reasons={},
        oracle_paths_unmatched=tuple(unmatched),
        oracle_model=first.oracle_model,
        untracked_reads=tuple(sorted({p for s in shards for p in s.record.untracked_reads})),
        unscored_new_files=first.unscored_new_files,
        base_revision=first.base_revision,
        base_resolution=first.base_resolution,
        head_revision=first.head_revision,
        command=first.command,
        command_exit=max(shard.record.command_exit for shard in shards),
        junit_report=None,
        duration_ms=sum(shard.record.duration_ms for shard in shards),
        network=first.network,
        network_enforcement=weakest,
        sandbox=weakest_sandbox([shard.record.sandbox for shard in shards]),
        # Like the enforcement: an empty slice's sentinels are the basic ones.
        tripwire=weakest_tripwire(shard.record.tripwire for shard in shards),
        harness=first.harness,
        run_order=shards_order(shards),
        shards=ShardsProvenance(
            plan_sha256=plan_file.sha256,
            total=len(shards),
            ledger_ids=tuple(shard.record.ledger_id for shard in shards),
            ledger_sha256s=tuple(shard.sha256 for shard in shards),
        ),
        recorded_at=fresh_recorded_at(shard.record.recorded_at for shard in shards),
        **scored_fields(
            properties_pin.selectors(),
            properties_pin.expected_skips,
            flake_pin.selectors() if flake_pin else {},
            results,
            properties_pin.requirements(),
        ),
    )


def shards_order(shards: Sequence[LedgerFile[PropertyShardLedger]]) -> RunOrder | None:
    """Each shard's order under its index (`1/gw0`); None when a shard has none."""
    orders = [(shard.record.shard.index, shard.record.run_order, shard) for shard in shards]
    if any(order is None for _, order, _ in orders):
        return None
    return run_order.combined([
        (index, order, run_order.workers(shard.path, order))
        for index, order, shard in orders
        if order is not None
    ])  # fmt: skip


def weakest_sandbox(sandboxes: Sequence[Sandbox]) -> Sandbox:
    """Each layer as the weakest shard had it (the first `missing: ...` in index order), and
    every name any shard removed or kept, and every file any shard read where it may write:
    the merged run is no better shut in than its worst shard. Shards may run on runners
    whose environments differ, so the names are not required to agree."""
    layers: dict[str, str] = {}
    for sandbox in sandboxes:
        for layer, state in sandbox.layers.items():
            if layers.get(layer, LAYER_HELD) == LAYER_HELD:
                layers[layer] = state
    return Sandbox(
        layers=layers,
        env_removed=tuple(sorted({name for s in sandboxes for name in s.env_removed})),
        env_kept=tuple(sorted({name for s in sandboxes for name in s.env_kept})),
        writable_reads=tuple(sorted({path for s in sandboxes for path in s.writable_reads})),
    )
