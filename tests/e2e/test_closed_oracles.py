"""The closed oracle set: with `product_paths`, every file the run executes or reads is
measured, and each one that is not product and differs from the base moves the oracles.

Each attack below is a realistic patch that breaks the product and hides the breakage in a
file no name-based rule would call an oracle; each ends in reject at row 5, the reason
naming the file and how the run used it. The controls show the same workflow giving an
honest change `review`, with nothing measured that a clean checkout would not have.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git
from helpers.patches import PYTEST, Repo, break_total, example_repo, posture
from three_ledger.report.step_summary import NEXT_STEP_TEST_CHANGE

pytestmark = pytest.mark.pytest_child

# A helper the tests assert through, outside every folder of tests and every oracle path.
STRICT_HELPER = "def non_negative(total):\n    return total >= 0\n"
RELAXED_HELPER = "def non_negative(total):\n    return True\n"
# A root module named like the standard library that puts the base's order_total back, then
# hides: the real module takes its place in sys.modules and its own __file__ is gone.
HIDING_SHADOW = """\
import importlib.util, os, sys, sysconfig

_real = os.path.join(sysconfig.get_paths()["stdlib"], "statistics.py")
_spec = importlib.util.spec_from_file_location("statistics", _real)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
sys.modules["statistics"] = _module

import orders

orders.order_total = lambda order: order["total_cents"]
del __file__
"""
LIMITS_TEST = """

def test_limits_are_non_negative() -> None:
    for path in sorted((Path(__file__).parent.parent / "limits").glob("*.json")):
        assert json.loads(path.read_text())["max"] >= 0, path.name
