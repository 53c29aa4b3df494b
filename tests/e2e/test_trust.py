"""A change cannot certify itself: each way a patch could steer the run the gate scores, tried
with the CI workflow of docs/ci.md (both pins, dual-pin, merge with --pin, --pins-dir, --base
and --properties), ends in reject, and the reason names the file, plugin or sentinel.

The controls come first: the same workflow passes an honest change and rejects a plainly
broken one for the property miss, so each rejection below is the trick's doing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import FORCE_PASS, FORCED_PASS_SEEN, RunCli, git, write_json
from helpers.patches import PYTEST, Repo, break_total, example_repo, posture

pytestmark = pytest.mark.pytest_child


@pytest.fixture
def repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    return example_repo(tmp_path, run_cli)


# --- controls -----------------------------------------------------------------------------


def test_an_honest_change_is_review(repo: Repo) -> None:
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    assert posture(repo.ci()) == ("review", 9)


def test_a_broken_change_is_the_property_miss(repo: Repo) -> None:
    break_total(repo)
    repo.commit("refunds go negative")
    decision = repo.ci()
    assert posture(decision) == ("reject", 7)
    assert "orders.total.non_negative is fail" in decision["reason"]


# --- 1. pytest's own config discovery --------------------------------------------------------


def test_a_pytest_toml_that_imports_an_old_copy_is_caught(repo: Repo) -> None:
    """pytest 9 reads pytest.toml before pytest.ini; pytest 8 ignores it (then row 7)."""
    shutil.copy(repo.root / "orders.py", repo.root / "old_orders.py")
    (repo.root / "vendored").mkdir()
    shutil.move(repo.root / "old_orders.py", repo.root / "vendored/orders.py")
    repo.write(
        "pytest.toml", '[pytest]\npythonpath = ["vendored"]\naddopts = ["-p", "no:cacheprovider"]\n'
    )
    break_total(repo)
    repo.commit("tidy config")
    decision = repo.ci()
    if pytest.version_tuple >= (9,):
        assert posture(decision) == ("reject", 5)
        assert "pytest.toml" in decision["reason"]
    else:
        assert posture(decision) == ("reject", 7)


def test_a_dot_pytest_toml_loading_a_forcing_plugin_is_caught(repo: Repo) -> None:
    repo.write(".pytest.toml", '[pytest]\naddopts = ["-p", "helper"]\npythonpath = ["."]\n')
    repo.write("helper.py", FORCE_PASS)
    break_total(repo)
    repo.commit("a helper")
    decision = repo.ci()
    assert decision["posture"] == "reject"
    if pytest.version_tuple >= (9,):
        # The tripwire refuses the forced run: no property ledger, so merge's row 2.
        assert decision["row"] == 2
        assert FORCED_PASS_SEEN in repo.properties_stderr()
    else:
        assert decision["row"] == 7


# --- 2. sys.path under `python -m pytest` --------------------------------------------------


ROOT_PYTEST = """\
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
sys.modules.pop("pytest", None)
real = importlib.import_module("pytest")
sys.path.insert(0, here)
sys.modules.setdefault("forcing", type(sys)("forcing"))
exec(compile(open(os.path.join(here, "forcing_plugin.py")).read(), "forcing", "exec"),
     sys.modules["forcing"].__dict__)
