"""One scored run: the child with its tripwire and harness, then what it left, checked.

With the plugin, the run's results count only once the tripwire's sentinels are shown to
have their required outcomes, and the measured harness is compared with the base. With a
JUnit report (another runner), the report must be this run's (`junit_evidence.py`), pytest
must not have run, and the oracles are those `junit_oracles.py` names.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from three_ledger import jsonio, run_order
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.ledgers import (
    FileEntry,
    Harness,
    PropertyLedger,
    RunOrder,
    Sandbox,
    fresh_recorded_at,
    ledger_text,
    new_ledger_id,
)
from three_ledger.paths import is_under
from three_ledger.plugin.wire import (
    HARNESS_ENV,
    ORDER_ENV,
    PLANNED_ENV,
    PYTEST_SEEN_ENV,
    ROOT_ENV,
    SHARD_IDS_ENV,
    UNPLANNED_ENV,
)
from three_ledger.progress import progress
from three_ledger.results import ResultIndex, TestResult, scored_fields
from three_ledger.run import measurement, tripwire
from three_ledger.run import sandbox as layers
from three_ledger.run.child import (
    Child,
    collection_errors,
    exit_meaning,
    killed_in_sandbox,
    plugin_lost,
    read_plugin_records,
    run_child,
    sandbox,
)
from three_ledger.run.harness import read_harness
from three_ledger.run.measured_oracles import ClosedWorld, closed_changes, measured_changes
from three_ledger.run.mount_plan import (
    prepare_writable_paths,
    read_only_hints,
    refuse_writable_holding,
)
from three_ledger.run.network_ban import choose_enforcement
from three_ledger.run.preflight import Preflight
from three_ledger.run.sandbox import Confinement, Probe, confine, require, run_files
from three_ledger.run.staging import stage_plugin
from three_ledger.vocabulary import Enforcement, OracleModel, Tripwire

if TYPE_CHECKING:
    from three_ledger.pins import PropertiesPin
    from three_ledger.run.collection import CollectedIds
    from three_ledger.runner import RunResult

# The one folder of the run's private folder the child may write: its records and caches.
WRITTEN = "written"


@frozen
class Observed:
    """What the run left: its results, how it exited, the JUnit report read (if any), and
    what checked its reports."""

    results: list[TestResult]
    command_exit: int
    duration_ms: int
    junit_report: FileEntry | None
    tripwire: Tripwire
    sandbox: Sandbox
    harness: Harness | None = None
    # Measured oracle files that differ from the base, with why they count.
    measured_changes: dict[str, str] = field(default_factory=dict)
    oracle_model: OracleModel = OracleModel.INFERRED
    untracked_reads: tuple[str, ...] = ()
    # New test modules the run left out and never loaded.
    unscored_new_files: tuple[str, ...] = ()
    # The order its tests ran in, per worker (pytest runs; None from a JUnit report).
    run_order: RunOrder | None = None
    # RESULTS indexed by the run that read them, if it did (see `results_index`).
    index: ResultIndex | None = field(default=None, compare=False, repr=False)
    # A shard that checks its plan: the collected tests its plan holds in no slice.
    unplanned: CollectedIds | None = None

    @functools.cached_property
    def results_index(self) -> ResultIndex:
        """RESULTS indexed once for every count made of them: the ledger's and the pin's. The
        run's own index serves only when it indexes this very list."""
        if self.index is not None and self.index.results is self.results:
            return self.index
        return ResultIndex(self.results)


@frozen
class ScoredRun:
    """The run `properties` scores: its command, where, for how long, and how it reports."""

    command: Sequence[str]
    root: Path
    timeout_s: float
    log_path: Path
    junit_xml: Path | None = None
    # A shard's slice: a file of the node ids that run; the others are deselected.
    shard_ids: Path | None = None
    # A shard's plan: a file of every node id it holds; the collected tests outside it are
    # recorded (`Observed.unplanned`).
    planned_ids: Path | None = None
    # The ledger's path: with a JUnit report, its folder is not the report's, and it is the
    # gate's own output, never an oracle.
    out: Path | None = None
    # --keep-env: names of the job's environment the child keeps for this run.
    keep_env: tuple[str, ...] = ()

    def kept_names(self, checked: Preflight) -> tuple[str, ...]:
        """The names kept beyond the allow-list: the pin's `env`, then --keep-env."""
        return (*checked.properties_pin.env, *self.keep_env)


class SandboxUnconfirmed(Exception):
    """A run asked for layers its trampoline could not make, so the command never started;
    FAILURE is what to report if the probe finds every one of them can be made."""

    def __init__(self, failure: InfraFailure) -> None:
        super().__init__(str(failure))
        self.failure = failure


