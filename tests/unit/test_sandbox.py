"""The sandbox's gate side: the probe and its fallbacks, the layers a run gets and records,
`sandbox: "required"`, and where the run's caches go."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import unshare_refusing
from three_ledger.commands.combine import weakest_sandbox
from three_ledger.errors import InfraFailure
from three_ledger.ledgers import Sandbox
from three_ledger.run import sandbox, trampoline
from three_ledger.run.mount_plan import RunFiles
from three_ledger.run.sandbox import HELD, Confinement, Probe, confine
from three_ledger.vocabulary import Enforcement, SandboxPolicy

ALL_HELD = {"pid": HELD, "mount": HELD, "file_commands": HELD}


def raw_unshare_problem() -> str | None:
    """Why `unshare` with every namespace fails here, checked without the code under test."""
    argv = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork"]
    try:
        done = subprocess.run([*argv, "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return done.stderr.decode(errors="replace") if done.returncode else None


@pytest.mark.skipif(raw_unshare_problem() is not None, reason="unshare fails here")
def test_every_layer_is_available_here() -> None:
    # The skips of `needs_pid_layer` and `needs_mount_layer` rest on this probe.
    assert sandbox.probe_namespaces() == Probe(None, None, None)


@pytest.mark.skipif(raw_unshare_problem() is not None, reason="unshare fails here")
def test_without_pid_namespaces_the_probe_falls_back_and_says_how_to_allow_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unshare_refusing(tmp_path, monkeypatch, "--pid")
    found = sandbox.probe_namespaces()
    assert (found.network, found.mount) == (None, None)
    assert found.pid is not None
    assert found.pid.startswith("no PID namespace can be made (user namespaces are unavailable")
    assert "CLONE_NEWPID" in found.pid


@pytest.mark.skipif(raw_unshare_problem() is not None, reason="unshare fails here")
def test_without_mount_namespaces_only_the_network_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unshare_refusing(tmp_path, monkeypatch, "--mount")
    found = sandbox.probe_namespaces()
    assert found.network is None
    assert found.mount is not None
    assert found.mount.startswith("no mount namespace can be made")
    assert found.pid is not None
    assert found.pid.startswith("no PID namespace can be made")


def test_each_reason_from_inside_the_namespaces_names_its_layer() -> None:
    assert sandbox._with_fix("network", "lo is down") == (
        "the network namespace failed its isolation check: lo is down"
    )
    mount = sandbox._with_fix("mount", "cannot make / read-only: Function not implemented")
    assert mount is not None
    assert mount.endswith("(the mount layer needs Linux 5.12 or later, for mount_setattr)")
    assert sandbox._with_fix("pid", None) is None


def test_without_user_namespaces_every_layer_says_how_to_enable_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unshare_refusing(tmp_path, monkeypatch, "--user")
    found = sandbox.probe_namespaces()
    for reason in (found.network, found.pid, found.mount):
        assert reason is not None
        assert "kernel.apparmor_restrict_unprivileged_userns=0" in reason
        assert "CLONE_NEWUSER" in reason


def test_without_unshare_every_layer_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = "the `unshare` program (util-linux) is not installed"
    assert sandbox.probe_namespaces() == Probe(reason, reason, reason)


def test_a_proc_that_cannot_be_mounted_names_the_unmasking_fix() -> None:
    found = sandbox._with_fix("pid", "cannot mount proc on /proc: Operation not permitted")
    assert found is not None
    assert "--security-opt unmask=/proc/*" in found
    assert "--security-opt systempaths=unconfined" in found
    assert "never --privileged" in found


# --- the layers a run records ------------------------------------------------------------------


def run_files(tmp_path: Path) -> RunFiles:
    root, private = tmp_path / "root", tmp_path / "private"
    root.mkdir()
    (private / "written").mkdir(parents=True)
    return RunFiles(root, private, (private / "written",), (), (), ["pytest"], {}, ())


def test_every_layer_held_is_recorded_held(tmp_path: Path) -> None:
    confined = confine(Probe(None, None, None), run_files(tmp_path), SandboxPolicy.BEST_EFFORT)
    assert confined.layers == ALL_HELD
    assert confined.pid_namespace
    assert confined.mounts is not None


def test_a_missing_pid_layer_is_recorded_and_the_run_gets_no_pid_namespace(
    tmp_path: Path,
) -> None:
    confined = confine(
        Probe(None, "no /proc", None), run_files(tmp_path), SandboxPolicy.BEST_EFFORT
    )
    assert confined.layers == {**ALL_HELD, "pid": "missing: no /proc"}
    argv = confined.argv(["pytest"], Enforcement.NETNS)
    assert "--pid" not in argv
    assert "--init" not in argv
    assert "--plan" in argv


def test_without_the_mount_layer_file_commands_cannot_hold(tmp_path: Path) -> None:
    probe = Probe(None, None, "old kernel")
    confined = confine(probe, run_files(tmp_path), SandboxPolicy.BEST_EFFORT)
    assert confined.layers == {
        "pid": HELD,
        "mount": "missing: old kernel",
        "file_commands": "missing: the runner's file-command files are writable without the "
        "mount layer",
    }
    assert confined.environment() == {}


def test_environment_holds_only_with_pid() -> None:
    # The closed environment (issue 23, part 1) is read back through /proc without a PID layer.
    assembled = sandbox.assemble({"environment": HELD, "pid": "missing: no /proc"})
    assert assembled["environment"] == (
        "missing: the job's environment is readable through /proc without a PID namespace"
    )
    assert sandbox.assemble({"environment": HELD, "pid": HELD})["environment"] == HELD
    # A layer already missing keeps its own reason.
    kept = sandbox.assemble({"environment": "missing: x", "pid": "missing: y"})
    assert kept["environment"] == "missing: x"


def test_required_with_a_missing_layer_is_exit_4_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(InfraFailure) as failure:
        confine(Probe(None, "no /proc", None), run_files(tmp_path), SandboxPolicy.REQUIRED)
    assert failure.value.message == (
        'the properties pin requires the sandbox (sandbox: "required"), but 1 of its layers '
        "cannot be made here; the command did not run"
    )
    assert failure.value.details == ["pid: missing: no /proc"]


def test_required_checked_after_the_run_says_the_run_is_no_evidence() -> None:
    # no_new_privs is known only once the child started.
    layers = {**ALL_HELD, "no_new_privs": "missing: the flag did not take"}
    with pytest.raises(InfraFailure) as failure:
        sandbox.require(SandboxPolicy.REQUIRED, layers, "the run is no evidence")
    assert failure.value.message.endswith(
        "1 of its layers cannot be made here; the run is no evidence"
    )
    assert failure.value.details == ["no_new_privs: missing: the flag did not take"]
    sandbox.require(SandboxPolicy.BEST_EFFORT, layers)


def test_required_with_every_layer_held_runs(tmp_path: Path) -> None:
    confined = confine(Probe(None, None, None), run_files(tmp_path), SandboxPolicy.REQUIRED)
    assert confined.layers == ALL_HELD


def test_a_run_without_layers_or_network_ban_is_not_wrapped() -> None:
    bare = Confinement({"pid": "missing: x", "mount": "missing: y"})
    assert bare.argv(["pytest", "-q"], Enforcement.NONE) == ["pytest", "-q"]
    assert not bare.wraps()


def test_the_argv_asks_unshare_for_each_layer_and_the_trampoline_to_finish_them(
    tmp_path: Path,
) -> None:
    confined = confine(Probe(None, None, None), run_files(tmp_path), SandboxPolicy.BEST_EFFORT)
    argv = confined.argv(["pytest"], Enforcement.NETNS)
    split = argv.index("--")
    assert argv[:split] == [
        "unshare", "--user", "--map-root-user", "--net", "--mount", "--propagation", "private",
        "--pid", "--fork",
    ]  # fmt: skip
    assert argv[split + 1 : split + 7] == trampoline.launcher()
    assert argv[-2:] == ["--", "pytest"]
    assert "--init" in argv
    assert "--outer-netns" in argv
    assert confined.environment()["TMPDIR"] == os.path.realpath("/tmp")


# --- the run's caches ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "addopts", "config"),
    [
        (["pytest", "-p", "no:cacheprovider"], "", ""),
        (["pytest", "-pno:cacheprovider"], "", ""),
        (["pytest"], "-q -p no:cacheprovider", ""),
        (["pytest"], "", "[pytest]\naddopts = -p no:cacheprovider\n"),
    ],
    ids=["command", "attached", "PYTEST_ADDOPTS", "config"],
)
def test_pytests_cache_stays_off_where_its_plugin_is_off(
    tmp_path: Path, command: list[str], addopts: str, config: str
) -> None:
    if config:
        (tmp_path / "pytest.ini").write_text(config)
    env = {"PYTEST_ADDOPTS": addopts} if addopts else {}
    updates = sandbox.cache_environment(env, command, tmp_path, tmp_path / "cache")
    assert "PYTEST_ADDOPTS" not in updates  # pytest refuses `-o cache_dir` then


def test_caches_go_to_the_private_folder_unless_the_job_set_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    updates = sandbox.cache_environment({"PYTEST_ADDOPTS": "-q"}, ["pytest"], tmp_path, cache)
    assert updates == {
        "PYTEST_ADDOPTS": f"-q -o cache_dir={cache / 'pytest'}",
        "COVERAGE_FILE": str(cache / "coverage"),
        "HYPOTHESIS_STORAGE_DIRECTORY": str(cache / "hypothesis"),
    }
    kept = {"COVERAGE_FILE": "/x/.coverage", "HYPOTHESIS_STORAGE_DIRECTORY": "/x/h"}
    assert sandbox.cache_environment(kept, ["pytest"], tmp_path, cache) == {
        "PYTEST_ADDOPTS": f"-o cache_dir={cache / 'pytest'}"
    }


# --- combine -------------------------------------------------------------------------------------


def test_combine_keeps_the_weakest_layer_of_the_shards_and_every_writable_read() -> None:
    first = Sandbox({**ALL_HELD}, (), (), ("build/a",))
    second = Sandbox({**ALL_HELD, "pid": "missing: no /proc"}, (), (), ("build/b", "build/a"))
    third = Sandbox({**ALL_HELD, "pid": "missing: another reason"}, (), ())
    weakest = weakest_sandbox([first, second, third])
    assert weakest == Sandbox(
        {**ALL_HELD, "pid": "missing: no /proc"}, (), (), ("build/a", "build/b")
    )
    assert weakest.missing() == {"pid": "missing: no /proc"}
