"""`three-ledger vet`: watch every pinned property fail on its own fixtures before it gates.

vet copies ROOT to a scratch folder and works there alone: the user's tree is only read.
A baseline run must pass every property, and records which pinned files each test item
opened. Then each property's domain files are mutated, one operator at a time, and the
command runs again: a property that fails or errors is killed (strong when the mutant was
well-formed); one that survives every operator cannot fail on its fixtures.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from three_ledger.digest import live_digest
from three_ledger.errors import InfraFailure, Refused
from three_ledger.ledgers import (
    FileVet,
    Harness,
    PerFileVet,
    PropertyVet,
    VetLedger,
    fresh_recorded_at,
    ledger_text,
    new_ledger_id,
    write_ledger,
)
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import FixturePin
from three_ledger.plugin.wire import HARNESS_ENV, READS_ENV, ROOT_ENV, WATCHED_ENV
from three_ledger.progress import progress
from three_ledger.results import (
    PropertyScore,
    TestResult,
    matching,
    property_statuses,
    score_properties,
)
from three_ledger.run import network_namespace, tripwire
from three_ledger.run.child import Child, exit_meaning, read_plugin_results, run_child
from three_ledger.run.harness import read_harness
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Checks, Preflight, new_tests_left_out, preflight
from three_ledger.run.staging import StagedPlugin, stage_plugin
from three_ledger.vet import scratch
from three_ledger.vet.judge import (
    BROKEN_EXITS,
    KILLS,
    Subject,
    Tracker,
    batches,
    domain_files,
    judge,
    sample,
    subjects,
)
from three_ledger.vet.mutations import Files, Operator, entry_operators, entry_words, mutants
from three_ledger.vet.report import report
from three_ledger.vocabulary import Enforcement, Status

NOTHING_COLLECTED = 5


@dataclass(frozen=True)
class Request:
    pin_path: Path
    properties_path: Path
    command: list[str]
    root: Path
    out: Path
    log_path: Path | None
    per_file: int | None
    timeout_s: float
    strict: bool
    # New test modules against this base are left out of every run, as in `properties`.
    base: str | None = None
    # --keep-env: names of the job's environment the child keeps for this run.
    keep_env: tuple[str, ...] = ()

    def checks(self) -> Checks:
        """The refusals (exit 2): the gate's own code, pins, the tree, an oracle-rewriting flag."""
        return Checks(
            root=self.root,
            pin_path=self.pin_path,
            properties_path=self.properties_path,
            command=self.command,
            keep_env=self.keep_env,
        )


def vet(request: Request) -> int:
    started = time.monotonic_ns()
    log_path = request.log_path or request.out.with_name(request.out.name + ".log")
    pins = [request.pin_path, request.properties_path]
    refuse_unwritable([Output("--out", request.out), Output("--log", log_path)], pins=pins)
    with (
        raising_on_interrupt(),
        nothing_left_on_failure(request.out),
        ThreadPoolExecutor(max_workers=1) as background,
    ):
        # The namespace probe is a child of its own: it overlaps the pin and tree checks.
        probe = background.submit(network_namespace.namespace_available)
        checked = preflight(request.checks())
        network = checked.properties_pin.network
        enforcement = choose_enforcement(network, request.command, probe.result)
        with tempfile.TemporaryDirectory(prefix="three-ledger-vet-") as private:
            bench = Bench.prepare(request, checked, enforcement, Path(private), log_path)
            with bench:
                findings = examine(bench, checked, request)
        duration_ms = (time.monotonic_ns() - started) // 1_000_000
        ledger = build_ledger(request, checked, enforcement, findings, bench.runs, duration_ms)
        write_ledger(request.out, ledger)
    return report(ledger)


