"""`three-ledger vet`: watch every pinned property fail on its own fixtures before it gates.

vet copies ROOT to a scratch folder and works there alone: the user's tree is only read.
A baseline run must pass every property, and records which pinned files each test item
opened. Then each property's domain files are mutated, one operator at a time, and the
command runs again: a property that fails or errors is killed (strong when the mutant was
well-formed); one that survives every operator cannot fail on its fixtures.

Properties with the same domain files form a subject. Subjects run side by side, up to
`--jobs` at once, each in a scratch copy of its own, and each mutant runs only the tests
that read the subject's files in the baseline and the subject's own properties' tests (the
rest are deselected). The ledger does not depend on `--jobs`: each subject's trials are
decided by its own runs alone, and are put in the pin's order. A subject's trials are
stored in the result cache (`vet/cache.py`) and reused while its key holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import BinaryIO

import three_ledger
from three_ledger.digest import live_digest
from three_ledger.errors import InfraFailure, Refused
from three_ledger.frozen import frozen
from three_ledger.ledgers import (
    Harness,
    fresh_recorded_at,
    ledger_text,
    new_ledger_id,
    write_ledger,
)
from three_ledger.other_ledgers import FileVet, PerFileVet, PropertyVet, VetLedger
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import FixturePin
from three_ledger.plugin.wire import (
    DESELECT_ENV,
    HARNESS_ENV,
    READS_ENV,
    ROOT_ENV,
    SLICE_COLLECTED_ENV,
    SLICE_ENV,
    WATCHED_ENV,
)
from three_ledger.progress import progress
from three_ledger.results import (
    PropertyScore,
    TestResult,
    matching,
    property_statuses,
    score_properties,
)
from three_ledger.run import measurement, network_namespace, tripwire
from three_ledger.run.child import (
    Child,
    Measurement,
    exit_meaning,
    read_plugin_results,
    run_child,
)
from three_ledger.run.harness import read_harness
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Checks, Preflight, new_tests_left_out, preflight
from three_ledger.run.staging import StagedPlugin, stage_plugin
from three_ledger.runner import interrupt_threads
from three_ledger.vet import baseline_slices, scratch
from three_ledger.vet.cache import Entry, ResultCache, blob_ids
from three_ledger.vet.judge import (
    BROKEN_EXITS,
    KILLS,
    Subject,
    Tracker,
    domain_files,
    judge,
    sample,
    subjects,
)
from three_ledger.vet.mutations import Files, Operator, entry_operators, entry_words, mutants
from three_ledger.vet.report import report
from three_ledger.vocabulary import Enforcement, Status

NOTHING_COLLECTED = 5


@frozen
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
    # --jobs: how many subjects are mutated at once, each in a scratch copy of its own.
    jobs: int = 1
    # The result cache's folder; None: --no-cache.
    cache: Path | None = None

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
        phases = Phases(started)
        checked = preflight(request.checks())
        network = checked.properties_pin.network
        enforcement = choose_enforcement(network, request.command, probe.result)
        phases.ended("checks")
        with tempfile.TemporaryDirectory(prefix="three-ledger-vet-") as private:
            bench = Bench.prepare(request, checked, enforcement, Path(private), log_path)
            bench.phases = phases
            phases.ended("scratch copy")
            with bench:
                findings = examine(bench, checked, request)
            scratch.remove_side_by_side(Path(private))
        phases.ended("cleanup")
        duration_ms = (time.monotonic_ns() - started) // 1_000_000
        ledger = build_ledger(request, checked, enforcement, findings, bench.runs, duration_ms)
        if findings.reused_runs:
            bench.progress.say(
                f"reused the results of {findings.reused_runs} mutant run(s) from the cache "
                f"({findings.reused_subjects} of {findings.subjects} subject(s))"
            )
        write_ledger(request.out, ledger)
        phases.ended("ledger")
        bench.progress.say(phases.summary())
    return report(ledger)


class Phases:
    """How long each phase of a vet took, for the line that ends its progress: where the
    time goes, and so how much `--jobs` can save (only the mutant runs overlap)."""

    def __init__(self, started_ns: int) -> None:
        self.started_ns = self.last_ns = started_ns
        self.seconds: dict[str, float] = {}

    def ended(self, phase: str) -> None:
        now = time.monotonic_ns()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + (now - self.last_ns) / 1e9
        self.last_ns = now

    def summary(self) -> str:
        spent = ", ".join(f"{phase} {seconds:.2f} s" for phase, seconds in self.seconds.items())
        return f"phases: {spent} ({(self.last_ns - self.started_ns) / 1e9:.2f} s in all)"


# Set once vet is interrupted: a subject's lane starts no run after it.
STOPPING = threading.Event()


@contextlib.contextmanager
def raising_on_interrupt() -> Iterator[None]:
    """Turn the first SIGINT/SIGTERM between runs into InfraFailure, so cleanup runs.

    During a run the runner catches them itself (and stops the child's group); it puts
    this handler back afterwards. Later signals are ignored until cleanup is done.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    STOPPING.clear()

    def interrupted(signum: int, _frame: FrameType | None) -> None:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_IGN)
        # Runs under way in other threads (parallel subjects) stop too, and no new one starts.
        STOPPING.set()
        interrupt_threads(signum)
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


