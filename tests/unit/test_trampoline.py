"""The trampoline inside real namespaces: PID 1, the mount steps, the capabilities it drops.

Each test starts it as `sandbox.py` does, under `unshare`, but with `python -m` (site on), so
that a coverage run measures it where it really runs. Each asserts what did *not* happen: a
process outliving its namespace, a write reaching the tree, a process of the host in sight.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import default_sigint, keeping_in_sight, terminated_on_exit
from three_ledger.run import trampoline
from three_ledger.runner import run_command

pytestmark = pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")

NAMESPACES = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
PID_NAMESPACE = ["--pid", "--fork"]


def inside(*command: str, plan: list[list[Any]] | None = None, init: bool = True) -> list[str]:
    """COMMAND under the trampoline in new namespaces, with PLAN's mounts, as PID 1 (INIT)."""
    argv = [*NAMESPACES, *(PID_NAMESPACE if init else ()), "--", sys.executable, "-m"]
    argv += ["three_ledger.run.trampoline"]
    if init:
        argv.append("--init")
    if plan is not None:
        argv += ["--plan", json.dumps(coverage_steps(plan))]
    return [*argv, "--", *command]


def coverage_steps(plan: list[list[Any]]) -> list[list[Any]]:
    """PLAN, and under coverage its data folder in sight and writable too, so that the
    trampoline is measured (in sight even where a private /tmp would hide it)."""
    import coverage

    measuring = coverage.Coverage.current()
    if measuring is None:
        return plan
    folder = str(Path(measuring.config.data_file).resolve().parent)
    return [*(keeping_in_sight(step, folder) for step in plan), ["writable", folder]]


def with_interpreter(kept: list[str]) -> list[str]:
    """KEPT, and this interpreter's environment where it lies in /tmp (a checkout there), as
    the gate keeps the environment of a PATH entry in sight."""
    prefix = os.path.realpath(sys.prefix)
    return [*kept, prefix.removeprefix("/tmp/")] if prefix.startswith("/tmp/") else kept


def run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd)


def python(code: str) -> tuple[str, str, str]:
    return (sys.executable, "-c", textwrap.dedent(code))


# --- PID 1 ----------------------------------------------------------------------------------


def test_the_command_sees_only_the_namespace_in_proc_under_pid_1() -> None:
    code = """
        import json, os
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
        first = open("/proc/1/cmdline", "rb").read().split(b"\\0")
        print(json.dumps({"pids": pids, "me": os.getpid(), "parent": os.getppid(),
                          "one": [part.decode() for part in first]}))
    """
    done = run(inside(*python(code)))
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["pids"] == [1, seen["me"]]  # no process of the host, not even the gate
    assert seen["parent"] == 1
    assert "three_ledger.run.trampoline" in seen["one"]


def test_a_setsid_escapee_dies_with_the_namespace(tmp_path: Path) -> None:
    marker = tmp_path / "escaped"
    script = f"setsid sh -c 'sleep 3; touch {marker}' & sleep 0.2"
    done = run(inside("sh", "-c", script))
    assert done.returncode == 0, done.stderr
    time.sleep(4)
    assert not marker.exists(), "a setsid child outlived the run and wrote after it"


def test_without_a_pid_namespace_the_same_escapee_writes_after_the_run(tmp_path: Path) -> None:
    # Shows that the test above can fail.
    marker = tmp_path / "escaped"
    script = f"setsid sh -c 'sleep 1; touch {marker}' & sleep 0.2"
    done = run(inside("sh", "-c", script, init=False))
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists()


@pytest.mark.parametrize("code", [0, 1, 3])
def test_pid_1_exits_with_the_commands_status(code: int) -> None:
    assert run(inside("sh", "-c", f"exit {code}")).returncode == code


def test_a_signal_death_is_128_plus_n_and_said_last() -> None:
    done = run(inside("sh", "-c", "kill -KILL $$"))
    assert done.returncode == trampoline.SIGNAL_BASE + signal.SIGKILL
    assert done.stderr.splitlines()[-1] == f"{trampoline.KILLED_BY} SIGKILL"


