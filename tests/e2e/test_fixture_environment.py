"""The variables through which the tests find the pinned fixtures are the gate's: product code
that removes or changes one in the test process is a tripwire finding (exit 4).

The example's tests read `THREE_LEDGER_FIXTURES`, falling back to `fixtures/` when run by hand.
A product that breaks only on pin B's data (SEK orders) and pops the variable at import sent
pin B's run to pin A's folder: both runs passed, the dual-pin comparison agreed, and the
ledger of pin B certified bytes the run never read (`review`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import CliResult, RunCli
from helpers.patches import PYTEST, Repo, example_repo, posture

pytestmark = pytest.mark.pytest_child

# Wrong for SEK orders alone, which only pin B's fixtures hold.
SEK_BREAK = """

_exact_total = order_total


def order_total(order):
    return _exact_total(order) + (1 if order.get("currency") == "SEK" else 0)
"""
STEERING = {
    "popped": 'import os as _os\n_os.environ.pop("THREE_LEDGER_FIXTURES", None)\n',
    "pointed at pin A's folder": (
        "import os as _os\n"
        "_os.environ['THREE_LEDGER_FIXTURES'] = "
        "_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), 'fixtures')\n"
    ),
    "its dict entry deleted": (
        'import os as _os\n_os.environ._data.pop(b"THREE_LEDGER_FIXTURES", None)\n'
    ),
}


@pytest.fixture
def repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    return example_repo(tmp_path, run_cli)


def break_sek(repo: Repo, steering: str = "") -> None:
    product = repo.root / "orders.py"
    product.write_text(product.read_text() + SEK_BREAK + steering)


def test_the_sek_break_alone_is_fixture_drift(repo: Repo) -> None:
    break_sek(repo)
    repo.commit("round SEK totals")
    decision = repo.ci()
    assert posture(decision) == ("reject", 6), decision["reason"]


@pytest.mark.parametrize("steering", STEERING.values(), ids=STEERING.keys())
def test_product_code_that_steers_the_tests_off_the_pin_is_refused(
    repo: Repo, steering: str
) -> None:
    break_sek(repo, steering)
    repo.commit("round SEK totals, and steer the tests")
    assert posture(repo.ci())[0] == "reject"
    refused = pin_b_properties(repo)
    assert refused.code == 4, refused.err
    assert refused.first_error_line.startswith(
        "three-ledger: infrastructure failure: the run's machinery was modified: "
        "THREE_LEDGER_FIXTURES "
    ), refused.first_error_line
    assert "the tests find the pinned fixtures through it" in refused.first_error_line
    assert not (repo.ledgers / "p_b.json").exists()


def test_gate_names_pin_bs_refusal_where_the_dual_pin_ledger_is_missing(repo: Repo) -> None:
    """Pointed at pin A's folder, pin A's run sees the gate's own value and passes; pin B's is
    refused. The decision names that refusal, not a dual-pin file never meant to be written."""
    break_sek(repo, STEERING["pointed at pin A's folder"])
    repo.commit("round SEK totals, and steer the tests")
    out = repo.ledgers / "gate"
    repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", PYTEST,
        "--base", repo.base, "--out-dir", out,
    )  # fmt: skip
    decision = json.loads((out / "decision.json").read_text())
    assert posture(decision) == ("reject", 6), decision["reason"]
    assert (
        "not written: no property ledger property-b.json: properties B (fixpin-orders-b) "
        in (decision["reason"])
    )
    assert "THREE_LEDGER_FIXTURES changed in the test process's environment" in decision["reason"]
    assert "No such file" not in decision["reason"]


def pin_b_properties(repo: Repo) -> CliResult:
    pin = repo.root / "pins/fixtures_b.json"
    digest = repo.run_cli(
        "digest", "--pin", pin, "--root", repo.root, "--out", repo.ledgers / "f_b.json"
    ).out.strip()
    return repo.run_cli(
        "properties", "--pin", pin, "--expect-digest", digest,
        "--properties", repo.root / "pins/properties.json", "--command", PYTEST,
        "--root", repo.root, "--base", repo.base, "--out", repo.ledgers / "p_b.json",
    )  # fmt: skip


def test_a_test_that_sets_the_variable_and_takes_it_back_is_no_finding(repo: Repo) -> None:
    """monkeypatch restores the variable in the test's teardown, before the check."""
    test = repo.root / "properties/test_orders.py"
    test.write_text(
        test.read_text()
        + "\n\ndef test_reads_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:\n"
        + '    monkeypatch.delenv("THREE_LEDGER_FIXTURES")\n'
        + '    assert "THREE_LEDGER_FIXTURES" not in os.environ\n'
    )
    repo = repo.as_base("a test of the fallback")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    decision = repo.ci()
    assert posture(decision) == ("review", 9), decision["reason"]
