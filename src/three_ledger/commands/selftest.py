"""`three-ledger selftest`: plant known regressions in a scratch clone and watch the gate fail.

A checker you have not watched fail is not a gate. `vet` watches each property fail; this
watches the whole gate, as the repository configures it (pins, command, runner), reject a
broken product, a weakened test, a moved fixture and the rest. Each plant is a commit on top of
HEAD in a scratch clone, run through the whole `gate` with `--base` its parent, as a CI job
runs it; the ledger-tampering plants run `merge` on a plant's ledgers. The user's tree is only
read: the clone is made with `git clone` and removed afterwards, on SIGTERM too.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import itertools
import json
import os
import py_compile
import re
import secrets
import shlex
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType

from three_ledger import __version__, jsonio
from three_ledger.errors import InfraFailure, Refused, UsageError
from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.gate_plan import Plan, Unusable, find_pins
from three_ledger.ledgers import fresh_recorded_at, new_ledger_id
from three_ledger.outputs import Output, refuse_unwritable, remove_stale
from three_ledger.pins import FixturePin, PropertiesPin, load_fixture_pin
from three_ledger.pytest_config import entries, pytest_settings
from three_ledger.runner import run_command
from three_ledger.selftest import plants as p
from three_ledger.selftest.plants import EXPECTED, Outcome, Plant
from three_ledger.selftest.product import (
    Mutation,
    by_reference,
    imported_names,
    is_test_module,
    module_files,
    mutations,
    names_defined,
    names_used,
    product_modules,
    returning_early,
    top_level_functions,
)
from three_ledger.selftest.scratch import Scratch, run_git, scratch_clone
from three_ledger.vocabulary import Posture

SCHEMA = "selftest-ledger"
# How many product mutations are tried, each with one `properties` run, before giving up.
MAX_TRIALS = 12
# How many mutations of each candidate module the first pass tries, before the rest of each.
FIRST_PASS_MUTATIONS = 2
# The commit message of every plant: the kind a project's own history holds.
MESSAGE = "Update"
# The variables a CI job sets that name a base or an event: never seen by a plant's gate.
_CI_PREFIXES = ("GITHUB_", "GITLAB_", "CI_", "BUILDKITE", "CIRCLE", "TRAVIS", "RUNNER_")
_CI_NAMES = frozenset({"CI", "THREE_LEDGER_BASE"})
_STEP_LINE = re.compile(r"^properties [^\n]*?: exit (\d+): (.*)$", re.MULTILINE)


@frozen
class Request:
    pins_dir: Path
    command: list[str]
    root: Path
    out: Path
    only: tuple[str, ...] = ()
    keep: Path | None = None
    timeout_s: float = 1800.0
    quiet: bool = False


@frozen
class Seen:
    """What one run of `gate` (or `merge`) answered."""

    exit_code: int
    posture: Posture | None
    row: int | None
    reason: str
    properties_exit: int | None
    properties_note: str
    out_dir: Path

    def __str__(self) -> str:
        if self.posture is None:
            return f"no decision (exit {self.exit_code})"
        return f"{self.posture.value} row {self.row}"

    def infrastructure(self) -> str | None:
        """Why the run is no answer at all, or None."""
        if self.posture is None:
            return f"no decision: exit {self.exit_code}: {self.reason}"
        if (
            self.properties_exit == ExitCode.INFRA_FAILURE
            and "tripwire" not in self.properties_note
        ):
            return f"the properties step failed as infrastructure: {self.properties_note}"
        return None


# The clean run's tests could not import something in the scratch clone: most often the
# product, installed editable from the user's tree (which the sandbox hides when under /tmp).
NOT_IMPORTED_IN_THE_CLONE = (
    "note: the tests could not import a module in the scratch clone: a project installed "
    "editable (`pip install -e .`) imports the user's tree, not the clone, and the sandbox "
    "hides a tree under /tmp; give the tests the checkout they run in (pytest's "
    "`pythonpath`), as a CI job does"
)


@frozen
class Result:
    plant: Plant
    outcome: Outcome
    seen: str
    detail: str

    def record(self) -> dict[str, str]:
        return {
            "plant": self.plant.value,
            "outcome": self.outcome.value,
            "expected": str(EXPECTED[self.plant]),
            "seen": self.seen,
            "detail": self.detail,
        }


@frozen
class Broken:
    """The product mutation that made a pinned property fail, as `properties` saw it."""

    mutation: Mutation
    module: str
    base_source: str
    failing: Mapping[str, Sequence[str]]

    def first_test(self) -> tuple[str, str]:
        prop_id = sorted(self.failing)[0]
        return prop_id, self.failing[prop_id][0]


# A mutation's trial stops at this many times the clean run's command, a minute at least.
TRIAL_TIMEOUT_FACTOR = 10
MIN_TRIAL_TIMEOUT_S = 60.0


def _command_seconds(ledger: Path) -> float | None:
    """The `duration_ms` of a property ledger, in seconds; None where there is none to read."""
    try:
        duration = json.loads(ledger.read_text(encoding="utf-8"))["duration_ms"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return duration / 1000 if isinstance(duration, int) and duration >= 0 else None


@dataclass
class Session:
    """One selftest: its request, the scratch copy it works in, and the plan of its runs."""

    request: Request
    scratch: Scratch
    work: Path
    plan: Plan
    pins_dir: Path
    env: dict[str, str]
    clean: Seen | None = None
    broken: Broken | None = None
    broken_commit: str | None = None
    broken_seen: Seen | None = None
    why_unbroken: str = ""
    # How long the clean run's command took, where its property ledger says.
    clean_command_s: float | None = None
    # The names the property tests' source uses: what to mutate first.
    names_tests_use: set[str] = field(default_factory=set)
    runs: int = 0
    results: list[Result] = field(default_factory=list)

    # --- runs --------------------------------------------------------------------------

    def say(self, line: str) -> None:
        if not self.request.quiet:
            print(f"selftest: {line}", flush=True)

    def commit(self) -> str:
        return self.scratch.commit(MESSAGE)

    def gate(self, name: str, base: str) -> Seen:
        out = self.work / "runs" / name
        argv = [
            *_three_ledger(),
            "gate",
            *("--pins-dir", str(self.pins_dir)),
            *("--command", shlex.join(self.request.command)),
            *("--root", "."),
            *("--base", base),
            *("--out-dir", str(out)),
            *("--timeout", f"{self.request.timeout_s:g}"),
            "--quiet",
        ]
        log = self.work / "runs" / f"{name}.log"
        self._run(argv, log, self.request.timeout_s * 8 + 120)
        text = log.read_text(encoding="utf-8", errors="replace")
        step = _STEP_LINE.search(text)
        return _seen(out / "decision.json", self._last_exit, text, step, out)

    def merge(self, name: str, fixture: Path, prop: Path, base: str) -> Seen:
        out = self.work / "runs" / name
        side = self.plan.sides[0]
        argv = [
            *_three_ledger(),
            "merge",
            *("--fixture-ledger", str(fixture), "--property-ledger", str(prop)),
            *("--pin", str(side.path), "--root", "."),
            *("--pins-dir", str(self.pins_dir), "--base", base),
            *("--properties", str(self.plan.properties_pin.source)),
            *("--out", str(out / "decision.json")),
        ]
        log = self.work / "runs" / f"{name}.log"
        self._run(argv, log, 600.0)
        text = log.read_text(encoding="utf-8", errors="replace")
        return _seen(out / "decision.json", self._last_exit, text, None, out)

    _last_exit: int = 0

    def _run(self, argv: list[str], log: Path, timeout_s: float) -> None:
        self.runs += 1
        with open(os.devnull, "wb") as quiet:
            done = run_command(
                argv,
                cwd=self.scratch.root,
                env=self.env,
                timeout_s=timeout_s,
                log_path=log,
                console=quiet,
            )
        if done.interrupted_by is not None:
            raise KeyboardInterrupt
        failure = done.failure()
        if failure is not None:
            raise InfraFailure(f"selftest: {shlex.join(argv[3:5])}: {failure}; log {log}")
        self._last_exit = done.exit_code if done.exit_code is not None else -1

    # --- the clean run and the broken product -----------------------------------------

    def clean_run(self) -> Seen:
        self.scratch.reset()
        self.commit()
        seen = self.gate("clean", self.scratch.head)
        if (why := seen.infrastructure()) is not None:
            failure = InfraFailure(f"selftest: the clean run on HEAD failed: {why}")
            if self.request.keep is None:
                # The log it names is in the scratch folder, removed as selftest returns.
                failure.notes.append(
                    "its log is removed with selftest's scratch folder: run "
                    "with --keep DIR to keep every run's ledgers and logs"
                )
            if "ModuleNotFoundError" in why or "ImportError" in why:
                failure.notes.append(NOT_IMPORTED_IN_THE_CLONE)
            raise failure
        if seen.posture is Posture.REJECT:
            raise Refused(
                f"selftest: the clean run (an empty change on HEAD "
                f"{self.scratch.head[:12]}) was rejected at row {seen.row}: {seen.reason}; "
                "every plant would be rejected for that reason, so none of them would mean "
                "anything: fix the gate's setup first"
            )
        self.clean = seen
        self.clean_command_s = _command_seconds(self.work / "runs" / "clean" / "property-a.json")
        return seen

    def trial_timeout(self) -> float:
        """A mutant that loops is no broken product to plant the rest on: its trial stops at
        TRIAL_TIMEOUT_FACTOR times the clean run's command (MIN_TRIAL_TIMEOUT_S at least), not
        at --timeout. One of click's mutants looped for more than twenty minutes."""
        if self.clean_command_s is None:
            return self.request.timeout_s
        bound = max(MIN_TRIAL_TIMEOUT_S, self.clean_command_s * TRIAL_TIMEOUT_FACTOR)
        return min(self.request.timeout_s, bound)

    def find_broken(self) -> None:
        pin = self.plan.properties_pin
        candidates = self.product_candidates(pin)
        if not candidates:
            self.why_unbroken = "no product module found to mutate"
            return
        tried = 0
        mutated: list[str] = []
        for module, source, mutation in self._trials(candidates):
            tried += 1
            if module not in mutated:
                mutated.append(module)
            failing = self._fails(mutation, tried)
            if failing:
                self.broken = Broken(mutation, module, source, failing)
                self.say(f"broken product: {mutation.describe}")
                return
            # Said as tried, so that an escape can be judged mutation by mutation.
            written = (self.work / "trials" / f"{tried}.json").is_file()
            outcome = "no pinned property failed"
            if not written:
                why = _refusal(self.work / "trials" / f"{tried}.log")
                outcome = (
                    f"properties wrote no ledger (exit {self._last_exit}: {why})"
                    if why
                    else f"properties wrote no ledger (exit {self._last_exit}; a trial stops "
                    f"at {self.trial_timeout():g} s)"
                )
            self.say(f"mutation {tried}: {mutation.describe}: {outcome}")
        self.why_unbroken = (
            f"none of {tried} mutation(s) of {', '.join(mutated) or 'the product'} made a pinned "
            "property fail: the gate cannot see a broken product there (a ceremony property, "
            "or properties that do not run these modules: selftest mutates first the product "
            "code the property tests name, then what they import)"
        )

    def _trials(self, candidates: Sequence[str]) -> Iterator[tuple[str, str, Mutation]]:
        """Up to MAX_TRIALS mutations: first a few of each candidate module in turn, so that a
        product of many modules is tried in more than its first, then the rest of each."""
        made: dict[str, tuple[str, Iterator[Mutation]]] = {}
        budget = MAX_TRIALS
        for per_module in (FIRST_PASS_MUTATIONS, MAX_TRIALS):
            for module in candidates:
                if module not in made:
                    source = (self.scratch.root / module).read_text(encoding="utf-8")
                    named = frozenset(self.names_tests_use)
                    made[module] = (source, iter(mutations(module, source, named)))
                source, pending = made[module]
                for mutation in itertools.islice(pending, per_module):
                    if budget == 0:
                        return
                    budget -= 1
                    yield module, source, mutation

    def _fails(self, mutation: Mutation, trial: int) -> dict[str, list[str]]:
        """The failing tests per property under MUTATION, scored by `properties` alone."""
        self.scratch.reset()
        (self.scratch.root / mutation.path).write_text(mutation.source, encoding="utf-8")
        out = self.work / "trials" / f"{trial}.json"
        timeout_s = self.trial_timeout()
        argv = [
            *_three_ledger(),
            "properties",
            *("--pin", str(self.plan.sides[0].path)),
            *("--expect-digest", self._clean_digest()),
            *("--properties", str(self.plan.properties_pin.source)),
            *("--command", shlex.join(self.request.command)),
            *("--out", str(out), "--root", ".", "--base", self.scratch.head),
            *("--timeout", f"{timeout_s:g}", "--quiet"),
        ]
        self._run(argv, self.work / "trials" / f"{trial}.log", timeout_s + 120)
        self.scratch.reset()
        if not out.is_file():
            return {}
        ledger = json.loads(out.read_text(encoding="utf-8"))
        failing: dict[str, list[str]] = {}
        for prop_id, status in ledger["status_by_id"].items():
            if status in ("fail", "error"):
                tests = ledger["failing_tests"].get(prop_id, [])
                failing[prop_id] = [test["id"] for test in tests]
        return {k: v for k, v in failing.items() if v}

    def _clean_digest(self) -> str:
        assert self.clean is not None
        ledger = self.clean.out_dir / "fixture-a.json"
        digest: str = json.loads(ledger.read_text(encoding="utf-8"))["digest"]
        return digest

    def product_candidates(self, pin: PropertiesPin) -> list[str]:
        tracked = self._tracked()
        imports = self._test_imports(pin, tracked)
        if pin.product_paths is not None:
            modules = product_modules(tracked, pin.product_paths)
            used = self.names_tests_use = self._names_tests_use(pin, tracked)
            defined = {path: names_defined(self._source(path)) for path in modules}
            return by_reference(modules, imports, defined, used)
        firsts: list[str] = []
        for found in self._first_imports(pin, tracked):
            if found not in firsts:
                firsts.append(found)
        return firsts

    def _tracked(self) -> list[str]:
        listed = run_git(self.scratch.root, ["ls-files", "-z", "--", "."])
        return [path for path in listed.split("\0") if path]

    def search_folders(self, module: str) -> list[str]:
        root = self.scratch.root

        def read(name: str) -> bytes | None:
            target = root / name
            return target.read_bytes() if target.is_file() else None

        paths = entries(pytest_settings(read).get("pythonpath"))
        return [str(PurePosixPath(module).parent), ".", "src", *paths]

    def _test_modules(self, pin: PropertiesPin, tracked: Sequence[str]) -> list[str]:
        files = [sel.split("::")[0] for prop in pin.properties for sel in prop.test]
        return [path for path in dict.fromkeys(files) if path in tracked]

    def _names_tests_use(self, pin: PropertiesPin, tracked: Sequence[str]) -> set[str]:
        used: set[str] = set()
        for module in self._test_modules(pin, tracked):
            used |= names_used(self._source(module))
        return used

    def _source(self, module: str) -> str:
        return (self.scratch.root / module).read_text(encoding="utf-8", errors="replace")

    def _test_imports(self, pin: PropertiesPin, tracked: Sequence[str]) -> list[str]:
        found: list[str] = []
        for module in self._test_modules(pin, tracked):
            source = (self.scratch.root / module).read_text(encoding="utf-8", errors="replace")
            for name in imported_names(source):
                path = module_files(name, self.search_folders(module), tracked)
                if path is not None and not is_test_module(path):
                    found.append(path)
        return found

    def _first_imports(self, pin: PropertiesPin, tracked: Sequence[str]) -> Iterator[str]:
        for module in self._test_modules(pin, tracked):
            source = (self.scratch.root / module).read_text(encoding="utf-8", errors="replace")
            for name in imported_names(source):
                path = module_files(name, self.search_folders(module), tracked)
                if path is not None and not is_test_module(path):
                    yield path
                    break

    def helpers(self) -> list[str]:
        """Modules the property tests import that are neither product nor test modules, nor
        in a pinned fixture folder: a loader kept with its data (mistune's
        `tests/fixtures/__init__.py`) is a fixture, which the fixture ledger guards at row 1,
        not the oracle check this plant is about."""
        pin = self.plan.properties_pin
        tracked = self._tracked()
        product = set(self.product_candidates(pin))
        if self.broken is not None:
            product.add(self.broken.module)
        folders = [f"{folder.rstrip('/')}/" for side in self.plan.sides for folder in side.folders]
        imports = self._test_imports(pin, tracked)
        return [
            path
            for path in dict.fromkeys(imports)
            if path not in product and not path.startswith(tuple(folders))
        ]


