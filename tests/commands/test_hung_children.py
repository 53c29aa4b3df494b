"""Every child runs through the runner with a timeout: a hung git is a named failure, not a hang."""

from __future__ import annotations

import os
import shlex
import stat
import sys
import time
from pathlib import Path

import pytest

from helpers import RunCli, git, is_gone, make_tree, wait_for_pid
from three_ledger import git as gate_git
from three_ledger.runner import ChildHung, run_captured


def test_run_captured_returns_code_and_both_streams() -> None:
    code = "import sys; sys.stdout.write('out'); sys.stderr.write('err'); sys.exit(3)"
    done = run_captured([sys.executable, "-c", code], cwd=None, env=None, timeout_s=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, b"out", b"err")


def test_run_captured_feeds_stdin() -> None:
    code = "import sys; sys.stdout.write(sys.stdin.read().upper())"
    done = run_captured(
        [sys.executable, "-c", code], cwd=None, env=None, timeout_s=30, stdin=b"abc"
    )
    assert done.stdout == b"ABC"


def test_a_hung_child_and_its_group_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # A shell starts a grandchild in its group at once, then both sleep far past the timeout.
    script = f"sleep 60 & echo $! > {shlex.quote(str(pid_file))}; sleep 60"
    started = time.monotonic()
    with pytest.raises(ChildHung, match=r"did not finish in 1 s and was killed"):
        run_captured(["sh", "-c", script], cwd=None, env=None, timeout_s=1)
    assert time.monotonic() - started < 30
    assert is_gone(wait_for_pid(pid_file))


@pytest.fixture
def hanging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that never answers, and a short git timeout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gate_git, "GIT_TIMEOUT_S", 0.2)  # the fake never answers: no race
    return fake


def test_a_hung_git_is_refused_naming_the_command(hanging_git: Path, tmp_path: Path) -> None:
    with pytest.raises(gate_git.GitHung, match=r"git hung in .*`git .*rev-parse --show-toplevel`"):
        gate_git.work_tree_top(tmp_path)


def test_a_hung_git_in_properties_is_exit_4(
    orders_repo: Path, hanging_git: Path, run_cli: RunCli
) -> None:
    # orders_repo comes first: it builds its repository with the real git.
    result = run_cli(
        "properties",
        *("--pin", orders_repo / "pins/fixtures.json", "--expect-digest", "0" * 64),
        *("--properties", orders_repo / "pins/properties.json", "--root", orders_repo),
        *("--command", "pytest", "--base", "HEAD", "--out", orders_repo / "../l.json"),
    )
    # The digest mismatch is found before git is asked anything; give the real digest.
    assert result.code == 2, result.err
    digest = _real_digest(orders_repo)
    result = run_cli(
        "properties",
        *("--pin", orders_repo / "pins/fixtures.json", "--expect-digest", digest),
        *("--properties", orders_repo / "pins/properties.json", "--root", orders_repo),
        *("--command", "pytest", "--base", "HEAD", "--out", orders_repo / "../l.json"),
    )
    assert result.code == 4, result.err
    assert "git hung in" in result.first_error_line
    assert not (orders_repo / "../l.json").exists()


def test_a_hung_git_in_merge_is_a_reject_naming_it(
    hanging_git: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    pins = tmp_path / "pins"
    pins.mkdir()
    result = run_cli(
        "merge",
        *("--fixture-ledger", tmp_path / "f.json", "--property-ledger", tmp_path / "p.json"),
        *("--pins-dir", pins, "--base", "HEAD", "--root", tmp_path, "--out", tmp_path / "m.json"),
    )
    assert result.code == 1
    # Row 1 wins (no fixture ledger), but the decision is still made, not hung.
    assert "reject (row 1)" in result.out


def _real_digest(root: Path) -> str:
    from three_ledger.digest import live_digest
    from three_ledger.pins import load_fixture_pin

    return live_digest(root, load_fixture_pin(root / "pins/fixtures.json")).digest


def test_git_runs_with_replace_objects_off(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    make_tree(repo, {"a.txt": b"base\n"})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    # A commit holding forged bytes, then a replace ref that makes git show it as the base.
    (repo / "a.txt").write_text("forged\n")
    git(repo, "commit", "-q", "-am", "forged")
    forged = git(repo, "rev-parse", "HEAD")
    git(repo, "reset", "-q", "--soft", base)
    git(repo, "replace", base, forged)
    assert git(repo, "show", f"{base}:a.txt") == "forged"  # what plain git now reports
    assert gate_git.paths_differing_from(repo, base, ["a.txt"]) == ["a.txt"]
    assert gate_git.changed_paths(repo, base, ["a.txt"]) == ["a.txt"]
