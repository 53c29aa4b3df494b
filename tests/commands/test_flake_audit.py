"""`three-ledger flake-audit`: entries that never fired and entries that always failed, over
synthetic ledgers of past runs; older ledgers read as far as they go, skips named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, write_json

NEVER = "orders.summary.quick"
ALWAYS = "orders.export.broken"
SOMETIMES = "orders.boundary.timeout"


def property_ledger(day: int, flake_results: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "property",
        "pin_id": "fixpin-example-a",
        "status_by_id": {"orders.total.non_negative": "pass"},
        "oracle_moved": False,
        "head_revision": f"{day:040x}",
        "flake_results": flake_results,
        "recorded_at": f"2026-03-{day:02d}T10:00:00Z",
        **extra,
    }


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    """Twelve runs' artifacts: one entry always passes, one always fails, one fires twice."""
    folder = tmp_path / "artifacts"
    for day in range(1, 13):
        run = folder / f"run-{day}"
        results = {NEVER: "pass", ALWAYS: "fail" if day % 3 else "error", SOMETIMES: "pass"}
        if day in (4, 9):
            results[SOMETIMES] = "fail"
        write_json(run / "property.json", property_ledger(day, results))
        write_json(run / "fixture-a.json", {"kind": "fixture", "digest": "ab" * 32})
    return folder


def audit(run_cli: RunCli, *argv: str | Path) -> tuple[int, str, str]:
    result = run_cli("flake-audit", *argv)
    return result.code, result.out, result.err


def test_never_fired_and_always_failed_are_listed(artifacts: Path, run_cli: RunCli) -> None:
    code, out, err = audit(run_cli, artifacts)
    assert code == 0, err
    assert out.startswith(
        "flake-audit: 12 runs read, recorded 2026-03-01T10:00:00Z to 2026-03-12T10:00:00Z; "
        "judged over 10+ runs\n"
    )
    blocks = out.split("\n\n")[1:]
    assert blocks == [
        (
            "never fired (passed in every run): a candidate for removal:\n"
            f"  {NEVER}: did not pass in 0 of 12 runs (pass 12)"
        ),
        (
            "failed every time: a candidate for removal (a flake entry that always fails is a "
            "broken test with a licence):\n"
            f"  {ALWAYS}: did not pass in 12 of 12 runs (error 4, fail 8)"
        ),
        (
            f"fired in some runs, passed in others:\n  {SOMETIMES}: did not pass in 2 of 12 runs "
            "(fail 2, pass 10)\n"
        ),
    ]
    assert err == "three-ledger: flake-audit: not read (other kinds): fixture: 12\n"


def test_too_few_runs_judge_nothing(artifacts: Path, run_cli: RunCli) -> None:
    code, out, _ = audit(run_cli, artifacts, "--min-runs", "13", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["runs"] == 12
    assert {entry["standing"] for entry in report["entries"]} == {"too_few_runs"}


def test_a_ledger_kept_twice_counts_once(artifacts: Path, tmp_path: Path, run_cli: RunCli) -> None:
    copy = tmp_path / "copy.json"
    copy.write_bytes((artifacts / "run-1" / "property.json").read_bytes())
    _, out, _ = audit(run_cli, artifacts, copy, "--json")
    assert json.loads(out)["runs"] == 12


def test_an_older_ledger_is_read_as_far_as_it_goes(artifacts: Path, run_cli: RunCli) -> None:
    old = property_ledger(13, {})
    del old["flake_results"], old["recorded_at"]
    write_json(artifacts / "run-13" / "property.json", old)
    bad = property_ledger(14, {NEVER: "flaky"})
    write_json(artifacts / "run-14" / "property.json", bad)
    # A flake ledger from before `property_ledger_sha256`, whose property ledger was not kept.
    note = {"kind": "flake", "test_id": NEVER, "observed": "fail", "recorded_at": "2026-03-15"}
    write_json(artifacts / "run-15" / "flake-0.json", note)
    code, out, err = audit(run_cli, artifacts, "--json")
    assert code == 0, err
    assert err.splitlines() == [
        (
            f"three-ledger: warning: {artifacts / 'run-13' / 'property.json'}: skipped: no "
            "`flake_results` key"
        ),
        (
            f"three-ledger: warning: {artifacts / 'run-14' / 'property.json'}: skipped: "
            "`flake_results` is not an object of test outcomes (error, fail, pass, skip)"
        ),
        (
            f"three-ledger: warning: {artifacts / 'run-15' / 'flake-0.json'}: key "
            "`property_ledger_sha256` skipped (absent or not a string): the ledger counts as a "
            "run of its own"
        ),
        "three-ledger: flake-audit: not read (other kinds): fixture: 12",
    ]
    report = json.loads(out)
    assert report["runs"] == 13
    assert report["last_recorded"] == "2026-03-15"
    by_id = {entry["test_id"]: entry for entry in report["entries"]}
    # The note's run is the one where the entry that otherwise always passed fired.
    assert by_id[NEVER]["standing"] == "fired"
    assert by_id[NEVER]["outcomes"] == {"fail": 1, "pass": 12}


def test_a_flake_ledger_of_a_run_read_adds_nothing(artifacts: Path, run_cli: RunCli) -> None:
    ledger = artifacts / "run-4" / "property.json"
    note = {
        "kind": "flake",
        "test_id": SOMETIMES,
        "observed": "fail",
        "property_ledger_sha256": hashlib.sha256(ledger.read_bytes()).hexdigest(),
        "recorded_at": "2026-03-04T10:00:01Z",
    }
    write_json(artifacts / "run-4" / "flake-0.json", note)
    _, out, err = audit(run_cli, artifacts, "--json")
    by_id = {entry["test_id"]: entry for entry in json.loads(out)["entries"]}
    assert by_id[SOMETIMES]["outcomes"] == {"fail": 2, "pass": 10}
    assert "warning" not in err


def test_the_flake_pin_names_the_entries(artifacts: Path, tmp_path: Path, run_cli: RunCli) -> None:
    entry = {"accepted_revision": "0" * 40, "review_by": "2099-01-01", "owner": "orders"}
    pin = tmp_path / "flakes.json"
    write_json(
        pin,
        {
            "pin_id": "flakepin-orders",
            "flakes": [{"test_id": ALWAYS, **entry}, {"test_id": "orders.new.entry", **entry}],
        },
    )
    code, out, err = audit(run_cli, artifacts, "--flake-pin", pin)
    assert code == 0, err
    assert NEVER not in out
    assert f"  {ALWAYS}: did not pass in 12 of 12 runs" in out
    assert out.endswith("on the flake pin, in no run read:\n  orders.new.entry: no run\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "gone.json: no such ledger file or folder"),
        ("{", "gone.json: ledger is not valid JSON"),
    ],
    ids=["missing", "not JSON"],
)
def test_unreadable_input_is_exit_2(
    text: str | None, message: str, artifacts: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    path = tmp_path / "gone.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    code, out, err = audit(run_cli, artifacts, path)
    assert code == 2
    assert out == ""
    assert message in err.splitlines()[0]