def test_a_death_by_a_signal_python_has_no_name_for_is_still_128_plus_n() -> None:
    rtmin = signal.SIGRTMIN + 1  # no name in Python
    done = run(inside("sh", "-c", f"kill -{int(rtmin)} $$"))
    assert done.returncode == trampoline.SIGNAL_BASE + rtmin
    assert done.stderr.splitlines()[-1] == (
        f"{trampoline.KILLED_BY} {trampoline.signal_name(rtmin)}"
    )


def test_pid_1_forwards_sigterm_to_the_commands_group_and_reaps_it(tmp_path: Path) -> None:
    code = """
        import signal, sys, time
        def leave(signum, frame):
            print(f"got {signal.Signals(signum).name}", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, leave)
        print("ready", flush=True)
        time.sleep(60)
    """
    process = subprocess.Popen(
        inside(*python(code)), stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    with terminated_on_exit(process):
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        os.killpg(process.pid, signal.SIGTERM)  # as the runner stops a group
        out, _ = process.communicate(timeout=30)
    assert out == "got SIGTERM\n"  # once: PID 1 forwards it, `unshare` holds its own copy
    assert process.returncode == 7


def test_pid_1_forwards_sigint_and_keeps_an_ignored_one_ignored() -> None:
    code = """
        import time
        try:
            print("ready", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """
    for ignored, expected in ((False, "interrupted\n"), (True, "")):
        process = subprocess.Popen(
            inside(*python(code)),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            if ignored
            else default_sigint,
        )
        with terminated_on_exit(process):
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
            os.killpg(process.pid, signal.SIGINT)
            if ignored:
                time.sleep(0.5)
                assert process.poll() is None
                os.killpg(process.pid, signal.SIGKILL)
            out, _ = process.communicate(timeout=30)
        assert out == expected


def test_orphans_are_reaped() -> None:
    code = """
        import os, subprocess, time
        for _ in range(3):  # each sleeper's parent exits at once: PID 1 inherits it
            subprocess.Popen(["sh", "-c", "sleep 0.1 &"]).wait()
        time.sleep(1)
        states = [open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
                  for pid in os.listdir("/proc") if pid.isdigit()]
        print(states.count("Z"))
    """
    done = run(inside(*python(code)))
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr


def test_runner_timeout_ends_the_namespace_and_all_in_it(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    script = f"setsid sh -c 'sleep 2; touch {marker}' & exec sleep 1000"
    result = run_command(
        inside("sh", "-c", script),
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=1.0,
        log_path=tmp_path / "run.log",
        console=io.BytesIO(),
        grace_s=0.5,
    )
    assert result.timed_out
    time.sleep(3)
    assert not marker.exists()


# --- the mount steps --------------------------------------------------------------------------


def test_the_tree_is_read_only_but_the_writable_folder(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "written").mkdir(parents=True)
    (tree / "fixture.json").write_text("{}\n")
    plan = [["read_only", "/"], ["writable", str(tree / "written")]]
    code = f"""
        import pathlib
        pathlib.Path({str(tree / "written/out")!r}).write_text("ok")
        try:
            pathlib.Path({str(tree / "fixture.json")!r}).write_text("changed")
        except OSError as error:
            print(error.strerror)
    """
    done = run(inside(*python(code), plan=plan))
    assert (done.returncode, done.stdout) == (0, "Read-only file system\n"), done.stderr
    assert (tree / "fixture.json").read_text() == "{}\n"
    assert (tree / "written/out").read_text() == "ok"


def test_the_private_tmp_keeps_only_what_the_run_needs_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    needed = tmp_path / "needed"
    needed.mkdir()
    (needed / "data").write_text("seen\n")
    (tmp_path / "secret").write_text("not for the run\n")
    relative = str(needed.relative_to("/tmp"))
    plan: list[list[Any]] = [
        ["read_only", "/"],
        ["private_tmp", "/tmp", with_interpreter([relative])],
    ]
    plan.append(["mkdir", "/tmp/home"])
    code = f"""
        import os, pathlib
        print(pathlib.Path({str(needed / "data")!r}).read_text(), end="")
        print(os.path.exists({str(tmp_path / "secret")!r}))
        pathlib.Path("/tmp/scratch").write_text("private")
        pathlib.Path("/tmp/home/.rc").write_text("private")
        try:
            pathlib.Path({str(needed / "data")!r}).write_text("changed")
        except OSError as error:
            print(error.strerror)
    """
    done = run(inside(*python(code), plan=plan))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "seen\nFalse\nRead-only file system\n"
    assert not Path("/tmp/scratch").exists()
    assert not Path("/tmp/home/.rc").exists()
    assert (needed / "data").read_text() == "seen\n"


def test_a_writable_path_is_an_empty_tmpfs_that_leaves_nothing(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (build / "old").write_text("from before\n")
    plan = [["read_only", "/"], ["tmpfs", str(build)]]
    code = f"""
        import os, pathlib
        print(os.listdir({str(build)!r}))
        pathlib.Path({str(build / "new")!r}).write_text("during the run")
    """
    done = run(inside(*python(code), plan=plan))
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
    assert sorted(path.name for path in build.iterdir()) == ["old"]


def test_a_hidden_folder_is_empty_and_cannot_be_written(tmp_path: Path) -> None:
    commands = tmp_path / "file_commands"
    commands.mkdir()
    (commands / "set_output").write_text("")
    plan = [["read_only", "/"], ["hide", str(commands)], ["hide", str(tmp_path / "absent")]]
    code = f"""
        import os
        print(os.listdir({str(commands)!r}))
        try:
            open({str(commands / "set_output")!r}, "a").write("posture=review\\n")
        except OSError as error:
            print(error.strerror)
    """
    done = run(inside(*python(code), plan=plan))
    assert (done.returncode, done.stdout) == (0, "[]\nRead-only file system\n"), done.stderr
    assert (commands / "set_output").read_text() == ""


def test_the_command_starts_in_its_folder_as_the_new_mounts_show_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "build").mkdir(parents=True)
    plan: list[list[Any]] = [["read_only", "/"]]
    plan.append(["private_tmp", "/tmp", with_interpreter([str(root.relative_to("/tmp"))])])
    plan.append(["tmpfs", str(root / "build")])
    code = "open('build/x', 'w').write('relative paths see the tmpfs')"
    done = run(inside(*python(code), plan=plan), cwd=root)
    assert done.returncode == 0, done.stderr


def test_the_command_has_no_capability_left_to_undo_a_mount(tmp_path: Path) -> None:
    code = """
        import ctypes, os
        status = open("/proc/self/status").read()
        print([line.split()[1] for line in status.splitlines() if line.startswith("Cap")])
        libc = ctypes.CDLL(None, use_errno=True)
        flags = 0x20 | 0x1000  # MS_REMOUNT | MS_BIND: read-write again
        print(libc.mount(None, b"/", None, ctypes.c_ulong(flags), None), ctypes.get_errno())
        print(libc.umount2(b"/proc", 0x2), ctypes.get_errno())  # MNT_DETACH
    """
    done = run(inside(*python(code), plan=[["read_only", "/"]]))
    assert done.returncode == 0, done.stderr
    caps, remount, umount = done.stdout.splitlines()
    assert caps == str(["0000000000000000"] * 5)
    assert remount.split() == ["-1", str(1)]  # EPERM
    assert umount.split() == ["-1", str(1)]


def test_a_nested_user_namespace_cannot_unlock_the_read_only_tree(tmp_path: Path) -> None:
    target = tmp_path / "fixture.json"
    target.write_text("{}\n")
    code = f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno())  # NEWUSER | NEWNS
        print(libc.mount(None, b"/", None, ctypes.c_ulong(0x20 | 0x1000), None), ctypes.get_errno())
        try:
            open({str(target)!r}, "w").write("changed")
        except OSError as error:
            print(error.strerror)
    """
    done = run(inside(*python(code), plan=[["read_only", "/"]]))
    assert done.returncode == 0, done.stderr
    nested, remount, write = done.stdout.splitlines()
    assert nested == "0 0"  # a new user namespace is allowed, and gives capabilities in it...
    assert remount.startswith("-1")  # ...but the mounts it inherits are locked read-only
    assert write == "Read-only file system"
    assert target.read_text() == "{}\n"


def test_a_step_that_fails_stops_the_command_with_125(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plan = [["read_only", "/"], ["tmpfs", str(tmp_path / "missing")]]
    done = run(inside("touch", str(marker), plan=plan))
    assert done.returncode == trampoline.ISOLATION_FAILED
    assert done.stderr.splitlines()[0] == (  # a coverage run may add its own lines after it
        f"three-ledger sandbox: refusing to run the command: {tmp_path / 'missing'} is not a folder"
    )
    assert not marker.exists()


def ready_run(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """ARGV with `--ready-fd` before its `--`, and what the trampoline said on that pipe."""
    ready, said = os.pipe()
    split = argv.index("--", argv.index("three_ledger.run.trampoline"))
    argv = [*argv[:split], "--ready-fd", str(said), *argv[split:]]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, pass_fds=[said])
    finally:
        os.close(said)
    with os.fdopen(ready, "rb") as pipe:
        return done, pipe.read()


@pytest.mark.parametrize("init", [True, False], ids=["pid-1", "exec"])
def test_the_trampoline_says_it_is_ready_on_its_pipe_and_the_command_never_holds_it(
    tmp_path: Path, init: bool
) -> None:
    # The command looks for the pipe among its descriptors: a command that held it could
    # say "ready" itself after a failed setup.
    code = """
        import os, stat
        print(sum(stat.S_ISFIFO(os.fstat(int(fd)).st_mode) for fd in os.listdir("/proc/self/fd")
                  if fd not in ("0", "1", "2") and os.path.exists(f"/proc/self/fd/{fd}")))
    """
    plan = [["read_only", "/"], ["writable", str(tmp_path)]]
    done, said = ready_run(inside(*python(code), plan=plan, init=init))
    assert done.returncode == 0, done.stderr
    assert (said, done.stdout.strip()) == (b"1", "0")


def test_a_setup_that_fails_says_nothing_on_the_pipe(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plan = [["read_only", "/"], ["tmpfs", str(tmp_path / "missing")]]
    done, said = ready_run(inside("touch", str(marker), plan=plan))
    assert (done.returncode, said) == (trampoline.ISOLATION_FAILED, b"")
    assert not marker.exists()


def test_an_unknown_step_stops_the_command() -> None:
    done = run(inside("true", plan=[["chmod", "/"]]))
    assert done.returncode == trampoline.ISOLATION_FAILED
    assert "unknown mount step ['chmod', '/']" in done.stderr


def test_the_probe_reports_each_layer_and_runs_nothing() -> None:
    argv = inside(plan=[["read_only", "/"], ["private_tmp", "/tmp", []]])
    argv.insert(argv.index("--init"), "--probe")
    done = run(argv)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"mount": None, "pid": None}


def test_the_probe_says_why_pid_1_cannot_be_made_outside_a_pid_namespace() -> None:
    # --init without a new PID namespace around it
    argv = [*NAMESPACES, "--", sys.executable, "-m", "three_ledger.run.trampoline"]
    done = run([*argv, "--probe", "--init", "--"])
    found = json.loads(done.stdout)
    assert found["pid"].startswith("not PID 1 of a new PID namespace")


@pytest.mark.parametrize(
    "args",
    [
        ["--init"],  # no `--`
        ["--plan", "[1]", "--", "true"],
        ["--plan", "{", "--", "true"],
        ["--probe", "--", "true"],  # a probe runs nothing
        ["--init", "--"],  # nothing to run
        ["--chroot", "/", "--", "true"],
        ["--ready-fd", "three", "--", "true"],
    ],
)
def test_a_malformed_command_line_is_usage(args: list[str]) -> None:
    assert trampoline.main(args) == trampoline.USAGE
