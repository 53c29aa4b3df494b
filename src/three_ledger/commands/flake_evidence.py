"""`three-ledger flake-evidence`: rerun each flake candidate in the sandbox of `properties`,
in its original order, alone and in reverse, and say what kind of failure it is.

It writes evidence, never a pin and never a posture: `merge` does not read its ledger. The
preconditions are those of `properties` (exit 2, nothing written); the reruns happen in a
scratch copy of ROOT (`flake/bench.py`), whose inputs are put back after every run.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from three_ledger import run_order
from three_ledger.background import Background
from three_ledger.commands.vet import raising_on_interrupt
from three_ledger.errors import Refused
from three_ledger.flake.bench import Bench, Rerun, Setting
from three_ledger.flake.candidates import candidate_reasons
from three_ledger.flake.report import report
from three_ledger.flake.verdict import Reruns, decided, verdict
from three_ledger.frozen import frozen
from three_ledger.ledgers import (
    FixtureLedger,
    LedgerFile,
    PropertyLedger,
    fresh_recorded_at,
    ledger_text,
    new_ledger_id,
    read_ledger,
    write_ledger,
)
from three_ledger.other_ledgers import CandidateEvidence, FlakeEvidenceLedger, FlakeProposal
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.results import answers_for
from three_ledger.run import sandbox
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Checks, Preflight, preflight
from three_ledger.vet import scratch
from three_ledger.vocabulary import FlakeVerdict, Outcome, RerunMode

FILL_IN = "FILL-IN"
# `--reruns` and `--budget-s` when not given (`gate --flake-reruns`, `--flake-budget-s` too).
DEFAULT_RERUNS = 20
DEFAULT_BUDGET_S = 600.0
_FAILED = (Outcome.FAIL, Outcome.ERROR)


@frozen
class Request:
    fixture_ledger: Path
    property_ledger: Path
    pin_path: Path
    properties_path: Path
    command: list[str]
    out: Path
    root: Path
    flake_pin_path: Path | None = None
    candidates: tuple[str, ...] = ()
    reruns: int = DEFAULT_RERUNS
    budget_s: float = DEFAULT_BUDGET_S
    confidence: float = 0.95
    log_path: Path | None = None
    keep_env: tuple[str, ...] = ()

    def pins(self) -> list[Path]:
        return [p for p in (self.pin_path, self.properties_path, self.flake_pin_path) if p]

    def log(self) -> Path:
        return self.log_path or self.out.with_name(self.out.name + ".log")


@frozen
class Candidate:
    id: str
    reason: str
    worker: str
    prefix: tuple[str, ...]
    property_ids: tuple[str, ...]


@dataclass
class Budget:
    """The seconds left for reruns."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def spent(self) -> bool:
        return time.monotonic() - self.started >= self.seconds

    def fits(self, expected_s: float) -> bool:
        """Whether a rerun expected to take EXPECTED_S ends within what is left."""
        return time.monotonic() - self.started + expected_s <= self.seconds

    def share(self, weights: Sequence[int]) -> Budget:
        """The next candidate's share of what is left, WEIGHTS being the reruns a round of
        it and of each candidate after it takes: the first cannot starve the others, and a
        candidate rerun in three modes gets half again the time of one rerun in two."""
        left = max(0.0, self.seconds - (time.monotonic() - self.started))
        return Budget(left * weights[0] / max(1, sum(weights)))


def flake_evidence(request: Request) -> int:
    started = time.monotonic_ns()
    outputs = [Output("--out", request.out), Output("--log", request.log())]
    inputs = [request.fixture_ledger, request.property_ledger]
    refuse_unwritable(outputs, pins=request.pins(), inputs=inputs)
    with (
        raising_on_interrupt(),
        nothing_left_on_failure(request.out),
        Background() as background,
    ):
        probe = background.submit(sandbox.probe_namespaces)
        fixture = read_ledger(request.fixture_ledger, FixtureLedger)
        scored = read_ledger(request.property_ledger, PropertyLedger)
        checked = preflight(_checks(request, fixture.record, scored.record))
        refuse_another_run(scored, checked)
        candidates = choose(request, scored, checked)
        network = checked.properties_pin.network
        enforcement = choose_enforcement(network, request.command, lambda: probe.result().network)
        setting = Setting(
            checked,
            enforcement,
            probe.result(),
            scratch.command_for_copy(request.command, request.root),
            (*checked.properties_pin.env, *request.keep_env),
            request.log(),
        )
        budget = Budget(request.budget_s)
        with (
            tempfile.TemporaryDirectory(prefix="three-ledger-flake-") as private,
            Bench.opened(setting, request.root, Path(private)) as bench,
        ):
            weights = [len(modes_of(candidate)) for candidate in candidates]
            found = [
                examine(bench, candidate, request, budget.share(weights[index:]))
                for index, candidate in enumerate(candidates)
            ]
            layers = bench.layers
        ledger = FlakeEvidenceLedger(
            ledger_id=new_ledger_id(),
            pin_id=checked.fixture_pin.pin_id,
            property_pin_id=checked.properties_pin.pin_id,
            property_pin_sha256=checked.properties_pin.sha256,
            fixture_digest=checked.digest,
            property_ledger_sha256=scored.sha256,
            head_revision=scored.record.head_revision,
            command=ledger_text(request.command),
            confidence=f"{request.confidence:g}",
            reruns=request.reruns,
            budget_s=max(1, round(request.budget_s)),
            runs=bench.runs,
            duration_ms=(time.monotonic_ns() - started) // 1_000_000,
            network=network,
            network_enforcement=enforcement,
            sandbox_layers=layers,
            candidates=tuple(found),
            recorded_at=fresh_recorded_at([fixture.record.recorded_at, scored.record.recorded_at]),
        )
        write_ledger(request.out, ledger)
    return report(ledger, request.out)


