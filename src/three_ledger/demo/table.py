"""The demo's output: a progress line per scenario, then the table of every step's exit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from three_ledger.demo.scenarios import Expected
from three_ledger.demo.workflow import ScenarioResult

# The table's step columns: (heading, step). A heading is short so the table fits 100 columns.
COLUMNS = (
    ("dig A", "digest A"),
    ("dig B", "digest B"),
    ("prop A", "properties A"),
    ("prop B", "properties B"),
    ("dual", "dual-pin"),
    ("flake", "flake-observe"),
    ("merge", "merge"),
)


def progress_line(result: ScenarioResult) -> str:
    actual = result.actual or "no merge decision"
    verdict = "as expected" if result.as_expected else f"FAIL, expected {result.scenario.expected}"
    return f"{result.scenario.name}: {actual}, {verdict} ({result.seconds:.1f} s)"


# --- the example repository -------------------------------------------------------------


def render_table(results: Sequence[ScenarioResult]) -> str:
    """One row per scenario: each step's exit ('-' when not run), expected and actual posture."""
    header = ["scenario", *(heading for heading, _ in COLUMNS), "expected", "actual", "mark"]
    rows = [header, *(_row(result) for result in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(_aligned(row, widths) for row in rows)


def _row(result: ScenarioResult) -> list[str]:
    exits = [str(result.exits.get(step, "-")) for _, step in COLUMNS]
    actual = _short(result.actual) if result.actual else "none"
    mark = "ok" if result.as_expected else "FAIL"
    return [result.scenario.name, *exits, _short(result.scenario.expected), actual, mark]


def _short(expected: Expected) -> str:
    return f"{expected.posture.value} {expected.row}"


def _aligned(row: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(_cells(row, widths)).rstrip()


def _cells(row: Sequence[str], widths: Sequence[int]) -> Iterator[str]:
    for index, (cell, width) in enumerate(zip(row, widths, strict=True)):
        exit_column = 1 <= index <= len(COLUMNS)
        yield cell.rjust(width) if exit_column else cell.ljust(width)
