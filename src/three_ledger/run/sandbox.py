"""The test child's sandbox: which layers a scored run gets, found by one probe, and recorded.

Each layer is made with Linux namespaces, as bubblewrap and Bazel's linux-sandbox make theirs,
and each is recorded on its own, `held` or `missing: WHY`, since they do not all come
together (a fresh `/proc` fails in most containers even where a network namespace works):

- `pid`: a new PID namespace with its own `/proc`, the trampoline as PID 1: the child sees
  only its own processes, and nothing it started outlives the run;
- `mount`: the whole filesystem read-only but what the run may write (`mount_plan.py`);
- `file_commands`: the runner's file-command folders hidden (held only with `mount`).

Where a layer cannot be made the run goes on without it, unless the properties pin says
`sandbox: "required"`: then the run is an infrastructure failure (exit 4) before it starts.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen
from three_ledger.run import trampoline
from three_ledger.run.mount_plan import MountPlan, NoMountLayer, RunFiles, plan_mounts
from three_ledger.vocabulary import LAYER_HELD, Enforcement, SandboxPolicy, layer_missing

HELD = LAYER_HELD
_PROBE_TIMEOUT_S = 10.0
# What the probe's own namespace tries: the tree read-only and a private /tmp.
_PROBE_PLAN = [["read_only", "/"], ["private_tmp", "/tmp", []]]


class Layer(enum.StrEnum):
    """The layers this module makes, as the ledger's `sandbox.layers` names them."""

    PID = "pid"
    MOUNT = "mount"
    FILE_COMMANDS = "file_commands"


# A layer that protects only together with another counts as held only when that one holds:
# the environment is read back through /proc without a fresh one, and a file-command file is
# written to without the read-only tree.
_NEEDS = {
    "environment": (
        "pid",
        "the job's environment is readable through /proc without a PID namespace",
    ),
    "file_commands": (
        "mount",
        "the runner's file-command files are writable without the mount layer",
    ),
}


@frozen
class Probe:
    """What the probe found, for each namespace: None where it can be made, else why not."""

    network: str | None
    pid: str | None
    mount: str | None


# What a scored run's first attempt takes for granted: every layer. Its trampoline confirms
# them as it starts the command (`--ready-fd`); where one cannot be made, nothing ran, and the
# run is made again with what `probe_namespaces` finds (`observation.observe_confined`). A
# probe of its own before every run cost a Python start and the namespaces, some 16 ms of CPU,
# where the layers nearly always hold.
_ASSUMED = Probe(None, None, None)


def first_probe() -> Probe:
    """What a scored run first asks of the sandbox: every layer, to be confirmed as it starts;
    none where no namespace can even be tried here (not Linux, no `unshare`), said without
    starting anything."""
    reason = _cannot_try()
    return _ASSUMED if reason is None else Probe(reason, reason, reason)


def _cannot_try() -> str | None:
    if not sys.platform.startswith("linux") or not os.path.exists("/proc/self/ns/net"):
        return "namespaces need Linux with /proc mounted"
    if shutil.which("unshare") is None:
        return "the `unshare` program (util-linux) is not installed"
    return None


def probe_namespaces() -> Probe:
    """One probe for every layer: `unshare` with all the namespaces, then with fewer.

    The first attempt that starts reports, from inside, which layers it could finish; a layer
    that no attempt could even try takes the reason its attempt failed.
    """
    reason = _cannot_try()
    if reason is not None:
        return Probe(reason, reason, reason)
    failures: dict[str, str] = {}
    for layers in (("network", "mount", "pid"), ("network", "mount"), ("network",)):
        found = _attempt(layers)
        if isinstance(found, dict):
            return Probe(
                network=found.get("network"),
                pid=found["pid"] if "pid" in found else failures.get("pid"),
                mount=found["mount"] if "mount" in found else failures.get("mount"),
            )
        failures.setdefault(layers[-1], found)
    # Not even a user and network namespace: that one reason stands for every layer.
    common = failures["network"]
    return Probe(common, common, common)


