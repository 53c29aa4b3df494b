"""`vet`'s command line and refusals: what is decided before any test runs."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from helpers import RunCli, fixture_pin, make_tree, write_json
from three_ledger.commands.vet import raising_on_interrupt
from three_ledger.errors import InfraFailure


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    make_tree(
        root, {"fixtures/a.json": b'{"n": 1}\n', "properties/test_a.py": b"def test_a(): pass\n"}
    )
    fixture_pin(root, ["fixtures/a.json"])
    write_json(
        root / "pins/properties.json",
        {
            "pin_id": "proppin-test",
            "fixture_pins": ["fixpin-test"],
            "properties": [
                {
                    "id": "a.n",
                    "claim": "n is one.",
                    "domain": ["a.json"],
                    "test": "properties/test_a.py",
                }
            ],
        },
    )
    return root


def vet_flags(root: Path, *extra: str | Path) -> list[str | Path]:
    return [
        "vet", "--pin", root / "pins/fixtures.json", "--properties", root / "pins/properties.json",
        "--command", f"{sys.executable} -m pytest -q", "--root", root,
        "--out", root.parent / "vet.json", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--per-file", "0"], "--per-file: must be 1 or more: '0'"),
        (["--per-file", "two"], "--per-file: not a whole number: 'two'"),
        (["--timeout", "-1"], "--timeout: must be a positive number of seconds"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["--command", "'unclosed"], "--command: cannot split"),
    ],
)
def test_bad_flags_exit_64(run_cli: RunCli, project: Path, flags: list[str], message: str) -> None:
    result = run_cli(*vet_flags(project, *flags))
    assert result.code == 64
    assert message in result.first_error_line
    assert not (project.parent / "vet.json").exists()


def test_a_missing_required_flag_exits_64(run_cli: RunCli, project: Path) -> None:
    result = run_cli("vet", "--pin", project / "pins/fixtures.json")
    assert result.code == 64
    assert "the following arguments are required: --properties, --command" in result.err


def test_an_out_beside_a_pin_is_refused(run_cli: RunCli, project: Path) -> None:
    result = run_cli(*vet_flags(project, "--out", project / "pins/vet.json"))
    assert result.code == 2
    assert "lies in the folder of pin" in result.first_error_line
    assert not (project / "pins/vet.json").exists()


def test_an_unpinned_fixture_is_refused_before_anything_runs(
    run_cli: RunCli, project: Path
) -> None:
    (project / "fixtures/extra.json").write_text("{}\n")
    stale = write_json(project.parent / "vet.json", {})
    result = run_cli(*vet_flags(project))
    assert result.code == 2
    assert "fixtures/extra.json: unpinned file" in result.err
    assert not stale.exists()
    assert not (project.parent / "vet.json.log").exists()


def test_an_oracle_rewriting_command_is_refused(run_cli: RunCli, project: Path) -> None:
    flags = vet_flags(project)
    flags[flags.index("--command") + 1] = f"{sys.executable} -m pytest --snapshot-update"
    result = run_cli(*flags)
    assert result.code == 2
    assert "--snapshot-update" in result.first_error_line


def test_a_digest_the_pin_does_not_review_is_refused(run_cli: RunCli, project: Path) -> None:
    fixture_pin(project, ["fixtures/a.json"], digest="0" * 64)
    result = run_cli(*vet_flags(project))
    assert result.code == 2
    assert "differs from the reviewed digest" in result.first_error_line


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_between_runs_becomes_an_infrastructure_failure(signum: int) -> None:
    before = signal.getsignal(signum)
    with pytest.raises(InfraFailure, match=f"interrupted by {signal.Signals(signum).name}"):
        signal_self(signum)
    assert signal.getsignal(signum) == before


def signal_self(signum: int) -> None:
    with raising_on_interrupt():
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler raises long before this ends


def test_vet_help_names_its_exit_codes(run_cli: RunCli) -> None:
    result = run_cli("vet", "--help")
    assert result.code == 0
    assert "--per-file N" in result.out
    assert "--strict" in result.out


def test_a_root_on_the_gate_s_own_path_is_refused(
    run_cli: RunCli, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    result = run_cli(*vet_flags(project))
    assert result.code == 2
    assert "is on three-ledger's own sys.path" in result.first_error_line