@frozen
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
        # Runs of the suite (the ledger's `runs`), and runs of the command started.
        self.runs = 0
        self.started = 0
        self.progress = progress("vet")
        self.phases = Phases(time.monotonic_ns())
        # Runs may start from several threads: numbering them and writing the log are locked.
        self._lock = threading.Lock()
        # Set when a subject's lane failed: the other lanes start no further run.
        self.cancelled = threading.Event()
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

    def run(
        self,
        label: str,
        extra_env: Mapping[str, str],
        tree: Path | None = None,
        measuring: Measurement | None = None,
        part: tuple[int, str] | None = None,
    ) -> Ran:
        """Run the command once in TREE (the first scratch copy unless given), with a
        tripwire record of its own. PART: the run of the suite this is a part of (its
        number, already counted: the ledger's `runs` counts a baseline run in slices once)
        and which part (`slice 2 of 2`)."""
        if STOPPING.is_set():
            raise InfraFailure("interrupted; no vet ledger written")
        with self._lock:
            self.started += 1
            started_number = self.started
            if part is None:
                self.runs += 1
                number = self.runs
        name = f"run {number}" if part is None else f"run {part[0]} ({part[1]})"
        results_path = self.private / f"results-{started_number}.jsonl"
        record = self.private / f"tripwire-{started_number}.jsonl"
        run_log = self.private / f"run-{started_number}.log"
        # As for `properties`, the child writes no bytecode (run/child.py): it reads what the
        # interpreter and the installed packages already hold, and compiles the rest (the
        # scratch copy leaves `__pycache__` out) without writing it, so nothing one run
        # compiles reaches another, nor the user's tree through a linked environment.
        child = Child(
            command=self.command,
            root=self.tree if tree is None else tree,
            fixture_pin=self.checked.fixture_pin,
            enforcement=self.enforcement,
            timeout_s=self.request.timeout_s,
            log_path=run_log,
            plugin=self.plugin,
            results_path=results_path,
            plugins=self.checked.properties_pin.plugins,
            extra_env={
                **tripwire.environment(record, self.checked.properties_pin.product_paths),
                **extra_env,
            },
            console=self._quiet,
            ignore=self.ignore,
            keep_env=self.kept_env(),
            measurement=measuring,
        )
        started = time.monotonic()
        with self.progress.running(f"{name}, {label}"):
            run = run_child(child)
        ending = run.failure() or f"exit {run.exit_code}"
        self.progress.say(f"{name}: {ending} in {time.monotonic() - started:.1f} s")
        self._keep_log(name, label, run_log, ending)
        return Ran(label, run.exit_code, run.failure(), results_path, record)

    def count_run(self) -> int:
        """Count a run of the suite made in parts (the baseline in slices); its number."""
        with self._lock:
            self.runs += 1
            return self.runs

    def kept_env(self) -> tuple[str, ...]:
        return (*self.checked.properties_pin.env, *self.request.keep_env)

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

    def _keep_log(self, name: str, label: str, run_log: Path, ending: str) -> None:
        assert self._log is not None  # entered
        with self._lock:
            self._log.write(f"=== vet {name}: {label} ===\n".encode())
            with contextlib.suppress(FileNotFoundError), run_log.open("rb") as stream:
                shutil.copyfileobj(stream, self._log)
            self._log.write(f"=== {ending} ===\n\n".encode())
            self._log.flush()
        run_log.unlink(missing_ok=True)

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

    def mutated(
        self,
        label: str,
        mutation: Mapping[str, bytes],
        originals: Files,
        lane: Lane | None = None,
    ) -> Observed:
        """Run with MUTATION written into the lane's scratch tree (the first copy, running
        every test, without one); the tree is restored after."""
        tree = self.tree if lane is None else lane.tree
        env = {} if lane is None or lane.deselect is None else {DESELECT_ENV: str(lane.deselect)}
        scratch.write_files(tree, mutation)
        try:
            ran = self.run(f"under mutation ({label})", env, tree)
        finally:
            scratch.write_files(tree, {path: originals[path] for path in mutation})
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


