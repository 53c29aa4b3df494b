"""Where the gate's cost goes, counted in instructions: steady where CPU time is not.

    .venv/bin/python benchmarks/count_instructions.py [--tests 5] [--skip-gate]

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
  starts pays for being measured.

The plugin is a copy staged as the gate stages it (`run/staging.py`: a package of a random
name, with the installed bytecode beside it), made once for all the counts, and the run's
files go to a fresh folder each time; nothing else changes. The installed package itself
would not do: pytest rewrites the plugin module it is named (PYTEST_PLUGINS), and the
rewritten bytecode an earlier pytest left in the source tree's `__pycache__` would be read
or not as that tree was last edited; the staged copy is rewritten in every run, as in the
gate's. Plain pytest runs
in the gate's closed environment too, so that what the caller's environment holds (a
coverage hook, an xdist worker's variables) weighs on no row. Each process runs once,
uncounted, before it is counted, so that none pays for caches another one then finds
written. Needs valgrind.
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
    """The instructions ARGV executes in its own process (not its children's)."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         *argv], env=env, cwd=cwd, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = _COUNT.findall(done.stderr)
    if not found:
        raise SystemExit(f"valgrind counted nothing for {argv[:3]}: {done.stderr[-400:]}")
    return int(found[-1].replace(",", ""))


def caller_environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith(_CALLERS)}


def child_environment(root: Path, digest: str, scratch: Path, staged: Path) -> dict[str, str]:
    """The environment the gate gives its test command, its files moved to SCRATCH and its
    plugin staged afresh under STAGED (the run's own copy is gone with the run)."""
    code = f"import json, os; print({_MARK!r} + json.dumps(dict(os.environ)))"
    show = shlex.join([str(PYTHON), "-c", code])
    argv = gate_argv(PYTHON, digest, "../environment.json")
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
        if value.startswith(str(written)):
            env[key] = str(scratch / Path(value).relative_to(written))
    plugin = stage_plugin(staged)
    env["PYTEST_PLUGINS"] = plugin.module
    env["PYTHONPATH"] = str(plugin.folder)
    return env


def fresh(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "caches").mkdir(parents=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=5)
    parser.add_argument("--skip-gate", action="store_true", help="not the gate's own process")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("count_instructions.py: valgrind is not installed", file=sys.stderr)
        return 2
    byte_compile(PYTHON)
    write_plugin_rewrites(PYTHON)
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as workdir:
        root = Path(workdir) / "project"
        digest = build_repository(root, args.tests)
        scratch = Path(workdir) / "written"
        child = child_environment(root, digest, scratch, Path(workdir) / "staged")
        without = {key: value for key, value in child.items() if key not in _TRIPWIRE}
        plain = {
            key: value
            for key, value in child.items()
            if not key.startswith("THREE_LEDGER_") and key not in ("PYTEST_PLUGINS", "PYTHONPATH")
        }
        contenders = {
            "plain pytest": (pytest_argv(PYTHON), plain),
            "pytest, the gate's environment without the tripwire": (pytest_argv(PYTHON), without),
            "the gate's test child": (pytest_argv(PYTHON), child),
        }
        if not args.skip_gate:
            gate = gate_argv(PYTHON, digest, "../property.json")
            contenders["the gate's own process"] = (gate, caller_environment())
        for argv, env in contenders.values():
            fresh(scratch)
            subprocess.run(argv, env=env, cwd=root, capture_output=True, check=False)
        counts = {}
        for label, (argv, env) in contenders.items():
            fresh(scratch)
            counts[label] = count(argv, env, root)
    plain = counts["plain pytest"]
    print(f"{args.tests} trivial tests; instructions (valgrind --tool=cachegrind), millions.\n")
    print("| process | instructions | against plain pytest |")
    print("|---|---|---|")
    for label, value in counts.items():
        print(f"| {label} | {value / 1e6:,.1f} | {value / plain:.3f}x |")
    bare = count([str(PYTHON), "-c", "pass"], caller_environment(), Path.cwd())
    with tempfile.TemporaryDirectory(prefix="bench-measured-") as folder:
        measured = count([str(PYTHON), "-c", "pass"], *measured_environment(Path(folder)))
    print(f"\n`python -c pass`: {bare / 1e6:,.1f} million; under the closed oracle set's "
          f"measurement, as each Python subprocess of a test runs: {measured / 1e6:,.1f} million.")  # fmt: skip  # noqa: E501
    return 0


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
