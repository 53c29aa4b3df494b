"""Shared test helpers: run git, build fixture trees and pins, wait for processes.

Importable as `helpers` from every layer (`pythonpath = ["tests"]` in pyproject.toml); the
fixtures that use them live in conftest.py.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AnyStr

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "orders"
# Python that writes what pytest with the plugin writes besides the results: the tripwire's two
# sentinels (their record and their result lines), and a harness measurement of nothing. For
# commands that stand in for pytest. It reads the example's product where there is one, as
# the tests it stands in for import it: a closed run that uses no product file is refused.
PLUGIN_STAND_IN = """
import json, os, sys
if os.path.isfile("orders.py"):
    open("orders.py", "rb").close()
_sentinels = {"t.py::test_stand_in_pass": "pass", "t.py::test_stand_in_fail": "fail"}
with open(os.environ["THREE_LEDGER_TRIPWIRE"], "a") as _record:
    _record.write(json.dumps({"sentinels": _sentinels, "mechanism": "sentinels"}) + "\\n")
with open(os.environ["THREE_LEDGER_RESULTS"], "a") as _results:
    for _id, _outcome in _sentinels.items():
        _results.write(json.dumps({"id": _id, "property_ids": [], "outcome": _outcome}) + "\\n")
with open(os.environ["THREE_LEDGER_HARNESS"], "w") as _harness:
    json.dump({"pytest": "stand-in", "rootdir": ".", "config_file": None, "main": "python",
               "conftests": [], "plugins": [], "pythonpath": [], "addopts": [], "shadowing": {},
               "test_side_modules": []}, _harness)
"""


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str

    @property
    def first_error_line(self) -> str:
        """The first line three-ledger itself wrote on stderr: progress lines (`vet: run 1
        ...`, `properties: the command: ...`) say what ran before it, not what went wrong."""
        lines = self.err.splitlines()
        said = [line for line in lines if line.startswith("three-ledger")]
        return (said or lines or [""])[0]


RunCli = Callable[..., CliResult]


def python_unmeasured(code: str) -> subprocess.CompletedProcess[str]:
    """CODE in a fresh Python (`-P`) that coverage does not measure: a measured child imports
    what coverage needs (`inspect`, `tomllib`, `configparser`), which a test of what a module
    imports must not see."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    return subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env
    )


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def seed_digest(root: Path, files: Sequence[str]) -> str:
    """SPEC 4.1 step 4, written independently of the package: sorted paths, path NUL bytes."""
    digest = hashlib.sha256()
    for relative in sorted(files):
        digest.update(relative.encode() + b"\0" + (root / relative).read_bytes())
    return digest.hexdigest()


def many_files(root: Path, count: int) -> list[str]:
    """`count` small fixture files spread over 100 folders under ROOT; their relative paths."""
    files = [f"fixtures/d{index % 100:02d}/f{index:06d}.json" for index in range(count)]
    for folder in {path.rsplit("/", 1)[0] for path in files}:
        (root / folder).mkdir(parents=True)
    for index, path in enumerate(files):
        (root / path).write_bytes(b"%d\n" % index)
    return files


