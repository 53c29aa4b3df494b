"""The sandbox's layers through `properties`, in-process: each missing layer recorded (the
probe's answer injected, as on a machine where it fails, or `unshare` refusing one for
real), `sandbox: "required"`, and the pin's `writable_paths`. The command stands in for
pytest: no pytest child starts here."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    PLUGIN_STAND_IN,
    RunCli,
    git,
    path_without_unshare,
    simulate_missing_layers,
    unshare_refusing,
)
from helpers.scoring import ledger, score

# The plugin's stand-in, with one passing test of one property (the others are missing).
ONE_RESULT = """
with open(os.environ["THREE_LEDGER_RESULTS"], "a") as _results:
    _id = "properties/test_orders.py::test_total_non_negative"
    _results.write(json.dumps({"id": _id, "property_ids": [], "outcome": "pass"}) + "\\n")
"""
STAND_IN = shlex.join([sys.executable, "-c", PLUGIN_STAND_IN + ONE_RESULT])
# The same, which then writes into the pin's writable folder and reads it back.
WRITES_AND_READS_BACK = shlex.join(
    [
        sys.executable,
        "-c",
        PLUGIN_STAND_IN
        + ONE_RESULT
        + "import pathlib\n"
        + "pathlib.Path('build/made.txt').write_text('during the run')\n"
        + "print(pathlib.Path('build/made.txt').read_text())\n",
    ]
)
ALL_HELD = {
    "environment": "held",
    "no_new_privs": "held",
    "pid": "held",
    "mount": "held",
    "file_commands": "held",
}
NO_PID_NO_ENVIRONMENT = (
    "missing: the job's environment is readable through /proc without a PID namespace"
)
NO_MOUNT_NO_FILE_COMMANDS = (
    "missing: the runner's file-command files are writable without the mount layer"
)


def edit_pin(repo: Path, **keys: Any) -> None:
    """The properties pin with KEYS, reviewed: committed in the base."""
    path = repo / "pins/properties.json"
    pin = json.loads(path.read_text())
    pin.update(keys)
    path.write_text(json.dumps(pin, indent=2) + "\n")
    git(repo, "commit", "-qam", "pin: reviewed")


def run(run_cli: RunCli, repo: Path, command: str = STAND_IN) -> Any:
    return score(run_cli, repo, "--base", "HEAD", command=command)


@pytest.mark.parametrize(
    ("missing", "recorded"),
    [
        (
            {"pid": "no /proc here"},
            {**ALL_HELD, "environment": NO_PID_NO_ENVIRONMENT, "pid": "missing: no /proc here"},
        ),
        (
            {"mount": "no mount_setattr"},
            {
                **ALL_HELD,
                "mount": "missing: no mount_setattr",
                "file_commands": NO_MOUNT_NO_FILE_COMMANDS,
            },
        ),
        (
            {"pid": "no pid", "mount": "no mount"},
            {
                **ALL_HELD,
                "environment": NO_PID_NO_ENVIRONMENT,
                "pid": "missing: no pid",
                "mount": "missing: no mount",
                "file_commands": NO_MOUNT_NO_FILE_COMMANDS,
            },
        ),
    ],
    ids=["pid", "mount", "both"],
)
@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_a_layer_that_cannot_be_made_is_recorded_missing_and_the_run_goes_on(
    run_cli: RunCli,
    orders_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    missing: dict[str, str],
    recorded: dict[str, str],
) -> None:
    simulate_missing_layers(monkeypatch, **missing)
    result = run(run_cli, orders_repo)
    assert result.code == 1, result.err  # the stand-in runs no property test: all missing
    recorded_sandbox = ledger(orders_repo)["sandbox"]
    assert (recorded_sandbox["layers"], recorded_sandbox["writable_reads"]) == (recorded, [])
    for name, state in recorded.items():
        if state != "held":
            assert f"three-ledger: warning: sandbox layer {name}: {state}" in result.err


@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_every_layer_held_is_recorded_and_not_warned_about(
    run_cli: RunCli, orders_repo: Path
) -> None:
    result = run(run_cli, orders_repo)
    assert result.code == 1, result.err
    recorded = ledger(orders_repo)["sandbox"]
    assert (recorded["layers"], recorded["writable_reads"]) == (ALL_HELD, [])
    assert "sandbox layer" not in result.err


def test_required_with_a_layer_missing_is_exit_4_and_writes_nothing(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_pin(orders_repo, sandbox="required")
    simulate_missing_layers(monkeypatch, pid="cannot mount a fresh /proc (EPERM): unmask it")
    stale = orders_repo.parent / "ledgers/p.json"
    stale.parent.mkdir()
    stale.write_text("{}")
    result = run(run_cli, orders_repo)
    assert result.code == 4
    required = (
        "three-ledger: infrastructure failure: the properties pin requires the sandbox "
        '(sandbox: "required"), but 1 of its layers cannot be made here; the command did not run'
    )
    assert result.err.splitlines()[:2] == [
        required,
        "  pid: missing: cannot mount a fresh /proc (EPERM): unmask it",
    ]
    assert not stale.exists()
    assert not (orders_repo.parent / "ledgers/p.json.log").exists()  # nothing ran


@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_required_with_every_layer_held_runs(run_cli: RunCli, orders_repo: Path) -> None:
    edit_pin(orders_repo, sandbox="required")
    assert run(run_cli, orders_repo).code == 1
    assert ledger(orders_repo)["sandbox"]["layers"] == ALL_HELD


# --- the first attempt: every layer, confirmed by the run's trampoline ---------------------


@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_a_namespace_unshare_refuses_makes_the_probe_run_and_the_run_goes_on_without_it(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A real refusal, not the probe's answer injected: the first attempt asks for every layer,
    # `unshare` refuses the PID namespace, nothing runs; the probe then finds why.
    unshare_refusing(tmp_path, monkeypatch, "--pid")
    result = run(run_cli, orders_repo)
    assert result.code == 1, result.err  # the stand-in runs no property test: all missing
    layers = ledger(orders_repo)["sandbox"]["layers"]
    assert layers["pid"].startswith("missing: no PID namespace can be made (")
    assert "unshare failed: Operation not permitted" in layers["pid"]
    assert {name: layers[name] for name in ("mount", "no_new_privs")} == {
        "mount": "held",
        "no_new_privs": "held",
    }
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    assert "unshare failed" not in log  # the log is the run's, not the refused attempt's
    assert "unshare failed: Operation not permitted" in result.out  # the console shows it
    assert (
        "three-ledger: note: not every layer of the sandbox can be made here (a refusal above "
        "says why); the command now runs with those that can"
    ) in result.err.splitlines()


@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_layers_the_probe_finds_but_the_run_cannot_make_are_exit_4_and_nothing_ran(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Refused only where the trampoline would start the command: the probe finds every layer,
    # so going on without one would be a guess.
    unshare_refusing(tmp_path, monkeypatch, "--ready-fd")
    result = run(run_cli, orders_repo)
    assert result.code == 4, result.err
    failure = (
        "three-ledger: infrastructure failure: the sandbox could not be made (the log says "
        "why); the command did not run; no property ledger written"
    )
    assert [line for line in result.err.splitlines() if line.startswith(failure)]
    assert not (orders_repo.parent / "ledgers/p.json").exists()
    log = (orders_repo.parent / "ledgers/p.json.log").read_text()
    assert "unshare failed: Operation not permitted" in log


@pytest.mark.usefixtures("needs_pid_layer", "needs_mount_layer")
def test_required_where_unshare_refuses_a_namespace_is_exit_4_after_the_probe(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    edit_pin(orders_repo, sandbox="required")
    unshare_refusing(tmp_path, monkeypatch, "--pid")
    result = run(run_cli, orders_repo)
    assert result.code == 4, result.err
    lines = result.err.splitlines()
    required = next(at for at, line in enumerate(lines) if "requires the sandbox" in line)
    assert lines[required + 1].startswith("  pid: missing: no PID namespace can be made")
    assert not (orders_repo.parent / "ledgers/p.json").exists()


def test_without_unshare_every_layer_is_missing_and_the_run_goes_on(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Nothing to take for granted: the first attempt is made without the layers, not tried
    # through an `unshare` that is not there.
    edit_pin(orders_repo, network="allowed")  # the stand-in is no pytest: no socket guard
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    path_without_unshare(bin_folder, monkeypatch)
    result = run(run_cli, orders_repo)
    assert result.code == 1, result.err  # the stand-in runs no property test: all missing
    layers = ledger(orders_repo)["sandbox"]["layers"]
    reason = "missing: the `unshare` program (util-linux) is not installed"
    assert (layers["pid"], layers["mount"]) == (reason, reason)


# --- writable_paths ---------------------------------------------------------------------------


@pytest.mark.usefixtures("needs_mount_layer")
def test_a_writable_path_is_written_read_and_gone_after_the_run(
    run_cli: RunCli, orders_repo: Path
) -> None:
    edit_pin(orders_repo, writable_paths=["build"])
    result = run(run_cli, orders_repo, WRITES_AND_READS_BACK)
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert written["sandbox"]["writable_reads"] == ["build/made.txt"]
    assert written["oracle_moved"] is False
    assert "build/made.txt" not in written["untracked_reads"]
    assert list((orders_repo / "build").iterdir()) == []  # made by the gate, left empty
    assert "during the run" in (orders_repo.parent / "ledgers/p.json.log").read_text()


def test_without_the_mount_layer_a_writable_path_is_the_real_folder(
    run_cli: RunCli, orders_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_pin(orders_repo, writable_paths=["build"])
    (orders_repo / "build").mkdir()
    with (orders_repo / ".git/info/exclude").open("a") as exclude:
        exclude.write("/build/\n")
    simulate_missing_layers(monkeypatch, mount="no mount_setattr")
    result = run(run_cli, orders_repo, WRITES_AND_READS_BACK)
    assert result.code == 1, result.err
    written = ledger(orders_repo)
    assert written["sandbox"]["writable_reads"] == []
    assert written["untracked_reads"] == ["build/made.txt"]  # a file of the tree, then
    assert (orders_repo / "build/made.txt").read_text() == "during the run"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("fixtures", "overlaps the pinned fixtures' folder 'fixtures'"),
        ("properties/out", "overlaps oracle_paths entry 'properties'"),
        ("suite", "holds 'suite/test_more.py', an oracle of the run"),
    ],
)
def test_a_writable_path_over_what_judges_the_run_is_refused(
    run_cli: RunCli, orders_repo: Path, entry: str, message: str
) -> None:
    (orders_repo / "suite").mkdir()
    (orders_repo / "suite/test_more.py").write_text("def test_more(): pass\n")
    git(orders_repo, "add", "suite")
    edit_pin(orders_repo, writable_paths=["build", entry])
    result = run(run_cli, orders_repo)
    assert result.code == 2
    assert result.first_error_line == (
        f"three-ledger: refused: {orders_repo / 'pins/properties.json'}: $.writable_paths[1]: "
        f"{entry!r} {message}: a folder the run may write is emptied for the run, and never "
        "what judges it"
    )


@pytest.mark.usefixtures("needs_mount_layer")
def test_a_writable_path_that_is_a_link_is_refused_before_the_run(
    run_cli: RunCli, orders_repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (orders_repo / "build").symlink_to(tmp_path / "elsewhere")
    with (orders_repo / ".git/info/exclude").open("a") as exclude:
        exclude.write("/build\n")
    edit_pin(orders_repo, writable_paths=["build"])
    result = run(run_cli, orders_repo)
    assert result.code == 2
    assert "writable_paths entry 'build'" in result.first_error_line
    assert "is a link; name the folder itself" in result.first_error_line