"""


@pytest.fixture
def repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    repo = example_repo(tmp_path, run_cli)
    assert json.loads((repo.root / "pins/properties.json").read_text())["product_paths"]
    return repo


def reasons(repo: Repo) -> dict[str, str]:
    ledger = repo.property_ledger()
    assert ledger["oracle_model"] == "closed"
    found: dict[str, str] = ledger["oracle_change_reasons"]
    return found


def with_helper(repo: Repo, folder: str = "testsupport") -> Repo:
    """The base: a helper module the non-negative test asserts through, in FOLDER."""
    repo.write(f"{folder}/__init__.py", "")
    repo.write(f"{folder}/checks.py", STRICT_HELPER)
    test = repo.root / "properties/test_orders.py"
    text = test.read_text().replace(
        '        assert order_total(order) >= 0, order["id"]',
        '        assert non_negative(order_total(order)), order["id"]',
    )
    test.write_text(
        text.replace(
            "import pytest\n", f"import pytest\nfrom {folder}.checks import non_negative\n", 1
        )
    )
    return repo.as_base("tests assert through a helper")


# --- controls -----------------------------------------------------------------------------


def test_an_honest_change_is_review_with_the_closed_model(repo: Repo) -> None:
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    assert posture(repo.ci()) == ("review", 9)
    ledger = repo.property_ledger()
    assert (ledger["oracle_model"], ledger["oracle_changes"], ledger["untracked_reads"]) == (
        "closed",
        [],
        [],
    )


def test_a_product_module_named_like_a_test_is_product(repo: Repo) -> None:
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["product_paths"] = ["orders.py", "pricing_ab_test.py"]
    (repo.root / "pins/properties.json").write_text(json.dumps(pin, indent=2))
    repo.write("pricing_ab_test.py", "RATE = 1\n")
    repo = repo.as_base("base: a pricing module")
    repo.write("pricing_ab_test.py", "RATE = 2\n")
    product = repo.root / "orders.py"
    product.write_text(product.read_text() + "\nimport pricing_ab_test  # noqa: E402\n")
    repo.commit("price by the A/B rate")
    decision = repo.ci()
    assert posture(decision) == ("review", 9), decision["reason"]


def test_an_ignored_file_the_run_reads_is_listed_and_moves_nothing(repo: Repo) -> None:
    repo.write(".gitignore", ".local/\n")
    repo = repo.as_base("ignore local settings")
    repo.write(".local/settings.json", "{}\n")
    test = repo.root / "properties/test_orders.py"
    local = 'LOCAL = (Path(__file__).parent.parent / ".local/settings.json").read_text()\n'
    test.write_text(test.read_text().replace("ORDER_ID = ", local + "ORDER_ID = ", 1))
    repo = repo.as_base("the tests read a local settings file")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    assert posture(repo.ci()) == ("review", 9)
    assert repo.property_ledger()["untracked_reads"] == [".local/settings.json"]
    # Said, not left in the ledger alone (mistune's trial).
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("review", 9), said
    assert (
        "the run read 1 file git ignores: a clean checkout, as in CI, lacks "
        "it:\n  .local/settings.json\n"
    ) in said


# --- attacks --------------------------------------------------------------------------------


def test_a_relaxed_helper_outside_every_test_folder_moves_the_oracles(repo: Repo) -> None:
    repo = with_helper(repo)
    repo.write("testsupport/checks.py", RELAXED_HELPER)
    break_total(repo)
    repo.commit("refunds go negative")
    assert posture(repo.ci()) == ("reject", 5)
    assert reasons(repo) == {"testsupport/checks.py": "imported by the run"}


def gate(repo: Repo) -> tuple[dict[str, Any], str]:
    """`gate` on the checkout against its base: the decision it wrote, and its stdout."""
    out = repo.ledgers / "gate"
    result = repo.run_cli(
        "gate", "--pins-dir", repo.root / "pins", "--root", repo.root, "--command", PYTEST,
        "--base", repo.base, "--out-dir", out, "--summary-md", repo.ledgers / "summary.md",
    )  # fmt: skip
    decision: dict[str, Any] = json.loads((out / "decision.json").read_text())
    return decision, result.out


def test_a_helper_edited_alone_goes_to_the_test_owners_once_the_run_measures_it(
    repo: Repo,
) -> None:
    """pycodestyle's trial: `testing/support.py`, a helper in neither `oracle_paths` nor
    `product_paths`, edited alone, was row 5, "review the oracle edit on its own". Nothing
    before the run knows it for an oracle; the run does, and every file changed is one."""
    repo = with_helper(repo, "testing")
    repo.write("testing/checks.py", STRICT_HELPER + "# reworded\n")
    repo.commit("a helper's comment")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("human_review", 0), said
    assert "testing/checks.py (test-side module" in decision["reason"]
    assert "the change edits oracles alone" in decision["reason"]
    assert decision["inputs"]["property"] is not None
    assert "posture: human_review (row 0)" in said
    summary = (repo.ledgers / "summary.md").read_text()
    assert NEXT_STEP_TEST_CHANGE in summary
    assert "testing/checks.py (an oracle the run measured)" in summary
    # The same helper beside a product edit: the oracle edit goes on its own first.
    break_total(repo)
    repo.commit("refunds go negative")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("reject", 5), said
    assert "testing/checks.py" in decision["reason"]


def test_an_oracle_edit_beside_another_file_names_that_file(repo: Repo) -> None:
    """idna's trial: a data file added with its `.gitattributes` line, as the docs suggest,
    was row 5 naming the oracle alone, and read as the oracle edit on its own. The reason
    names the file that kept it from the test owners."""
    repo = with_helper(repo, "testing")
    repo.write("testing/checks.py", STRICT_HELPER + "# reworded\n")
    repo.write(".gitattributes", "testing/data/** -text\n")
    repo.commit("a helper's comment, and how git reads its data")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("reject", 5), said
    assert "oracles moved (testing/checks.py)" in decision["reason"]
    assert decision["reason"].endswith(
        "; the change also touches .gitattributes, which moved no oracle: without it, the "
        "oracle edit would go to the test owners on its own"
    )
    assert "the change also touches .gitattributes" in said


def test_a_helper_outside_the_tests_folders_edited_alone_stays_row_5(repo: Repo) -> None:
    """Python outside a folder named like tests may be what the product runs through: edited
    alone, it is no oracle edit for the test owners."""
    repo = with_helper(repo)
    repo.write("testsupport/checks.py", STRICT_HELPER + "# reworded\n")
    repo.commit("a helper's comment")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("reject", 5), said
    assert "testsupport/checks.py: imported by the run" in decision["reason"]
    assert "if it is product, add it there in a pin change first" in decision["reason"]


# A root module named like the standard library's, passing the real one through: what the
# product runs through, outside `product_paths`.
JSON_SHADOW = """\
import importlib.util, os, sys, sysconfig