@contextlib.contextmanager
def raising_on_interrupt() -> Iterator[None]:
    """Turn the first SIGINT/SIGTERM between runs into InfraFailure, so cleanup runs.

    During a run the runner catches them itself (and stops the child's group); it puts
    this handler back afterwards. Later signals are ignored until cleanup is done.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum: int, _frame: FrameType | None) -> None:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)
        raise InfraFailure(f"interrupted by {signal.Signals(signum).name}; no vet ledger written")

    previous = {
        number: signal.signal(number, interrupted)
        for number in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(number) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


@dataclass(frozen=True)
class Observed:
    """What one run under mutation said about each property."""

    command_exit: int
    statuses: dict[str, Status]

    @property
    def broken(self) -> bool:
        """The run failed as a whole (not per test), so it cannot tell subjects apart."""
        return self.command_exit not in (0, 1)


class Bench:
    """Where vet's runs happen: the scratch tree, the staged plugin, the log of every run."""

    def __init__(
        self,
        request: Request,
        checked: Preflight,
        enforcement: Enforcement,
        private: Path,
        log_path: Path,
        plugin: StagedPlugin,
    ) -> None:
        self.request = request
        self.checked = checked
        self.enforcement = enforcement
        self.private = private
        self.tree = private / "tree"
        self.log_path = log_path
        self.plugin = plugin
        self.selectors = {prop.id: prop.test for prop in checked.properties_pin.properties}
        self.expected_skips = checked.properties_pin.expected_skips
        self.requirements = checked.properties_pin.requirements()
        self.command = scratch.command_for_copy(request.command, request.root)
        self.runs = 0
        self.progress = progress("vet")
        # New test modules (relative to the tree) that no run collects.
        self.ignore: tuple[str, ...] = ()
        self._stack = contextlib.ExitStack()
        self._log: BinaryIO | None = None
        self._quiet: BinaryIO | None = None

    @classmethod
    def prepare(
        cls,
        request: Request,
        checked: Preflight,
        enforcement: Enforcement,
        private: Path,
        log_path: Path,
    ) -> Bench:
        """Copy ROOT into PRIVATE, check the copy is the pinned tree, stage the plugin."""
        scratch.copy_tree(request.root, private / "tree")
        copied = live_digest(private / "tree", checked.fixture_pin).digest
        if copied != checked.digest:
            raise InfraFailure(
                f"the scratch copy of {request.root} has digest {copied}, not {checked.digest}: "
                "the tree changed while it was copied"
            )
        plugin = stage_plugin(private)
        bench = cls(request, checked, enforcement, private, log_path, plugin)
        bench.ignore = new_tests_left_out(request.root, request.base, checked.properties_pin)
        return bench

    def __enter__(self) -> Bench:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self._stack.enter_context(self.log_path.open("wb"))
        self._quiet = self._stack.enter_context(open(os.devnull, "wb"))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def run(self, label: str, extra_env: Mapping[str, str]) -> Ran:
        """Run the command once in the scratch tree, with a tripwire record of its own."""
        self.runs += 1
        results_path = self.private / f"results-{self.runs}.jsonl"
        record = self.private / f"tripwire-{self.runs}.jsonl"
        run_log = self.private / "run.log"
        # Bytecode goes to a private folder, never beside a source file (a linked virtual
        # environment or an editable install may lie in the user's tree). Writing is on
        # even where the caller turned it off: the folder is private, and without it every
        # run would compile every module again.
        bytecode = {
            "PYTHONPYCACHEPREFIX": str(self.private / "bytecode"),
            "PYTHONDONTWRITEBYTECODE": "",
        }
        child = Child(
            command=self.command,
            root=self.tree,
            fixture_pin=self.checked.fixture_pin,
            enforcement=self.enforcement,
            timeout_s=self.request.timeout_s,
            log_path=run_log,
            plugin=self.plugin,
            results_path=results_path,
            plugins=self.checked.properties_pin.plugins,
            extra_env={**bytecode, **tripwire.environment(record), **extra_env},
            console=self._quiet,
            ignore=self.ignore,
            keep_env=(*self.checked.properties_pin.env, *self.request.keep_env),
        )
        started = time.monotonic()
        with self.progress.running(f"run {self.runs}, {label}"):
            run = run_child(child)
        ending = run.failure() or f"exit {run.exit_code}"
        self.progress.say(f"run {self.runs}: {ending} in {time.monotonic() - started:.1f} s")
        self._keep_log(label, run_log, ending)
        return Ran(label, run.exit_code, run.failure(), results_path, record)

    def read(self, ran: Ran) -> list[TestResult]:
        """The run's results, once its sentinels show its reports were not forced."""
        recorded = read_plugin_results(ran.results_path, self.log_path)
        try:
            record = tripwire.read_record(ran.tripwire_record)
            return tripwire.checked_and_removed(recorded, record, allow_empty=True)[0]
        except InfraFailure as tampered:
            tampered.message = f"{ran.label}: {tampered.message}"
            tampered.details.append(f"no vet ledger written (log: {self.log_path})")
            raise

    def _keep_log(self, label: str, run_log: Path, ending: str) -> None:
        assert self._log is not None  # entered
        self._log.write(f"=== vet run {self.runs}: {label} ===\n".encode())
        with contextlib.suppress(FileNotFoundError), run_log.open("rb") as stream:
            shutil.copyfileobj(stream, self._log)
        self._log.write(f"=== {ending} ===\n\n".encode())
        self._log.flush()

    def scores(self, results: Sequence[TestResult]) -> dict[str, PropertyScore]:
        """Each property scored as `properties` scores it: expected skips left out, and the
        pin's `min_tests` and `tests_sha256` asked of what is left."""
        return score_properties(self.selectors, results, self.expected_skips, self.requirements)

    def statuses(self, results: Sequence[TestResult]) -> dict[str, Status]:
        """Each property's status alone; see `scores`."""
        return property_statuses(self.selectors, results, self.expected_skips, self.requirements)

    def ended(self, ran: Ran) -> int:
        """The exit of a run that ended normally; InfraFailure for any other end."""
        if ran.failure is not None:
            raise InfraFailure(
                f"{ran.label}: {ran.failure}; no vet ledger written (log: {self.log_path})"
            )
        assert ran.exit_code is not None  # no failure means the command exited
        return ran.exit_code

    def mutated(self, label: str, mutation: Mapping[str, bytes], originals: Files) -> Observed:
        """Run with MUTATION written into the scratch tree; the tree is restored after."""
        scratch.write_files(self.tree, mutation)
        try:
            ran = self.run(f"under mutation ({label})", {})
        finally:
            scratch.write_files(self.tree, {path: originals[path] for path in mutation})
        code = self.ended(ran)
        if code in (0, 1):
            # No result left but the sentinels: every test vanished, so every property too.
            return Observed(code, self.statuses(self.read(ran)))
        if code in BROKEN_EXITS:
            return Observed(code, dict.fromkeys(self.selectors, Status.ERROR))
        if code == NOTHING_COLLECTED:
            return Observed(code, dict.fromkeys(self.selectors, Status.MISSING))
        raise InfraFailure(
            f"{ran.label}: {exit_meaning(code, self.enforcement)} (log: {self.log_path})"
        )


