"""Starting the test child, one way for every command, and reading what its plugin wrote.

The child's environment is closed (`env_policy.py`): the allow-list, the names the pin and
--keep-env ask for, and a private, empty HOME; plus what SPEC 6 gives the property tests,
plus the staged plugin (`staging.py`), plus what the command asks for. It starts with
PR_SET_NO_NEW_PRIVS set; under the network ban's namespace the command runs inside it, and
a scored run inside the sandbox's other layers (`sandbox.py`). `properties` and `vet` score
the run; `plan` asks only for the collection.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from three_ledger import env_policy
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.ledgers import Sandbox, ledger_text
from three_ledger.pins import FixturePin
from three_ledger.plugin.wire import (
    COLLECT_ENV,
    FIXTURES_DIRS_ENV,
    FIXTURES_ENV,
    MEASURE_ENV,
    MEASURE_ROOT_ENV,
    NETWORK_BANNED,
    NETWORK_ENV,
    PIN_ID_ENV,
    RESULTS_ENV,
)
from three_ledger.results import TestResult, read_results_file, read_results_records
from three_ledger.run import network_namespace
from three_ledger.run.staging import StagedPlugin, plugin_environment
from three_ledger.run.trampoline import KILLED_BY, SIGNAL_BASE, signal_name
from three_ledger.vocabulary import LAYER_HELD, Enforcement, layer_missing

if TYPE_CHECKING:
    from three_ledger.run.sandbox import Confinement
    from three_ledger.runner import RunResult

# pytest's own exit codes other than 0 and 1 say the run itself went wrong.
_PYTEST_EXITS = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


@frozen
class Child:
    """One run of the test command in ROOT."""

    command: Sequence[str]
    root: Path
    fixture_pin: FixturePin
    enforcement: Enforcement
    timeout_s: float
    log_path: Path
    plugin: StagedPlugin
    # Where the plugin writes one line per test; with COLLECT_INTO, the run only collects.
    # None: the run is scored from a JUnit report, and the plugin records nothing.
    results_path: Path | None
    collect_into: Path | None = None
    # The pin's `plugins`: autoload off, and exactly those loaded. None: pytest's autoload.
    plugins: tuple[str, ...] | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # Where the command's output goes besides the log; None: the gate's own stdout.
    console: BinaryIO | None = None
    # With a measurement: the staged hook's folder, and where each process writes its record.
    measurement: Measurement | None = None
    # New test modules the run leaves out (relative to ROOT): pytest gets `--ignore` for each.
    ignore: tuple[str, ...] = ()
    # Names of the job's environment kept beyond the allow-list: the pin's `env`, --keep-env.
    keep_env: tuple[str, ...] = ()
    # The sandbox's layers (scored runs only), and where the run's caches go, outside the tree.
    confinement: Confinement | None = None
    caches: Path | None = None


@frozen
class Measurement:
    """The audit hook staged for a run (`plugin/measure.py`), and its records folder."""

    hook_folder: Path
    records: Path


def run_child(child: Child) -> RunResult:
    """Run CHILD once. How it ended is returned as is: judging it is the caller's part."""
    argv = list(child.command)  # empty: the runner reports "empty command"
    confinement = child.confinement
    if confinement is not None and confinement.trampolined(child.enforcement):
        return _run_trampolined(child, confinement)
    if child.enforcement is Enforcement.NETNS:
        argv = network_namespace.namespace_argv(argv)
    return _run(child, argv)


def _run(child: Child, argv: list[str], pass_fds: Sequence[int] = ()) -> RunResult:
    from three_ledger.runner import run_command

    # A private, empty HOME for this run alone; what the run leaves there goes with it.
    with tempfile.TemporaryDirectory(
        prefix="three-ledger-home-", ignore_cleanup_errors=True
    ) as home:
        return run_command(
            argv,
            cwd=child.root,
            env=sandboxed_environment(child, Path(home)),
            timeout_s=child.timeout_s,
            log_path=child.log_path,
            console=child.console,
            no_new_privs=True,
            pass_fds=pass_fds,
        )