_real = os.path.join(sysconfig.get_paths()["stdlib"], "json", "__init__.py")
_spec = importlib.util.spec_from_file_location(
    "json", _real, submodule_search_locations=[os.path.dirname(_real)]
)
_module = importlib.util.module_from_spec(_spec)
sys.modules["json"] = _module
_spec.loader.exec_module(_module)
"""


def test_a_stdlib_shadow_alone_is_no_oracle_edit_for_the_test_owners(repo: Repo) -> None:
    """The red team's fourth round: a root `json.py` alone, which the product runs through,
    was routed to the test owners as an edit of oracles alone. A module that shadows the
    standard library stays row 5, even where every property passes."""
    repo.write("json.py", JSON_SHADOW)
    repo.commit("a json module at the root")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("reject", 5), said
    assert "json.py" in decision["reason"]


# The product's totals scaled by a root data file it reads, outside `product_paths`.
RATED_TOTAL = """

def order_total(order):
    rates = json.loads((Path(__file__).parent / RATES).read_text())
    return _order_total(order) * rates["multiplier"]
"""
# A root conftest that sets the scale back for the tests alone.
MASKING_RATES = """\
import orders

_read = orders.json.loads


def _unscaled(text):
    found = _read(text)
    if isinstance(found, dict) and "multiplier" in found:
        found["multiplier"] = 1
    return found


orders.json.loads = _unscaled
"""


@pytest.mark.parametrize("rates", ["rates.json", "orderlib/testing/rates.json"])
def test_product_data_with_a_conftest_that_masks_it_is_no_oracle_edit_alone(
    repo: Repo, rates: str
) -> None:
    """The red team's fifth round: a root `rates.json` the product reads, doubled, beside a
    root conftest that sets it back for the tests, was routed to the test owners as an edit
    of oracles alone; the sixth put it in a package's own `testing/` folder. A file outside
    the tests folders at the top of ROOT that the pin's `oracle_paths` do not list may be
    the product's input: the change stays row 5."""
    text = (repo.root / "orders.py").read_text()  # imports json and Path already
    total = RATED_TOTAL.replace("RATES", repr(rates))
    repo.write("orders.py", text.replace("def order_total(order", "def _order_total(order") + total)
    repo.write(rates, '{"multiplier": 1}\n')
    repo = repo.as_base("totals scaled by a rate")
    repo.write(rates, '{"multiplier": 2}\n')
    repo.write("conftest.py", MASKING_RATES)
    repo.commit("every total doubles")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("reject", 5), said
    assert f"{rates}: read by the run" in decision["reason"]
    # The conftest alone is the tests' own: their owners read it.
    repo.write(rates, '{"multiplier": 1}\n')
    repo.commit("the rate back")
    decision, said = gate(repo)
    assert (decision["posture"], decision["row"]) == ("human_review", 0), said
    assert "conftest.py (" in decision["reason"]


def test_a_stdlib_shadow_that_hides_itself_is_still_measured(repo: Repo) -> None:
    break_total(repo)
    product = repo.root / "orders.py"
    # Last, so that the shadow finds the broken order_total to replace.
    product.write_text(product.read_text() + "\nimport statistics  # noqa: E402\n")
    repo.write("statistics.py", HIDING_SHADOW)
    repo.commit("refunds go negative, averaged")
    decision = repo.ci()
    assert posture(decision) == ("reject", 5), decision["reason"]
    assert reasons(repo) == {"statistics.py": "imported by the run"}


# A root conftest that puts a correct order_total into each test module and hides once the
# session starts: its own __file__ deleted and its entry gone from sys.modules.
HIDING_CONFTEST = """\
import sys

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    module = getattr(item, "module", None)
    if hasattr(module, "order_total"):
        module.order_total = lambda order: order["total_cents"]



def pytest_sessionstart(session):
    globals().pop("__file__", None)
    sys.modules.pop(__name__, None)
"""


def test_a_conftest_that_hides_itself_is_still_measured(repo: Repo) -> None:
    # Not named in oracle_paths, and gone from the harness by the time it is read: only the
    # measurement, armed before the conftest loaded, sees it.
    path = repo.root / "pins/properties.json"
    pin = json.loads(path.read_text())
    pin["oracle_paths"] = ["properties"]
    path.write_text(json.dumps(pin, indent=2) + "\n")
    repo = repo.as_base("pins: the tests folder is the oracle path")
    break_total(repo)
    repo.write("conftest.py", HIDING_CONFTEST)
    repo.commit("refunds go negative")
    decision = repo.ci()
    assert posture(decision) == ("reject", 5), decision["reason"]
    assert reasons(repo) == {"conftest.py": "imported by the run"}
    assert repo.property_ledger()["harness"]["conftests"] == []


