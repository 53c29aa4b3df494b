"""Run one command under measure_child.py and read back its wall and CPU time and peak RSS."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_kib: int
    stdout: bytes
    cpu_seconds: float  # user + system, the child's own and its children's


class CommandFailed(Exception):
    """A measured command exited non-zero: its timing means nothing."""


def run_measured(
    python: Path,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    ok: tuple[int, ...] = (0,),
    stderr: Path | None = None,
) -> Run:
    """Run ARGV as the only child of a small `python -S` parent that times it; an exit code
    outside OK means the timing means nothing. With STDERR, its standard error is appended
    to that file."""
    with (stdin or Path(os.devnull)).open("rb") as source, tempfile.TemporaryDirectory() as temp:
        report, out = Path(temp, "report.json"), Path(temp, "stdout")
        measure = [str(python), "-S", str(HERE / "measure_child.py"), str(report)]
        with out.open("wb") as stdout, contextlib.ExitStack() as stack:
            errors = None if stderr is None else stack.enter_context(stderr.open("ab"))
            subprocess.run(
                [*measure, *argv], cwd=cwd, env=env, stdin=source, stdout=stdout, stderr=errors,
                check=True,
            )  # fmt: skip
        measured = json.loads(report.read_text(encoding="utf-8"))
        if measured["exit"] not in ok:
            raise CommandFailed(f"{' '.join(argv)} exited {measured['exit']}")
        return Run(
            measured["seconds"], measured["peak_rss_kib"], out.read_bytes(), measured["cpu_seconds"]
        )


def median_seconds(runs: Sequence[Run]) -> float:
    return statistics.median(run.seconds for run in runs)


def median_cpu_seconds(runs: Sequence[Run]) -> float:
    return statistics.median(run.cpu_seconds for run in runs)


def spread(runs: Sequence[Run], scale: float = 1.0, digits: int = 3) -> str:
    low, high = (min(run.seconds for run in runs), max(run.seconds for run in runs))
    return f"{low * scale:.{digits}f}-{high * scale:.{digits}f}"


def peak_rss_mib(runs: Sequence[Run]) -> float:
    return max(run.peak_rss_kib for run in runs) / 1024
