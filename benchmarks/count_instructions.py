"""Where the gate's cost goes, counted in instructions: steady where CPU time is not.

    .venv/bin/python benchmarks/count_instructions.py [--tests 5] [--skip-gate]
    .venv/bin/python benchmarks/count_instructions.py --suite markdown-it-py --suite-source PATH

On a shared machine one command's CPU time moves by a third between runs, and a change of a
few milliseconds cannot be seen. The instructions a process executes, as valgrind's
cachegrind counts them (`--cache-sim=no`), repeat to a few parts in a million. They are not
time (a cache miss costs more than an add), but a change that removes work shows in them
at once.

Builds bench_properties.py's project (one property over N trivial tests), asks the gate for
the environment it gives its test command (a command that prints it), then counts:

- plain pytest in that environment, less the gate's own variables (its plugin, its files);
- the same pytest with the plugin, but without the tripwire (its two variables);
- the same pytest with that environment whole: the gate's test child;
- with `--skip-gate` left out, the gate's own process in one `properties` run (its children
  run natively: git, the trampolines, pytest);
- `python -c pass`, bare and under the closed oracle set's measurement (the audit hook
  every Python process of such a run imports first): what a Python subprocess a test
  starts pays for being measured;
- an audit event, under one Python audit hook that returns at once and under two: the
  floor of the hooks the gate arms, which CPython pays for every event a test raises.

With `--suite NAME`, the same counts on a real project's suite as `bench_real_suite.py`
builds it (its repository, its pins, its test command and its Python): plain pytest, pytest
with the plugin but without the tripwire, the gate's test child with the oracles inferred and
with the closed oracle set (the measurement's audit hook armed, staged afresh as the gate
stages it), and the gate's own process in a closed run. A real suite raises tens of audit
events a test where a trivial test raises twenty, and reads files the closed set records: what
each part of the gate costs there is not what it costs on trivial tests.

The plugin is a copy staged as the gate stages it (`run/staging.py`: a package of a random
name, with the installed bytecode beside it), made once for all the counts, and the run's
files go to a fresh folder each time; nothing else changes. The installed package itself
would not do: pytest rewrites the plugin module it is named (PYTEST_PLUGINS), and the
rewritten bytecode an earlier pytest left in the source tree's `__pycache__` would be read
or not as that tree was last edited; the staged copy is rewritten in every run, as in the
gate's. Plain pytest runs
in the gate's closed environment too, so that what the caller's environment holds (a
coverage hook, an xdist worker's variables) weighs on no row. A plain pytest run first
writes the project's bytecode and its rewritten test modules, as the first pytest run on a
machine does, and every process counted reads them (none writes any, in the gate's
environment); each process then runs once, uncounted, before it is counted, so that none
pays for caches another one then finds written. Needs valgrind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_properties import (
    build_repository,
    byte_compile,
    gate_argv,
    pytest_argv,
    write_plugin_rewrites,
)
from bench_real_suite import CLOSED, INFERRED, PLAIN, SUITES, find_source, suite_python
from bench_real_suite import build_repository as build_suite_repository
from bench_real_suite import contenders as suite_gates

from three_ledger.plugin.wire import MEASURE_ENV, MEASURE_ROOT_ENV
from three_ledger.run.measurement import prepare
from three_ledger.run.staging import stage_plugin

PYTHON = Path(sys.executable)
# The caller's own pytest and coverage hooks (an xdist worker's name arms the tripwire; a
# coverage start file measures every Python started): left out of every process counted.
_CALLERS = ("PYTEST_", "COVERAGE_")
_COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")
_TRIPWIRE = ("THREE_LEDGER_TRIPWIRE", "THREE_LEDGER_TRIPWIRE_SEED")
_MARK = "THREE_LEDGER_BENCH_ENV="


def count(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    """The instructions ARGV executes in its own process (not its children's). A command that
    did not run its tests (an exit other than 0 or 1), or a measured one whose hook recorded
    nothing, is refused: its count would describe something else."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         *argv], env=env, cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = _COUNT.findall(done.stderr)
    if not found:
        raise SystemExit(f"valgrind counted nothing for {argv[:3]}: {done.stderr[-400:]}")
    if done.returncode not in (0, 1):
        raise SystemExit(f"{shlex.join(argv)[:200]} exited {done.returncode}: {done.stderr[-400:]}")
    if MEASURE_ENV in env and not any(Path(env[MEASURE_ENV]).glob("*.jsonl")):
        raise SystemExit(f"the closed set's measurement recorded nothing: {env['PYTHONPATH']}")
    return int(found[-1].replace(",", ""))


def caller_environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith(_CALLERS)}


