"""Sharded scoring driven through the real command line: shard-plan, each shard, combine."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from helpers import CliResult, RunCli

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def digest(run_cli: RunCli, repo: Path) -> str:
    out = repo.parent / "f.json"
    result = run_cli("digest", "--pin", repo / "pins/fixtures.json", "--root", repo, "--out", out)
    assert result.code == 0, result.err
    return result.out.strip()


def pins(repo: Path, flakes: bool) -> list[str | Path]:
    given: list[str | Path] = ["--pin", repo / "pins/fixtures.json"]
    given += ["--properties", repo / "pins/properties.json"]
    return [*given, "--flake-pin", repo / "pins/flakes.json"] if flakes else given


def shard_plan(
    run_cli: RunCli, repo: Path, shards: int, command: str, *extra: str | Path, flakes: bool
) -> Path:
    out = repo.parent / "ledgers/plan.json"
    result = run_cli("shard-plan", *pins(repo, flakes), "--command", command, "--root", repo,
                     "--shards", str(shards), "--out", out, *extra)  # fmt: skip
    assert result.code == 0, result.err
    return out


def run_shard(
    run_cli: RunCli, repo: Path, plan: Path, index: int, command: str, *, flakes: bool
) -> tuple[CliResult, Path]:
    out = repo.parent / f"ledgers/shard_{plan.stem}_{index}.json"
    result = run_cli("properties", *pins(repo, flakes), "--expect-digest", digest(run_cli, repo),
                     "--command", command, "--root", repo, "--base", "HEAD",
                     "--shard-plan", plan, "--shard", str(index), "--out", out)  # fmt: skip
    return result, out


def unsharded(run_cli: RunCli, repo: Path, command: str, *, flakes: bool) -> dict[str, Any]:
    out = repo.parent / "ledgers/whole.json"
    result = run_cli("properties", *pins(repo, flakes), "--expect-digest", digest(run_cli, repo),
                     "--command", command, "--root", repo, "--base", "HEAD",
                     "--out", out)  # fmt: skip
    assert result.code in (0, 1), result.err
    return read(out)


def combine(run_cli: RunCli, plan: Path, shards: list[Path], out: Path) -> CliResult:
    return run_cli("combine", "--plan", plan, "--out", out, *shards)


def sharded(
    run_cli: RunCli, repo: Path, shards: int, command: str, *extra: str | Path, flakes: bool
) -> tuple[Path, list[Path]]:
    plan = shard_plan(run_cli, repo, shards, command, *extra, flakes=flakes)
    paths = []
    for index in range(shards):
        result, out = run_shard(run_cli, repo, plan, index, command, flakes=flakes)
        assert result.code in (0, 1), result.err
        paths.append(out)
    return plan, paths


def read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def edit(path: Path, change: dict[str, Any]) -> None:
    document = read(path)
    document.update(change)
    path.write_text(json.dumps(document, indent=2) + "\n")


def refused(run_cli: RunCli, plan: Path, paths: list[Path]) -> str:
    out = plan.parent / "combined.json"
    result = combine(run_cli, plan, paths, out)
    assert result.code == 2, result.err
    assert not out.exists()
    return result.err