def _checks(request: Request, fixture: FixtureLedger, scored: PropertyLedger) -> Checks:
    """The checks of `properties`, with the base the property ledger was scored against."""
    if fixture.digest != scored.fixture_digest:
        raise Refused(
            f"{request.property_ledger}: $.fixture_digest is {scored.fixture_digest}, not the "
            f"fixture ledger's digest {fixture.digest}: the two ledgers are of different runs"
        )
    return Checks(
        root=request.root,
        pin_path=request.pin_path,
        properties_path=request.properties_path,
        flake_pin_path=request.flake_pin_path,
        expect_digest=fixture.digest,
        against_base=True,
        base=scored.base_revision,
        command=request.command,
        keep_env=request.keep_env,
    )


def refuse_another_run(scored: LedgerFile[PropertyLedger], checked: Preflight) -> None:
    """P must be this HEAD's, this pin's, with unmoved oracles and an order to replay."""
    record, path = scored.record, scored.path
    facts = checked.base()
    checks = [
        ("head_revision", record.head_revision, facts.head_revision, "score this HEAD first"),
        ("pin_id", record.pin_id, checked.fixture_pin.pin_id, "it scored another fixture pin"),
        (
            "property_pin_sha256",
            record.property_pin_sha256,
            checked.properties_pin.sha256,
            "it scored another properties pin",
        ),
    ]
    for key, recorded, live, why in checks:
        if recorded != live:
            raise Refused(f"{path}: $.{key} is {recorded!r}, this tree has {live!r}: {why}")
    if record.oracle_moved:
        raise Refused(f"{path}: $.oracle_moved is true: its results are not evidence to rerun")
    if facts.oracle_reasons:
        moved = sorted(facts.oracle_reasons)
        raise Refused(
            f"oracles moved against {facts.base_revision[:12]}: {', '.join(moved)}: "
            "score the change again before gathering flake evidence"
        )
    if record.run_order is None:
        raise Refused(
            f"{path}: $.run_order is null (a JUnit run): flake-evidence replays a pytest "
            "run's order; score with the plugin"
        )


def choose(
    request: Request, scored: LedgerFile[PropertyLedger], checked: Preflight
) -> list[Candidate]:
    """The candidates: --candidates, else the listed flake entries that did not pass, the
    tests behind a failing property and the unpinned failures, in that order."""
    record = scored.record
    assert record.run_order is not None  # refuse_another_run
    orders = run_order.workers(scored.path, record.run_order)
    given = list(request.candidates)
    wanted: dict[str, str] = {test_id: "given" for test_id in given}
    if not given:
        flaky = checked.flake_pin.selectors() if checked.flake_pin else {}
        wanted = candidate_reasons(record, orders, flaky)
    return [_placed(node, reason, orders, record, checked) for node, reason in wanted.items()]


def _placed(
    node: str,
    reason: str,
    orders: dict[str, tuple[str, ...]],
    record: PropertyLedger,
    checked: Preflight,
) -> Candidate:
    for worker, ids in orders.items():
        if node in ids:
            prefix = ids[: ids.index(node)]
            properties = _properties_of(node, record, checked)
            return Candidate(node, reason, worker, prefix, properties)
    raise Refused(
        f"--candidates {node}: not in the property ledger's run_order: give a node id that ran"
    )


def _properties_of(node: str, record: PropertyLedger, checked: Preflight) -> tuple[str, ...]:
    """The pinned properties that count NODE: by selector, or as one of their failing tests."""
    from three_ledger.results import TestResult

    result = TestResult(node, (), Outcome.PASS)
    selectors = checked.properties_pin.selectors()
    found = {pid for pid, chosen in selectors.items() if answers_for(result, pid, chosen)}
    found |= {
        pid for pid, tests in record.failing_tests.items() if any(t.id == node for t in tests)
    }
    return tuple(sorted(found))