def _three_ledger() -> list[str]:
    # -P: the scratch clone, the child's working folder, never lands on the gate's sys.path.
    return [sys.executable, "-P", "-m", "three_ledger"]


def _seen(decision: Path, exit_code: int, text: str, step: re.Match[str] | None, out: Path) -> Seen:
    properties_exit = int(step.group(1)) if step else None
    note = step.group(2) if step else ""
    try:
        document = json.loads(decision.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
        return Seen(exit_code, None, None, last[0], properties_exit, note, out)
    posture = Posture(document["posture"])
    return Seen(exit_code, posture, document["row"], document["reason"], properties_exit, note, out)


# --- the command ------------------------------------------------------------------------


def selftest(request: Request) -> int:
    only = _only(request.only)
    refuse_unwritable([Output("--out", request.out)], pins_dir=request.pins_dir)
    if (note := remove_stale(request.out)) is not None:
        print(f"three-ledger: {note}", file=sys.stderr)
    from three_ledger.isolation import refuse_code_from_root

    refuse_code_from_root(request.root)
    pins_in_root = _pins_in_root(request)
    started = time.monotonic()
    with (
        _sigterm_interrupts(),
        _work_folder(request.keep) as work,
        scratch_clone(request.root, work) as scratch,
    ):
        try:
            plan = find_pins(scratch.root / pins_in_root)
        except Unusable as exc:
            raise Refused(f"selftest: {request.pins_dir}: {exc}") from None
        env = _plant_environment(os.environ)
        session = Session(request, scratch, work, plan, pins_in_root, env)
        session.say(f"scratch clone of HEAD {scratch.head[:12]} at {scratch.top}")
        clean = session.clean_run()
        session.say(f"clean run: {clean} ({clean.reason})")
        _plant_all(session, only)
    duration_ms = int((time.monotonic() - started) * 1000)
    _write_ledger(request, session, duration_ms)
    _print_report(session, request, duration_ms)
    return _exit_code(session.results)


def _only(names: Sequence[str]) -> tuple[Plant, ...]:
    known = {plant.value: plant for plant in Plant}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(
            f"selftest: --only {', '.join(unknown)}: no such plant; the plants are "
            f"{', '.join(known)}"
        )
    return tuple(known[name] for name in names) or tuple(Plant)


def _pins_in_root(request: Request) -> Path:
    pins, root = request.pins_dir.resolve(), request.root.resolve()
    if not pins.is_relative_to(root):
        raise Refused(
            f"selftest: --pins-dir {request.pins_dir} is not inside --root {request.root}"
        )
    return pins.relative_to(root)


def _plant_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The job's environment without anything that names a base or a CI event."""
    return {
        name: value
        for name, value in env.items()
        if name not in _CI_NAMES and not name.startswith(_CI_PREFIXES)
    }


@contextlib.contextmanager
def _work_folder(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
            raise Refused(f"{keep}: --keep must be an empty folder or not exist; left untouched")
        keep.mkdir(parents=True, exist_ok=True)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="three-ledger-selftest-") as temporary:
        yield Path(temporary).resolve()


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends the selftest as Ctrl-C does: every `finally` runs, the clone goes."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- the plants -------------------------------------------------------------------------


def _plant_all(session: Session, only: Sequence[Plant]) -> None:
    wanted = set(only)
    if wanted & ({Plant.BROKEN_PRODUCT} | p.NEEDS_BROKEN):
        session.find_broken()
    for plant in Plant:
        if plant not in wanted:
            continue
        session.say(f"{plant.value}: {p.DESCRIPTIONS[plant]} ...")
        result = _plant(session, plant)
        session.results.append(result)
        # A plant that was not made saw nothing: its reason is what there is to say.
        seen = result.detail if result.outcome is Outcome.NOT_APPLICABLE else result.seen
        session.say(f"{plant.value}: {result.outcome.value}: {seen}")


def _plant(session: Session, plant: Plant) -> Result:
    if plant is Plant.BROKEN_PRODUCT:
        return _broken_product(session)
    if plant in p.NEEDS_BROKEN and session.broken is None:
        return Result(
            plant, Outcome.NOT_APPLICABLE, "-", f"no broken product: {session.why_unbroken}"
        )
    match plant:
        case Plant.MOVED_FIXTURE | Plant.UNPINNED_FIXTURE:
            return _fixture_plant(session, plant)
        case Plant.WEAKENED_ORACLE | Plant.WEAKENED_HELPER:
            return _weakened(session, plant)
        case Plant.FORCING_CONFTEST | Plant.MASKING_CONFTEST:
            return _conftest(session, plant)
        case Plant.PIN_MUTATION:
            return _pin_mutation(session)
        case Plant.REPLAYED_LEDGER | Plant.SHARED_CLOCK | Plant.FRESH_CLOCK_FORGERY:
            return _tampered(session, plant)
        case Plant.SETSID_SLEEPER | Plant.FIXTURE_WRITE | Plant.NETWORK:
            return _canary(session, plant)
        case Plant.COMMITTED_BYTECODE:
            return _bytecode(session)
    raise AssertionError(plant)  # pragma: no cover


def _judged(session: Session, plant: Plant, seen: Seen, what: str = "") -> Result:
    """The plant's outcome from what the gate said; WHAT says what the plant did."""
    expected = EXPECTED[plant]
    caught = expected.holds(seen.posture, seen.row, seen.properties_exit)
    prefix = f"{what}: " if what else ""
    if not caught and (why := seen.infrastructure()) is not None:
        # The log it names is in the work folder, removed at the end unless kept.
        return Result(plant, Outcome.INFRA_FAILURE, str(seen), prefix + why + _kept(session, seen))
    if caught:
        return Result(plant, Outcome.CAUGHT, str(seen), prefix + seen.reason)
    said = f"{prefix}expected {expected}, the gate said {seen}: {seen.reason}"
    return Result(plant, Outcome.ESCAPED, str(seen), said + _kept(session, seen))


def _kept(session: Session, seen: Seen) -> str:
    if session.request.keep is None:
        return " (run with --keep DIR to keep its ledgers and logs)"
    return f" (ledgers and logs kept in {seen.out_dir})"


def _write_broken(session: Session) -> Broken:
    broken = session.broken
    assert broken is not None
    (session.scratch.root / broken.mutation.path).write_text(
        broken.mutation.source, encoding="utf-8"
    )
    return broken


def _broken_run(session: Session) -> tuple[str, Seen]:
    """The broken product's commit and gate run, made once and shared by later plants."""
    if session.broken_commit is None or session.broken_seen is None:
        session.scratch.reset()
        _write_broken(session)
        session.broken_commit = session.commit()
        session.broken_seen = session.gate(Plant.BROKEN_PRODUCT.value, session.scratch.head)
    return session.broken_commit, session.broken_seen


def _broken_product(session: Session) -> Result:
    if session.broken is None:
        detail = f"{session.why_unbroken}{' (ledgers kept)' if session.request.keep else ''}"
        return Result(Plant.BROKEN_PRODUCT, Outcome.ESCAPED, "-", detail)
    _, seen = _broken_run(session)
    broken = session.broken
    failing = ", ".join(sorted(broken.failing))
    return _judged(
        session,
        Plant.BROKEN_PRODUCT,
        seen,
        f"{broken.mutation.describe} makes {failing} fail",
    )


def _fixture_plant(session: Session, plant: Plant) -> Result:
    session.scratch.reset()
    pin = load_fixture_pin(session.plan.sides[0].path)
    chosen = _domain_file(session, pin)
    if plant is Plant.MOVED_FIXTURE:
        target = session.scratch.root / chosen
        target.write_bytes(p.changed_byte(target.read_bytes()))
        detail = f"a byte of {chosen} changed"
    else:
        first = PurePosixPath(chosen)
        name = f"{first.stem}_2{first.suffix}"
        # Beside the chosen file, in whichever of the pin's folders holds it.
        new = first.parent / name
        (session.scratch.root / new).write_bytes((session.scratch.root / first).read_bytes())
        detail = f"{new} added beside the pinned files"
    session.commit()
    seen = session.gate(plant.value, session.scratch.head)
    return _judged(session, plant, seen, detail)


def _domain_file(session: Session, pin: FixturePin) -> str:
    """The first pinned file a property's domain names (the data the tests read), else the
    pin's first file."""
    named = {
        pin.domain_path(entry)
        for prop in session.plan.properties_pin.properties
        for entry in prop.domain
    }
    return next((path for path in pin.files if path in named), pin.files[0])


def _test_location(node_id: str) -> tuple[str, str]:
    """(module path, `name` or `Class.name`) of a pytest node id, parameters dropped."""
    path, *names = node_id.split("::")
    names[-1] = names[-1].split("[")[0]
    return path, ".".join(names)


def _weakened(session: Session, plant: Plant) -> Result:
    session.scratch.reset()
    broken = _write_broken(session)
    if plant is Plant.WEAKENED_ORACLE:
        _, node_id = broken.first_test()
        module, function = _test_location(node_id)
        target = session.scratch.root / module
        edited = (
            returning_early(target.read_text(encoding="utf-8"), function)
            if target.is_file()
            else None
        )
        if edited is None:
            where = (
                f"{module} defines no function {function!r}"
                if target.is_file()
                else (f"{module} is no file of the tree")
            )
            why = (
                f"cannot edit {node_id}: {where} (a test made at collection, by a "
                "parametrising hook, a metaclass or a loop, has no source of its own to weaken)"
            )
            return Result(plant, Outcome.NOT_APPLICABLE, "-", why)
        target.write_text(edited, encoding="utf-8")
        detail = f"{node_id.split('[')[0]} returns early"
    else:
        helpers = session.helpers()
        if not helpers:
            return Result(
                plant,
                Outcome.NOT_APPLICABLE,
                "-",
                "the property tests import no helper module outside the product and the tests",
            )
        for helper in helpers:
            target = session.scratch.root / helper
            source = target.read_text(encoding="utf-8")
            for function in top_level_functions(source):
                source = returning_early(source, function) or source
            target.write_text(source, encoding="utf-8")
        detail = f"every function of {', '.join(helpers)} returns early"
    session.commit()
    seen = session.gate(plant.value, session.scratch.head)
    return _judged(session, plant, seen, detail)


def _conftest(session: Session, plant: Plant) -> Result:
    session.scratch.reset()
    broken = _write_broken(session)
    conftest = session.scratch.root / "conftest.py"
    before = conftest.read_text(encoding="utf-8") if conftest.is_file() else ""
    if plant is Plant.FORCING_CONFTEST:
        added = p.FORCING_CONFTEST
    else:
        name = _module_name(session, broken.module)
        added = p.masking_conftest(
            name, str(session.scratch.root / broken.module), broken.base_source
        )
    conftest.write_text(before + added, encoding="utf-8")
    session.commit()
    seen = session.gate(plant.value, session.scratch.head)
    return _judged(session, plant, seen)


# The longest refusal a mutation's line quotes, and how the command line begins one.
_REFUSAL_CHARS = 240
_REFUSAL_PREFIXES = tuple(
    f"three-ledger: {label}: "
    for label in ("infrastructure failure", "refused", "usage error", "internal error")
)


def _refusal(log: Path) -> str | None:
    """The first line of the refusal `properties` left in LOG, without its prefix; None
    where it left none (a run stopped from outside)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        for prefix in _REFUSAL_PREFIXES:
            if line.startswith(prefix):
                said = line.removeprefix(prefix)
                return said if len(said) <= _REFUSAL_CHARS else said[: _REFUSAL_CHARS - 3] + "..."
    return None


def _module_name(session: Session, path: str) -> str:
    """The import name of PATH: relative to the deepest search folder that holds it (ROOT
    holds every path; `src/attr/_funcs.py` under a src layout is `attr._funcs`, not
    `src.attr._funcs`), unless that folder is itself a package, imported from above."""
    root = session.scratch.root
    prefixes = []
    for folder in session.search_folders(path)[1:]:
        prefix = "" if folder in ("", ".") else f"{folder.strip('/')}/"
        if path.startswith(prefix) and not (prefix and (root / prefix / "__init__.py").is_file()):
            prefixes.append(prefix)
    if not prefixes:
        return PurePosixPath(path).stem
    inner = path.removeprefix(max(prefixes, key=len)).removesuffix(".py")
    return inner.removesuffix("/__init__").replace("/", ".")


def _pin_mutation(session: Session) -> Result:
    flake_pin = session.plan.flake_pin
    if flake_pin is None:
        return Result(Plant.PIN_MUTATION, Outcome.NOT_APPLICABLE, "-", "no flake pin")
    session.scratch.reset()
    broken = _write_broken(session)
    prop_id, node_id = broken.first_test()
    review_by = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
    text = p.appended_flake(
        flake_pin.read_text(encoding="utf-8"),
        f"{prop_id}.flaky",
        node_id.split("[")[0],
        session.scratch.head,
        review_by,
    )
    flake_pin.write_text(text, encoding="utf-8")
    session.commit()
    seen = session.gate(Plant.PIN_MUTATION.value, session.scratch.head)
    return _judged(session, Plant.PIN_MUTATION, seen)


def _tampered(session: Session, plant: Plant) -> Result:
    commit, seen = _broken_run(session)
    assert session.clean is not None
    fixture = seen.out_dir / "fixture-a.json"
    prop = seen.out_dir / "property-a.json"
    if not fixture.is_file() or not prop.is_file():
        return Result(
            plant, Outcome.INFRA_FAILURE, str(seen), "the broken product's run left no ledgers"
        )
    session.scratch.git("checkout", "--quiet", "--force", "--detach", commit)
    forged = session.work / "forged" / f"{plant.value}.json"
    forged.parent.mkdir(parents=True, exist_ok=True)
    if plant is Plant.REPLAYED_LEDGER:
        forged.write_bytes((session.clean.out_dir / "property-a.json").read_bytes())
    else:
        document = json.loads(prop.read_text(encoding="utf-8"))
        if plant is Plant.SHARED_CLOCK:
            stamp = json.loads(fixture.read_text(encoding="utf-8"))["recorded_at"]
            document["recorded_at"] = stamp
        else:
            document["status_by_id"] = dict.fromkeys(document["status_by_id"], "pass")
            document["failing_tests"] = document["failing_counts"] = {}
            document["recorded_at"] = fresh_recorded_at()
        forged.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    merged = session.merge(plant.value, fixture, forged, session.scratch.head)
    if plant is not Plant.FRESH_CLOCK_FORGERY:
        return _judged(session, plant, merged)
    if merged.posture is Posture.REJECT:
        return Result(plant, Outcome.CAUGHT, str(merged), merged.reason)
    return Result(
        plant,
        Outcome.KNOWN_ESCAPE,
        str(merged),
        "a ledger forged with a fresh clock passes merge: the threat model's known escape "
        "(ledgers are bound to the tree, not signed)",
    )


def _canary(session: Session, plant: Plant) -> Result:
    layers = _clean_layers(session)
    module = session.broken.module if session.broken is not None else _any_product(session)
    if module is None:
        return Result(plant, Outcome.NOT_APPLICABLE, "-", "no product module to plant it in")
    needed = {Plant.SETSID_SLEEPER: "pid", Plant.FIXTURE_WRITE: "mount"}.get(plant)
    if needed is not None and layers.get(needed) != "held":
        why = layers.get(needed, "no sandbox recorded")
        return Result(
            plant, Outcome.NOT_APPLICABLE, "-", f"no sandbox: the {needed} layer is {why}"
        )
    session.scratch.reset()
    target = session.scratch.root / module
    source = target.read_text(encoding="utf-8")
    if plant is Plant.SETSID_SLEEPER:
        seconds = f"{3000 + secrets.randbelow(600)}.{secrets.randbelow(10**6):06d}"
        target.write_text(source + p.sleeper_canary(seconds), encoding="utf-8")
        session.commit()
        seen = session.gate(plant.value, session.scratch.head)
        survivors = _sleepers(seconds)
        for pid in survivors:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if survivors:
            return _escaped(
                session, plant, seen, f"a setsid sleeper outlived the run (pid {survivors[0]})"
            )
        return Result(plant, Outcome.CAUGHT, str(seen), "no process the run started outlived it")
    if plant is Plant.FIXTURE_WRITE:
        pin = load_fixture_pin(session.plan.sides[0].path)
        up = len(PurePosixPath(module).parts) - 1
        fixture = _domain_file(session, pin)
        target.write_text(source + p.fixture_write_canary(up, fixture), encoding="utf-8")
        session.commit()
        before = (session.scratch.root / fixture).read_bytes()
        seen = session.gate(plant.value, session.scratch.head)
        if (session.scratch.root / fixture).read_bytes() != before:
            return _escaped(session, plant, seen, f"the run wrote to {fixture}")
        return Result(plant, Outcome.CAUGHT, str(seen), f"{fixture} kept its bytes")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        target.write_text(source + p.network_canary(port), encoding="utf-8")
        session.commit()
        seen = session.gate(plant.value, session.scratch.head)
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return Result(plant, Outcome.CAUGHT, str(seen), "no connection left the run")
        connection.close()
    network = session.plan.properties_pin.network.value
    return _escaped(
        session, plant, seen, f"the run connected to a listener outside it (network: {network!r})"
    )


def _escaped(session: Session, plant: Plant, seen: Seen, why: str) -> Result:
    return Result(plant, Outcome.ESCAPED, str(seen), why + _kept(session, seen))


def _clean_layers(session: Session) -> dict[str, str]:
    assert session.clean is not None
    ledger = session.clean.out_dir / "property-a.json"
    try:
        document = json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    layers: dict[str, str] = document.get("sandbox", {}).get("layers", {})
    return layers


def _any_product(session: Session) -> str | None:
    candidates = session.product_candidates(session.plan.properties_pin)
    return candidates[0] if candidates else None


def _sleepers(seconds: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if seconds.encode() in argv and any(word.endswith(b"sleep") for word in argv):
            found.append(int(entry.name))
    return found


def _bytecode(session: Session) -> Result:
    session.scratch.reset()
    broken = _write_broken(session)
    source_path = session.scratch.root / broken.module
    cached = Path(importlib.util.cache_from_source(str(source_path)))
    original = session.work / "bytecode" / source_path.name
    original.parent.mkdir(parents=True, exist_ok=True)
    original.write_text(broken.base_source, encoding="utf-8")
    cached.parent.mkdir(parents=True, exist_ok=True)
    py_compile.compile(
        str(original),
        cfile=str(cached),
        dfile=str(source_path),
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    session.commit()
    seen = session.gate(Plant.COMMITTED_BYTECODE.value, session.scratch.head)
    relative = cached.relative_to(session.scratch.root)
    return _judged(session, Plant.COMMITTED_BYTECODE, seen, f"{relative} committed")


# --- the ledger and the report ------------------------------------------------------------


def _write_ledger(request: Request, session: Session, duration_ms: int) -> None:
    clean = session.clean
    assert clean is not None
    assert clean.posture is not None
    assert clean.row is not None
    document = {
        "kind": "selftest",
        "ledger_id": new_ledger_id(),
        "head_revision": session.scratch.head,
        "pins_dir": str(session.pins_dir),
        "command": list(request.command),
        "clean": {"posture": clean.posture.value, "row": clean.row, "reason": clean.reason},
        "broken_product": session.broken.mutation.describe if session.broken else None,
        "plants": [result.record() for result in session.results],
        "runs": session.runs,
        "duration_ms": duration_ms,
        "tool": {"name": "three-ledger", "version": __version__},
        "recorded_at": fresh_recorded_at(),
    }
    jsonio.validate(document, SCHEMA, request.out, "ledger about to be written")
    request.out.parent.mkdir(parents=True, exist_ok=True)
    jsonio.write_json(request.out, document)


def _print_report(session: Session, request: Request, duration_ms: int) -> None:
    width = max(len(plant.value) for plant in Plant)
    print()
    for result in session.results:
        print(f"{result.plant.value:<{width}}  {result.outcome.value:<14}  {result.seen}")
        if result.outcome is not Outcome.CAUGHT:
            print(f"{'':<{width}}  {result.detail}")
    counts = {outcome: 0 for outcome in Outcome}
    for result in session.results:
        counts[result.outcome] += 1
    summary = ", ".join(f"{n} {outcome.value}" for outcome, n in counts.items() if n)
    print(f"\nselftest: {summary} in {duration_ms / 1000:.1f} s; ledger {request.out}")
    if request.keep is not None:
        print(f"selftest: every run's ledgers and logs kept in {request.keep}/runs")


def _exit_code(results: Sequence[Result]) -> int:
    outcomes = {result.outcome for result in results}
    if Outcome.INFRA_FAILURE in outcomes:
        return ExitCode.INFRA_FAILURE
    if Outcome.ESCAPED in outcomes:
        return ExitCode.NOT_A_GATE
    return ExitCode.OK