def _run_trampolined(child: Child, confinement: Confinement) -> RunResult:
    """CHILD under the sandbox's trampoline, which says on a pipe of its own, and not the
    command's output, that it made every layer and started the command."""
    ready, said = os.pipe()
    try:
        argv = confinement.argv(child.command, child.enforcement, ready_fd=said)
        try:
            ran = _run(child, argv, pass_fds=[said])
        finally:
            os.close(said)
        os.set_blocking(ready, False)
        try:
            started = os.read(ready, 1) == b"1"
        except BlockingIOError:  # not said, and the write end still open somewhere
            started = False
    finally:
        os.close(ready)
    return dataclasses.replace(ran, started_inside=started)


def sandboxed_environment(child: Child, home: Path) -> dict[str, str]:
    """The child's environment, with the run's caches outside the tree and, with the mount
    layer, the HOME and /tmp of the sandbox."""
    env = child_environment(child, home)
    if child.caches is not None:
        from three_ledger.run.sandbox import cache_environment

        env.update(cache_environment(env, child.command, child.root, child.caches))
    if child.confinement is not None:
        env.update(child.confinement.environment())
    return env


def sandbox(
    child: Child,
    ran: RunResult,
    inherited: Mapping[str, str] = os.environ,
    writable_reads: Sequence[str] = (),
) -> Sandbox:
    """What the ledger says of the run's sandbox: each layer, and the names, never values."""
    from three_ledger.run.sandbox import assemble

    # The environment run_child gave: only HOME's value differs, and no name depends on it.
    given = child_environment(child, Path(os.devnull), inherited)
    layers = {
        # Closed in-process, so it always holds here. Alone it does not protect: without a
        # PID namespace, /proc/<ppid>/environ still shows the job's whole environment, so
        # `assemble` turns this into `missing: ...` where the PID layer is itself missing.
        "environment": LAYER_HELD,
        "no_new_privs": ran.no_new_privs or layer_missing("the runner was not asked to set it"),
        **(child.confinement.layers if child.confinement is not None else {}),
    }
    removed = [name for name in inherited if name not in given]
    return Sandbox(
        layers=assemble(layers),
        env_removed=tuple(sorted(ledger_text(removed))),
        env_kept=tuple(sorted(ledger_text(env_policy.kept_beyond(inherited, child.keep_env)))),
        writable_reads=tuple(writable_reads),
    )