def observe_confined(run: ScoredRun, checked: Preflight) -> tuple[Enforcement, Observed]:
    """RUN observed inside every layer of the sandbox, as its trampoline confirms them while
    it starts the command; where one cannot be made, nothing ran, and the run is made again
    with the layers `sandbox.probe_namespaces` finds (the pin's `sandbox: required` refuses
    it then). The enforcement of the network ban that run had, and what it observed."""
    network = checked.properties_pin.network
    first = layers.first_probe()
    enforcement = choose_enforcement(network, run.command, lambda: first.network)
    try:
        return enforcement, observe(run, checked, enforcement, first, confirm=True)
    except SandboxUnconfirmed as unconfirmed:
        probe = layers.probe_namespaces()
        if probe == first:  # the layers can be made, only not this run's
            raise unconfirmed.failure from None
    # Said, since the command's output may already show `unshare`'s or the trampoline's
    # refusal; each layer left out is warned about after the run.
    print(
        "three-ledger: note: not every layer of the sandbox can be made here (a refusal "
        "above says why); the command now runs with those that can",
        file=sys.stderr,
    )
    enforcement = choose_enforcement(network, run.command, lambda: probe.network)
    return enforcement, observe(run, checked, enforcement, probe)


def observe(
    run: ScoredRun,
    checked: Preflight,
    enforcement: Enforcement,
    probe: Probe,
    confirm: bool = False,
) -> Observed:
    """Run the command and read its results; a run that is not evidence is InfraFailure.

    PROBE says which of the sandbox's layers can be made here (`sandbox.py`). With CONFIRM,
    a run whose trampoline did not make them all is SandboxUnconfirmed.
    """
    if run.junit_xml is not None:
        return _observe_report(run, run.junit_xml, checked, enforcement, probe, confirm)
    with tempfile.TemporaryDirectory(prefix="three-ledger-") as private:
        written = Path(private) / WRITTEN
        written.mkdir()
        results_path = written / "results.jsonl"
        record = tripwire.record_path(written)
        harness_path = written / "harness.json"
        order_path = written / "order.json"
        extra_env: dict[str, str] = {ORDER_ENV: str(order_path)}
        if run.shard_ids is not None:
            extra_env[SHARD_IDS_ENV] = str(run.shard_ids)
        unplanned_path = written / "unplanned.jsonl"
        if run.planned_ids is not None:
            extra_env[PLANNED_ENV] = str(run.planned_ids)
            extra_env[UNPLANNED_ENV] = str(unplanned_path)
        extra_env.update(tripwire.environment(record, checked.properties_pin.product_paths))
        extra_env[HARNESS_ENV] = str(harness_path)
        extra_env[ROOT_ENV] = str(run.root.resolve())
        closed = checked.properties_pin.product_paths is not None
        # New test modules are left out of a pytest run; the measurement tells whether the
        # run loaded one anyway, so it is armed for them in the inferred model too.
        unscored = checked.base().unscored_new_files
        measuring = measurement.prepare(Path(private), written) if closed or unscored else None
        confinement = confine_run(run, checked, probe, Path(private), [written])
        child = Child(
            command=run.command,
            root=run.root,
            fixture_pin=checked.fixture_pin,
            enforcement=enforcement,
            timeout_s=run.timeout_s,
            log_path=run.log_path,
            plugin=stage_plugin(Path(private)),
            results_path=results_path,
            plugins=checked.properties_pin.plugins,
            extra_env=extra_env,
            measurement=measuring,
            ignore=unscored,
            confinement=confinement,
            caches=written / "caches",
            keep_env=run.kept_names(checked),
        )
        with progress("properties").running(f"the command: {' '.join(run.command)}"):
            ran, exit_code = _ran(child, run, confinement, confirm=confirm)
        if exit_code not in (0, 1):
            meaning = killed_in_sandbox(ran, confinement, run.log_path) or exit_meaning(
                exit_code, enforcement, confinement, run.log_path
            )
            hints = read_only_hints(run.log_path, run.root) if confinement.mounts else []
            # An exit no pytest gives (0 to 5), with nothing from the plugin: another runner?
            if exit_code > _PYTEST_EXITS and not results_path.exists():
                hints.append(plugin_lost(run.log_path))
            raise InfraFailure(f"{meaning} (log: {run.log_path})", hints)
        recorded, lines = read_plugin_records(results_path, run.log_path, run.root)
        try:
            results, guarded = tripwire.checked_and_removed(
                recorded, tripwire.read_record(record), allow_empty=run.shard_ids is not None
            )
            harness = read_harness(harness_path)
            order = run_order.recorded(lines, order_path, (r.id for r in results))
            index = ResultIndex(results)
            kept = index.pinned(checked.properties_pin.selectors(), checked.flake_selectors())
            uses = {} if measuring is None else measurement.read_measured(measuring, run.root)
            unplanned = None
            if run.planned_ids is not None:
                unplanned = _unplanned(unplanned_path, run.log_path)
            uses, writable_reads = _writable_reads(uses, checked, confinement)
            if not closed:
                changes = measured_changes(
                    run.root, checked.base().before, harness, kept, checked.fixture_pin.files
                )
                world = ClosedWorld(left_out(changes, unscored, uses), ())
            else:
                world = closed_changes(
                    run.root,
                    checked.base().before,
                    harness,
                    uses,
                    checked.properties_pin,
                    checked.fixture_pin.files,
                    kept,
                )
                # Where an oracle moved, that is the cause to name (row 5): a config file
                # that puts another copy first on the path, say.
                if results and not world.changes:
                    _refuse_unused_product(uses, checked.properties_pin)
            world.changes.update(unpinned_plugins(harness, checked.properties_pin.plugins))
        except InfraFailure as not_evidence:
            # Under xdist a run whose every module failed to collect selected nothing, so the
            # tripwire placed no sentinel: the collection errors are the cause to name first.
            collection = collection_errors(run.log_path)
            if collection is not None:
                not_evidence.message = f"pytest reported {collection}: {not_evidence.message}"
            not_evidence.details.append(f"no property ledger written (log: {run.log_path})")
            raise
    model = OracleModel.CLOSED if closed else OracleModel.INFERRED
    return Observed(
        index.results,
        exit_code,
        ran.duration_ms,
        None,
        guarded,
        _recorded_sandbox(child, ran, checked, writable_reads),
        harness,
        world.changes,
        model,
        world.untracked_reads,
        tuple(path for path in unscored if path not in uses),
        order,
        index,
        unplanned,
    )