@frozen
class Lane:
    """Where one subject's mutants run: a scratch copy, and the file of node ids they leave
    out (None: none)."""

    tree: Path
    deselect: Path | None


@frozen
class Ran:
    """One run of the command: how it ended, and where its results are."""

    label: str
    exit_code: int | None
    failure: str | None
    results_path: Path
    tripwire_record: Path


@frozen
class Baseline:
    results: tuple[TestResult, ...]
    # Per property: the pinned files its items opened (their own reads, their fixtures',
    # and their collectors').
    reads: dict[str, frozenset[str]]
    # What steered the run (config, conftests, plugins), as the plugin measured it.
    harness: Harness
    # Per property, per pinned file: the parametrisation words of its tests that read it.
    entry_words: dict[str, dict[str, frozenset[str]]] = dataclasses.field(default_factory=dict)
    # Per test item: the pinned files it opened.
    item_reads: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    # What the run used under ROOT (imported or read) and its interpreters' versions; None
    # when the measurement did not start (the result cache is then not used).
    used: tuple[str, ...] | None = None
    pythons: tuple[str, ...] = ()


@frozen
class BaselineRun:
    """One run of the baseline (the whole suite, or one slice of it) and where it recorded."""

    ran: Ran
    tree: Path
    # Where its reads, its harness and (a slice's) collected node ids lie.
    folder: Path
    measuring: Measurement | None


def run_baseline(
    bench: Bench, measure: bool = False, slices: int = 1
) -> tuple[Baseline, list[Path]]:
    """The unmutated run: every property must pass; it records each item's reads, and with
    MEASURE what it used under ROOT (the result cache's key). With SLICES above 1 the suite
    runs in that many slices at once, each in a scratch copy of its own (the copies are
    returned, the first one first, for the mutants' lanes); it runs whole again when the
    slices did not collect the same items or were not steered alike."""
    if slices <= 1:
        runs = [_baseline_run(bench, bench.tree, bench.private / "baseline", measure)]
        return _baseline(bench, runs), [bench.tree]
    number, runs = _sliced_runs(bench, slices, measure)
    trees = [run.tree for run in runs]
    for run in runs:
        _exit_checked(bench, run.ran)
    collected = [baseline_slices.collected(run.folder / "collected") for run in runs]
    harnesses = [_harness(run) for run in runs]
    if baseline_slices.same_suite(collected) and baseline_slices.united(harnesses):
        return _baseline(bench, runs), trees
    bench.progress.say(
        "the baseline's slices did not collect the same tests or load the same harness: "
        "it runs again whole"
    )
    # Still run NUMBER: the ledger's `runs` counts the baseline once, as with --jobs 1.
    again = _baseline_run(bench, bench.tree, bench.private / "baseline-whole", measure, (number,))
    return _baseline(bench, [again]), trees