def child_environment(
    child: Child, home: Path, inherited: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """INHERITED closed to what the child may have, with HOME at HOME, plus what the plugin
    and the property tests read (SPEC 6)."""
    # No THREE_LEDGER_* variable of the job passes: the child gets exactly those set here.
    env = env_policy.close(inherited, child.keep_env, str(home))
    if child.results_path is not None:
        env[RESULTS_ENV] = str(child.results_path)
    folders = [str((child.root / folder).resolve()) for folder in child.fixture_pin.fixtures_dirs]
    env[FIXTURES_ENV] = folders[0]
    env[FIXTURES_DIRS_ENV] = os.pathsep.join(folders)
    env[PIN_ID_ENV] = child.fixture_pin.pin_id
    if child.enforcement is Enforcement.SOCKET_GUARD:
        env[NETWORK_ENV] = NETWORK_BANNED
    if child.collect_into is not None:
        env.pop(RESULTS_ENV, None)
        env[COLLECT_ENV] = str(child.collect_into)
    env = plugin_environment(env, child.plugin)
    # The run writes no bytecode: none lands in the tree (a fixtures folder that holds the
    # tests stays closed), and a second run reads none the first one wrote. Bytecode already
    # in the tree that the change brings is refused before the run (bytecode.py). `vet`
    # keeps its own in a private folder of its scratch copy.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if child.measurement is not None:
        # First on the path: `site` imports this `sitecustomize` before anything of ROOT.
        paths = [child.measurement.hook_folder, *env["PYTHONPATH"].split(os.pathsep)]
        env["PYTHONPATH"] = os.pathsep.join(str(path) for path in paths)
        env[MEASURE_ENV] = str(child.measurement.records)
        env[MEASURE_ROOT_ENV] = str(child.root.resolve())
    env.update(child.extra_env)
    env.update(pinned_plugins_environment(env, child.plugins))
    if child.collect_into is not None:
        env["PYTEST_ADDOPTS"] = f"{env['PYTEST_ADDOPTS']} --collect-only"
    if child.ignore:
        # Absolute paths: pytest reads `--ignore` relative to where it starts, not to ROOT.
        top = child.root.resolve()
        ignores = " ".join(shlex.quote(f"--ignore={top / path}") for path in child.ignore)
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {ignores}".strip()
    return env


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


def read_plugin_results(results_path: Path, log_path: Path) -> list[TestResult]:
    """The plugin's results; a missing or broken file says how the plugin may have been lost."""
    try:
        return read_results_file(results_path)
    except InfraFailure as failure:
        raise _unread(failure, log_path) from None


def read_plugin_records(
    results_path: Path, log_path: Path, root: Path | None = None
) -> tuple[list[TestResult], list[dict[str, Any]]]:
    """The plugin's results and the object of each of its lines, in order, from one reading
    of the file (`read_results_records`); errors as `read_plugin_results`, and, with the
    run's ROOT, a module there that `python -m pytest` would run in pytest's place named."""
    try:
        return read_results_records(results_path)
    except InfraFailure as failure:
        raise _unread(failure, log_path, root) from None


# What `python -m pytest` imports as pytest when ROOT, first on its path, holds one.
_PYTEST_SHADOWS = ("pytest.py", "pytest/__init__.py", "pytest/__main__.py")


def _unread(failure: InfraFailure, log_path: Path, root: Path | None = None) -> InfraFailure:
    """FAILURE to read the plugin's results, with why it may have written none: modules that
    failed to collect, said first where the log shows them (pytest-xdist then exits 1 with
    no result), a module of ROOT that stands in for pytest, or a command that lost the
    plugin."""
    collection = collection_errors(log_path)
    if collection is not None:
        message = f"pytest reported {collection}, and no test ran: {failure.message}"
        return InfraFailure(f"{message} (log: {log_path})", failure.details)
    shadow = next((n for n in _PYTEST_SHADOWS if root and (root / n).is_file()), None)
    if shadow is not None:
        failure.details.append(
            f"ROOT holds {shadow}, which `python -m pytest` runs in place of pytest (ROOT comes "
            "first on its path): no pytest ran to load the plugin"
        )
    failure.details.append(plugin_lost(log_path))
    return failure


def plugin_lost(log_path: Path) -> str:
    """What to check when the plugin wrote nothing: the command, and its environment."""
    return (
        "the plugin wrote nothing: is the command pytest, and does it keep the "
        "environment (PYTHONPATH, PYTEST_PLUGINS)? Other runners are scored through "
        "--junit-xml (properties, gate, plan --from-report); vet, selftest and "
        f"flake-evidence run pytest alone (log: {log_path})"
    )


def exit_meaning(
    code: int,
    enforcement: Enforcement,
    confinement: Confinement | None = None,
    log_path: Path | None = None,
) -> str:
    """Why an exit other than 0 or 1 means the run's results cannot be trusted. With the
    run's LOG_PATH, pytest's exit 2 after errors during collection says so, naming the first
    module and its error: a change that breaks an import is no interrupted run; and its exit 4
    after a conftest that did not import names the conftest and its error, where a usage
    error was said (the project not installed where the tests run, say)."""
    collection = collection_errors(log_path) if code == 2 and log_path is not None else None
    if collection is not None:
        return f"the command exited 2: {collection}; no test ran"
    conftest = conftest_error(log_path) if code == 4 and log_path is not None else None
    if conftest is not None:
        return f"the command exited 4: {conftest}; no test ran"
    sandboxed = confinement is not None and confinement.wraps()
    if sandboxed and code == network_namespace.ISOLATION_FAILED:
        return "the sandbox could not be made (the log says why); the command did not run"
    if enforcement is Enforcement.NETNS and code == network_namespace.ISOLATION_FAILED:
        return "the network namespace failed its isolation check; the command did not run"
    wrapped = sandboxed or enforcement is Enforcement.NETNS
    if wrapped and code == network_namespace.COMMAND_NOT_FOUND:
        return "the command could not start: not found"
    meaning = _PYTEST_EXITS.get(code, "neither 0 (all passed) nor 1 (some failed)")
    return f"the command exited {code} ({meaning}): its results cannot be trusted"


# How much of a log's end is searched for the trampoline's last word.
_LOG_TAIL_BYTES = 64 * 1024
# pytest's heading of each module that failed to collect, its count of them when it stopped
# there (without xdist), and the line naming an exception in an error it shows (`E
# SyntaxError: ...`, after the lines that quote the source), else the error's first line.
_COLLECTING = re.compile(r"^_+ ERROR collecting (.+?) _+$", re.MULTILINE)
_COLLECTION_ERRORS = re.compile(r"Interrupted: (\d+) errors? during collection")
_EXCEPTION_LINE = re.compile(r"^E +([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^E +(\S.*)$", re.MULTILINE)


def collection_errors(log_path: Path) -> str | None:
    """What pytest said at the end of LOG_PATH when modules failed to collect: how many, the
    first, and the line naming its exception; None when it said no such thing. With xdist a
    run whose modules all failed to collect exits 1 with no result, not 2."""
    tail = _log_tail(log_path)
    if tail is None:
        return None
    modules = _COLLECTING.findall(tail)
    counted = _COLLECTION_ERRORS.search(tail)
    if not modules and counted is None:
        return None
    count = int(counted.group(1)) if counted is not None else len(modules)
    said = f"{count} error{'s' if count != 1 else ''} during collection"
    module = _COLLECTING.search(tail)
    error = _EXCEPTION_LINE.search(tail) or _ERROR_LINE.search(tail)
    # The run's own words, each cut short and its control characters escaped: they go into
    # a refusal on the console and into the posture's reason, where a carriage return or an
    # escape sequence could otherwise forge a line of the gate's.
    first = [_shown(found.group(1)) for found in (module, error) if found is not None]
    return f"{said} ({': '.join(first)})" if first else said


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


# What pytest writes, then exits 4, when a conftest raises as it is imported.
_CONFTEST_FAILED = re.compile(r"^ImportError while loading conftest '(.+?)'\.$", re.MULTILINE)


def conftest_error(log_path: Path) -> str | None:
    """The conftest pytest could not import, and the line naming its exception, from the end
    of LOG_PATH; None when pytest said no such thing."""
    tail = _log_tail(log_path)
    found = None if tail is None else _CONFTEST_FAILED.search(tail)
    if tail is None or found is None:
        return None
    error = _EXCEPTION_LINE.search(tail, found.end())
    said = f"ImportError while loading conftest {_shown(found.group(1))}"
    return f"{said} ({_shown(error.group(1))})" if error is not None else said


def _shown(text: str, most: int = 160) -> str:
    clipped = text if len(text) <= most else text[: most - 3] + "..."
    return _CONTROL.sub(lambda match: repr(match.group(0))[1:-1], clipped)


def _log_tail(log_path: Path) -> str | None:
    try:
        with log_path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
            return log.read().decode("utf-8", "replace")
    except OSError:
        return None


def killed_in_sandbox(ran: RunResult, confinement: Confinement, log_path: Path) -> str | None:
    """The signal that killed the command under the sandbox's PID 1, which exits 128+N then
    and says so last in the log; None when it was not killed."""
    code = ran.exit_code
    if not confinement.pid_namespace or code is None or code <= SIGNAL_BASE:
        return None
    tail = _log_tail(log_path)
    if tail is None:
        return None
    said = f"{KILLED_BY} {signal_name(code - SIGNAL_BASE)}"
    return f"the command was killed by {signal_name(code - SIGNAL_BASE)}" if said in tail else None