@dataclass(frozen=True)
class Ran:
    """One run of the command: how it ended, and where its results are."""

    label: str
    exit_code: int | None
    failure: str | None
    results_path: Path
    tripwire_record: Path


@dataclass(frozen=True)
class Baseline:
    results: tuple[TestResult, ...]
    # Per property: the pinned files its items opened (their own reads, their fixtures',
    # and their collectors').
    reads: dict[str, frozenset[str]]
    # What steered the run (config, conftests, plugins), as the plugin measured it.
    harness: Harness
    # Per property, per pinned file: the parametrisation words of its tests that read it.
    entry_words: dict[str, dict[str, frozenset[str]]] = dataclasses.field(default_factory=dict)


def run_baseline(bench: Bench) -> Baseline:
    """The unmutated run: every property must pass; it records each item's reads."""
    pin = bench.checked.fixture_pin
    reads_folder = bench.private / "reads"
    reads_folder.mkdir()
    # The whole tree is watched, so that each read is named relative to ROOT whichever of
    # the pin's folders it lies in; `read_reads` keeps the pinned files.
    watched = dict.fromkeys([str(bench.tree.absolute()), str(bench.tree.resolve())])
    harness_path = bench.private / "harness.json"
    env = {
        READS_ENV: str(reads_folder),
        WATCHED_ENV: os.pathsep.join(watched),
        HARNESS_ENV: str(harness_path),
        ROOT_ENV: str(bench.tree.resolve()),
    }
    ran = bench.run("baseline run, unmutated", env)
    code = bench.ended(ran)
    if code not in (0, 1):
        meaning = exit_meaning(code, bench.enforcement)
        raise InfraFailure(f"{ran.label}: {meaning} (log: {bench.log_path})")
    results = bench.read(ran)
    scores = bench.scores(results)
    failing = {pid: score for pid, score in scores.items() if score.status != Status.PASS}
    if failing:
        raise Refused(
            f"vet needs a passing baseline: {len(failing)} propert(ies) did not pass on the "
            f"unmutated fixtures (log: {bench.log_path})",
            [_not_passing(pid, score) for pid, score in failing.items()],
        )
    item_reads = read_reads(reads_folder, pin)
    reads = {
        pid: frozenset().union(
            *(item_reads.get(result.id, ()) for result in matching(pid, selector, results))
        )
        for pid, selector in bench.selectors.items()
    }
    try:
        harness = read_harness(harness_path)
    except InfraFailure as unmeasured:
        unmeasured.message = f"{ran.label}: {unmeasured.message}"
        raise
    words = {
        pid: _entry_words(matching(pid, selector, results), item_reads)
        for pid, selector in bench.selectors.items()
    }
    return Baseline(tuple(results), reads, harness, words)