def _unplanned(path: Path, log_path: Path) -> CollectedIds:
    """The collected tests a shard's plan holds in no slice, as its plugin recorded them."""
    # Imported here: only a shard's run reads them.
    from three_ledger.run.collection import read_collected_ids

    if not path.exists():
        raise InfraFailure(
            "the plugin did not record the collected tests the shard plan lacks: the run "
            "never finished its collection under the plugin"
        )
    return read_collected_ids(path, log_path)


def _refuse_unused_product(uses: Mapping[str, str], pin: PropertiesPin) -> None:
    """A run whose tests executed and read no file of `product_paths` tested other code: an
    installed copy of the project in site-packages, say, which every broken change passes.

    pytest-dev/pluggy's tests, run where pytest was installed from PyPI, exercised the pluggy
    pytest had already imported, never the checkout's `src/pluggy`."""
    if any(pin.is_product(path) for path in uses):
        return
    globs = ", ".join(pin.product_paths or ())
    raise InfraFailure(
        f"the run used no file of product_paths ({globs}): its tests ran code from elsewhere, "
        "so nothing of this change was tested",
        [
            (
                "an installed copy of the project (a `pip install .`, or the package pytest "
                "itself imports) stands in for the checkout: install it editable (`pip install "
                "-e .`), or give the tests its folder (pytest's `pythonpath`, or PYTHONPATH "
                "with `python -I -m three_ledger`)"
            )
        ],
    )


def confine_run(
    run: ScoredRun, checked: Preflight, probe: Probe, private: Path, writable: Sequence[Path]
) -> Confinement:
    """The sandbox's layers for RUN; with the mount layer, its writable_paths made ready."""
    pin = checked.properties_pin
    outputs = [path for path in (run.out, run.log_path) if path is not None]
    readable = [path for path in (run.shard_ids, run.planned_ids) if path is not None]
    files = run_files(
        run.root, private, writable, pin.writable_paths, outputs, run.command, readable
    )
    confinement = confine(probe, files, pin.sandbox)
    if confinement.mounts is None:
        # Without the read-only tree the run could plant code where the gate imports from:
        # what the gate imports only later is imported now.
        jsonio.load_validator_code()
    elif pin.writable_paths:
        needed = [("the gate's private folder", private)]
        needed += [("the folder the run writes its records to", folder) for folder in writable]
        refuse_writable_holding(run.root, pin.writable_paths, needed)
        prepare_writable_paths(run.root, pin.writable_paths)
    return confinement