def _attempt(layers: Sequence[str]) -> dict[str, str | None] | str:
    """What the trampoline finds inside namespaces for LAYERS, or why they cannot be made."""
    # Imported here: the trampoline's own module must not need the package.
    from three_ledger.run.network_namespace import netns_inode, probe_reason
    from three_ledger.runner import ChildHung, run_captured

    unshare = ["unshare", "--user", "--map-root-user", "--net"]
    inside = ["--probe", "--outer-netns", str(netns_inode())]
    if "mount" in layers:
        unshare += ["--mount", "--propagation", "private"]
        inside += ["--plan", json.dumps(_PROBE_PLAN)]
    if "pid" in layers:
        unshare += ["--pid", "--fork"]
        inside.append("--init")
    argv = [*unshare, "--", *trampoline.launcher(), *inside, "--"]
    try:
        done = run_captured(argv, cwd=None, env=None, timeout_s=_PROBE_TIMEOUT_S)
    except ChildHung:
        return f"the sandbox probe did not finish in {_PROBE_TIMEOUT_S:.0f} s"
    except OSError as error:
        return f"the sandbox probe could not start: {error}"
    try:
        found = json.loads(done.stdout)
    except ValueError:
        found = None
    if done.returncode == 0 and isinstance(found, dict):
        return {name: _with_fix(name, reason) for name, reason in found.items()}
    stderr = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return _namespace_fix(layers[-1], probe_reason(done.returncode, stderr[-1] if stderr else ""))


def _with_fix(layer: str, reason: object) -> str | None:
    """A reason from inside the namespaces, with what turns the layer on."""
    if reason is None:
        return None
    if layer == "pid":
        return (
            f"cannot mount a fresh /proc ({reason}): a container that masks parts of /proc "
            "forbids it; unmask them (Podman: `--security-opt unmask=/proc/*`; Docker and "
            "GitLab's Docker executor: `--security-opt systempaths=unconfined`), never "
            "--privileged"
        )
    if layer == "mount":
        return f"{reason} (the mount layer needs Linux 5.12 or later, for mount_setattr)"
    return f"the network namespace failed its isolation check: {reason}"


def _namespace_fix(layer: str, reason: str) -> str:
    if layer == "pid":
        return (
            f"no PID namespace can be made ({reason}); allow them (a non-zero "
            "`user.max_pid_namespaces`; in a container, a seccomp profile that allows "
            "unshare and clone with CLONE_NEWPID)"
        )
    if layer == "mount":
        return f"no mount namespace can be made ({reason})"
    return reason


@frozen
class Confinement:
    """How one run is confined: what `unshare` makes, what the trampoline does, and what the
    ledger records of it."""

    layers: dict[str, str]
    pid_namespace: bool = False
    mounts: MountPlan | None = None

    def argv(
        self, command: Sequence[str], enforcement: Enforcement, ready_fd: int | None = None
    ) -> list[str]:
        """COMMAND wrapped in the namespaces of this run and the trampoline, which writes a
        byte to READY_FD as the command starts inside them."""
        from three_ledger.run.network_namespace import netns_inode

        unshare = ["unshare", "--user", "--map-root-user"]
        inside: list[str] = []
        if enforcement is Enforcement.NETNS:
            unshare.append("--net")
            inside += ["--outer-netns", str(netns_inode())]
        if self.pid_namespace or self.mounts is not None:
            unshare += ["--mount", "--propagation", "private"]
        if self.pid_namespace:
            unshare += ["--pid", "--fork"]
            inside.append("--init")
        if self.mounts is not None:
            inside += ["--plan", json.dumps(self.mounts.steps)]
        if not inside:
            return list(command)
        if ready_fd is not None:
            inside += ["--ready-fd", str(ready_fd)]
        return [*unshare, "--", *trampoline.launcher(), *inside, "--", *command]

    def trampolined(self, enforcement: Enforcement) -> bool:
        """Whether the command starts through the trampoline (`argv`)."""
        return enforcement is Enforcement.NETNS or self.wraps()

    def wraps(self) -> bool:
        """Whether the command runs under the trampoline for this sandbox's layers."""
        return self.pid_namespace or self.mounts is not None

    def environment(self) -> dict[str, str]:
        """What the child's environment gets from the mount layer: its private HOME and /tmp."""
        if self.mounts is None:
            return {}
        return {"HOME": self.mounts.home, "TMPDIR": self.mounts.tmp}


