"""New tests stay out of the scoring run, and a change to tests alone goes to the test owners.

A new test module is left out of the run (`--ignore`) and listed in `unscored_new_files`:
nothing scored it, so the change is at most `human_review`. One the run loads anyway moves the
oracles (row 5), as does a new conftest. `gate` sends a change whose every path is test-side
to the test owners unscored (row 0); anything else beside the tests is scored as usual.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import CI_VARIABLES, CliResult, RunCli, git
from helpers.patches import Repo, break_total, example_repo, posture

pytestmark = pytest.mark.pytest_child

# Collects the whole folder of property tests, as a project's CI usually does.
FOLDER = f"{sys.executable} -m pytest -q properties"
NEW_TEST = """\
from orders import order_total


def test_a_free_order_totals_zero() -> None:
    assert order_total({"id": "ord-0001", "lines": [], "total_cents": 0}) == 0
"""
HARMLESS = "\n# a comment\n"


@pytest.fixture
def repo(tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> Repo:
    for key in (*CI_VARIABLES, "PYTEST_ADDOPTS"):
        monkeypatch.delenv(key, raising=False)
    return example_repo(tmp_path, run_cli)


def inferred(repo: Repo) -> Repo:
    """The base without product_paths: the oracles are inferred from names."""
    path = repo.root / "pins/properties.json"
    pin = json.loads(path.read_text())
    del pin["product_paths"]
    path.write_text(json.dumps(pin, indent=2) + "\n")
    return repo.as_base("pins: no product_paths")


def gate(repo: Repo, command: str = FOLDER) -> dict[str, Any]:
    out = repo.ledgers / "gate"
    repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", command,
        "--base", repo.base, "--out-dir", out, "--summary-md", out / "summary.md",
    )  # fmt: skip
    decision: dict[str, Any] = json.loads((out / "decision.json").read_text())
    return decision


def summary(repo: Repo) -> str:
    return (repo.ledgers / "gate" / "summary.md").read_text()


# --- scored runs: new test modules are left out ----------------------------------------------


@pytest.mark.parametrize("model", ["closed", "inferred"])
def test_a_new_test_file_alone_is_listed_unscored_and_held_for_people(
    repo: Repo, model: str
) -> None:
    if model == "inferred":
        repo = inferred(repo)
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    decision = repo.ci(FOLDER)
    ledger = repo.property_ledger()
    assert (ledger["oracle_model"], ledger["oracle_moved"]) == (model, False)
    assert ledger["unscored_new_files"] == ["properties/test_free_orders.py"]
    assert posture(decision) == ("human_review", 8)
    assert decision["reason"].startswith("new tests land unscored: the test owners review them")
    assert "properties/test_free_orders.py" in decision["reason"]


def test_new_tests_beside_an_honest_product_change_are_human_review(repo: Repo) -> None:
    repo.write("orders.py", (repo.root / "orders.py").read_text() + HARMLESS)
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a comment, and a test for free orders")
    decision = gate(repo)
    assert posture(decision) == ("human_review", 8), decision["reason"]
    assert "properties/test_free_orders.py" in decision["reason"]


def test_new_tests_do_not_hide_a_broken_product(repo: Repo) -> None:
    break_total(repo)
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("refunds go negative, and a test for free orders")
    assert posture(gate(repo)) == ("reject", 7)


@pytest.mark.parametrize("model", ["closed", "inferred"])
def test_a_new_test_module_the_run_loads_anyway_moves_the_oracles(repo: Repo, model: str) -> None:
    if model == "inferred":
        repo = inferred(repo)
    # The base test module imports a sibling that the change adds: it weakens nothing itself,
    # but whatever it does runs, so it judges the change.
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text() + "\nimport test_loaded_helper  # noqa: E402,F401\n")
    repo.write("properties/test_loaded_helper.py", "import orders\n")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + HARMLESS)
    repo.commit("a test module imported by another")
    decision = repo.ci(FOLDER)
    assert posture(decision) == ("reject", 5), decision["reason"]
    ledger = repo.property_ledger()
    assert "properties/test_loaded_helper.py" in ledger["oracle_changes"]
    assert ledger["unscored_new_files"] == []


def test_a_new_test_folder_with_its_own_conftest_moves_the_oracles(repo: Repo) -> None:
    repo.write("properties/extra/conftest.py", "import pytest\n")
    repo.write("properties/extra/test_more.py", NEW_TEST)
    repo.write("orders.py", (repo.root / "orders.py").read_text() + HARMLESS)
    repo.commit("more tests, with a conftest of their own")
    decision = repo.ci(FOLDER)
    assert posture(decision) == ("reject", 5), decision["reason"]
    assert "properties/extra/conftest.py" in repo.property_ledger()["oracle_changes"]


# --- gate's test-only route -------------------------------------------------------------------


def test_gate_sends_a_new_test_file_alone_to_the_test_owners(repo: Repo) -> None:
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    decision = gate(repo)
    assert posture(decision) == ("human_review", 0)
    assert decision["reason"] == (
        "oracle change: the test owners review it: properties/test_free_orders.py (new test module)"
    )
    assert not (repo.ledgers / "gate" / "property-a.json").exists()
    assert "**Tests changed**" in summary(repo)


def test_gate_sends_an_edit_of_existing_tests_to_the_test_owners(repo: Repo) -> None:
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text().replace('order["id"]', "f\"order {order['id']}\""))
    repo.commit("clearer assertion messages")
    decision = gate(repo)
    assert posture(decision) == ("human_review", 0)
    assert (
        "properties/test_orders.py (test module; properties orders.total.non_negative"
        in (decision["reason"])
    )


@pytest.mark.parametrize(
    ("requirement", "said"),
    [
        (
            {"min_tests": 1},
            (
                "; the properties pin asks for min_tests tests of orders.id.stable, which the "
                "changed files hold: "
            ),
        ),
        (
            {"tests_sha256": "0" * 64},
            (
                "; the properties pin hashes the tests of orders.id.stable (tests_sha256), "
                "which the changed files hold: "
            ),
        ),
    ],
)
def test_gate_warns_the_test_owners_of_a_pin_that_counts_the_tests_changed(
    repo: Repo, requirement: dict[str, Any], said: str
) -> None:
    """A pin that counts a property's tests (`min_tests`, `tests_sha256`) may need to change
    with its tests, or the property is `missing` in every change after this one: the reason
    says so where the edit touches such a property, and only there."""
    path = repo.root / "pins/properties.json"
    pin = json.loads(path.read_text())
    for prop in pin["properties"]:
        if prop["id"] == "orders.id.stable":
            prop.update(requirement)
    path.write_text(json.dumps(pin, indent=2) + "\n")
    repo = repo.as_base("pins: orders.id.stable counts its tests")
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text() + "\n\ndef test_id_stable_again() -> None:\n    pass\n")
    repo = repo.as_base("one more test")
    repo = dataclasses.replace(repo, base=git(repo.root, "rev-parse", "HEAD~1"))
    decision = gate(repo)
    assert posture(decision) == ("human_review", 0)
    assert said in decision["reason"]
    assert decision["reason"].endswith("or every change after it is rejected at row 7")
    repo = dataclasses.replace(repo, base=git(repo.root, "rev-parse", "HEAD"))
    repo.write("properties/test_free_orders.py", NEW_TEST)  # in no property
    repo.commit("a test for free orders")
    assert "the properties pin" not in gate(repo)["reason"]


def test_gate_names_the_untracked_files_that_decide_a_route(repo: Repo) -> None:
    """sqlparse's trial: a `shards/` folder a CI recipe left in the checkout made an edit of
    the tests alone a scored change (row 5) where it goes to the test owners, and nothing
    said why."""
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text() + HARMLESS)
    repo.commit("a comment in the tests")
    repo.write("shards/shard_0.json", "{}\n")
    out = repo.ledgers / "gate"
    result = repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", FOLDER,
        "--base", repo.base, "--out-dir", out,
    )  # fmt: skip
    assert posture(json.loads((out / "decision.json").read_text())) == ("reject", 5)
    assert (
        "gate: note: 1 file(s) git does not track are part of this change and decide its "
        "route: shards/shard_0.json; commit them, or list them in .gitignore"
    ) in result.err
    (repo.root / "shards/shard_0.json").unlink()
    assert posture(gate(repo)) == ("human_review", 0)


def test_gate_says_a_new_test_file_pytest_never_collects_ran_nowhere(repo: Repo) -> None:
    """chardet's trial: its settings collect `test.py` alone, and a fix with its test in a new
    `test_memoryview.py` got the verdict of a refactor, the new test run nowhere."""
    ini = repo.root / "pytest.ini"
    ini.write_text(ini.read_text() + "python_files = test_orders.py\n")
    repo = repo.as_base("pytest collects test_orders.py alone")
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    out = repo.ledgers / "gate"
    result = repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", FOLDER,
        "--base", repo.base, "--out-dir", out,
    )  # fmt: skip
    assert (
        "gate: note: properties/test_free_orders.py new, named like a test, but pytest's "
        "settings here never collect it: it ran nowhere in this gate"
    ) in result.err
    # Collected, it is a new test module as before: no note.
    ini.write_text(ini.read_text().replace("python_files = test_orders.py\n", ""))
    repo.commit("pytest collects every test module")
    result = repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", FOLDER,
        "--base", repo.base, "--out-dir", out,
    )  # fmt: skip
    assert "ran nowhere" not in result.err


def test_gate_names_a_conftest_as_steering_every_test(repo: Repo) -> None:
    repo.write("conftest.py", "import pytest\n")
    repo.commit("a root conftest")
    decision = gate(repo)
    assert posture(decision) == ("human_review", 0)
    assert "conftest.py (conftest.py: changes how every test runs)" in decision["reason"]


def test_gate_scores_tests_changed_beside_anything_else(repo: Repo) -> None:
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text().replace(">= 0", ">= -(10**13)"))
    break_total(repo)
    repo.commit("refunds go negative, and the test is relaxed to match")
    decision = gate(repo)
    assert posture(decision) == ("reject", 5), decision["reason"]


def test_gate_scores_a_test_data_file_changed_alone(repo: Repo) -> None:
    # Data the tests read, outside oracle_paths and every tests folder, is not positively
    # test-side: it is scored, and the run measures it. Whose input it is, the product's or
    # the tests', the run cannot tell (the fifth red team's `rates.json`), so it is row 5,
    # and the reason says how to make it the tests' own; listed in oracle_paths, an edit of
    # it alone goes to the test owners.
    test = repo.root / "properties/test_orders.py"
    local = 'LIMITS = (Path(__file__).parent.parent / "data/limits.txt").read_text()\n'
    test.write_text(test.read_text().replace("ORDER_ID = ", local + "ORDER_ID = ", 1))

    def relaxed(base: str) -> dict[str, Any]:
        """The limit relaxed alone on a base that holds 0, as BASE says: the decision."""
        repo.write("data/limits.txt", "0\n")
        relaxing = repo.as_base(base)
        relaxing.write("data/limits.txt", "-1\n")
        relaxing.commit("relax the limit")
        return gate(relaxing)

    decision = relaxed("tests read a limits file")
    assert posture(decision) == ("reject", 5), decision["reason"]
    assert "data/limits.txt: read by the run" in decision["reason"]
    assert (
        "list it in oracle_paths, and an edit of it alone goes to the test owners"
        in (decision["reason"])
    )
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["oracle_paths"].append("data")
    repo.write("pins/properties.json", json.dumps(pin, indent=2) + "\n")
    decision = relaxed("the limits are the tests' own")
    assert posture(decision) == ("human_review", 0), decision["reason"]
    assert "data/limits.txt (listed in oracle_paths)" in decision["reason"]


def test_gate_sends_data_under_oracle_paths_to_the_test_owners(repo: Repo) -> None:
    repo.write("properties/limits.txt", "-1\n")
    repo.commit("a limits file beside the tests")
    decision = gate(repo)
    assert posture(decision) == ("human_review", 0)
    assert "properties/limits.txt (listed in oracle_paths)" in decision["reason"]


LINE_TOTAL = 'def line_total(line):\n    return line["quantity"] * line["unit_price_cents"]\n'


@pytest.mark.parametrize(
    ("settings", "command"),
    [
        # Every module is a test module by name, but pytest starts in the tests' folder.
        ("python_files = *.py\ntestpaths = properties\n", f"{sys.executable} -m pytest -q"),
        # The default names, and a command that names its tests.
        ("", FOLDER),
    ],
    ids=["testpaths", "the command's paths"],
)
def test_gate_scores_a_product_module_named_like_a_test_that_pytest_never_collects(
    repo: Repo, settings: str, command: str
) -> None:
    """In the inferred model a module matching `python_files` is a test module only where
    pytest starts collecting: a broken product module outside it went to the test owners
    unscored (row 0)."""
    repo = inferred(repo)
    ini = repo.root / "pytest.ini"
    ini.write_text(ini.read_text() + settings)
    repo.write("pricing/line_test.py", LINE_TOTAL)
    product = repo.root / "orders.py"
    text = product.read_text().replace(
        "import json\n", "import json\n\nfrom pricing.line_test import line_total\n"
    )
    product.write_text(
        text.replace('line["quantity"] * line["unit_price_cents"]', "line_total(line)")
    )
    repo = repo.as_base("line totals in a module of their own")
    # Control: an edit of the tests pytest collects goes to their owners.
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text() + HARMLESS)
    repo.commit("a comment in the tests")
    decision = gate(repo, command)
    assert posture(decision) == ("human_review", 0), decision["reason"]
    repo = dataclasses.replace(repo, base=git(repo.root, "rev-parse", "HEAD"))
    repo.write("pricing/line_test.py", LINE_TOTAL.replace('line["quantity"] * ', ""))
    repo.commit("a line costs its unit price")
    decision = gate(repo, command)
    assert posture(decision) == ("reject", 7), decision["reason"]


# --- sharded runs ------------------------------------------------------------------------------


def shard_cli(repo: Repo, plan: Path, index: int) -> tuple[CliResult, Path]:
    digest = repo.run_cli(
        "digest", "--pin", repo.root / "pins/fixtures.json", "--root", repo.root,
        "--out", repo.ledgers / "f.json",
    ).out.strip()  # fmt: skip
    out = repo.ledgers / f"shard-{index}.json"
    result = repo.run_cli(
        "properties", "--pin", repo.root / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo.root / "pins/properties.json", "--command", FOLDER,
        "--root", repo.root, "--base", repo.base, "--shard-plan", plan, "--shard", str(index),
        "--out", out,
    )  # fmt: skip
    return result, out


def make_plan(repo: Repo, *base: str) -> tuple[Path, str]:
    plan = repo.ledgers / "plan.json"
    result = repo.run_cli(
        "shard-plan", "--pin", repo.root / "pins/fixtures.json",
        "--properties", repo.root / "pins/properties.json", "--command", FOLDER,
        "--root", repo.root, "--shards", "2", "--all", "--out", plan, *base,
    )  # fmt: skip
    assert result.code == 0, result.err
    return plan, plan.read_text()


def test_a_sharded_run_with_a_new_test_file_combines(repo: Repo) -> None:
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    plan, text = make_plan(repo, "--base", repo.base)
    assert "test_free_orders" not in text
    shards = []
    for index in range(2):
        result, out = shard_cli(repo, plan, index)
        assert result.code == 0, result.err
        assert json.loads(out.read_text())["unscored_new_files"] == [
            "properties/test_free_orders.py"
        ]
        shards.append(out)
    combined = repo.ledgers / "combined.json"
    result = repo.run_cli("combine", "--plan", plan, "--out", combined, *shards)
    assert result.code == 0, result.err
    ledger = json.loads(combined.read_text())
    assert ledger["unscored_new_files"] == ["properties/test_free_orders.py"]
    assert set(ledger["status_by_id"].values()) == {"pass"}


def test_a_shard_plan_holding_new_tests_is_refused_by_name(repo: Repo) -> None:
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    plan, text = make_plan(repo)
    assert "test_free_orders" in text
    result, out = shard_cli(repo, plan, 0)
    assert result.code == 2
    assert "the plan holds tests of properties/test_free_orders.py, new against" in result.err
    assert not out.exists()


# --- plan ----------------------------------------------------------------------------------------


def plan_json(repo: Repo, *extra: str) -> dict[str, Any]:
    result = repo.run_cli(
        "plan", "--pin", repo.root / "pins/fixtures.json",
        "--properties", repo.root / "pins/properties.json", "--command", FOLDER,
        "--root", repo.root, "--json", *extra,
    )  # fmt: skip
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_plan_leaves_new_test_modules_out_against_the_base(repo: Repo) -> None:
    repo.write("properties/test_free_orders.py", NEW_TEST)
    repo.commit("a test for free orders")
    assert plan_json(repo)["tests"] == plan_json(repo, "--base", repo.base)["tests"] + 1


def test_plan_prints_the_measured_oracles_as_a_codeowners_block(repo: Repo) -> None:
    repo = with_helper_module(repo)
    owners = plan_json(repo)["codeowners"]
    # The helper the tests import is measured; the product and the fixtures are not oracles.
    # The pin's `oracle_paths` folder `properties` is one line, which covers its test modules.
    assert {"/testsupport/checks.py", "/properties/", "/pytest.ini"} <= set(owners)
    assert not {"/orders.py", "/fixtures/orders_min.json"} & set(owners)
    assert [path for path in owners if path.startswith("/properties/")] == ["/properties/"]


def test_the_codeowners_block_leaves_out_caches_and_files_git_ignores(repo: Repo) -> None:
    # With the cache provider on, the collection reads pytest's cache; the helper reads a
    # file its build would generate, which git ignores. Neither is a file a change can hold.
    repo = with_helper_module(repo)
    repo.write(".gitignore", "generated.txt\n")
    repo.write("generated.txt", "built\n")
    repo.write("pytest.ini", "[pytest]\npythonpath = .\n")  # the cache provider on
    helper = repo.root / "testsupport/checks.py"
    helper.write_text("from pathlib import Path\nBUILT = Path('generated.txt').read_text()\n"
                      + helper.read_text())  # fmt: skip
    repo = repo.as_base("a generated file, ignored")
    # A run by hand first, as a newcomer makes one: pytest's cache is then in the tree.
    subprocess.run([sys.executable, "-m", "pytest", "-q", "properties"], cwd=repo.root, check=False,
                   capture_output=True)  # fmt: skip
    assert (repo.root / ".pytest_cache").is_dir()
    result = repo.run_cli(
        "plan", "--pin", repo.root / "pins/fixtures.json",
        "--properties", repo.root / "pins/properties.json", "--command",
        f"{sys.executable} -m pytest -q properties", "--root", repo.root, "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    owners = json.loads(result.out)["codeowners"]
    assert "/testsupport/checks.py" in owners
    assert not [path for path in owners if "generated" in path or "pytest_cache" in path]


def with_helper_module(repo: Repo) -> Repo:
    repo.write("testsupport/__init__.py", "")
    repo.write("testsupport/checks.py", "def non_negative(total):\n    return total >= 0\n")
    test = repo.root / "properties/test_orders.py"
    test.write_text(
        test.read_text().replace(
            "import pytest\n", "import pytest\nfrom testsupport.checks import non_negative\n", 1
        )
    )
    return repo.as_base("tests import a helper")


def test_gate_names_a_properties_pin_edited_beside_code_as_row_4(repo: Repo) -> None:
    # The ledger is scored under the edited pin (other ids, other bytes): row 2 would be a
    # side effect; the edit is the cause.
    path = repo.root / "pins/properties.json"
    pin = json.loads(path.read_text())
    pin["properties"].append({**pin["properties"][0], "id": "orders.total.refunds"})
    path.write_text(json.dumps(pin, indent=2) + "\n")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + HARMLESS)
    repo.commit("a comment, and a property added")
    decision = gate(repo)
    assert posture(decision) == ("reject", 4), decision["reason"]
    assert decision["reason"] == (
        f"pin mutation: pins added, changed or removed against {repo.base}: pins/properties.json"
    )


def test_a_ledger_a_step_refused_to_write_is_named_with_the_step_and_its_first_line(
    repo: Repo,
) -> None:
    (repo.root / "stray.pyc").write_bytes(b"\x00" * 16)
    repo.write("orders.py", (repo.root / "orders.py").read_text() + HARMLESS)
    repo.commit("a comment, and a stray bytecode file")
    decision = gate(repo)
    assert posture(decision) == ("reject", 2), decision["reason"]
    assert "not written: properties A (fixpin-orders-a) exited 2: bytecode" in decision["reason"]
    assert "No such file" not in decision["reason"]
