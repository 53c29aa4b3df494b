"""`three-ledger properties`: score the pinned properties on a matching digest (SPEC 4.2).

The checks before the run are `run/preflight.py`'s, the run and what it left
`run/observation.py`'s; this command orders them, writes the ledger and reports. A shard of a
run is `property_shard.py`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen
from three_ledger.ledgers import PropertyLedger
from three_ledger.matching import match_pin, skip_suggestion_lines, warning_lines
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pytest_config import PYTEST_CONFIGS
from three_ledger.report.findings import findings, plain_lines, status_lines
from three_ledger.run import sandbox
from three_ledger.run.mount_plan import read_only_hints
from three_ledger.run.observation import ScoredRun, observe_confined, property_ledger
from three_ledger.run.preflight import Checks, preflight
from three_ledger.run_order import write_with_order


@frozen
class Request:
    """The `properties` command line, parsed."""

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
    # --keep-env: names of the job's environment the child keeps for this run.
    keep_env: tuple[str, ...] = ()

    def checks(self) -> Checks:
        """Every check before the run (SPEC 4.2 steps 1-4)."""
        return Checks(
            root=self.root,
            pin_path=self.pin_path,
            properties_path=self.properties_path,
            flake_pin_path=self.flake_pin_path,
            expect_digest=self.expect_digest,
            against_base=True,
            base=self.base,
            command=self.command,
            keep_env=self.keep_env,
        )

    def pins(self) -> list[Path]:
        return [p for p in (self.pin_path, self.properties_path, self.flake_pin_path) if p]

    def log(self) -> Path:
        return self.log_path or self.out.with_name(self.out.name + ".log")


def properties(request: Request) -> int:
    log_path = request.log()
    outputs = [Output("--out", request.out), Output("--log", log_path)]
    if request.junit_xml is not None:  # the gate empties the report's folder before the run
        outputs.append(Output("--junit-xml", request.junit_xml))
    refuse_unwritable(outputs, pins=request.pins())
    run = ScoredRun(
        request.command,
        request.root,
        request.timeout_s,
        log_path,
        request.junit_xml,
        out=request.out,
        keep_env=request.keep_env,
    )
    with nothing_left_on_failure(request.out):
        checked = preflight(request.checks())
        enforcement, observed = observe_confined(run, checked)
        ledger = property_ledger(run, checked, enforcement, observed)
        ledger = write_with_order(request.out, ledger)
    match = match_pin(checked.properties_pin, checked.flake_selectors(), observed.results_index)
    warnings = [*warning_lines(match), *skip_suggestion_lines(match)]
    warnings += sandbox_warnings(ledger, log_path, request.root)
    return report(ledger, request.out, log_path, warnings)


def sandbox_warnings(ledger: PropertyLedger, log_path: Path, root: Path) -> list[str]:
    """Each layer of the sandbox that did not hold; for a run with misses, each write the
    read-only tree refused."""
    missing = ledger.sandbox.missing()
    warnings = [f"sandbox layer {name}: {state}" for name, state in missing.items()]
    if ledger.failing_ids() and ledger.sandbox.layers.get(sandbox.Layer.MOUNT) == sandbox.HELD:
        warnings += read_only_hints(log_path, root)
    return warnings


# The files that steer pytest, which `oracle_paths` names to guard against their appearing
# (writing-pins.md): one that matches nothing is the guard, not a typo, and is not warned
# about (PyYAML's trial: every run warned of the pin's `conftest.py` and `pytest.ini`).
_GUARDS = frozenset({"conftest.py", *(name for name, _ in PYTEST_CONFIGS), "setup.cfg", "tox.ini"})


def report(ledger: PropertyLedger, out: Path, log_path: Path, warnings: Sequence[str]) -> int:
    for line in status_lines(ledger):
        print(line, file=sys.stderr)
    for entry in ledger.oracle_paths_unmatched:
        if PurePosixPath(entry).name in _GUARDS:
            continue  # a file that must never appear, as writing-pins.md advises: no typo
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