def test_a_data_file_the_product_reads_through_a_product_folder_is_still_data(
    repo: Repo,
) -> None:
    """`vendor/../limits/extra.json` spells a path under the product glob `vendor/**`; the file
    it opens is the data file, which the product changed with the code: an oracle move."""
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["product_paths"] = [*pin["product_paths"], "vendor/**"]
    (repo.root / "pins/properties.json").write_text(json.dumps(pin, indent=2) + "\n")
    repo.write("vendor/README", "vendored code\n")
    repo = repo.as_base("pins: vendored code is product")
    repo.write("limits/extra.json", '{"max": 5}\n')
    reads = (
        "\nimport os as _os\n"
        "_HERE = _os.path.dirname(_os.path.abspath(__file__))\n"
        "with open(_os.path.join(_HERE, 'vendor', '..', 'limits', 'extra.json')) as _f:\n"
        "    LIMITS = _f.read()\n"
    )
    repo.write("orders.py", (repo.root / "orders.py").read_text() + reads)
    repo.commit("limits the product reads")
    assert posture(repo.ci()) == ("reject", 5)
    assert reasons(repo) == {"limits/extra.json": "read by the run"}


def test_a_gitattributes_edit_beside_an_honest_change_is_review(repo: Repo) -> None:
    repo.write(".gitattributes", "*.json text eol=lf\n")
    repo = repo.as_base("line endings")
    repo.write(".gitattributes", "*.json text eol=lf\n*.md text\n")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("markdown is text too")
    assert posture(repo.ci()) == ("review", 9)


def test_a_checkout_that_writes_crlf_is_no_oracle_move(repo: Repo) -> None:
    """Git's view, not raw bytes: with `eol=crlf` every test file's bytes differ from its blob,
    and each was taken for one the run had edited (exit 4, every change rejected)."""
    repo.write(".gitattributes", "*.py text eol=crlf\n")
    repo = repo.as_base("python files check out with CRLF")
    for path in repo.root.rglob("*.py"):
        path.unlink()
    git(repo.root, "checkout", "--", ".")
    assert (repo.root / "properties/test_orders.py").read_bytes().count(b"\r\n") > 10
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    assert posture(repo.ci()) == ("review", 9)
    assert repo.property_ledger()["oracle_changes"] == []


def test_a_new_case_file_read_by_an_unchanged_test_moves_the_oracles(repo: Repo) -> None:
    repo.write("limits/base.json", '{"max": 1}\n')
    test = repo.root / "properties/test_orders.py"
    test.write_text(test.read_text() + LIMITS_TEST)
    repo = repo.as_base("limits, read from a folder")
    repo.write("limits/extra.json", '{"max": 5}\n')
    repo.commit("one more limit")
    assert posture(repo.ci()) == ("reject", 5)
    assert reasons(repo) == {"limits/extra.json": "read by the run"}


def test_product_paths_covering_a_test_module_is_refused(repo: Repo) -> None:
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["product_paths"] = ["orders.py", "properties/**"]
    (repo.root / "pins/properties.json").write_text(json.dumps(pin, indent=2))
    stderr = repo.properties_stderr()
    assert "$.product_paths covers properties/test_orders.py, a collected test module" in stderr


def test_a_run_that_tests_an_installed_copy_of_the_product_is_refused(
    repo: Repo, tmp_path: Path
) -> None:
    """The tests import `orders` from an environment outside ROOT, as pytest-dev/pluggy's do
    where pytest was installed from PyPI: the checkout's product never runs, and a broken
    change passed every property. No file of product_paths was used: exit 4, and why."""
    venv = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
    )
    site = next(venv.glob("lib/python*/site-packages"))
    shutil.copy(repo.root / "orders.py", site / "orders.py")
    break_total(repo)
    repo.commit("the broken product")
    # -P, append and no pythonpath: the environment's copy comes before ROOT on sys.path.
    python = venv / "bin/python"
    command = (
        f"{python} -P -m pytest -q --import-mode=append -o pythonpath= properties/test_orders.py"
    )
    stderr = repo.properties_stderr(command=command)
    assert "the run used no file of product_paths (orders.py): its tests ran code from" in stderr
    assert "install it editable" in stderr
    assert posture(repo.ci(command=command))[0] == "reject"