def _entry_words(
    results: Sequence[TestResult], item_reads: Mapping[str, frozenset[str]]
) -> dict[str, frozenset[str]]:
    """Per pinned file, the parametrisation words of the tests that read it."""
    words: dict[str, set[str]] = {}
    for result in results:
        for path in item_reads.get(result.id, ()):
            words.setdefault(path, set()).update(entry_words([result.id]))
    return {path: frozenset(found) for path, found in words.items()}


def _not_passing(property_id: str, score: PropertyScore) -> str:
    why = f" ({score.missing_reason})" if score.missing_reason else ""
    return f"{property_id}: {score.status}{why}"


def read_reads(folder: Path, pin: FixturePin) -> dict[str, frozenset[str]]:
    """Pinned paths each item opened, from every process's reads file (xdist: several)."""
    import json

    pinned = set(pin.files)
    reads: dict[str, set[str]] = {}
    for path in sorted(folder.glob("reads-*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
                item, opened = record["id"], record["reads"]
            except (ValueError, KeyError, TypeError):
                raise InfraFailure(f"reads file {path.name}: line {number} is not valid") from None
            reads.setdefault(item, set()).update(pinned.intersection(opened))
    return {item: frozenset(paths) for item, paths in reads.items()}


@dataclass(frozen=True)
class Findings:
    harness: Harness
    properties: dict[str, PropertyVet]
    unread_pinned_files: tuple[str, ...]
    per_file: PerFileVet | None


def examine(bench: Bench, checked: Preflight, request: Request) -> Findings:
    baseline = run_baseline(bench)
    domains = {
        prop.id: domain_files(prop, checked.fixture_pin)
        for prop in checked.properties_pin.properties
    }
    trackers: dict[str, Tracker] = {}
    for batch in batches(subjects(domains, baseline.reads)):
        ran = mutate_batch(bench, batch, baseline.entry_words)
        trackers.update((pid, tracker) for tracker in ran for pid in tracker.subject.property_ids)
    verdicts = {
        pid: judge(
            trackers[pid].trials[pid],
            files=domains[pid],
            reads=baseline.reads[pid],
            strict=request.strict,
        )
        for pid in domains
    }
    read_anywhere = frozenset().union(*baseline.reads.values())
    unread = tuple(path for path in sorted(checked.fixture_pin.files) if path not in read_anywhere)
    per_file = None
    if request.per_file is not None:
        per_file = mutate_files(bench, domains, request.per_file)
    return Findings(baseline.harness, verdicts, unread, per_file)


def mutate_batch(
    bench: Bench,
    batch: Sequence[Subject],
    words: Mapping[str, Mapping[str, frozenset[str]]],
) -> list[Tracker]:
    """Run the batch's subjects side by side, each through its operators (first the entries
    its properties' tests consume), until all stop."""
    trackers = []
    for subject in batch:
        originals = scratch.read_files(bench.tree, subject.files)
        joined: dict[str, frozenset[str]] = {}
        for pid in subject.property_ids:
            for path, found in words.get(pid, {}).items():
                joined[path] = joined.get(path, frozenset()) | found
        trackers.append(Tracker(subject, originals, entry_operators(joined, originals)))
    while True:
        step = [(tracker, mutant) for tracker in trackers if (mutant := tracker.next_mutant())]
        if not step:
            return trackers
        mutation = {path: data for _, (_, m) in step for path, data in m.items()}
        originals = {path: data for tracker, _ in step for path, data in tracker.originals.items()}
        observed = bench.mutated(_label(step), mutation, originals)
        if observed.broken and len(step) > 1:
            # A run broken as a whole says nothing about which subject broke it: one by one.
            for tracker, mutant in step:
                alone = bench.mutated(_label([(tracker, mutant)]), mutant[1], tracker.originals)
                _record(tracker, mutant, alone)
        else:
            for tracker, mutant in step:
                _record(tracker, mutant, observed)


def _label(step: Sequence[tuple[Tracker, tuple[Operator, dict[str, bytes]]]]) -> str:
    return "; ".join(
        f"{operator.name} on {len(mutation)} file(s) of {', '.join(tracker.active())}"
        for tracker, (operator, mutation) in step
    )


def _record(
    tracker: Tracker, mutant: tuple[Operator, dict[str, bytes]], observed: Observed
) -> None:
    operator, mutation = mutant
    tracker.record(operator, len(mutation), observed.statuses, observed.command_exit)


def mutate_files(bench: Bench, domains: Mapping[str, Sequence[str]], count: int) -> PerFileVet:
    """`--per-file`: a sample of domain files, each mutated alone until some property fails."""
    every_domain_file = {path for files in domains.values() for path in files}
    checked = []
    for path in sample(every_domain_file, count):
        originals = scratch.read_files(bench.tree, [path])
        tried: list[str] = []
        noticed: tuple[str, ...] = ()
        for operator, mutation in mutants(originals):
            observed = bench.mutated(f"{operator.name} on {path} alone", mutation, originals)
            tried.append(operator.name)
            noticed = tuple(pid for pid in domains if observed.statuses[pid] in KILLS)
            if noticed:
                break
        checked.append(FileVet(path, tuple(tried), noticed))
    unnoticed = tuple(entry.path for entry in checked if not entry.noticed_by)
    return PerFileVet(requested=count, files=tuple(checked), unnoticed=unnoticed)


def build_ledger(
    request: Request,
    checked: Preflight,
    enforcement: Enforcement,
    findings: Findings,
    runs: int,
    duration_ms: int,
) -> VetLedger:
    return VetLedger(
        ledger_id=new_ledger_id(),
        pin_id=checked.fixture_pin.pin_id,
        property_pin_id=checked.properties_pin.pin_id,
        property_pin_sha256=checked.properties_pin.sha256,
        fixture_digest=checked.digest,
        command=ledger_text(request.command),
        network=checked.properties_pin.network,
        network_enforcement=enforcement,
        strict=request.strict,
        runs=runs,
        duration_ms=duration_ms,
        harness=findings.harness,
        properties=findings.properties,
        unread_pinned_files=findings.unread_pinned_files,
        per_file=findings.per_file,
        recorded_at=fresh_recorded_at(),
    )