raise SystemExit(real.main(plugins=[sys.modules["forcing"]]))
"""


def test_a_root_pytest_py_that_wraps_pytest_is_caught(repo: Repo) -> None:
    repo.write("pytest.py", ROOT_PYTEST)
    repo.write("forcing_plugin.py", FORCE_PASS)
    break_total(repo)
    repo.commit("run helper")
    decision = repo.ci()
    assert decision["posture"] == "reject"
    assert decision["row"] in (2, 5)
    err = repo.properties_stderr()
    assert FORCED_PASS_SEEN in err or "pytest.py" in err


def test_a_root_module_shadowing_the_standard_library_is_caught(repo: Repo) -> None:
    """pytest imports shlex while it starts; ROOT comes first on sys.path under `-m`."""
    repo.write(
        "shlex.py",
        "import importlib.util, os, sys, sysconfig\n"
        "_extra = ' -k \"not total\"'\n"
        "os.environ['PYTEST_ADDOPTS'] = os.environ.get('PYTEST_ADDOPTS', '') + _extra\n"
        "_spec = importlib.util.spec_from_file_location(\n"
        "    'shlex', os.path.join(sysconfig.get_paths()['stdlib'], 'shlex.py'))\n"
        "_real = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_real)\n"
        "globals().update({k: v for k, v in vars(_real).items() if not k.startswith('__')})\n",
    )
    break_total(repo)
    repo.commit("a shell helper")
    command = f"{sys.executable} -m pytest -q properties/test_orders.py"
    decision = repo.ci(command)
    assert posture(decision) == ("reject", 5)
    assert "shlex.py" in decision["reason"]
    reasons = repo.property_ledger()["oracle_change_reasons"]
    assert reasons["shlex.py"] == "module that shadows the standard library module shlex"


# --- 3. entry-point plugins ------------------------------------------------------------------


def entry_point_install(repo: Repo, tmp_path: Path) -> Path:
    """What `pip install -e .` leaves for a patch that adds a pytest11 entry point."""
    site = tmp_path / "site"
    dist = site / "orders_tools-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: orders-tools\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\norders_tools = orders_tools\n")
    (site / "orders_tools.pth").write_text(str(repo.root) + "\n")
    repo.write("orders_tools.py", FORCE_PASS)
    return site


def test_an_autoloaded_entry_point_plugin_is_caught(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = entry_point_install(repo, tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{repo.root}")
    break_total(repo)
    repo.commit("orders tools")
    decision = repo.ci()
    assert (decision["posture"], decision["row"]) == ("reject", 2)
    assert FORCED_PASS_SEEN in repo.properties_stderr()


# Puts a correct order_total into each test module: the sentinels' outcomes are untouched.
TARGETED_PLUGIN = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    module = getattr(item, "module", None)
    if hasattr(module, "order_total"):
        module.order_total = lambda order: order["total_cents"]
"""


# The same plugin, doing nothing: only its file tells of it.
QUIET_PLUGIN = """\
def pytest_runtest_setup(item):
    pass
"""


@pytest.mark.parametrize(("plugin", "row"), [(QUIET_PLUGIN, 5), (TARGETED_PLUGIN, 2)])
def test_an_editable_plugin_under_root_is_compared_as_a_file_of_the_change(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin: str, row: int
) -> None:
    # The inferred model: only the harness names the plugin, by its file, not its distribution.
    # The targeted plugin puts its own `order_total` in the test module's place: the
    # tripwire refuses the run (`test_orders.order_total ... was replaced`) before any
    # ledger is written, and merge rejects at row 2.
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    del pin["product_paths"]
    write_json(repo.root / "pins/properties.json", pin)
    repo = repo.as_base("pins: no product_paths")
    site = entry_point_install(repo, tmp_path)
    repo.write("orders_tools.py", plugin)
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{repo.root}")
    break_total(repo)
    repo.commit("orders tools")
    decision = repo.ci()
    assert posture(decision) == ("reject", row), decision["reason"]
    if row == 5:
        reasons = repo.property_ledger()["oracle_change_reasons"]
        assert reasons["orders_tools.py"] == "pytest plugin orders_tools"
        return
    digest = repo.run_cli(
        "digest", "--pin", repo.root / "pins/fixtures.json", "--root", repo.root,
        "--out", tmp_path / "f.json",
    ).out.strip()  # fmt: skip
    refused = repo.run_cli(
        "properties", "--pin", repo.root / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo.root / "pins/properties.json", "--command", PYTEST,
        "--root", repo.root, "--base", repo.base, "--out", tmp_path / "p.json",
    )  # fmt: skip
    assert refused.code == 4, refused.err
    assert "order_total, which a test-side module held, was replaced, by orders_tools" in (
        refused.first_error_line
    )


