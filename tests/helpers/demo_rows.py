"""Reading the demo's printed table back, and picking its scenarios by name."""

from __future__ import annotations

from three_ledger.demo.scenarios import SCENARIOS, Scenario


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


def table_rows(output: str) -> dict[str, str]:
    """Table rows by scenario name (progress and legend lines start otherwise)."""
    names = {s.name for s in SCENARIOS}
    return {
        line.split()[0]: " ".join(line.split()[1:])
        for line in output.splitlines()
        if line.split() and line.split()[0] in names
    }