def confine(probe: Probe, files: RunFiles, policy: SandboxPolicy) -> Confinement:
    """The layers this run gets; InfraFailure when the pin requires one that is missing."""
    mounts = None
    mount_problem = probe.mount
    if mount_problem is None:
        try:
            mounts = plan_mounts(files)
        except NoMountLayer as no_layer:
            mount_problem = str(no_layer)
    file_commands = None if mounts is None else mounts.file_commands_problem
    layers = assemble(
        {
            Layer.PID: _state(probe.pid),
            Layer.MOUNT: _state(mount_problem),
            Layer.FILE_COMMANDS: _state(file_commands),
        }
    )
    require(policy, layers)
    return Confinement(layers, probe.pid is None, mounts)


def _state(problem: str | None) -> str:
    return HELD if problem is None else layer_missing(problem)


def assemble(layers: Mapping[str, str]) -> dict[str, str]:
    """The layers as the ledger records them: one that protects only together with another
    counts as held only when that one holds too."""
    assembled = {str(name): state for name, state in layers.items()}
    for layer, (needed, why) in _NEEDS.items():
        if assembled.get(layer) == HELD and assembled.get(needed) != HELD:
            assembled[layer] = layer_missing(why)
    return assembled


def require(
    policy: SandboxPolicy, layers: Mapping[str, str], outcome: str = "the command did not run"
) -> None:
    """Exit 4 for a pin that requires the sandbox where a layer is missing, each on a line
    of its own; OUTCOME says what became of the run."""
    match policy:
        case SandboxPolicy.BEST_EFFORT:
            return
        case SandboxPolicy.REQUIRED:
            missing = [f"{name}: {state}" for name, state in layers.items() if state != HELD]
            if missing:
                raise InfraFailure(
                    'the properties pin requires the sandbox (sandbox: "required"), but '
                    f"{len(missing)} of its layers cannot be made here; {outcome}",
                    missing,
                )
        case _:
            assert_never(policy)


def cache_environment(
    env: Mapping[str, str], command: Sequence[str], root: Path, cache: Path
) -> dict[str, str]:
    """The run's caches pointed at CACHE, outside the tree: pytest's (unless its cache plugin
    is off: pytest then refuses the option), coverage's and Hypothesis's (unless set)."""
    updates = {}
    if not _cache_provider_off(env, command, root):
        addopts = env.get("PYTEST_ADDOPTS", "")
        updates["PYTEST_ADDOPTS"] = f"{addopts} -o cache_dir={cache / 'pytest'}".strip()
    if not env.get("COVERAGE_FILE"):
        updates["COVERAGE_FILE"] = str(cache / "coverage")
    if not env.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        updates["HYPOTHESIS_STORAGE_DIRECTORY"] = str(cache / "hypothesis")
    return updates


def _cache_provider_off(env: Mapping[str, str], command: Sequence[str], root: Path) -> bool:
    """Whether `-p no:cacheprovider` reaches pytest: on the command line, in PYTEST_ADDOPTS,
    or in the `addopts` of the config file pytest reads in ROOT."""
    import shlex

    from three_ledger.pytest_config import entries, pytest_settings

    def read(name: str) -> bytes | None:
        try:
            return (root / name).read_bytes()
        except OSError:
            return None

    try:
        given = shlex.split(env.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        given = []
    words = [*command, *given, *entries(pytest_settings(read).get("addopts"))]
    following = [*words[1:], ""]
    return any(
        word in ("-pno:cacheprovider", "--plugin=no:cacheprovider")
        or (word in ("-p", "--plugin") and after == "no:cacheprovider")
        for word, after in zip(words, following, strict=True)
    )


def run_files(
    root: Path,
    private: Path,
    writable: Sequence[Path],
    writable_paths: Sequence[str],
    outputs: Sequence[Path],
    command: Sequence[str],
    readable: Sequence[Path] = (),
) -> RunFiles:
    """A run's files, as the mount layer is planned from (the child's PATH is the gate's)."""
    return RunFiles(
        root,
        private,
        tuple(writable),
        tuple(writable_paths),
        tuple(outputs),
        command,
        os.environ,
        tuple(readable),
    )
