"""`three-ledger properties`: score the pinned properties on a matching digest (SPEC 4.2)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from three_ledger import git
from three_ledger.digest import live_digest, refuse_unreviewed
from three_ledger.errors import InfraFailure, Refused
from three_ledger.exit_codes import ExitCode
from three_ledger.isolation import refuse_code_from_root
from three_ledger.ledgers import (
    FailingTest,
    FileEntry,
    Harness,
    PropertyLedger,
    UnpinnedFailures,
    fresh_recorded_at,
    new_ledger_id,
    write_ledger,
)
from three_ledger.matching import match_pin, skip_suggestion_lines, warning_lines
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import (
    FixturePin,
    FlakePin,
    PropertiesPin,
    load_fixture_pin,
    load_flake_pin,
    load_properties_pin,
)
from three_ledger.plugin.wire import (
    FIXTURES_ENV,
    HARNESS_ENV,
    NETWORK_BANNED,
    NETWORK_ENV,
    PIN_ID_ENV,
    RESULTS_ENV,
    ROOT_ENV,
    SHARD_IDS_ENV,
)
from three_ledger.report.findings import findings, plain_lines
from three_ledger.results import (
    UNPINNED_SHOWN,
    PropertyScore,
    TestResult,
    flake_outcomes,
    score_properties,
    unpinned_failures,
)
from three_ledger.run import network_namespace
from three_ledger.run.harness import read_harness
from three_ledger.run.measured_oracles import (
    BeforeRun,
    before_run,
    measured_changes,
    unmatched_oracle_paths,
)
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.oracles import rewriting_flag
from three_ledger.run.runner_config import runner_oracle_changes
from three_ledger.run.staging import StagedPlugin, plugin_environment, stage_plugin
from three_ledger.run.tripwire import Sentinels, checked_and_removed
from three_ledger.vocabulary import Enforcement, Tripwire

if TYPE_CHECKING:
    from three_ledger.runner import RunResult

# pytest's own exit codes other than 0 and 1 say the run itself went wrong.
_PYTEST_EXITS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


@dataclass(frozen=True)
class Request:
    pin_path: Path
    expect_digest: str
    properties_path: Path
    command: list[str]
    out: Path
    root: Path
    base: str | None
    timeout_s: float
    junit_xml: Path | None
    log_path: Path | None
    flake_pin_path: Path | None
    # With a shard plan, the run is slice `shard_index` of it (commands/property_shard.py).
    shard_plan_path: Path | None = None
    shard_index: int | None = None


@dataclass(frozen=True)
class Scored:
    """Everything checked before the command runs."""

    fixture_pin: FixturePin
    properties_pin: PropertiesPin
    flake_pin: FlakePin | None
    digest: str
    base_revision: str
    head_revision: str
    # Explicit oracle paths and runner configuration that differ from the base, with why.
    oracle_reasons: dict[str, str]
    # What differed from the base when the command started, for the measured comparison.
    before: BeforeRun
    oracle_paths_unmatched: list[str]


def properties(request: Request) -> int:
    if request.shard_plan_path is not None:
        from three_ledger.commands.property_shard import property_shard

        return property_shard(request)
    pin_paths = [request.pin_path, request.properties_path]
    if request.flake_pin_path is not None:
        pin_paths.append(request.flake_pin_path)
    log_path = request.log_path or request.out.with_name(request.out.name + ".log")
    outputs = [Output("--out", request.out), Output("--log", log_path)]
    if request.junit_xml is not None:  # the gate removes what is there before the run
        outputs.append(Output("--junit-xml", request.junit_xml))
    refuse_unwritable(outputs, pins=pin_paths)
    with ThreadPoolExecutor(max_workers=1) as background, nothing_left_on_failure(request.out):
        # The namespace probe is a child process of its own: start it now, so that it
        # overlaps the pin and tree checks instead of adding to the gate's cost.
        probe = background.submit(network_namespace.namespace_available)
        scored = _git_hang_is_infra(check_before_running, request)
        enforcement = choose_enforcement(scored.properties_pin.network, request.command, probe)
        observed = run_and_read(request, scored, enforcement, log_path)
        ledger = build_ledger(request, scored, enforcement, observed)
        write_ledger(request.out, ledger)
    flake_selectors = [entry.test for entry in scored.flake_pin.flakes] if scored.flake_pin else []
    match = match_pin(scored.properties_pin, flake_selectors, observed.results)
    warnings = [*warning_lines(match), *skip_suggestion_lines(match)]
    return report(ledger, request.out, log_path, warnings)


def _git_hang_is_infra(check: Callable[[Request], Scored], request: Request) -> Scored:
    """A git that hangs is the machine failing, not the change: exit 4, as for the command."""
    try:
        return check(request)
    except git.GitHung as hung:
        raise InfraFailure(hung.message, hung.details) from None


def check_before_running(request: Request) -> Scored:
    """Every refusal of SPEC 4.2 steps 1-4, in order; nothing has run yet."""
    refuse_code_from_root(request.root)
    fixture_pin = load_fixture_pin(request.pin_path)
    properties_pin = load_properties_pin(request.properties_path)
    flake_pin = load_flake_pin(request.flake_pin_path) if request.flake_pin_path else None
    properties_pin.check_against(fixture_pin)
    live = live_digest(request.root, fixture_pin)
    expected = request.expect_digest.lower()
    if live.digest != expected and looks_like_a_path(request.expect_digest):
        raise Refused(
            f"--expect-digest {request.expect_digest!r} looks like a path, not a digest: give "
            "the 64 hex digits `three-ledger digest` prints on stdout, e.g. "
            '--expect-digest "$(three-ledger digest --pin PIN --out LEDGER)"'
        )
    if live.digest != expected:
        raise Refused(
            f"live digest of {request.pin_path} under {request.root} is {live.digest}, "
            f"not --expect-digest {expected}: the tree moved since the fixture ledger was "
            "written (`three-ledger explain OLD NEW` names the files)",
            moved_since_base(request, fixture_pin),
        )
    refuse_unreviewed(request.root, fixture_pin, live, request.base)
    root, base_revision = request.root, git.resolve_base(request.root, request.base, os.environ)
    oracle_paths = properties_pin.oracle_paths
    # The git questions below only read, and are independent: their children overlap.
    with ThreadPoolExecutor(max_workers=3) as pool:
        before = pool.submit(before_run, root, base_revision)
        listed = pool.submit(git.changed_paths, root, base_revision, oracle_paths)
        unmatched = pool.submit(unmatched_oracle_paths, root, base_revision, oracle_paths)
        head_revision = git.head_revision(root)
        reasons = {path: "runner configuration" for path in runner_oracle_changes(
            root, base_revision, request.command
        )}  # fmt: skip
        for path in listed.result():
            reasons[path] = "listed in oracle_paths"
        unmatched_paths = unmatched.result()
        flag = rewriting_flag(request.command, root)
        if flag is not None:
            raise Refused(f"--command carries {flag!r}, which rewrites the oracles it is judged by")
        return Scored(
            fixture_pin,
            properties_pin,
            flake_pin,
            live.digest,
            base_revision,
            head_revision,
            reasons,
            before.result(),
            unmatched_paths,
        )


def looks_like_a_path(text: str) -> bool:
    """A flag value that names a file (a ledger, say) rather than holding hex digits."""
    return "/" in text or "\\" in text or text.endswith(".json") or os.path.exists(text)


def moved_since_base(request: Request, fixture_pin: FixturePin) -> list[str]:
    """Where a base revision resolves, the pinned files whose bytes differ from it."""
    try:
        base = git.resolve_base(request.root, request.base, os.environ)
        moved = git.paths_differing_from(request.root, base, sorted(fixture_pin.files))
    except Refused:
        return []
    return [f"differs from the base {base[:12]}: {path}" for path in moved]


@dataclass(frozen=True)
class Observed:
    """What the run left: its results, how it exited, the JUnit report read (if any), and
    what checked its reports."""

    results: list[TestResult]
    command_exit: int
    duration_ms: int
    junit_report: FileEntry | None
    tripwire: Tripwire
    harness: Harness | None = None
    # Measured oracle files that differ from the base, with why they count.
    measured_changes: dict[str, str] = field(default_factory=dict)


def run_and_read(
    request: Request,
    scored: Scored,
    enforcement: Enforcement,
    log_path: Path,
    shard_ids: Path | None = None,
) -> Observed:
    """Run the command and read its results; with SHARD_IDS, only those node ids run."""
    from three_ledger.runner import run_command

    report, started_ns = None, 0
    if request.junit_xml is not None:
        # Imported only here: a pytest run (the common case) never reads a JUnit report.
        from three_ledger.run import junit_evidence

        fixtures_dir = scored.fixture_pin.fixtures_dir
        report = junit_evidence.prepare(request.junit_xml, request.root, fixtures_dir)
        started_ns = junit_evidence.started_at()
    sentinels = Sentinels.fresh()
    with tempfile.TemporaryDirectory(prefix="three-ledger-") as private:
        results_path = Path(private) / "results.jsonl"
        plugin = stage_plugin(Path(private))
        env = child_environment(
            os.environ, request.root, scored.fixture_pin, enforcement, results_path
        )
        env = plugin_environment(env, plugin)
        if shard_ids is not None:
            env[SHARD_IDS_ENV] = str(shard_ids)
        harness_path = Path(private) / "harness.json"
        if request.junit_xml is None:
            env.update(sentinels.environment())
            env.update(pinned_plugins_environment(env, scored.properties_pin.plugins))
            env[HARNESS_ENV] = str(harness_path)
            env[ROOT_ENV] = str(request.root.resolve())
        argv = request.command
        if enforcement is Enforcement.NETNS:
            argv = network_namespace.namespace_argv(argv)
        run = run_command(
            argv, cwd=request.root, env=env, timeout_s=request.timeout_s, log_path=log_path
        )
        failure = run.failure()
        if failure is not None:
            raise InfraFailure(f"{failure}; no property ledger written (log: {log_path})")
        assert run.exit_code is not None  # no failure means the command exited
        if report is not None:
            from three_ledger.run import junit_evidence

            results, entry = junit_evidence.read_after_run(
                report, started_ns, run.exit_code, log_path
            )
            return Observed(results, run.exit_code, run.duration_ms, entry, Tripwire.NONE)
        if run.exit_code not in (0, 1):
            raise InfraFailure(f"{exit_meaning(run.exit_code, enforcement)} (log: {log_path})")
        recorded = read_plugin_results(results_path, log_path)
        try:
            results = checked_and_removed(recorded, sentinels, allow_empty=shard_ids is not None)
            harness = read_harness(harness_path)
            measured = measured_changes(
                request.root, scored.before, harness, pinned_results(scored, results)
            )
            measured.update(unpinned_plugins(harness, scored.properties_pin.plugins))
        except InfraFailure as not_evidence:
            not_evidence.details.append(f"no property ledger written (log: {log_path})")
            raise
    return Observed(
        results, run.exit_code, run.duration_ms, None, Tripwire.SENTINELS, harness, measured
    )


def run_staged(
    command: Sequence[str],
    *,
    root: Path,
    fixture_pin: FixturePin,
    enforcement: Enforcement,
    timeout_s: float,
    log_path: Path,
    plugin: StagedPlugin,
    results_path: Path,
    extra_env: Mapping[str, str] | None = None,
    plugins: tuple[str, ...] | None = None,
    console: BinaryIO | None = None,
) -> RunResult:
    """Run the test command once in ROOT, with the staged plugin writing to RESULTS_PATH.

    The child gets the environment `run_and_read` gives it (SPEC 6, plus EXTRA_ENV, and the
    pin's PLUGINS alone when it lists them) and, under the netns ban, its own network
    namespace. How it ended is returned as is: judging it is the caller's part. `vet` runs
    every one of its runs through it.
    """
    from three_ledger.runner import run_command

    env = child_environment(os.environ, root, fixture_pin, enforcement, results_path)
    env = plugin_environment(env, plugin)
    env.update(extra_env or {})
    env.update(pinned_plugins_environment(env, plugins))
    argv = list(command)
    if enforcement is Enforcement.NETNS:
        argv = network_namespace.namespace_argv(argv)
    return run_command(
        argv, cwd=root, env=env, timeout_s=timeout_s, log_path=log_path, console=console
    )


def pinned_plugins_environment(
    env: Mapping[str, str], plugins: tuple[str, ...] | None
) -> dict[str, str]:
    """With a `plugins` key: autoload off, and exactly the pinned plugins loaded with -p."""
    if plugins is None:
        return {}
    loads = " ".join(f"-p {name}" for name in plugins)
    return {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_ADDOPTS": f"{env.get('PYTEST_ADDOPTS', '')} {loads}".strip(),
    }


def unpinned_plugins(harness: Harness, plugins: tuple[str, ...] | None) -> dict[str, str]:
    """Plugins from a distribution that loaded although the pin does not list them.

    A pinned plugin's own helpers (xdist registers several) share its distribution and pass.
    Plugins defined under ROOT are harness files, compared with the base like any oracle.
    """
    if plugins is None:
        return {}
    allowed = {plugin.source for plugin in harness.plugins if plugin.name in plugins}
    return {
        f"plugin {plugin.name}": f"loaded from {plugin.source}, which the pin's plugins omit"
        for plugin in harness.plugins
        if not plugin.source.endswith(".py") and plugin.source not in allowed
    }


def pinned_results(scored: Scored, results: Sequence[TestResult]) -> list[TestResult]:
    """The results that scored a pinned property or flake entry."""
    properties = [(prop.id, prop.test) for prop in scored.properties_pin.properties]
    flakes = [entry.test for entry in scored.flake_pin.flakes] if scored.flake_pin else []
    return [
        result
        for result in results
        if any(
            prop_id in result.property_ids or any(map(result.matches, selectors))
            for prop_id, selectors in properties
        )
        or any(map(result.matches, flakes))
    ]


def read_plugin_results(results_path: Path, log_path: Path) -> list[TestResult]:
    from three_ledger.results import read_results_file

    try:
        return read_results_file(results_path)
    except InfraFailure as failure:
        failure.details.append(
            "the plugin wrote nothing: is the command pytest, and does it keep the "
            f"environment (PYTHONPATH, PYTEST_PLUGINS)? Other runners need --junit-xml "
            f"(log: {log_path})"
        )
        raise


def exit_meaning(code: int, enforcement: Enforcement) -> str:
    if enforcement is Enforcement.NETNS and code == network_namespace.ISOLATION_FAILED:
        return "the network namespace failed its isolation check; the command did not run"
    if enforcement is Enforcement.NETNS and code == network_namespace.COMMAND_NOT_FOUND:
        return "the command could not start: not found"
    meaning = _PYTEST_EXITS.get(code, "neither 0 (all passed) nor 1 (some failed)")
    return f"the command exited {code} ({meaning}): its results cannot be trusted"


def child_environment(
    inherited: Mapping[str, str],
    root: Path,
    fixture_pin: FixturePin,
    enforcement: Enforcement,
    results_path: Path,
) -> dict[str, str]:
    """The inherited environment plus what the plugin and the property tests read (SPEC 6)."""
    env = dict(inherited)
    env[RESULTS_ENV] = str(results_path)
    env[FIXTURES_ENV] = str((root / fixture_pin.fixtures_dir).resolve())
    env[PIN_ID_ENV] = fixture_pin.pin_id
    env.pop("THREE_LEDGER_NETWORK", None)
    if enforcement is Enforcement.SOCKET_GUARD:
        env[NETWORK_ENV] = NETWORK_BANNED
    return env


def build_ledger(
    request: Request,
    scored: Scored,
    enforcement: Enforcement,
    observed: Observed,
) -> PropertyLedger:
    results = observed.results
    # The pin's own oracle paths first: a path that is both keeps the reason a reviewer wrote.
    reasons = {**observed.measured_changes, **scored.oracle_reasons}
    return PropertyLedger(
        ledger_id=new_ledger_id(),
        pin_id=scored.fixture_pin.pin_id,
        property_pin_id=scored.properties_pin.pin_id,
        property_pin_sha256=scored.properties_pin.sha256,
        fixture_digest=scored.digest,
        oracle_moved=bool(reasons),
        oracle_changes=ledger_text(sorted(reasons)),
        oracle_change_reasons=dict(zip(ledger_text(list(reasons)), reasons.values(), strict=True)),
        oracle_paths_unmatched=ledger_text(scored.oracle_paths_unmatched),
        base_revision=scored.base_revision,
        head_revision=scored.head_revision,
        command=ledger_text(request.command),
        command_exit=observed.command_exit,
        junit_report=observed.junit_report,
        duration_ms=observed.duration_ms,
        network=scored.properties_pin.network,
        network_enforcement=enforcement,
        tripwire=observed.tripwire,
        harness=observed.harness,
        shards=None,
        recorded_at=fresh_recorded_at(),
        **scored_fields(scored.properties_pin, scored.flake_pin, results),
    )


def scored_fields(
    pin: PropertiesPin, flake_pin: FlakePin | None, results: Sequence[TestResult]
) -> dict[str, Any]:
    """The property ledger's fields computed from the whole run's results under the pins."""
    selectors = {prop.id: prop.test for prop in pin.properties}
    flake_selectors = {}
    if flake_pin is not None:
        flake_selectors = {entry.test_id: entry.test for entry in flake_pin.flakes}
    scores = score_properties(selectors, results, pin.expected_skips)
    unpinned = unpinned_failures(selectors, list(flake_selectors.values()), results)
    return {
        "status_by_id": {property_id: score.status for property_id, score in scores.items()},
        "flake_results": flake_outcomes(flake_selectors, results),
        "expected_skips_left_out": {
            p: score.expected_skips for p, score in scores.items() if score.expected_skips
        },
        "failing_tests": {
            p: _failing_tests(score) for p, score in scores.items() if score.non_pass
        },
        "unpinned_failures": UnpinnedFailures(
            count=len(unpinned),
            first_ids=ledger_text([result.id for result in unpinned[:UNPINNED_SHOWN]]),
        ),
    }


def _failing_tests(score: PropertyScore) -> tuple[FailingTest, ...]:
    return tuple(
        FailingTest(_unicode(test.id), test.outcome, _reason(test.skip_reason))
        for test in score.non_pass
    )


def _reason(reason: str | None) -> str | None:
    return None if reason is None else _unicode(reason)


def ledger_text(words: Sequence[str]) -> tuple[str, ...]:
    """Words from the OS (argv, git's file names) as a UTF-8 ledger can hold them.

    Bytes that are not UTF-8 reach Python as lone surrogates; they are written as `\\xff`.
    """
    return tuple(_unicode(word) for word in words)


def _unicode(word: str) -> str:
    try:
        raw = word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from a byte
        return word.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def report(ledger: PropertyLedger, out: Path, log_path: Path, warnings: Sequence[str]) -> int:
    for prop_id, status in ledger.status_by_id.items():
        print(f"{status:8} {prop_id}", file=sys.stderr)
    for entry in ledger.oracle_paths_unmatched:
        print(
            f"three-ledger: warning: oracle_paths entry {entry!r} matches nothing at the base or "
            "in the tree: if it is a typo, that protection is gone",
            file=sys.stderr,
        )
    for warning in warnings:
        # Indented lines (a "did you mean", an entry to copy) continue the warning above.
        shown = warning if warning.startswith(" ") else f"three-ledger: warning: {warning}"
        print(shown, file=sys.stderr)
    _report_failures(ledger, log_path)
    if ledger.oracle_moved:
        changed = ", ".join(
            f"{path} ({ledger.oracle_change_reasons.get(path, 'oracle')})"
            for path in ledger.oracle_changes
        )
        print(
            f"three-ledger: oracles moved against {ledger.base_revision[:12]} ({changed}): "
            f"{out} is written with oracle_moved: true and is invalid; review the oracle "
            "edit on its own",
            file=sys.stderr,
        )
        return ExitCode.ORACLE_MOVED
    failing = ledger.failing_ids()
    if failing:
        print(f"three-ledger: {len(failing)} pinned propert(ies) not pass", file=sys.stderr)
        return ExitCode.PROPERTY_MISS
    print(f"three-ledger: every pinned property passed on {ledger.fixture_digest}", file=sys.stderr)
    return ExitCode.OK


def _report_failures(ledger: PropertyLedger, log_path: Path) -> None:
    """Name the tests behind each miss and the failures outside every property, and the log."""
    found = findings(ledger)
    for line in plain_lines(found):
        print(f"three-ledger: {line}" if not line.startswith(" ") else line, file=sys.stderr)
    if found:
        print(f"three-ledger: the command's output is in {log_path}", file=sys.stderr)