def make_tree(root: Path, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def fixture_pin(
    root: Path, files: Sequence[str], name: str = "fixtures.json", **extra: Any
) -> Path:
    document = {"pin_id": "fixpin-test", "algorithm": "sha256", "files": list(files), **extra}
    return write_json(root / "pins" / name, document)


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    completed = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return completed.stdout.strip()


def wait_for_pid(path: Path, timeout_s: float = 10.0) -> int:
    """The pid a test's child wrote to `path` (as `echo $! > path` does), once it is there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"{path} never received a pid: the command did not start")


def beside(repo: Path, name: str, text: str | bytes) -> Path:
    """A file a test's command reads, holding TEXT, in a folder of REPO that git ignores.

    The sandbox shows the run ROOT (read-only) and hides the rest of /tmp, where a test's
    other files live; an ignored file is no part of the change under review.
    """
    folder = repo / ".test-support"
    if not folder.exists():
        folder.mkdir()
        with (repo / ".git/info/exclude").open("a") as exclude:
            exclude.write("/.test-support/\n")
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def sleeper_argv(tmp_path: Path) -> tuple[str, str]:
    """A `sleep` whose command line no other process has: (its seconds argument, its shell
    command). A test finds it on the host by that argument, whatever its pid in a namespace."""
    seconds = f"600.{abs(hash(tmp_path)) % 10**9:09d}"
    return seconds, f"sleep {seconds}"


def wait_for_process(argument: str, timeout_s: float = 20.0) -> int:
    """The pid, on the host, of the process whose command line holds ARGUMENT, once it runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in cmdline:
                return int(entry.name)
        time.sleep(0.05)
    raise AssertionError(f"no process with {argument!r} in its command line: it never started")


def is_gone(pid: int, timeout_s: float = 5.0) -> bool:
    """True once `pid` no longer runs; a zombie counts as gone (PID 1 here may not reap)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def default_sigint() -> None:
    """A `preexec_fn` that gives the child the default SIGINT action.

    A child inherits an ignored SIGINT across exec (a test run started with `&` from a script,
    or by a CI runner that ignores it), and the gate rightly keeps ignoring it then; a test
    that interrupts its child must not depend on how the test run itself was started.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def terminated_on_exit(process: subprocess.Popen[AnyStr]) -> Iterator[subprocess.Popen[AnyStr]]:
    """`process`, sent SIGTERM (then SIGKILL) if the test leaves it running.

    A gate that gets SIGTERM kills its child's whole group, so a failed assertion leaves no
    sleeping grandchild behind to slow down every later test.
    """
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@functools.cache
def namespace_problem() -> str | None:
    """Why the gate can make no network namespace here, by its own probe; None when it can."""
    from three_ledger.run.network_namespace import namespace_available

    return namespace_available()


def ban_enforcement() -> str:
    """What enforces a pinned network ban on a pytest command here (SPEC 4.2 step 5)."""
    return "netns" if namespace_problem() is None else "socket-guard"


@functools.cache
def sandbox_probe() -> Any:
    """What the gate's own probe finds here (a `sandbox.Probe`), probed once per process."""
    from three_ledger.run.sandbox import probe_namespaces

    return probe_namespaces()


def sandbox_problem(layer: str) -> str | None:
    """Why the sandbox's LAYER (`pid`, `mount`) cannot be made here; None when it can."""
    problem: str | None = getattr(sandbox_probe(), layer)
    return problem


def expected_layers() -> dict[str, str]:
    """The ledger's `sandbox.layers` of a run here with nothing simulated, as the gate's
    probe finds the namespaces (the closed environment counts only with a PID namespace)."""
    from three_ledger.run.sandbox import assemble

    def state(problem: str | None) -> str:
        return "held" if problem is None else f"missing: {problem}"

    layers = {"environment": "held", "no_new_privs": "held", "pid": state(sandbox_problem("pid"))}
    layers.update(mount=state(sandbox_problem("mount")), file_commands="held")
    return assemble(layers)


def unshare_refusing(folder: Path, monkeypatch: Any, refuse: str) -> None:
    """An `unshare` first on PATH that fails, as a machine without that namespace fails, when
    its arguments hold REFUSE (`--pid`, or what only a run's trampoline is given); the real
    one otherwise."""
    real = shutil.which("unshare")
    fake = folder / "unshare"
    fake.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" {refuse} "*) '
        "echo 'unshare: unshare failed: Operation not permitted' >&2; exit 1;; esac\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def path_without_unshare(folder: Path, monkeypatch: Any) -> None:
    """PATH holding git alone, as on a machine without util-linux's `unshare` (macOS)."""
    git = shutil.which("git")
    assert git is not None
    (folder / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(folder))


def simulate_missing_layers(monkeypatch: Any, **reasons: str) -> None:
    """The gate's probe, in this process, answering that each layer named cannot be made, for
    the reason given; the others as the real probe finds them. A scored run then asks for
    those layers from the start, not for every one: it goes without them, as it would on a
    machine where they fail (where they really fail, its first attempt makes the probe run,
    as `test_sandbox_layers.py` shows with an `unshare` that refuses one)."""
    import dataclasses

    from three_ledger.run import sandbox

    real = sandbox.probe_namespaces
    simulated = functools.cache(lambda: dataclasses.replace(real(), **reasons))
    monkeypatch.setattr(sandbox, "probe_namespaces", simulated)
    monkeypatch.setattr(sandbox, "first_probe", simulated)


# The Hypothesis profiles (registered in conftest.py): `quick` in make test and test-fast,
# `thorough` in make test-e2e, which also reruns the fast path equivalence tests.
QUICK_EXAMPLES = 20
THOROUGH_EXAMPLES = 100


def fast_path_examples() -> int:
    """Examples for a test that holds a fast path to the reference it stands in for.

    The profile's own in the quick loop; five times as many under any other profile, as
    make test-e2e runs them (`--hypothesis-profile=thorough`: 500).
    """
    from hypothesis import settings

    examples = settings().max_examples
    return examples if examples <= QUICK_EXAMPLES else 5 * examples


# What a CI runner sets that steers the gate's base and reports: tests that run the gate as
# on a developer's machine clear them.
CI_VARIABLES = (
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    "GITHUB_REF",
    "GITHUB_BASE_REF",
    "THREE_LEDGER_BASE",
    "CI_MERGE_REQUEST_DIFF_BASE_SHA",
)
# A conftest hookwrapper that forces every report to `passed`: the blanket sabotage the
# tripwire exists to catch.
FORCE_PASS = (
    "import pytest\n\n"
    "@pytest.hookimpl(wrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    report = yield\n"
    "    report.outcome = 'passed'\n"
    "    return report\n"
)
# How the gate refuses a run where FORCE_PASS passed a test that raised: the tripwire's
# witness of the phase saw the exception (plugin/tripwire.py).
FORCED_PASS_SEEN = "passed, but an exception came out of it"


def keeping_in_sight(step: Any, folder: str) -> Any:
    """STEP, and where it makes /tmp private while FOLDER lies in it (a checkout under
    /tmp), FOLDER among what stays in sight."""
    if step[0] != "private_tmp" or not folder.startswith(step[1].rstrip("/") + "/"):
        return step
    relative = folder[len(step[1].rstrip("/")) + 1 :]
    kept = step[2]
    if any(relative == k or relative.startswith(k + "/") for k in kept):
        return step
    return [step[0], step[1], [*kept, relative]]