def test_pinned_plugins_keep_an_entry_point_plugin_out(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["plugins"] = ["xdist"]
    write_json(repo.root / "pins/properties.json", pin)
    repo.commit("pins: only xdist may load")
    repo = Repo(repo.root, repo.ledgers, git(repo.root, "rev-parse", "HEAD"), repo.run_cli)
    site = entry_point_install(repo, tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{repo.root}")
    break_total(repo)
    repo.commit("orders tools")
    decision = repo.ci()
    # Autoload is off: the forcing plugin never loads, and the broken product shows.
    assert posture(decision) == ("reject", 7)
    assert "orders.total.non_negative is fail" in decision["reason"]


def test_a_plugin_the_pin_does_not_list_moves_the_oracles(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = json.loads((repo.root / "pins/properties.json").read_text())
    pin["plugins"] = []
    write_json(repo.root / "pins/properties.json", pin)
    repo.commit("pins: no plugins")
    repo = Repo(repo.root, repo.ledgers, git(repo.root, "rev-parse", "HEAD"), repo.run_cli)
    decision = repo.ci(f"{PYTEST} -p xdist -n 2")
    assert posture(decision) == ("reject", 5)
    assert "plugin xdist" in decision["reason"]


# --- 4. tests outside the oracle paths ----------------------------------------------------


PKG_PIN = {
    "pin_id": "proppin-calc",
    "fixture_pins": ["fixpin-calc"],
    "properties": [
        {
            "id": "calc.double",
            "claim": "double() doubles every listed number.",
            "domain": ["numbers.json"],
            "test": "pkg/tests/test_calc.py::test_double",
        }
    ],
}


@pytest.fixture
def pkg_repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    """A project whose tests live in pkg/tests/ with a helper beside them (jsonschema's shape)."""
    root = tmp_path / "calc"
    files = {
        "pkg/__init__.py": "",
        "pkg/calc.py": "def double(x):\n    return 2 * x\n",
        "pkg/calc_test.py": (
            "from pkg.calc import double\n\ndef test_zero():\n    assert double(0) == 0\n"
        ),
        "pkg/tests/__init__.py": "",
        "pkg/tests/_suite.py": "import json, os\n\ndef cases():\n"
        "    folder = os.environ['THREE_LEDGER_FIXTURES']\n"
        "    with open(os.path.join(folder, 'numbers.json')) as f:\n"
        "        return json.load(f)\n\ndef check(got, want):\n    assert got == want\n",
        "pkg/tests/test_calc.py": (
            "from pkg.calc import double\nfrom pkg.tests._suite import cases, check\n\n"
            "def test_double():\n    for n in cases():\n        check(double(n), n + n)\n"
        ),
        "fixtures/numbers.json": "[1, 2, 3]\n",
        "pytest.ini": (
            "[pytest]\npython_files = test_*.py *_test.py\naddopts = -p no:cacheprovider\n"
        ),
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    write_json(root / "pins/fixtures.json", {
        "pin_id": "fixpin-calc", "algorithm": "sha256", "files": ["fixtures/numbers.json"],
    })  # fmt: skip
    write_json(root / "pins/properties.json", PKG_PIN)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return Repo(root, tmp_path / "ledgers", git(root, "rev-parse", "HEAD"), run_cli)


def score_one(repo: Repo, command: str) -> dict[str, Any]:
    digest = repo.run_cli(
        "digest", "--pin", repo.root / "pins/fixtures.json", "--root", repo.root,
        "--out", repo.ledgers / "f.json",
    ).out.strip()  # fmt: skip
    repo.run_cli(
        "properties", "--pin", repo.root / "pins/fixtures.json", "--expect-digest", digest,
        "--properties", repo.root / "pins/properties.json", "--command", command,
        "--root", repo.root, "--base", repo.base, "--out", repo.ledgers / "p.json",
    )  # fmt: skip
    repo.run_cli("dual-pin", "--not-run", "--out", repo.ledgers / "d.json")
    repo.run_cli(
        "merge", "--fixture-ledger", repo.ledgers / "f.json", "--property-ledger",
        repo.ledgers / "p.json", "--dual-pin", repo.ledgers / "d.json", "--root", repo.root,
        "--pins-dir", repo.root / "pins", "--base", repo.base,
        "--properties", repo.root / "pins/properties.json", "--out", repo.ledgers / "m.json",
    )  # fmt: skip
    decision: dict[str, Any] = json.loads((repo.ledgers / "m.json").read_text())
    return decision


PKG_PYTEST = f"{sys.executable} -m pytest -q pkg"


def test_a_weakened_helper_beside_the_tests_is_an_oracle_move(pkg_repo: Repo) -> None:
    pkg_repo.write("pkg/calc.py", "def double(x):\n    return x\n")
    pkg_repo.write("pkg/tests/_suite.py", (pkg_repo.root / "pkg/tests/_suite.py").read_text()
                   .replace("assert got == want", "pass"))  # fmt: skip
    pkg_repo.commit("simplify")
    decision = score_one(pkg_repo, PKG_PYTEST)
    assert posture(decision) == ("reject", 5)
    assert "pkg/tests/_suite.py" in decision["reason"]


def test_a_weakened_test_module_outside_oracle_paths_is_an_oracle_move(pkg_repo: Repo) -> None:
    pkg_repo.write("pkg/calc.py", "def double(x):\n    return x\n")
    pkg_repo.write("pkg/tests/test_calc.py", "def test_double():\n    pass\n")
    pkg_repo.commit("simplify")
    decision = score_one(pkg_repo, PKG_PYTEST)
    assert posture(decision) == ("reject", 5)
    assert "pkg/tests/test_calc.py" in decision["reason"]


def test_a_product_change_beside_colocated_tests_is_not_an_oracle_move(pkg_repo: Repo) -> None:
    pkg_repo.write("pkg/calc.py", "def double(x):\n    return x + x + 1\n")
    pkg_repo.commit("off by one")
    decision = score_one(pkg_repo, PKG_PYTEST)
    assert posture(decision) == ("reject", 7)
    assert not json.loads((pkg_repo.ledgers / "p.json").read_text())["oracle_moved"]


def test_a_dependency_bump_in_pyproject_is_not_an_oracle_edit(pkg_repo: Repo) -> None:
    (pkg_repo.root / "pytest.ini").unlink()
    pkg_repo.write(
        "pyproject.toml",
        '[project]\nname = "calc"\nversion = "1"\ndependencies = ["attrs>=22"]\n\n'
        '[tool.pytest.ini_options]\npython_files = ["test_*.py", "*_test.py"]\n'
        'addopts = ["-p", "no:cacheprovider"]\n',
    )
    pkg_repo.commit("config in pyproject")
    base = git(pkg_repo.root, "rev-parse", "HEAD")
    bumped = Repo(pkg_repo.root, pkg_repo.ledgers, base, pkg_repo.run_cli)
    text = (bumped.root / "pyproject.toml").read_text().replace("attrs>=22", "attrs>=23")
    bumped.write("pyproject.toml", text)
    bumped.commit("bump attrs")
    decision = score_one(bumped, PKG_PYTEST)
    assert posture(decision) == ("human_review", 8)
    # ...while an edit to pytest's own section is one.
    bumped.write("pyproject.toml", text.replace('"*_test.py"', '"*_check.py"'))
    bumped.commit("narrow the test files")
    decision = score_one(bumped, PKG_PYTEST)
    assert posture(decision) == ("reject", 5)
    assert "pyproject.toml" in decision["reason"]


# --- 5. in-process sabotage (the tripwire and the machinery audit; variants in test_tripwire.py)

MODIFIED = "three-ledger: infrastructure failure: the run's machinery was modified: "


def sabotaged(repo: Repo, code: str) -> tuple[dict[str, Any], str]:
    """The broken product, with CODE appended to it: the decision and what properties said."""
    break_total(repo)
    repo.write("orders.py", (repo.root / "orders.py").read_text() + code)
    repo.commit("faster totals")
    return repo.ci(), repo.properties_stderr()


def test_product_code_that_forces_reports_is_caught(repo: Repo) -> None:
    decision, stderr = sabotaged(
        repo,
        "\nimport _pytest.reports as _r\n_made = _r.TestReport.from_item_and_call.__func__\n"
        "def _forced(cls, item, call):\n    rep = _made(cls, item, call)\n"
        "    rep.outcome = 'passed'\n    return rep\n"
        "_r.TestReport.from_item_and_call = classmethod(_forced)\n",
    )
    assert posture(decision) == ("reject", 2)
    assert stderr.startswith(
        MODIFIED + "_pytest.reports.TestReport.from_item_and_call replaced, by orders (orders.py:"
    )


def test_product_code_that_forces_only_function_reports_is_caught(repo: Repo) -> None:
    """It spares any item that is not a `pytest.Function`, as the old sentinels were not: it
    patches the run protocol, and the audit sees that whatever the sentinels look like."""
    decision, stderr = sabotaged(
        repo,
        "\nimport pytest as _pytest\nimport _pytest.runner as _runner\n"
        "_protocol = _runner.runtestprotocol\n"
        "def _forced(item, log=True, nextitem=None):\n"
        "    reports = _protocol(item, log=False, nextitem=nextitem)\n"
        "    for report in reports:\n"
        "        if type(item) is _pytest.Function:\n"
        "            report.outcome = 'passed'\n"
        "        if log:\n"
        "            item.ihook.pytest_runtest_logreport(report=report)\n"
        "    return reports\n"
        "_runner.runtestprotocol = _forced\n",
    )
    assert posture(decision) == ("reject", 2)
    assert stderr.startswith(MODIFIED + "_pytest.runner.runtestprotocol replaced, by orders")


def test_a_product_module_patching_testreport_through_sys_modules_is_caught(repo: Repo) -> None:
    """No import statement names pytest: the class is reached through sys.modules."""
    decision, stderr = sabotaged(
        repo,
        "\nimport sys as _sys\n"
        "_report = _sys.modules['_pytest.reports'].TestReport\n"
        "_made = _report.from_item_and_call.__func__\n"
        "def _forced(cls, item, call):\n"
        "    report = _made(cls, item, call)\n"
        "    report.outcome = 'passed'\n"
        "    return report\n"
        "setattr(_report, 'from_item_and_call', classmethod(_forced))\n",
    )
    assert posture(decision) == ("reject", 2)
    assert stderr.startswith(
        MODIFIED + "_pytest.reports.TestReport.from_item_and_call replaced, by orders (orders.py:"
    )


# Finds the run's config on the stack of the import that loads it (the test module's), and
# registers a makereport hook with it.
REGISTERING = """
import sys as _sys

import pytest as _pytest


class _Forcer:
    @_pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        return report


def _config():
    frame = _sys._getframe(1)
    while frame is not None:
        found = frame.f_locals.get("config")
        if hasattr(found, "pluginmanager"):
            return found
        frame = frame.f_back
    return None


_found = _config()
if _found is not None:
    _found.pluginmanager.register(_Forcer())
"""


def test_a_makereport_hook_registered_by_product_code_at_import_is_caught(repo: Repo) -> None:
    decision, stderr = sabotaged(repo, REGISTERING)
    assert posture(decision) == ("reject", 2)
    assert stderr.startswith(
        MODIFIED + "pytest_runtest_makereport of plugin orders._Forcer registered, by orders"
    )


# A conftest of the base that registers a plugin of its own: how hooks come into a run.
REGISTERING_CONFTEST = """import pytest


class Timings:
    def pytest_runtest_logreport(self, report):
        pass


def pytest_configure(config):
    config.pluginmanager.register(Timings(), "timings")
"""


def test_a_hook_a_conftest_registers_is_legitimate(repo: Repo) -> None:
    """The control: the same kind of registration, by a conftest (an oracle, compared with
    the base), is how pytest is extended, and the change is reviewed as any other."""
    repo.write("conftest.py", REGISTERING_CONFTEST)
    repo = repo.as_base("a conftest that times the tests")
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    assert posture(repo.ci()) == ("review", 9)


# --- 6. the gate shares the environment it judges --------------------------------------------


def test_python_m_three_ledger_from_root_is_refused(repo: Repo) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../ledgers/f.json"],
        cwd=repo.root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "is on three-ledger's own sys.path" in done.stderr
    assert "python -P -m three_ledger" in done.stderr
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../ledgers/f.json"],
        cwd=repo.root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_tracked_module_the_gate_imports_from_root_is_refused(repo: Repo) -> None:
    """An editable install of the project under test puts its folder on the gate's path."""
    repo.write("src/jsonschema/__init__.py", "raise SystemExit('a patched validator')\n")
    repo.commit("vendor a validator")
    env = {**os.environ, "PYTHONPATH": str(repo.root / "src")}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../ledgers/f.json"],
        cwd=repo.root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "holds files git tracks under ROOT" in done.stderr


def test_a_venv_inside_the_checkout_is_fine(repo: Repo) -> None:
    venv_site = repo.root / ".venv/lib/site-packages"
    venv_site.mkdir(parents=True)
    (repo.root / ".gitignore").write_text(".venv/\n")
    repo.commit("ignore the venv")
    env = {**os.environ, "PYTHONPATH": str(venv_site)}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", "pins/fixtures.json",
         "--out", "../ledgers/f.json"],
        cwd=repo.root, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


# --- merge binds the ledgers to the tree it judges -------------------------------------------


def test_a_ledger_replayed_from_another_commit_is_row_2(repo: Repo) -> None:
    assert posture(repo.ci()) == ("review", 9)
    repo.write("orders.py", (repo.root / "orders.py").read_text() + "\n# later\n")
    repo.commit("a later commit, never scored")
    repo.run_cli(
        "merge", "--fixture-ledger", repo.ledgers / "f_a.json",
        "--property-ledger", repo.ledgers / "p_a.json", "--dual-pin", repo.ledgers / "d.json",
        "--root", repo.root, "--pins-dir", repo.root / "pins", "--base", repo.base,
        "--out", repo.ledgers / "again.json",
    )  # fmt: skip
    decision = json.loads((repo.ledgers / "again.json").read_text())
    assert posture(decision) == ("reject", 2)
    assert "not ROOT's HEAD" in decision["reason"]


def test_a_pin_edited_then_restored_is_row_4(repo: Repo) -> None:
    """Scored under an edited properties pin, then the pin restored before merge."""
    original = (repo.root / "pins/properties.json").read_text()
    pin = json.loads(original)
    pin["properties"] = pin["properties"][:1]
    write_json(repo.root / "pins/properties.json", pin)
    repo.ci()
    (repo.root / "pins/properties.json").write_text(original)
    repo.run_cli(
        "merge", "--fixture-ledger", repo.ledgers / "f_a.json",
        "--property-ledger", repo.ledgers / "p_a.json", "--dual-pin", repo.ledgers / "d.json",
        "--root", repo.root, "--pins-dir", repo.root / "pins", "--base", repo.base,
        "--properties", repo.root / "pins/properties.json", "--out", repo.ledgers / "m.json",
    )  # fmt: skip
    decision = json.loads((repo.ledgers / "m.json").read_text())
    assert decision["posture"] == "reject"
    assert decision["row"] in (2, 4)
    assert "properties pin" in decision["reason"]
