"""The mount layer's plan: what stays visible, what the child may write, what is hidden."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import git, make_tree
from three_ledger.errors import Refused
from three_ledger.run.mount_plan import (
    HOME_NAME,
    NoMountLayer,
    RunFiles,
    Step,
    known_oracle_files,
    plan_mounts,
    prepare_writable_paths,
    read_only_hints,
    read_only_writes,
    refuse_writable_holding,
    refuse_writable_overlaps,
)

TMP = os.path.realpath("/tmp")


def files(tmp_path: Path, **change: object) -> RunFiles:
    root = tmp_path / "root"
    private = tmp_path / "private"
    written = private / "written"
    for folder in (root, written):
        folder.mkdir(parents=True, exist_ok=True)
    fields: dict[str, object] = {
        "root": root,
        "private": private,
        "writable": (written,),
        "writable_paths": (),
        "outputs": (tmp_path / "ledgers/p.json",),
        "command": ["pytest"],
        "env": {"PATH": "/usr/bin"},
    }
    fields.update(change)
    return RunFiles(**fields)  # type: ignore[arg-type]


def steps_of(plan_steps: tuple[Step, ...], kind: str) -> list[Step]:
    return [step for step in plan_steps if step[0] == kind]


def relative(path: Path) -> str:
    return os.path.relpath(os.path.realpath(path), TMP)


def test_the_tree_turns_read_only_first_and_tmp_private_keeping_root_and_private(
    tmp_path: Path,
) -> None:
    planned = plan_mounts(files(tmp_path), gate_env={})
    assert planned.steps[0] == ["read_only", "/"]
    kept = planned.steps[1]
    assert kept == [
        "private_tmp",
        TMP,
        sorted([relative(tmp_path / "private"), relative(tmp_path / "root")]),
    ]
    assert ["writable", os.path.realpath(tmp_path / "private/written")] in planned.steps
    assert planned.steps[-1] == ["mkdir", os.path.join(TMP, HOME_NAME)]
    assert (planned.home, planned.tmp) == (os.path.join(TMP, HOME_NAME), TMP)


def test_a_kept_folder_keeps_what_it_holds_once(tmp_path: Path) -> None:
    nested = tmp_path / "root/.venv/bin"
    nested.mkdir(parents=True)
    planned = plan_mounts(files(tmp_path, env={"PATH": str(nested)}), gate_env={})
    assert relative(nested) not in planned.steps[1][2]


def test_a_virtual_environment_on_path_is_kept_whole(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin", "PYTHONPATH": "src", "VIRTUAL_ENV": str(venv)}
    planned = plan_mounts(files(tmp_path, env=env), gate_env={})
    assert relative(venv) in planned.steps[1][2]


def test_where_a_link_in_root_leads_stays_visible(tmp_path: Path) -> None:
    modules = tmp_path / "npm/node_modules"
    modules.mkdir(parents=True)
    (tmp_path / "root").mkdir()
    (tmp_path / "root/node_modules").symlink_to(modules)
    planned = plan_mounts(files(tmp_path), gate_env={})
    assert relative(modules) in planned.steps[1][2]


def test_the_shards_slice_stays_readable(tmp_path: Path) -> None:
    slice_file = tmp_path / "shard/slice.json"
    slice_file.parent.mkdir()
    slice_file.write_text("[]")
    planned = plan_mounts(files(tmp_path, readable=(slice_file,)), gate_env={})
    assert relative(slice_file) in planned.steps[1][2]


def test_a_home_name_the_kept_paths_use_is_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = Path(TMP) / HOME_NAME
    monkeypatch.setattr(os.path, "exists", lambda path: True)  # as if someone had made it
    planned = plan_mounts(files(tmp_path, env={"PATH": str(odd)}), gate_env={})
    assert planned.home == f"{odd}_"


def test_a_path_entry_that_does_not_exist_is_not_kept(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-venv/bin"
    planned = plan_mounts(files(tmp_path, env={"PATH": str(missing)}), gate_env={})
    assert not [kept for kept in planned.steps[1][2] if "no-such-venv" in kept]


def test_root_holding_tmp_has_no_mount_layer(tmp_path: Path) -> None:
    with pytest.raises(NoMountLayer, match="holds /tmp"):
        plan_mounts(files(tmp_path, root=Path("/")), gate_env={})


def test_each_writable_path_is_a_tmpfs_under_root(tmp_path: Path) -> None:
    planned = plan_mounts(files(tmp_path, writable_paths=("build", "out/cache")), gate_env={})
    root = os.path.realpath(tmp_path / "root")
    assert [step[1] for step in steps_of(planned.steps, "tmpfs") if step[1] != "/dev/shm"] == [
        f"{root}/build",
        f"{root}/out/cache",
    ]


def test_the_runners_file_command_folders_and_the_ledgers_folder_are_hidden(
    tmp_path: Path,
) -> None:
    runner = tmp_path / "runner/_runner_file_commands"
    gate_env = {
        "GITHUB_OUTPUT": str(runner / "set_output_1"),
        "GITHUB_STEP_SUMMARY": str(runner / "step_summary_1"),
        "GITHUB_ENV": "relative/ignored",
    }
    planned = plan_mounts(files(tmp_path), gate_env=gate_env)
    hidden = [step[1] for step in steps_of(planned.steps, "hide")]
    assert hidden == sorted({os.path.realpath(runner), os.path.realpath(tmp_path / "ledgers")})
    assert planned.file_commands_problem is None


def test_a_file_command_folder_that_holds_root_stays_visible_and_says_why(
    tmp_path: Path,
) -> None:
    gate_env = {"GITHUB_OUTPUT": str(tmp_path / "output")}
    planned = plan_mounts(files(tmp_path), gate_env=gate_env)
    assert os.path.realpath(tmp_path) not in [s[1] for s in steps_of(planned.steps, "hide")]
    assert planned.file_commands_problem is not None
    assert planned.file_commands_problem.startswith(
        f"$GITHUB_OUTPUT lies in {os.path.realpath(tmp_path)}"
    )


def test_a_ledger_folder_that_holds_root_is_not_hidden(tmp_path: Path) -> None:
    planned = plan_mounts(files(tmp_path, outputs=(tmp_path / "p.json",)), gate_env={})
    assert steps_of(planned.steps, "hide") == []


# --- writable_paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "what"),
    [
        ("fixtures", "the pinned fixtures' folder 'fixtures'"),
        ("fixtures/cache", "the pinned fixtures' folder 'fixtures'"),
        ("data", "the pinned fixtures' folder 'data/fixtures'"),
        ("tests", "oracle_paths entry 'tests'"),
        ("properties/out", "oracle_paths entry 'properties'"),
    ],
)
def test_a_writable_path_over_fixtures_or_oracle_paths_is_refused(entry: str, what: str) -> None:
    fixtures = ("other", "data/fixtures") if entry == "data" else ("fixtures",)
    with pytest.raises(Refused) as refused:
        refuse_writable_overlaps(
            Path("pins/properties.json"), ["build", entry], fixtures, ["properties", "tests/"]
        )
    assert refused.value.message == (
        f"pins/properties.json: $.writable_paths[1]: {entry!r} overlaps {what}: a folder the "
        "run may write is emptied for the run, and never what judges it"
    )


def test_a_writable_path_holding_a_known_oracle_is_refused() -> None:
    with pytest.raises(Refused, match=r"\$.writable_paths\[0\]: 'pkg' holds 'pkg/conftest.py'"):
        refuse_writable_overlaps(
            Path("p.json"), ["pkg"], ("fixtures",), ["tests"], ["pkg/conftest.py"]
        )
    refuse_writable_overlaps(
        Path("p.json"), ["pkg2"], ("fixtures",), ["tests"], ["pkg/conftest.py"]
    )


def test_known_oracles_are_tracked_conftests_and_test_modules(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "gen/conftest.py": b"",
            "gen/test_generated.py": b"",
            "gen/helper.py": b"",
            "build/test_not_collected.py": b"",  # pytest never looks in build/
            "out/test_x.py": b"",
        },
    )
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "gen", "build")
    git(tmp_path, "commit", "-qm", "base")
    assert known_oracle_files(tmp_path, ["gen", "build", "out"]) == [
        "gen/conftest.py",
        "gen/test_generated.py",
    ]
    assert known_oracle_files(tmp_path / "build", ["x"]) == []


def test_known_oracles_outside_a_work_tree_are_none(tmp_path: Path) -> None:
    assert known_oracle_files(tmp_path, ["build"]) == []


def test_missing_writable_paths_are_made_as_folders(tmp_path: Path) -> None:
    prepare_writable_paths(tmp_path, ["build/cache", "out"])
    assert (tmp_path / "build/cache").is_dir()
    assert (tmp_path / "out").is_dir()


def test_a_writable_path_through_a_link_or_onto_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "file").write_text("")
    with pytest.raises(Refused, match="is a link; name the folder itself"):
        prepare_writable_paths(tmp_path, ["link/cache"])
    with pytest.raises(Refused, match="is not a folder"):
        prepare_writable_paths(tmp_path, ["file"])
    assert not (tmp_path / "elsewhere/cache").exists()


def test_a_writable_path_holding_a_folder_the_gate_needs_is_refused(tmp_path: Path) -> None:
    report = tmp_path / "reports/junit"
    with pytest.raises(Refused, match="'reports' holds the JUnit report's folder"):
        refuse_writable_holding(tmp_path, ["reports"], [("the JUnit report's folder", report)])
    refuse_writable_holding(tmp_path, ["build"], [("the JUnit report's folder", report)])


# --- read-only writes in the log ---------------------------------------------------------------

LOG = """\
collected 3 items
mkdir: cannot create directory \u2018out\u2019: Read-only file system
sh: 1: cannot create out/junit.xml: Read-only file system
bash: line 1: x/y.txt: Read-only file system
PermissionError: [Errno 30] Read-only file system: '/elsewhere/c.json'
PermissionError: [Errno 30] Read-only file system: '/elsewhere/c.json'
touch: cannot touch 'fixtures/a.json': Read-only file system
Error: EROFS: read-only file system, open '{root}/z.json'
✘ [ERROR] Failed to write to output file: open {root}/lib/marked.esm.js: read-only file system
"""


def test_the_writes_the_tree_refused_are_read_from_the_log_once_each(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(LOG.format(root=tmp_path))
    assert read_only_writes(log, limit=10) == [
        "out",
        "out/junit.xml",
        "x/y.txt",
        "/elsewhere/c.json",
        "fixtures/a.json",
        f"{tmp_path}/z.json",
        f"{tmp_path}/lib/marked.esm.js",  # Go's `os` error, as esbuild prints it
    ]
    assert read_only_writes(log) == read_only_writes(log, limit=10)[:5]
    assert read_only_writes(tmp_path / "missing.log") == []


def test_each_refused_write_says_what_the_sandbox_allows(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(LOG.format(root=tmp_path))
    hints = read_only_hints(log, tmp_path)
    assert hints[0] == (
        "the run tried to write out, which the sandbox keeps read-only: a test that writes into "
        "ROOT fails; if the run must write there, list its folder under writable_paths in the "
        "properties pin"
    )
    assert hints[3] == (
        "the run tried to write /elsewhere/c.json, which the sandbox keeps read-only: the run may "
        "write only its private /tmp (TMPDIR), its HOME and the pin's writable_paths"
    )


def test_a_path_from_the_output_cannot_forge_a_line(tmp_path: Path) -> None:
    # The path comes from whatever the run printed: a carriage return or an escape sequence
    # in it is shown escaped, never sent to the terminal.
    log = tmp_path / "run.log"
    forged = "/x\x1b[2K\rthree-ledger: every pinned property passed"
    log.write_text(f"OSError: [Errno 30] Read-only file system: '{forged}'\n")
    (hint,) = read_only_hints(log, tmp_path)
    assert "\r" not in hint
    assert "\x1b" not in hint
    assert hint.startswith("the run tried to write '/x\\x1b[2K\\rthree-ledger: every pinned")
