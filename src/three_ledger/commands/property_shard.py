"""`three-ledger properties --shard-plan PLAN --shard K`: run slice K of a shard plan.

Every refusal of `properties` applies; the plan must also have been made on this head, this
fixture digest, these pins and this command. The plugin deselects every collected test outside
the slice (plugin/shard.py), so the command's own arguments cannot widen it; an empty slice
runs only the tripwire's sentinels. A test the run collects, and the plan should hold (a
pinned property or flake entry selects it, or the plan holds every test) but holds in no
slice, refuses the shard (exit 4): the plan's collection ran the change's code outside the
sandbox, and code that steered it could leave its own failing tests out of every slice.
The `property_shard` ledger holds per-test outcomes, which `combine` scores together.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from three_ledger.commands.properties import Request
from three_ledger.errors import InfraFailure, Refused, UsageError
from three_ledger.exit_codes import ExitCode
from three_ledger.ledgers import ledger_text, read_ledger
from three_ledger.other_ledgers import PropertyShardLedger, Shard, ShardPlan, ShardResult
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.run.collection import CollectedIds
from three_ledger.run.observation import ScoredRun, observe_confined, property_ledger
from three_ledger.run.preflight import Preflight, preflight
from three_ledger.run_order import write_with_order
from three_ledger.shards import planned_ids
from three_ledger.vocabulary import Status


def property_shard(request: Request, plan_path: Path, index: int) -> int:
    """Slice INDEX of the plan at PLAN_PATH, scored as REQUEST would score the whole run."""
    plan_file = read_ledger(plan_path, ShardPlan)
    plan = plan_file.record
    total = len(plan.slices)
    if not 0 <= index < total:
        raise UsageError(f"properties: --shard must be 0..{total - 1} for {plan_file.path}")
    log_path = request.log()
    refuse_unwritable(
        [Output("--out", request.out), Output("--log", log_path)],
        pins=request.pins(),
        inputs=[plan_path],
    )
    with nothing_left_on_failure(request.out):
        scored = preflight(request.checks())
        refuse_other_plan(plan, plan_file.path, scored, request)
        with tempfile.TemporaryDirectory(prefix="three-ledger-shard-") as private:
            ids_path = Path(private) / "slice.json"
            ids_path.write_text(json.dumps(list(plan.slices[index])), encoding="utf-8")
            planned_path = Path(private) / "planned.json"
            planned = [test_id for chosen in plan.slices for test_id in chosen]
            planned_path.write_text(json.dumps(planned), encoding="utf-8")
            run = ScoredRun(
                request.command,
                request.root,
                request.timeout_s,
                log_path,
                None,
                ids_path,
                planned_path,
                out=request.out,
                keep_env=request.keep_env,
            )
            enforcement, observed = observe_confined(run, scored)
        refuse_unplanned(plan, plan_file.path, scored, observed.unplanned, log_path)
        whole = property_ledger(run, scored, enforcement, observed)
        ledger = PropertyShardLedger(
            ledger_id=whole.ledger_id,
            shard=Shard(index, total, plan_file.sha256),
            pin_id=whole.pin_id,
            property_pin_id=whole.property_pin_id,
            property_pin_sha256=whole.property_pin_sha256,
            flake_pin_sha256=scored.flake_pin.sha256 if scored.flake_pin else None,
            fixture_digest=whole.fixture_digest,
            oracle_moved=whole.oracle_moved,
            oracle_changes=whole.oracle_changes,
            oracle_change_reasons=whole.oracle_change_reasons,
            oracle_paths_unmatched=whole.oracle_paths_unmatched,
            oracle_model=whole.oracle_model,
            untracked_reads=whole.untracked_reads,
            unscored_new_files=whole.unscored_new_files,
            base_revision=whole.base_revision,
            base_resolution=whole.base_resolution,
            head_revision=whole.head_revision,
            command=whole.command,
            command_exit=whole.command_exit,
            duration_ms=whole.duration_ms,
            network=whole.network,
            network_enforcement=whole.network_enforcement,
            sandbox=whole.sandbox,
            tripwire=whole.tripwire,
            harness=whole.harness,
            run_order=whole.run_order,
            tests_matched=whole.tests_matched,
            ids_run=ledger_text([result.id for result in observed.results]),
            results=tuple(
                ShardResult(
                    ledger_text([result.id])[0],
                    result.property_ids,
                    result.outcome,
                    result.skip_reason,
                    result.xfail,
                )
                for result in observed.results
            ),
            recorded_at=whole.recorded_at,
        )
        ledger = write_with_order(request.out, ledger)
    ran = len(ledger.ids_run)
    print(
        f"three-ledger: shard {index} of {total}: {ran} of {len(plan.slices[index])} planned "
        f"tests ran; {request.out} waits for `three-ledger combine`",
        file=sys.stderr,
    )
    if ledger.oracle_moved:
        print(f"three-ledger: oracles moved: {', '.join(ledger.oracle_changes)}", file=sys.stderr)
        return ExitCode.ORACLE_MOVED
    matched = [s for s in whole.status_by_id.values() if s is not Status.MISSING]
    if any(status is not Status.PASS for status in matched):
        return ExitCode.PROPERTY_MISS
    return ExitCode.OK


# The tests a refusal names, at most.
_NAMED = 10


def refuse_unplanned(
    plan: ShardPlan,
    path: Path,
    scored: Preflight,
    unplanned: CollectedIds | None,
    log_path: Path,
) -> None:
    """Every test the run collected that the plan should hold, it holds (exit 4 if not)."""
    if unplanned is None or not unplanned.ids:
        return
    lacking = unplanned.ids
    if not plan.all_tests:
        pin = scored.properties_pin
        lacking = planned_ids(pin, scored.flake_selectors(), lacking, unplanned.property_ids)
    if not lacking:
        return
    what = "it holds every test" if plan.all_tests else "a property or flake entry selects it"
    raise InfraFailure(
        f"{path}: $.slices: this run collected {lacking[0]}, and the plan holds it in no slice "
        f"though {what}: the plan's collection saw other tests than this run, so its slices "
        "cannot stand for it (code under test can steer a collection); no shard ledger "
        f"written (log: {log_path})",
        [
            *(f"also collected and not planned: {test_id}" for test_id in lacking[1:_NAMED]),
            *([f"and {len(lacking) - _NAMED} more"] if len(lacking) > _NAMED else []),
            "make the shard plan again on this tree, or score it unsharded with `properties`",
        ],
    )


def refuse_other_plan(plan: ShardPlan, path: Path, scored: Preflight, request: Request) -> None:
    """The plan must have been made on this head, digest, pins and command (exit 2)."""
    flake_sha = scored.flake_pin.sha256 if scored.flake_pin else None
    checks = [
        ("head_revision", plan.head_revision, scored.base().head_revision),
        ("fixture_digest", plan.fixture_digest, scored.digest),
        ("pin_id", plan.pin_id, scored.fixture_pin.pin_id),
        ("property_pin_sha256", plan.property_pin_sha256, scored.properties_pin.sha256),
        ("flake_pin_sha256", plan.flake_pin_sha256, flake_sha),
        ("command", list(plan.command), list(request.command)),
    ]
    for key, planned, live in checks:
        if planned != live:
            raise Refused(
                f"{path}: $.{key}: the plan says {planned!r}, this run has {live!r}: make "
                "the shard plan again on this tree"
            )
    unscored = set(scored.base().unscored_new_files)
    left_out = sorted({
        module
        for planned_slice in plan.slices
        for test_id in planned_slice
        if (module := test_id.split("::", 1)[0]) in unscored
    })  # fmt: skip
    if left_out:
        raise Refused(
            f"{path}: $.slices: the plan holds tests of {left_out[0]}, new against the base "
            f"{scored.base().base_revision[:12]}: a scored run leaves new test modules out; "
            "make the shard plan with the same --base",
            left_out[1:],
        )