def examine(
    bench: Bench, candidate: Candidate, request: Request, budget: Budget
) -> CandidateEvidence:
    """Rerun CANDIDATE in rounds of its modes until the verdict is decided, the reruns are
    done, or the budget is spent; a victim's polluter is then searched for."""
    reruns = Reruns(prefix=len(candidate.prefix))
    lists = {
        RerunMode.ORIGINAL: [*candidate.prefix, candidate.id],
        RerunMode.ISOLATED: [candidate.id],
        RerunMode.REVERSE: [*reversed(candidate.prefix), candidate.id],
    }
    modes = modes_of(candidate)
    changed: set[str] = set()
    property_ids = set(candidate.property_ids)
    unfinished = None
    # What each rerun of this candidate took: one that would end past the share, by their
    # mean, is not started (a share bounds when the reruns end, not only when they start).
    took: list[float] = []
    for round_number in range(request.reruns):
        for mode in modes:
            expected = sum(took) / len(took) if took else 0.0
            if budget.spent() or not budget.fits(expected):
                unfinished = _unfinished(budget, round_number, request.reruns)
                break
            began = time.monotonic()
            ran = bench.rerun(lists[mode], f"{candidate.id} ({mode}, round {round_number + 1})")
            took.append(time.monotonic() - began)
            changed.update(ran.changed)
            _count(reruns, mode, ran, candidate)
            result = ran.results.get(candidate.id)
            if result is not None:
                property_ids.update(result.property_ids)
        if unfinished or any(t.broken for t in reruns.modes.values()):
            break
        if decided(reruns.modes, request.confidence):
            break
    found = verdict(reruns)
    polluter = None
    if found is FlakeVerdict.ORDER_DEPENDENT_VICTIM:
        failing_in_order = reruns.tally(RerunMode.ORIGINAL).failed > 0
        suspects = list(candidate.prefix if failing_in_order else reversed(candidate.prefix))
        polluter, search = find_polluter(bench, candidate.id, suspects, budget)
        unfinished = unfinished or search
    is_property = bool(property_ids)
    proposal = None
    if found is FlakeVerdict.NON_DETERMINISTIC and not is_property:
        proposal = _proposal(candidate, reruns, request)
    return CandidateEvidence(
        id=candidate.id,
        reason=candidate.reason,
        property_ids=tuple(sorted(property_ids)),
        worker=candidate.worker,
        prefix=len(candidate.prefix),
        modes={mode: tally.record(request.confidence) for mode, tally in reruns.modes.items()},
        verdict=found,
        polluter=polluter,
        inputs_changed=tuple(sorted(changed)),
        unfinished=unfinished,
        proposal=proposal,
    )


def modes_of(candidate: Candidate) -> list[RerunMode]:
    """The modes a round reruns CANDIDATE in."""
    modes = [RerunMode.ORIGINAL, RerunMode.ISOLATED]
    if len(candidate.prefix) >= 2:  # reversed, a shorter prefix is the original order
        modes.append(RerunMode.REVERSE)
    return modes


def _unfinished(budget: Budget, round_number: int, planned: int) -> str:
    return (
        f"its share of the budget ({budget.seconds:.1f} s) was spent, or too little of it was "
        f"left for one more rerun, in round {round_number + 1} of {planned}: fewer reruns "
        "than asked"
    )


def _count(reruns: Reruns, mode: RerunMode, ran: Rerun, candidate: Candidate) -> None:
    tally = reruns.tally(mode)
    tally.runs += 1
    result = ran.results.get(candidate.id)
    if ran.broken is not None or result is None:
        tally.broken += 1
        return
    if result.outcome in _FAILED:
        tally.failed += 1
    if mode is RerunMode.ORIGINAL:
        failed_before = sum(
            1 for node in candidate.prefix if (r := ran.results.get(node)) and r.outcome in _FAILED
        )
        reruns.prefix_failed = max(reruns.prefix_failed, failed_before)


def find_polluter(
    bench: Bench, victim: str, suspects: Sequence[str], budget: Budget
) -> tuple[str | None, str | None]:
    """The one test that, run just before VICTIM, makes it fail: by halving the suspects,
    then confirmed alone. (None, why) when the budget ends first or no single test does."""
    left = list(suspects)
    if len(left) == 1:
        # The original order is that one test, then VICTIM: its failing runs confirm it.
        return left[0], None
    while len(left) > 1:
        if budget.spent():
            return None, f"the budget ended the polluter search with {len(left)} suspects left"
        half = left[: len(left) // 2]
        ran = bench.rerun([*half, victim], f"{victim} (polluter search, {len(left)} suspects)")
        left = half if _failed(ran, victim) else left[len(left) // 2 :]
    if not left or budget.spent():
        return None, "no suspect left to confirm" if not left else "the budget ended first"
    ran = bench.rerun([left[0], victim], f"{victim} (polluter confirmed?)")
    if _failed(ran, victim):
        return left[0], None
    return None, "no single test run before it makes it fail"


def _failed(ran: Rerun, node: str) -> bool:
    result = ran.results.get(node)
    return ran.broken is None and result is not None and result.outcome in _FAILED


def _proposal(candidate: Candidate, reruns: Reruns, request: Request) -> FlakeProposal:
    counts = "; ".join(
        f"{mode}: {tally.failed} of {tally.counted()} failed"
        for mode, tally in reruns.modes.items()
    )
    return FlakeProposal(
        test_id=candidate.id,
        test=candidate.id,
        accepted_revision=FILL_IN,
        review_by=FILL_IN,
        note=f"non_deterministic under flake-evidence ({counts})",
    )