# --- the interpreter's own environment -------------------------------------------------------


def make_venv(repo: Repo, *, own_pytest: bool = False) -> Path:
    """A virtual environment inside ROOT that sees this interpreter's packages; with OWN_PYTEST,
    pytest and pluggy installed in it too, as `pip install pytest` in a fresh one puts them:
    pytest's own plugins then load from ROOT."""
    folder = repo.root / ".venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)],
        check=True,
    )
    if own_pytest:
        site = next(folder.glob("lib/python*/site-packages"))
        for name in ("pytest", "_pytest", "pluggy"):
            spec = importlib.util.find_spec(name)
            assert spec is not None
            assert spec.origin is not None
            installed = Path(spec.origin).parent
            shutil.copytree(installed, site / installed.name)
            for info in installed.parent.glob(f"{name}-*.dist-info"):
                shutil.copytree(info, site / info.name)
    return folder


VENVS = {
    "system pytest": (False, True, True),
    "its own pytest": (True, True, True),
    "its own pytest, untracked": (True, False, True),
    "its own pytest, oracles inferred": (True, True, False),
    "its own pytest, untracked, oracles inferred": (True, False, False),
}


@pytest.mark.parametrize(("own_pytest", "ignored", "closed"), VENVS.values(), ids=VENVS.keys())
def test_a_venv_inside_root_is_no_oracle_and_no_refusal(
    repo: Repo, own_pytest: bool, ignored: bool, closed: bool
) -> None:
    """`adopting.md` makes a `.venv` in the checkout, which a project's `.gitignore` may not
    name: untracked, its files were a change (a `.pth` in its site folder an oracle), and with
    the oracles inferred pytest's own modules in it shadowed pytest's. Every change was row 5."""
    if ignored:
        repo.write(".gitignore", ".venv/\n")
    if not closed:
        pin = json.loads((repo.root / "pins/properties.json").read_text())
        del pin["product_paths"]
        (repo.root / "pins/properties.json").write_text(json.dumps(pin, indent=2) + "\n")
    if ignored or not closed:
        repo = repo.as_base("the environment, the oracles")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    python = make_venv(repo, own_pytest=own_pytest) / "bin/python"  # the job's, after checkout
    assert bool(git(repo.root, "status", "--porcelain", "--", ".venv")) is not ignored
    decision = repo.ci(command=f"{python} -m pytest -q properties/test_orders.py")
    assert posture(decision) == ("review", 9), decision["reason"]
    assert repo.property_ledger()["untracked_reads"] == []
    if own_pytest:  # not a vacuous control: the run's pytest was the one inside ROOT
        plugins = repo.property_ledger()["harness"]["plugins"]
        assert any(plugin["source"].startswith(".venv/") for plugin in plugins)


def test_a_pyvenv_cfg_a_change_brings_makes_no_installation(repo: Repo) -> None:
    """An installation is what the job put in ROOT before the run, which git does not track:
    a tracked `pyvenv.cfg` beside a tracked plugin of the change's is no installation. With
    the oracles inferred, where nothing measures what the run imports: the harness alone
    names the plugin."""
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    del pin["product_paths"]
    (repo.root / "pins/properties.json").write_text(json.dumps(pin, indent=2) + "\n")
    repo = repo.as_base("pins: the oracles inferred")
    repo.write("tools/pyvenv.cfg", "home = /usr/bin\n")
    repo.write("tools/forcing.py", "import pytest\n")
    repo.commit("a plugin beside a pyvenv.cfg")
    command = "python -m pytest -q -p tools.forcing properties/test_orders.py"
    decision = repo.ci(command=command.replace("python", sys.executable, 1))
    assert posture(decision) == ("reject", 5), decision["reason"]
    assert "tools/forcing.py" in repo.property_ledger()["oracle_changes"]


def test_project_code_loaded_before_the_hook_is_a_late_measurement(repo: Repo) -> None:
    repo.write(".gitignore", ".venv/\n")
    repo = repo.as_base("ignore the environment")
    venv = make_venv(repo)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "early.pth").write_text(f"{repo.root}\nimport orders\n")
    command = f"{venv / 'bin/python'} -m pytest -q properties/test_orders.py"
    stderr = repo.properties_stderr(command=command)
    assert "the measurement started late: orders was loaded from" in stderr
