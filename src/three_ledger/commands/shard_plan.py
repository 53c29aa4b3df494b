"""`three-ledger shard-plan`: one collection fixes the node ids to run, split into N slices.

The collection is `plan`'s (the same staged plugin, environment and network ban). The plan
records the slices, the head revision, the fixture digest and the pins (their sha256 and
text); each shard names the plan by the sha256 of its bytes.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from three_ledger import git
from three_ledger.background import Background
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.ledgers import fresh_recorded_at, new_ledger_id, write_ledger
from three_ledger.other_ledgers import ShardPlan
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.progress import progress
from three_ledger.run import network_namespace
from three_ledger.run.collection import PlanRequest, collect
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import new_tests_left_out, preflight
from three_ledger.shards import planned_ids, read_durations, split


@frozen
class ShardPlanRequest:
    pin_path: Path
    properties_path: Path
    command: list[str]
    shards: int
    root: Path
    flake_pin_path: Path | None
    durations_path: Path | None
    all_tests: bool
    timeout_s: float
    log_path: Path | None
    out: Path
    base: str | None = None
    # --keep-env: names of the job's environment the child keeps for this run.
    keep_env: tuple[str, ...] = ()


def shard_plan(request: ShardPlanRequest) -> int:
    pin_paths = [request.pin_path, request.properties_path]
    if request.flake_pin_path is not None:
        pin_paths.append(request.flake_pin_path)
    outputs = [Output("--out", request.out)]
    if request.log_path is not None:
        outputs.append(Output("--log", request.log_path))
    refuse_unwritable(outputs, pins=pin_paths)
    seconds = read_durations(request.durations_path) if request.durations_path else {}
    collecting = PlanRequest(
        pin_path=request.pin_path,
        properties_path=request.properties_path,
        command=request.command,
        root=request.root,
        flake_pin_path=request.flake_pin_path,
        timeout_s=request.timeout_s,
        log_path=request.log_path,
        as_json=True,
        keep_env=request.keep_env,
    )
    with Background() as background, nothing_left_on_failure(request.out):
        probe = background.submit(network_namespace.namespace_available)
        pins = preflight(collecting.checks())
        enforcement = choose_enforcement(pins.properties_pin.network, request.command, probe.result)
        digest = pins.digest
        head = git.head_revision(request.root)
        ignore = new_tests_left_out(request.root, request.base, pins.properties_pin)
        with progress("shard-plan").running("the collection"):
            collected = collect(collecting, pins, enforcement, ignore)
        ids = collected.ids
        if not request.all_tests:
            ids = planned_ids(
                pins.properties_pin, pins.flake_selectors(), ids, collected.property_ids
            )
        slices = split(ids, request.shards, seconds)
        flake_text = None
        flake_sha = None
        if request.flake_pin_path is not None:
            flake_text = request.flake_pin_path.read_bytes().decode("utf-8")
            flake_sha = _sha256(flake_text)
        plan = ShardPlan(
            ledger_id=new_ledger_id(),
            pin_id=pins.fixture_pin.pin_id,
            fixture_digest=digest,
            head_revision=head,
            property_pin_sha256=pins.properties_pin.sha256,
            flake_pin_sha256=flake_sha,
            properties_pin_text=request.properties_path.read_bytes().decode("utf-8"),
            flake_pin_text=flake_text,
            command=tuple(request.command),
            all_tests=request.all_tests,
            balanced_by="durations" if seconds else "count",
            slices=tuple(tuple(chosen) for chosen in slices),
            recorded_at=fresh_recorded_at(),
        )
        write_ledger(request.out, plan)
    sizes = ", ".join(str(len(chosen)) for chosen in slices)
    print(
        f"three-ledger: {len(ids)} of {len(collected.ids)} collected tests in {request.shards} "
        f"slices ({sizes}) written to {request.out}",
        file=sys.stderr,
    )
    return ExitCode.OK


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