def _recorded_sandbox(
    child: Child, ran: RunResult, checked: Preflight, writable_reads: Sequence[str] = ()
) -> Sandbox:
    """The ledger's `sandbox` of a run; InfraFailure where the pin requires a layer that
    did not hold (no_new_privs is known only once the child started)."""
    recorded = sandbox(child, ran, writable_reads=writable_reads)
    outcome = f"the run is no evidence; no property ledger written (log: {child.log_path})"
    require(checked.properties_pin.sandbox, recorded.layers, outcome)
    return recorded


def _read_only_details(run: ScoredRun, report_path: Path) -> list[str]:
    """For a JUnit run without a usable report: each write the read-only tree refused, or,
    where the report is missing and the log names none, where the runner may write."""
    hints = read_only_hints(run.log_path, run.root)
    if hints or report_path.exists():
        return hints
    allowed = (
        f"the sandbox lets the runner write only the report's folder "
        f"{report_path.parent.resolve()} (and /tmp, HOME, writable_paths): a report written "
        "anywhere else under ROOT fails on the read-only tree"
    )
    return [allowed]


# The highest exit code pytest itself gives (5: no tests collected).
_PYTEST_EXITS = 5


def _writable_reads(
    uses: Mapping[str, str], checked: Preflight, confinement: Confinement
) -> tuple[dict[str, str], tuple[str, ...]]:
    """USES without the files the run read under writable_paths (each its own empty tmpfs
    there: the run wrote them itself, and they are no file of the tree), and those files."""
    entries = checked.properties_pin.writable_paths
    if confinement.mounts is None or not entries:
        return dict(uses), ()
    inside = sorted(path for path in uses if any(is_under(path, entry) for entry in entries))
    return {path: how for path, how in uses.items() if path not in inside}, tuple(inside)


def left_out(
    changes: dict[str, str], unscored: tuple[str, ...], uses: Mapping[str, str]
) -> dict[str, str]:
    """The inferred model's CHANGES, with each new test module the run left out dropped (a
    folder of tests holds it), and each one the run loaded anyway counted, saying how."""
    kept = {path: why for path, why in changes.items() if path not in unscored}
    for path in unscored:
        if path in uses:
            kept[path] = f"new test module {uses[path]} by the run: loaded, it is an oracle"
    return kept


def _ran(
    child: Child, run: ScoredRun, confinement: Confinement, *, confirm: bool
) -> tuple[RunResult, int]:
    """CHILD run to its exit, and its exit code; a command that did not start, or (with
    CONFIRM) ran outside a sandbox it was asked for, is refused: no property ledger."""
    ran = run_child(child)
    if confirm:
        _refuse_unconfirmed(ran, run.log_path)
    failure = ran.failure()
    if failure is not None:
        raise InfraFailure(
            f"{failure}; no property ledger written (log: {run.log_path})",
            read_only_hints(run.log_path, run.root) if confinement.mounts else (),
        )
    assert ran.exit_code is not None  # no failure means the command exited
    return ran, ran.exit_code


def _refuse_unconfirmed(ran: RunResult, log_path: Path) -> None:
    """SandboxUnconfirmed for a run that ended on its own before its trampoline started the
    command inside every layer (`unshare` refused a namespace, a layer failed inside)."""
    if ran.started_inside is False and ran.failure() is None:
        raise SandboxUnconfirmed(
            InfraFailure(
                "the sandbox could not be made (the log says why); the command did not run; "
                f"no property ledger written (log: {log_path})"
            )
        )


