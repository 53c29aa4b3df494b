"""The checks before a test run, in one order: each command asks for the ones it needs.

`properties` (and a shard of it) asks for all of them (SPEC 4.2 steps 1-4); `vet` for all but
the digest it is handed and the base; `plan` for the pins, the tree and the bytecode it would
load in place of its source, since it writes no ledger. Whatever is asked, the order is the same,
so the first refusal a user meets does not depend on the command. Nothing has run when this
returns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from three_ledger import git
from three_ledger.background import Background
from three_ledger.base_resolution import BaseResolution, choose_base
from three_ledger.bytecode import refuse_bytecode_in_tree, refuse_new_compiled
from three_ledger.digest import live_digest, refuse_unreviewed
from three_ledger.env_policy import refuse_keep_env
from three_ledger.errors import InfraFailure, Refused
from three_ledger.frozen import frozen
from three_ledger.isolation import refuse_code_from_root
from three_ledger.pins import (
    FixturePin,
    FlakePin,
    PropertiesPin,
    load_fixture_pin,
    load_flake_pin,
    load_properties_pin,
)
from three_ledger.run.measured_oracles import BeforeRun, before_run, unmatched_oracle_paths
from three_ledger.run.mount_plan import known_oracle_files, refuse_writable_overlaps
from three_ledger.run.oracles import rewriting_flag
from three_ledger.run.runner_config import runner_oracle_changes
from three_ledger.test_changes import new_test_modules


@frozen
class Checks:
    """What to check before a run. The pins and the tree are always checked."""

    root: Path
    pin_path: Path
    properties_path: Path
    flake_pin_path: Path | None = None
    # Refuse to run the gate's own code from ROOT (every command that writes a ledger).
    own_code: bool = True
    # The live digest must be this one (the fixture ledger's, for `properties`).
    expect_digest: str | None = None
    # Compare with the base: resolve it (None: from the CI event), check the pinned files
    # against it, and find the oracle paths and runner configuration that differ.
    against_base: bool = False
    base: str | None = None
    # The test command: refused when it carries a flag that rewrites its own oracles.
    command: Sequence[str] | None = None
    # The suite runs from ROOT: bytecode Python would load in place of its source is refused.
    runs_suite: bool = True
    # --keep-env: a name that looks like a credential, or is the gate's own, is refused.
    keep_env: tuple[str, ...] = ()


@frozen
class BaseFacts:
    """What the tree says against the base revision before the run."""

    # The base asked for, and the commit used: the ledger's `base_revision` is `used`.
    base_resolution: BaseResolution
    head_revision: str
    # Explicit oracle paths and runner configuration that differ from the base, with why.
    oracle_reasons: dict[str, str]
    # What differed from the base when the command started, for the measured comparison.
    before: BeforeRun
    oracle_paths_unmatched: list[str]
    # New files pytest would collect as test modules, outside product_paths: the run leaves
    # them out (`--ignore`), and they move no oracle unless the run loads them anyway.
    unscored_new_files: tuple[str, ...] = ()

    @property
    def base_revision(self) -> str:
        return self.base_resolution.used


@frozen
class Preflight:
    """Everything checked before the command runs."""

    fixture_pin: FixturePin
    properties_pin: PropertiesPin
    flake_pin: FlakePin | None
    digest: str
    against_base: BaseFacts | None

    def base(self) -> BaseFacts:
        assert self.against_base is not None, "asked for the base without checking against it"
        return self.against_base

    def flake_selectors(self) -> tuple[str, ...]:
        return tuple(entry.test for entry in self.flake_pin.flakes) if self.flake_pin else ()


def preflight(checks: Checks, env: Mapping[str, str] = os.environ) -> Preflight:
    """Every refusal CHECKS asks for, in order. A git that hangs is the machine failing, not
    the change: exit 4, as for the command."""
    try:
        return _preflight(checks, env)
    except git.GitHung as hung:
        raise InfraFailure(hung.message, hung.details) from None


def _preflight(checks: Checks, env: Mapping[str, str]) -> Preflight:
    refuse_keep_env(checks.keep_env)
    if checks.own_code:
        refuse_code_from_root(checks.root)
    fixture_pin = load_fixture_pin(checks.pin_path)
    properties_pin = load_properties_pin(checks.properties_path)
    flake_pin = load_flake_pin(checks.flake_pin_path) if checks.flake_pin_path else None
    properties_pin.check_against(fixture_pin)
    _refuse_writable_paths(checks.root, properties_pin, fixture_pin)
    live = live_digest(checks.root, fixture_pin)
    if checks.expect_digest is not None:
        _refuse_other_digest(checks, fixture_pin, live.digest, env)
    resolved = (
        git.resolve_base_and_head(checks.root, checks.base, env) if checks.against_base else None
    )
    resolution = resolved[0] if resolved else None
    # The tests read the fixture tree: it must be the reviewed one, as for a real run (for a
    # pin without a reviewed digest, the base's bytes).
    given, used = (resolution.given, resolution.used) if resolution else (None, None)
    # A pin without a reviewed digest is checked against what differs from the base, which
    # the checks against the base ask git for anyway: asked once, for both.
    changed = None
    if used is not None and fixture_pin.digest is None:
        changed = git.changed_paths(checks.root, used, ["."])
    refuse_unreviewed(checks.root, fixture_pin, live, given, used, changed)
    facts = _against_base(checks, properties_pin, *resolved, changed) if resolved else None
    # Bytecode or native code the run could load in place of its source (bytecode.py). The run
    # itself writes no bytecode; without a base, only what the tree holds (sourceless,
    # unchecked-hash) can be told.
    if facts is not None:
        refuse_new_compiled(facts.base_revision, facts.before.differing)
    if checks.runs_suite:
        refuse_bytecode_in_tree(checks.root, env)
    if checks.command is not None:
        flag = rewriting_flag(checks.command, checks.root)
        if flag is not None:
            raise Refused(f"--command carries {flag!r}, which rewrites the oracles it is judged by")
    return Preflight(fixture_pin, properties_pin, flake_pin, live.digest, facts)


def _refuse_writable_paths(root: Path, pin: PropertiesPin, fixture_pin: FixturePin) -> None:
    """A folder the run may write never holds what judges it (mount_plan.py)."""
    if not pin.writable_paths:
        return
    refuse_writable_overlaps(
        pin.source,
        pin.writable_paths,
        fixture_pin.fixtures_dirs,
        pin.oracle_paths,
        known_oracle_files(root, pin.writable_paths),
    )


def new_tests_left_out(
    root: Path, base: str | None, pin: PropertiesPin, env: Mapping[str, str] = os.environ
) -> tuple[str, ...]:
    """The new test modules a collection or run leaves out, as `properties` does: against
    BASE, else the environment's or the CI event's base; none where nothing names a base."""
    if choose_base(base, env) is None:
        return ()
    try:
        used = git.resolve_base(root, base, env).used
        return new_test_modules(root, used, before_run(root, used).differing, pin)
    except git.GitHung as hung:
        raise InfraFailure(hung.message, hung.details) from None


def _refuse_other_digest(
    checks: Checks, fixture_pin: FixturePin, live: str, env: Mapping[str, str]
) -> None:
    assert checks.expect_digest is not None
    expected = checks.expect_digest.lower()
    if live == expected:
        return
    if looks_like_a_path(checks.expect_digest):
        raise Refused(
            f"--expect-digest {checks.expect_digest!r} looks like a path, not a digest: give "
            "the 64 hex digits `three-ledger digest` prints on stdout, e.g. "
            '--expect-digest "$(three-ledger digest --pin PIN --out LEDGER)"'
        )
    raise Refused(
        f"live digest of {checks.pin_path} under {checks.root} is {live}, "
        f"not --expect-digest {expected}: the tree moved since the fixture ledger was "
        "written (`three-ledger explain OLD NEW` names the files)",
        moved_since_base(checks, fixture_pin, env),
    )


def looks_like_a_path(text: str) -> bool:
    """A flag value that names a file (a ledger, say) rather than holding hex digits."""
    return "/" in text or "\\" in text or text.endswith(".json") or os.path.exists(text)


def moved_since_base(checks: Checks, fixture_pin: FixturePin, env: Mapping[str, str]) -> list[str]:
    """Where a base revision resolves, the pinned files whose bytes differ from it."""
    try:
        base = git.resolve_base(checks.root, checks.base, env).used
        moved = git.paths_differing_from(checks.root, base, sorted(fixture_pin.files))
    except Refused:
        return []
    return [f"differs from the base {base[:12]}: {path}" for path in moved]


def _against_base(
    checks: Checks,
    properties_pin: PropertiesPin,
    resolution: BaseResolution,
    head_revision: str,
    changed: Sequence[str] | None = None,
) -> BaseFacts:
    root, base_revision = checks.root, resolution.used
    oracle_paths = properties_pin.oracle_paths
    # The git questions below only read, and are independent: their children overlap.
    with Background() as pool:
        # Every path that differs from the base; those under oracle_paths are taken from it.
        before = pool.submit(before_run, root, base_revision, changed)
        unmatched = pool.submit(unmatched_oracle_paths, root, base_revision, oracle_paths)
        command = checks.command or ()
        reasons = {path: "runner configuration" for path in runner_oracle_changes(
            root, base_revision, command
        )}  # fmt: skip
        differing = before.result()
        unscored = new_test_modules(root, base_revision, differing.differing, properties_pin)
        for path in git.under_pathspecs(differing.differing, oracle_paths):
            if path not in unscored:
                reasons[path] = "listed in oracle_paths"
        return BaseFacts(
            resolution, head_revision, reasons, differing, unmatched.result(), unscored
        )