def _sliced_runs(bench: Bench, slices: int, measure: bool) -> tuple[int, list[BaselineRun]]:
    """The baseline's SLICES, run side by side (the first in the first copy, each other one
    in a copy of it made as its slice starts), and the run's number."""

    number = bench.count_run()
    started = time.monotonic()

    def one(index: int) -> BaselineRun:
        tree, folder = bench.tree, bench.private / f"baseline-{index}"
        if index > 1:
            tree = bench.private / f"tree-{index}"
            scratch.copy_tree(bench.tree, tree)
        return _baseline_run(bench, tree, folder, measure, (number, index, slices))

    with ThreadPoolExecutor(max_workers=slices) as pool:
        futures = [pool.submit(one, index) for index in range(1, slices + 1)]
        # The first failure in slice order is the one raised, once every slice has ended.
        done = [future.exception() for future in futures]
    failure = next((error for error in done if error is not None), None)
    if failure is not None:
        raise failure
    runs = [future.result() for future in futures]
    endings = sorted({run.ran.failure or f"exit {run.ran.exit_code}" for run in runs})
    elapsed = time.monotonic() - started
    bench.progress.say(f"run {number}: {', '.join(endings)} in {elapsed:.1f} s ({slices} slices)")
    return number, runs


def _baseline_run(
    bench: Bench,
    tree: Path,
    folder: Path,
    measure: bool,
    part: tuple[int, int, int] | tuple[int] | None = None,
) -> BaselineRun:
    """Run the baseline in TREE, recording into FOLDER. PART: (NUMBER, K, N), slice K of N
    of run NUMBER; (NUMBER,): run NUMBER again, whole."""
    reads_folder = folder / "reads"
    reads_folder.mkdir(parents=True)
    # The whole tree is watched, so that each read is named relative to ROOT whichever of
    # the pin's folders it lies in; `read_reads` keeps the pinned files.
    watched = dict.fromkeys([str(tree.absolute()), str(tree.resolve())])
    env = {
        READS_ENV: str(reads_folder),
        WATCHED_ENV: os.pathsep.join(watched),
        HARNESS_ENV: str(folder / "harness.json"),
        ROOT_ENV: str(tree.resolve()),
    }
    shown = None
    if part is not None and len(part) == 1:
        shown = (part[0], "whole, again")
    elif part is not None:
        number, index, count = part
        (folder / "collected").mkdir()
        env[SLICE_ENV] = f"{index}/{count}"
        env[SLICE_COLLECTED_ENV] = str(folder / "collected")
        shown = (number, f"slice {index} of {count}")
    measuring = None
    if measure:
        (folder / "measure").mkdir()
        measuring = measurement.prepare(folder / "measure")
    ran = bench.run("baseline run, unmutated", env, tree, measuring=measuring, part=shown)
    return BaselineRun(ran, tree, folder, measuring)


def _exit_checked(bench: Bench, ran: Ran) -> None:
    code = bench.ended(ran)
    if code not in (0, 1):
        meaning = exit_meaning(code, bench.enforcement, log_path=bench.log_path)
        raise InfraFailure(f"{ran.label}: {meaning} (log: {bench.log_path})")


def _harness(run: BaselineRun) -> Harness:
    try:
        return read_harness(run.folder / "harness.json")
    except InfraFailure as unmeasured:
        unmeasured.message = f"{run.ran.label}: {unmeasured.message}"
        raise


def _baseline(bench: Bench, runs: Sequence[BaselineRun]) -> Baseline:
    """The baseline from RUNS: the whole suite's run, or its slices (which collected the same
    items and were steered alike), as one."""
    bench.phases.ended("baseline")
    for run in runs:
        _exit_checked(bench, run.ran)
    results = [result for run in runs for result in bench.read(run.ran)]
    scores = bench.scores(results)
    failing = {pid: score for pid, score in scores.items() if score.status != Status.PASS}
    if failing:
        # The first one in the headline: `gate` carries only that line into its reason.
        first = _not_passing(*next(iter(failing.items())))
        more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
        raise Refused(
            f"vet needs a passing baseline: {len(failing)} propert(ies) did not pass on the "
            f"unmutated fixtures: {first}{more} (log: {bench.log_path})",
            [_not_passing(pid, score) for pid, score in failing.items()],
        )
    pin = bench.checked.fixture_pin
    item_reads = baseline_slices.merged_reads(
        [read_reads(run.folder / "reads", pin) for run in runs]
    )
    reads = {
        pid: frozenset().union(
            *(item_reads.get(result.id, ()) for result in matching(pid, selector, results))
        )
        for pid, selector in bench.selectors.items()
    }
    harness = baseline_slices.united([_harness(run) for run in runs])
    assert harness is not None  # a whole run's, or slices checked to be alike
    words = {
        pid: _entry_words(matching(pid, selector, results), item_reads)
        for pid, selector in bench.selectors.items()
    }
    used, pythons = _used(bench, runs)
    return Baseline(tuple(results), reads, harness, words, item_reads, used, pythons)