def child_environment(
    root: Path, digest: str, scratch: Path, staged: Path, gate: list[str] | None = None
) -> dict[str, str]:
    """The environment the gate gives its test command, its files moved to SCRATCH and its
    plugin (and, in a closed run, the measurement's hook) staged afresh under STAGED: the
    run's own copies are gone with the run. GATE is the gate's command line, `properties`
    on the trivial tests' pins unless given; its `--command` is replaced by one that prints
    the environment."""
    code = f"import json, os; print({_MARK!r} + json.dumps(dict(os.environ)))"
    show = shlex.join([str(PYTHON), "-c", code])
    argv = list(gate or gate_argv(PYTHON, digest, "../environment.json"))
    argv[argv.index("--command") + 1] = show
    done = subprocess.run(
        argv, env=caller_environment(), cwd=root, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    if not lines:
        raise SystemExit(f"the gate ran no command: {done.stderr.strip()[-400:]}")
    env: dict[str, str] = json.loads(lines[-1].removeprefix(_MARK))
    results = Path(env["THREE_LEDGER_RESULTS"])
    written = results.parent  # the run's own folder: every file the child writes is in it
    for key, value in env.items():
        env[key] = value.replace(str(written), str(scratch))  # PYTEST_ADDOPTS names one too
    plugin = stage_plugin(staged)
    env["PYTEST_PLUGINS"] = plugin.module
    env["PYTHONPATH"] = str(plugin.folder)
    if MEASURE_ENV in env:  # the closed oracle set: its hook goes first, as the gate puts it
        hook = prepare(staged, staged).hook_folder  # an empty records folder, never written
        env["PYTHONPATH"] = os.pathsep.join([str(hook), str(plugin.folder)])
    return env


def fresh(scratch: Path, env: dict[str, str] | None = None) -> None:
    """SCRATCH emptied for the next count; with ENV, the measurement's records folder it
    names made afresh (the hook writes its records there)."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "caches").mkdir(parents=True)
    if env is not None and MEASURE_ENV in env:
        Path(env[MEASURE_ENV]).mkdir(parents=True)


Contenders = dict[str, tuple[list[str], dict[str, str]]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=5)
    parser.add_argument("--skip-gate", action="store_true", help="not the gate's own process")
    parser.add_argument(
        "--suite", choices=sorted(SUITES), help="a real suite, as bench_real_suite.py runs it"
    )
    parser.add_argument(
        "--suite-source", metavar="PATH_OR_GIT_URL", help="where the suite comes from (ditto)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("count_instructions.py: valgrind is not installed", file=sys.stderr)
        return 2
    byte_compile(PYTHON)
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as workdir:
        temp = Path(workdir)
        if args.suite is None:
            write_plugin_rewrites(PYTHON)
            root, contenders = trivial_contenders(temp, args.tests, args.skip_gate)
            title = f"{args.tests} trivial tests"
        else:
            root, contenders, title = real_suite_contenders(
                temp, args.suite, args.suite_source, args.skip_gate
            )
        scratch = temp / "written"
        # The project's bytecode and its rewritten test modules, written once, as the first
        # pytest run on a machine writes them (`bench_properties.contender_environment`), and
        # read by every process counted: none of them writes any.
        argv, env = contenders["plain pytest"]
        fresh(scratch, env)
        writes = {key: value for key, value in env.items() if key != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(argv, env=writes, cwd=root, capture_output=True, check=False)
        for argv, env in contenders.values():
            fresh(scratch, env)
            subprocess.run(argv, env=env, cwd=root, capture_output=True, check=False)
        counts = {}
        for label, (argv, env) in contenders.items():
            fresh(scratch, env)
            counts[label] = count(argv, env, root)
    plain = counts["plain pytest"]
    print(f"{title}; instructions (valgrind --tool=cachegrind), millions.\n")
    print("| process | instructions | against plain pytest |")
    print("|---|---|---|")
    for label, value in counts.items():
        print(f"| {label} | {value / 1e6:,.1f} | {value / plain:.3f}x |")
    if args.suite is None:
        bare = count([str(PYTHON), "-c", "pass"], caller_environment(), Path.cwd())
        with tempfile.TemporaryDirectory(prefix="bench-measured-") as folder:
            measured = count([str(PYTHON), "-c", "pass"], *measured_environment(Path(folder)))
        print(f"\n`python -c pass`: {bare / 1e6:,.1f} million; under the closed oracle set's "
              f"measurement, as each Python subprocess of a test runs: {measured / 1e6:,.1f} million.")  # fmt: skip  # noqa: E501
        first, second = audit_event_cost()
        print(f"An audit event: {first:,.0f} instructions with one audit hook that returns at "
              f"once, {second:,.0f} more for a second hook.")  # fmt: skip
    return 0


# 100,000 events (`id()` raises `builtins.id`) under HOOKS audit hooks that return at once.
_EVENTS = 100_000
_EVENT_LOOP = """import sys
def hook(event, args):
    if event == "object.__setattr__":
        pass
for _ in range({hooks}):
    sys.addaudithook(hook)
thing, identity = object(), id
for _ in range({events}):
    identity(thing)
"""


def audit_event_cost() -> tuple[float, float]:
    """What CPython spends an audit event where one Python audit hook is installed, and what a
    second adds: the floor of the machinery audit's hook and of the closed set's, which drop
    nearly every event at their first statement."""
    counts = [
        count(
            [str(PYTHON), "-c", _EVENT_LOOP.format(hooks=hooks, events=_EVENTS)],
            caller_environment(),
            Path.cwd(),
        )
        for hooks in (0, 1, 2)
    ]
    return (counts[1] - counts[0]) / _EVENTS, (counts[2] - counts[1]) / _EVENTS


def _plain(child: dict[str, str]) -> dict[str, str]:
    """CHILD's environment without the gate's own variables: its plugin, its files."""
    gates = ("PYTEST_PLUGINS", "PYTHONPATH")
    return {k: v for k, v in child.items() if not k.startswith("THREE_LEDGER_") and k not in gates}


def trivial_contenders(temp: Path, tests: int, skip_gate: bool) -> tuple[Path, Contenders]:
    """bench_properties.py's project of TESTS trivial tests under TEMP, and what to count."""
    root = temp / "project"
    digest = build_repository(root, tests)
    child = child_environment(root, digest, temp / "written", temp / "staged")
    without = {key: value for key, value in child.items() if key not in _TRIPWIRE}
    contenders = {
        "plain pytest": (pytest_argv(PYTHON), _plain(child)),
        "pytest, the gate's environment without the tripwire": (pytest_argv(PYTHON), without),
        "the gate's test child": (pytest_argv(PYTHON), child),
    }
    if not skip_gate:
        gate = gate_argv(PYTHON, digest, "../property.json")
        contenders["the gate's own process"] = (gate, caller_environment())
    return root, contenders


def real_suite_contenders(
    temp: Path, name: str, source: str | None, skip_gate: bool
) -> tuple[Path, Contenders, str]:
    """The suite NAME pinned under TEMP as bench_real_suite.py pins it, what to count, and
    a title."""
    suite = SUITES[name]
    tests_python = suite_python(name, suite, None)
    write_plugin_rewrites(tests_python)
    origin, said = find_source(suite, source, temp)
    project = build_suite_repository(origin, suite, temp / "repo")
    gates = suite_gates(project, suite, tests_python, None)
    scratch = temp / "written"
    inferred = child_environment(
        project.root, project.digest, scratch, temp / "staged-inferred", gates[INFERRED].argv
    )
    closed = child_environment(
        project.root, project.digest, scratch, temp / "staged-closed", gates[CLOSED].argv
    )
    command = gates[PLAIN].argv
    contenders = {
        "plain pytest": (command, _plain(inferred)),
        "pytest, the gate's environment without the tripwire (oracles inferred)": (
            command,
            {key: value for key, value in inferred.items() if key not in _TRIPWIRE},
        ),
        "the gate's test child, oracles inferred": (command, inferred),
        "the gate's test child, closed oracle set": (command, closed),
    }
    if not skip_gate:
        contenders["the gate's own process, closed oracle set"] = (
            gates[CLOSED].argv,
            caller_environment(),
        )
    return project.root, contenders, f"{name}'s suite from {said}"


def measured_environment(folder: Path) -> tuple[dict[str, str], Path]:
    """The environment of a Python process the closed oracle set measures (its audit hook
    staged as `sitecustomize` in FOLDER, as `run/measurement.py` stages it), and the folder
    it runs in: the root measured, which it reads nothing of."""
    measurement = prepare(folder)
    root = folder / "root"
    root.mkdir()
    env = {
        **caller_environment(),
        "PYTHONPATH": str(measurement.hook_folder),
        MEASURE_ENV: str(measurement.records),
        MEASURE_ROOT_ENV: str(root),
    }
    return env, root


if __name__ == "__main__":
    sys.exit(main())
