"""The demo's output: a progress line per scenario, then the table of every step's exit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from three_ledger.demo.scenarios import Expected
from three_ledger.demo.workflow import Outcome

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


def progress_line(outcome: Outcome) -> str:
    actual = outcome.actual or "no merge decision"
    verdict = (
        "as expected" if outcome.as_expected else f"FAIL, expected {outcome.scenario.expected}"
    )
    return f"{outcome.scenario.name}: {actual}, {verdict} ({outcome.seconds:.1f} s)"


# --- the example repository -------------------------------------------------------------


def render_table(outcomes: Sequence[Outcome]) -> str:
    """One row per scenario: each step's exit ('-' when not run), expected and actual posture."""
    header = ["scenario", *(heading for heading, _ in COLUMNS), "expected", "actual", "mark"]
    rows = [header, *(_row(outcome) for outcome in outcomes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(_aligned(row, widths) for row in rows)


def _row(outcome: Outcome) -> list[str]:
    exits = [str(outcome.exits.get(step, "-")) for _, step in COLUMNS]
    actual = _short(outcome.actual) if outcome.actual else "none"
    mark = "ok" if outcome.as_expected else "FAIL"
    return [outcome.scenario.name, *exits, _short(outcome.scenario.expected), actual, mark]


def _short(expected: Expected) -> str:
    return f"{expected.posture.value} {expected.row}"


def _aligned(row: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(_cells(row, widths)).rstrip()


def _cells(row: Sequence[str], widths: Sequence[int]) -> Iterator[str]:
    for index, (cell, width) in enumerate(zip(row, widths, strict=True)):
        exit_column = 1 <= index <= len(COLUMNS)
        yield cell.rjust(width) if exit_column else cell.ljust(width)