def _used(
    bench: Bench, runs: Sequence[BaselineRun]
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """What the baseline's RUNS used under ROOT, and their Pythons; (None, ()) when not
    measured."""
    used: set[str] = set()
    pythons: set[str] = set()
    for run in runs:
        if run.measuring is None:
            return None, ()
        try:
            used.update(measurement.read_measured(run.measuring, run.tree))
        except InfraFailure as unmeasured:
            bench.progress.say(f"result cache not used: {unmeasured.message}")
            return None, ()
        pythons.update(measurement.interpreters(run.measuring))
    return tuple(sorted(used)), tuple(sorted(pythons))


def _entry_words(
    results: Sequence[TestResult], item_reads: Mapping[str, frozenset[str]]
) -> dict[str, frozenset[str]]:
    """Per pinned file, the parametrisation words of the tests that read it."""
    words: dict[str, set[str]] = {}
    for result in results:
        read = item_reads.get(result.id, ())
        found = entry_words([result.id])
        for path in read:
            words.setdefault(path, set()).update(found)
    return {path: frozenset(found) for path, found in words.items()}


def _not_passing(property_id: str, score: PropertyScore) -> str:
    why = f" ({score.missing_reason})" if score.missing_reason else ""
    return f"{property_id}: {score.status}{why}"


def read_reads(folder: Path, pin: FixturePin) -> dict[str, frozenset[str]]:
    """Pinned paths each item opened, from every process's reads file (xdist: several)."""
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


@frozen
class Findings:
    harness: Harness
    properties: dict[str, PropertyVet]
    unread_pinned_files: tuple[str, ...]
    per_file: PerFileVet | None
    # Mutant runs whose results came from the cache, and in how many subjects.
    reused_runs: int = 0
    reused_subjects: int = 0
    subjects: int = 0


def examine(bench: Bench, checked: Preflight, request: Request) -> Findings:
    domains = {
        prop.id: domain_files(prop, checked.fixture_pin)
        for prop in checked.properties_pin.properties
    }
    # With --jobs N the baseline runs in N slices, each in a scratch copy that is then a lane.
    measure = request.cache is not None
    baseline, trees = run_baseline(bench, measure=measure, slices=request.jobs)
    plan = subjects(domains, baseline.reads)
    bench.phases.ended("read map")
    cache = result_cache(bench, baseline)
    entries = mutate_subjects(bench, plan, baseline, cache, trees)
    bench.phases.ended("mutants")
    trials = {pid: entry.trials[pid] for entry in entries for pid in entry.trials}
    reused = [entry for entry, fresh in zip(entries, _fresh(entries), strict=True) if not fresh]
    verdicts = {
        pid: judge(
            trials[pid],
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
        bench.phases.ended("per-file")
    return Findings(
        baseline.harness,
        verdicts,
        unread,
        per_file,
        reused_runs=sum(entry.runs for entry in reused),
        reused_subjects=len(reused),
        subjects=len(entries),
    )


class _Reused(Entry):
    """An entry read back from the cache, not made by this vet."""


def _fresh(entries: Sequence[Entry]) -> list[bool]:
    return [not isinstance(entry, _Reused) for entry in entries]


def result_cache(bench: Bench, baseline: Baseline) -> ResultCache | None:
    """The cache, keyed on what decides every mutant run; None with --no-cache, or when the
    baseline's use of ROOT was not measured."""
    request, checked = bench.request, bench.checked
    if request.cache is None or baseline.used is None:
        return None
    pinned = checked.fixture_pin.files
    oracles = baseline.harness.files_under_root()
    files = [path for path in (*baseline.used, *oracles) if path not in pinned]
    environment = {name: os.environ.get(name) for name in sorted(set(bench.kept_env()))}
    key_parts = {
        "fixture_digest": checked.digest,
        "fixture_pin": checked.fixture_pin.pin_id,
        "properties_pin_sha256": checked.properties_pin.sha256,
        "command": list(request.command),
        "gate_version": three_ledger.__version__,
        "python": list(baseline.pythons),
        "pytest": baseline.harness.pytest,
        "plugins": [[plugin.name, plugin.source] for plugin in baseline.harness.plugins],
        "blob_ids": blob_ids(bench.tree, files),
        "network_enforcement": str(bench.enforcement),
        "timeout_s": request.timeout_s,
        "left_out": list(bench.ignore),
        "environment_sha256": ResultCache.digest_of(environment),
    }
    return ResultCache(request.cache, key_parts)


def deselected(bench: Bench, subject: Subject, baseline: Baseline) -> list[str]:
    """The baseline's items a mutant of SUBJECT leaves out: those that read none of its files
    and are none of its properties' tests. Items the mutant brings into being still run."""
    files = set(subject.files)
    kept = {
        result.id
        for pid in subject.property_ids
        for result in matching(pid, bench.selectors[pid], baseline.results)
    }
    kept.update(item for item, read in baseline.item_reads.items() if read & files)
    return sorted({result.id for result in baseline.results} - kept)


def mutate_subjects(
    bench: Bench,
    plan: Sequence[Subject],
    baseline: Baseline,
    cache: ResultCache | None,
    trees: Sequence[Path],
) -> list[Entry]:
    """Every subject's entry, in PLAN's order: from the cache, or from its mutants, run in
    as many lanes at once as there are TREES (scratch copies no run is using)."""
    keys = [None if cache is None else cache.key(_subject_parts(s)) for s in plan]
    found: list[Entry | None] = [
        None if cache is None or key is None else cache.load(key) for key in keys
    ]
    entries: list[Entry | None] = [
        None if entry is None else _Reused(entry.trials, entry.runs) for entry in found
    ]
    pending = [index for index, entry in enumerate(entries) if entry is None]
    lanes = min(len(trees), len(pending))
    free: queue.SimpleQueue[Path] = queue.SimpleQueue()
    for tree in trees:
        free.put(tree)

    def lane(index: int) -> Entry:
        tree = free.get()
        try:
            return mutate_subject(bench, plan[index], baseline, tree, index)
        finally:
            free.put(tree)

    failure: Exception | None = None
    with ThreadPoolExecutor(max_workers=max(lanes, 1)) as pool:
        futures: list[Future[Entry]] = [pool.submit(lane, index) for index in pending]
        for index, future in zip(pending, futures, strict=True):
            try:
                entries[index] = made = future.result()
            except _Cancelled:
                continue
            except Exception as error:  # noqa: BLE001 - raised again: the first in plan order
                bench.cancelled.set()
                failure = failure or error
                continue
            key = keys[index]
            if cache is not None and key is not None:
                cache.store(key, made)
    if failure is not None:
        raise failure
    return [entry for entry in entries if entry is not None]


class _Cancelled(Exception):
    """Another subject's lane failed: this one stops before its next run."""


def _subject_parts(subject: Subject) -> dict[str, object]:
    return {"properties": list(subject.property_ids), "files": list(subject.files)}


def mutate_subject(
    bench: Bench, subject: Subject, baseline: Baseline, tree: Path, index: int
) -> Entry:
    """Run SUBJECT through its operators (first the entries its properties' tests consume)
    in TREE, running only the tests that read its files, until it stops."""
    left_out = deselected(bench, subject, baseline)
    deselect = None
    if left_out:
        deselect = bench.private / f"deselect-{index}.json"
        deselect.write_text(json.dumps(left_out), encoding="utf-8")
    lane = Lane(tree, deselect)
    originals = scratch.read_files(tree, subject.files)
    joined: dict[str, frozenset[str]] = {}
    for pid in subject.property_ids:
        for path, found in baseline.entry_words.get(pid, {}).items():
            joined[path] = joined.get(path, frozenset()) | found
    tracker = Tracker(subject, originals, entry_operators(joined, originals))
    runs = 0
    while (mutant := tracker.next_mutant()) is not None:
        if bench.cancelled.is_set():
            raise _Cancelled
        operator, mutation = mutant
        label = f"{operator.name} on {len(mutation)} file(s) of {', '.join(tracker.active())}"
        observed = bench.mutated(label, mutation, originals, lane)
        runs += 1
        _record(tracker, mutant, observed)
    trials = {pid: tuple(found) for pid, found in tracker.trials.items()}
    return Entry(trials, runs)


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
        reused_runs=findings.reused_runs,
    )
