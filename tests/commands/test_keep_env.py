"""`--keep-env NAME`: on every command that runs the suite, refused for a credential's name
before anything runs (exit 2, one line naming the name and the pattern), and a usage error for
what is no variable name. The runs it lets through are in tests/e2e/test_closed_environment.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import RunCli
from three_ledger.exit_codes import ExitCode

DIGEST_ANY = "0" * 64


def commands(repo: Path, marker: Path) -> dict[str, list[str | Path]]:
    """Each command that runs the suite, with a test command that would leave MARKER."""
    command = f"touch {marker}"
    pins: list[str | Path] = [
        "--pin", repo / "pins/fixtures.json", "--properties", repo / "pins/properties.json"
    ]  # fmt: skip
    ledgers = repo.parent / "ledgers"
    return {
        "properties": ["properties", *pins, "--expect-digest", DIGEST_ANY, "--command", command,
                       "--root", repo, "--base", "HEAD", "--out", ledgers / "p.json"],
        "plan": ["plan", *pins, "--command", command, "--root", repo],
        "shard-plan": ["shard-plan", *pins, "--command", command, "--root", repo,
                       "--shards", "2", "--out", ledgers / "plan.json"],
        "vet": ["vet", *pins, "--command", command, "--root", repo, "--out", ledgers / "v.json"],
        "gate": ["gate", "--pins-dir", repo / "pins", "--command", command, "--root", repo,
                 "--base", "HEAD", "--out-dir", ledgers / "gate"],
    }  # fmt: skip


OUTPUTS = {
    "properties": "p.json",
    "shard-plan": "plan.json",
    "vet": "v.json",
    "gate": "gate/decision.json",
}


@pytest.mark.parametrize("name", ["properties", "plan", "shard-plan", "vet", "gate"])
@pytest.mark.parametrize(
    ("variable", "pattern"),
    [("GITHUB_TOKEN", "*TOKEN*"), ("ACTIONS_ID_TOKEN_REQUEST_URL", "*TOKEN*"),
     ("aws_secret_access_key", "*SECRET*"), ("CI_JOB_ID", "CI_JOB_*")],
)  # fmt: skip
def test_a_credential_is_refused_before_anything_runs(
    run_cli: RunCli, orders_repo: Path, name: str, variable: str, pattern: str
) -> None:
    marker = orders_repo.parent / "ran"
    argv = commands(orders_repo, marker)[name]
    stale = orders_repo.parent / "ledgers" / OUTPUTS.get(name, "plan.out")
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("{}\n")
    result = run_cli(*argv, "--keep-env", "MY_SETTING", "--keep-env", variable)
    assert result.code == ExitCode.REFUSED, result.err
    assert result.first_error_line == (
        f"three-ledger: refused: --keep-env {variable}: the name matches the credential "
        f"pattern {pattern}; a credential reaches the tests only through the properties pin's "
        "env, which people review"
    )
    assert not marker.exists()
    # A stale output is removed (plan writes none); gate refuses before it clears --out-dir,
    # as it does an --out-dir inside the pins folder.
    assert stale.exists() == (name in ("gate", "plan"))


@pytest.mark.parametrize("name", ["properties", "vet"])
def test_the_gates_own_variables_and_home_are_refused(
    run_cli: RunCli, orders_repo: Path, name: str
) -> None:
    argv = commands(orders_repo, orders_repo.parent / "ran")[name]
    home = run_cli(*argv, "--keep-env", "HOME")
    assert home.code == ExitCode.REFUSED
    assert home.first_error_line.endswith(
        "--keep-env HOME: HOME is always a private, empty folder made for the run"
    )
    own = run_cli(*argv, "--keep-env", "THREE_LEDGER_BASE")
    assert own.code == ExitCode.REFUSED
    assert "--keep-env THREE_LEDGER_BASE: THREE_LEDGER_* variables are the gate's own" in own.err


@pytest.mark.parametrize("value", ["A=B", "", "1ST", "two words"])
def test_what_is_no_variable_name_is_a_usage_error(
    run_cli: RunCli, orders_repo: Path, value: str
) -> None:
    argv = commands(orders_repo, orders_repo.parent / "ran")["properties"]
    result = run_cli(*argv, "--keep-env", value)
    assert result.code == ExitCode.USAGE
    assert f"not an environment variable name: {value!r}" in result.err