def _observe_report(
    run: ScoredRun,
    report_path: Path,
    checked: Preflight,
    enforcement: Enforcement,
    probe: Probe,
    confirm: bool = False,
) -> Observed:
    """A run scored from the JUnit report at REPORT_PATH (`junit_evidence.py`).

    The plugin is staged all the same, with one task: to record that pytest ran, which is
    refused. The oracles are computed before the command starts (`junit_oracles.py`).
    """
    # Imported only here: a pytest run (the common case) never reads a JUnit report.
    from three_ledger.run import junit_evidence

    outputs = [path for path in (run.out, run.log_path) if path is not None]
    fixture_pin = checked.fixture_pin
    report = junit_evidence.prepare(report_path, run.root, fixture_pin.fixtures_dirs, outputs)
    changes = _report_oracles(run, checked, report.ledger_path(), outputs)
    # Nothing is left out of a JUnit run: a new test module is an oracle move there.
    for path in checked.base().unscored_new_files:
        changes[path] = "new test module: a JUnit run cannot leave it out"
    with tempfile.TemporaryDirectory(prefix="three-ledger-") as private:
        written = Path(private) / WRITTEN
        written.mkdir()
        seen = written / "pytest-seen.jsonl"
        writable = [written, report_path.parent]
        confinement = confine_run(run, checked, probe, Path(private), writable)
        child = Child(
            command=run.command,
            root=run.root,
            fixture_pin=fixture_pin,
            enforcement=enforcement,
            timeout_s=run.timeout_s,
            log_path=run.log_path,
            plugin=stage_plugin(Path(private)),
            results_path=None,
            extra_env={PYTEST_SEEN_ENV: str(seen)},
            confinement=confinement,
            caches=written / "caches",
            keep_env=run.kept_names(checked),
        )
        start = junit_evidence.started(report)
        ran, exit_code = _ran(child, run, confinement, confirm=confirm)
        killed = killed_in_sandbox(ran, confinement, run.log_path)
        if killed is not None:
            raise InfraFailure(f"{killed}; no property ledger written (log: {run.log_path})")
        junit_evidence.refuse_pytest(seen, run.log_path)
    try:
        results, entry = junit_evidence.read_after_run(report, start, exit_code, run.log_path)
    except InfraFailure as no_report:
        if confinement.mounts is not None:
            no_report.details += _read_only_details(run, report_path)
        raise
    model = OracleModel.INFERRED
    if checked.properties_pin.product_paths is not None:
        model = OracleModel.CLOSED
    return Observed(
        results,
        exit_code,
        ran.duration_ms,
        entry,
        Tripwire.NONE,
        _recorded_sandbox(child, ran, checked),
        None,
        changes,
        model,
    )


def _report_oracles(
    run: ScoredRun, checked: Preflight, report: str, outputs: Sequence[Path]
) -> dict[str, str]:
    """With `product_paths`, every changed file but the product, fixtures, pins and outputs;
    without, the launch chain. Either way before the command runs."""
    from three_ledger.run import junit_oracles

    facts = checked.base()
    pin = checked.properties_pin
    if pin.product_paths is None:
        return junit_oracles.launch_chain_changes(
            run.root, facts.base_revision, run.command, [report]
        )
    pins = [checked.fixture_pin.source, pin.source]
    if checked.flake_pin is not None:
        pins.append(checked.flake_pin.source)
    fixture_files = checked.fixture_pin.files
    exempted = junit_oracles.exempt(run.root, fixture_files, pins, [*outputs, run.root / report])
    return junit_oracles.declared_product_changes(run.root, facts.before, pin, exempted)


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


def property_ledger(
    run: ScoredRun, checked: Preflight, enforcement: Enforcement, observed: Observed
) -> PropertyLedger:
    """The property ledger of one observed run (a shard's is derived from it)."""
    facts = checked.base()
    # The pin's own oracle paths first: a path that is both keeps the reason a reviewer wrote.
    reasons = {**observed.measured_changes, **facts.oracle_reasons}
    flake_selectors = checked.flake_pin.selectors() if checked.flake_pin else {}
    properties_pin = checked.properties_pin
    return PropertyLedger(
        ledger_id=new_ledger_id(),
        pin_id=checked.fixture_pin.pin_id,
        property_pin_id=properties_pin.pin_id,
        property_pin_sha256=properties_pin.sha256,
        fixture_digest=checked.digest,
        oracle_moved=bool(reasons),
        oracle_changes=ledger_text(sorted(reasons)),
        oracle_change_reasons=dict(zip(ledger_text(list(reasons)), reasons.values(), strict=True)),
        oracle_paths_unmatched=ledger_text(facts.oracle_paths_unmatched),
        oracle_model=observed.oracle_model,
        untracked_reads=ledger_text(observed.untracked_reads),
        unscored_new_files=ledger_text(observed.unscored_new_files),
        base_revision=facts.base_revision,
        base_resolution=dataclasses.replace(
            facts.base_resolution, given=ledger_text([facts.base_resolution.given])[0]
        ),
        head_revision=facts.head_revision,
        command=ledger_text(run.command),
        command_exit=observed.command_exit,
        junit_report=observed.junit_report,
        duration_ms=observed.duration_ms,
        network=properties_pin.network,
        network_enforcement=enforcement,
        sandbox=observed.sandbox,
        tripwire=observed.tripwire,
        harness=observed.harness,
        run_order=observed.run_order,
        shards=None,
        recorded_at=fresh_recorded_at(),
        **scored_fields(
            properties_pin.selectors(),
            properties_pin.expected_skips,
            flake_selectors,
            observed.results_index,
            properties_pin.requirements(),
        ),
    )
