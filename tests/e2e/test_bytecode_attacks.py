"""Bytecode the change brings. Each way a change could have Python or pytest load bytecode
in place of its source, tried on the example with a broken product through the CI workflow
of docs/ci.md, is refused before anything runs; an honest change whose tests sit in the
fixtures folder, run where the job writes bytecode, is `review` and leaves no `__pycache__`.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import py_compile
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import CI_VARIABLES, EXAMPLE, CliResult, RunCli, git, write_json
from helpers.example_run import build_base_repo

pytestmark = pytest.mark.pytest_child

PYTEST = f"{sys.executable} -m pytest -q properties/test_orders.py"
PINS = ("pins/fixtures.json", "pins/fixtures_b.json")
# The product under review: every total a trillion cents short, so two properties fail.
BROKEN_TOTAL = "\n\ndef order_total(order):\n    return _order_total(order) - 10**12\n"
CACHE_TAG = sys.implementation.cache_tag
# Run as `python -m pytest` from ROOT, a root `pytest` module is the run's __main__: this one
# runs the real pytest, after putting back the base's order_total in memory.
WRAPPER = """\
import importlib, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
real = importlib.import_module("pytest")
sys.path.insert(0, here)
import orders
orders.order_total = lambda order: sum(
    line["quantity"] * line["unit_price_cents"] for line in order["lines"])
raise SystemExit(real.main())
"""


@dataclass(frozen=True)
class Repo:
    root: Path
    ledgers: Path
    base: str
    run_cli: RunCli

    def commit(self, message: str) -> None:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-qm", message)

    def properties(self, side: str, pin: str, command: str = PYTEST) -> CliResult:
        """`digest` then `properties` on one fixture pin; what `properties` said."""
        digest = self.run_cli(
            "digest", "--pin", self.root / pin, "--root", self.root,
            "--out", self.ledgers / f"f_{side}.json",
        ).out.strip()  # fmt: skip
        return self.run_cli(
            "properties", "--pin", self.root / pin, "--expect-digest", digest or "0" * 64,
            "--properties", self.root / "pins/properties.json", "--command", command,
            "--root", self.root, "--base", self.base, "--out", self.ledgers / f"p_{side}.json",
        )  # fmt: skip

    def ci(self, command: str = PYTEST) -> dict[str, Any]:
        """The workflow of docs/ci.md over this checkout; the merge decision it ends in."""
        for side, pin in zip("ab", PINS, strict=True):
            self.properties(side, pin, command)
        self.run_cli(
            "dual-pin", "--left", self.ledgers / "p_a.json", "--right", self.ledgers / "p_b.json",
            "--out", self.ledgers / "d.json",
        )  # fmt: skip
        self.run_cli(
            "merge", "--fixture-ledger", self.ledgers / "f_a.json",
            "--property-ledger", self.ledgers / "p_a.json", "--dual-pin", self.ledgers / "d.json",
            "--pin", self.root / PINS[0], "--root", self.root,
            "--pins-dir", self.root / "pins", "--base", self.base,
            "--properties", self.root / "pins/properties.json",
            "--out", self.ledgers / "decision.json",
        )  # fmt: skip
        decision: dict[str, Any] = json.loads((self.ledgers / "decision.json").read_text())
        return decision

    def pycache_folders(self) -> list[str]:
        found = self.root.rglob("__pycache__")
        return sorted(path.relative_to(self.root).as_posix() for path in found)


def break_total(root: Path) -> None:
    product = root / "orders.py"
    text = product.read_text().replace("def order_total(order", "def _order_total(order")
    product.write_text(text + BROKEN_TOTAL)


def rewrite_cache(test_file: Path, weakened: str) -> Path:
    """pytest's assertion-rewrite cache for TEST_FILE, holding WEAKENED's code, made so that the
    running pytest takes it for TEST_FILE's own (see `_read_pyc` in _pytest/assertion/rewrite.py).
    pytest 9 keys it on the source's hash (a checked-hash pyc), pytest 8 on its mtime and size."""
    source = test_file.read_bytes()
    if int(pytest.__version__.split(".")[0]) >= 9:
        key = b"\x03\x00\x00\x00" + importlib.util.source_hash(source)[:8]
    else:
        mtime = int(test_file.stat().st_mtime) & 0xFFFFFFFF
        key = b"\x00\x00\x00\x00" + struct.pack("<LL", mtime, len(source) & 0xFFFFFFFF)
    code = compile(weakened, str(test_file), "exec")
    name = f"{test_file.stem}.{CACHE_TAG}-pytest-{pytest.__version__}.pyc"
    pyc = test_file.parent / "__pycache__" / name
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(importlib.util.MAGIC_NUMBER + key + marshal.dumps(code))
    return pyc


def weakened_tests(root: Path) -> Path:
    """The unchanged test file, its cached rewrite holding every assertion made vacuous."""
    test_file = root / "properties/test_orders.py"
    weakened = test_file.read_text().replace("    assert ", "    assert True or ")
    return rewrite_cache(test_file, weakened)


def product_bytecode(root: Path, source: str) -> Path:
    """orders.py's bytecode compiled from SOURCE, as an unchecked-hash pyc where Python looks
    for it: by default Python loads such a pyc without comparing it with orders.py."""
    compiled_from = root.parent / "orders_compiled.py"
    compiled_from.write_text(source)
    pyc = root / "__pycache__" / f"orders.{CACHE_TAG}.pyc"
    py_compile.compile(
        str(compiled_from),
        cfile=str(pyc),
        dfile=str(root / "orders.py"),
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return pyc


def base_product_bytecode(root: Path) -> Path:
    """The base's orders.py as bytecode, to sit beside the broken source."""
    return product_bytecode(root, (root / "orders.py").read_text())


def sourceless_pytest(root: Path) -> Path:
    """A root `pytest.pyc`, compiled from WRAPPER, with no source beside it."""
    wrapper = root.parent / "pytest_wrapper.py"
    wrapper.write_text(WRAPPER)
    pyc = root / "pytest.pyc"
    py_compile.compile(str(wrapper), cfile=str(pyc), dfile="pytest.py", doraise=True)
    return pyc


def gate_refused_in_properties(
    run_cli: RunCli, root: Path, base: str, out: Path, row: int = 2
) -> CliResult:
    """`gate` over ROOT against BASE, which must reject at ROW: by default 2, `properties`
    refused, so there is no property ledger and merge does not score. What gate printed."""
    result = run_cli(
        "gate", "--pins-dir", root / "pins", "--root", root, "--command", PYTEST,
        "--base", base, "--out-dir", out,
    )  # fmt: skip
    decision = json.loads((out / "decision.json").read_text())
    assert result.code == 1, result.out
    assert posture(decision) == ("reject", row), decision["reason"]
    return result


def based_on(root: Path, ledgers: Path, run_cli: RunCli) -> Repo:
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base: orders, properties, reviewed pins")
    return Repo(root, ledgers, git(root, "rev-parse", "HEAD"), run_cli)


def posture(decision: dict[str, Any]) -> tuple[str, int]:
    return decision["posture"], decision["row"]


@pytest.fixture
def writing_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python writes bytecode, as on a CI runner by default."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


# --- the honest control --------------------------------------------------------------------


def move_tests_into_the_fixtures_folder(root: Path) -> None:
    """The example with its property tests kept in pin A's fixtures folder, and pinned there."""
    (root / "properties/test_orders.py").rename(root / "fixtures/test_orders.py")
    (root / "properties").rmdir()
    (root / "pins/flakes.json").unlink()
    (root / ".gitignore").write_text("__pycache__/\n")
    pin = json.loads((root / PINS[0]).read_text())
    del pin["digest"]
    pin["files"].append("fixtures/test_orders.py")
    write_json(root / PINS[0], pin)
    properties = json.loads((root / "pins/properties.json").read_text())
    properties["oracle_paths"] = ["fixtures/test_orders.py", "pytest.ini"]
    for entry in properties["properties"]:
        if "test" in entry:
            entry["test"] = entry["test"].replace("properties/", "fixtures/")
    write_json(root / "pins/properties.json", properties)


@pytest.mark.usefixtures("writing_bytecode")
def test_an_honest_change_with_tests_in_the_fixtures_folder_is_review_and_leaves_no_bytecode(
    tmp_path: Path, run_cli: RunCli
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    move_tests_into_the_fixtures_folder(root)
    repo = based_on(root, tmp_path / "ledgers", run_cli)
    (root / "orders.py").write_text((root / "orders.py").read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    decision = repo.ci(f"{sys.executable} -m pytest -q fixtures/test_orders.py")
    assert posture(decision) == ("review", 9), decision["reason"]
    assert repo.pycache_folders() == []


# --- attacks: bytecode in the change ---------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    """The example at its base: no .gitignore, so a patch's bytecode is committed with it."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "pins/flakes.json").unlink()
    return based_on(root, tmp_path / "ledgers", run_cli)


def test_the_broken_product_alone_is_the_property_miss(repo: Repo) -> None:
    break_total(repo.root)
    repo.commit("the broken product")
    assert posture(repo.ci()) == ("reject", 7)


PLANTED = {
    "a rewrite cache of the unchanged tests": weakened_tests,
    "an unchecked-hash pyc of the base product": base_product_bytecode,
    "a sourceless root pytest.pyc": sourceless_pytest,
}


@pytest.mark.usefixtures("writing_bytecode")
@pytest.mark.parametrize("plant", PLANTED.values(), ids=PLANTED.keys())
def test_bytecode_in_the_change_is_refused_before_the_run(
    repo: Repo, plant: Callable[[Path], Path]
) -> None:
    planted = plant(repo.root).relative_to(repo.root).as_posix()
    break_total(repo.root)
    repo.commit("the broken product, and bytecode")
    refused = repo.properties("a", PINS[0])
    assert refused.code == 2, refused.err
    assert "bytecode" in refused.first_error_line
    assert planted in refused.first_error_line
    assert not (repo.ledgers / "p_a.json").exists()
    assert not (repo.ledgers / "p_a.log").exists(), "refused before anything ran"
    assert posture(repo.ci())[0] == "reject"


NATIVE = {
    "an extension module named for the product": "orders.cpython-311-x86_64-linux-gnu.so",
    "a stable-ABI extension module": "orders.abi3.so",
    "a library for ctypes": "vendor/liborders.so.1",
}


@pytest.mark.parametrize("planted", NATIVE.values(), ids=NATIVE.keys())
def test_native_code_in_the_change_is_refused_before_the_run(repo: Repo, planted: str) -> None:
    """Python imports `orders.*.so` ahead of `orders.py` in the same folder: built from the
    base's source, it passed every property over a broken `orders.py` (`review`). What it holds
    does not matter here: it is refused before anything runs."""
    (repo.root / planted).parent.mkdir(exist_ok=True)
    (repo.root / planted).write_bytes(b"\x7fELF native code no reviewer reads")
    break_total(repo.root)
    repo.commit("the broken product, and native code")
    refused = repo.properties("a", PINS[0])
    assert refused.code == 2, refused.err
    assert refused.first_error_line.startswith(
        f"three-ledger: refused: native code new or changed against the base {repo.base[:12]}: "
        f"{planted}"
    ), refused.first_error_line
    assert not (repo.ledgers / "p_a.log").exists(), "refused before anything ran"
    assert posture(repo.ci())[0] == "reject"


@pytest.mark.usefixtures("writing_bytecode")
def test_gate_scores_a_flake_pin_reworded_beside_bytecode_and_rejects(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The product's source is left alone: its bytecode alone is broken, beside a pin edit."""
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    run = build_base_repo(tmp_path)
    product = run.repo / "orders.py"
    broken = product.read_text().replace("def order_total(order", "def _order_total(order")
    planted = product_bytecode(run.repo, broken + BROKEN_TOTAL).relative_to(run.repo).as_posix()
    flakes = json.loads(run.flake_pin.read_text())
    flakes["flakes"][0]["note"] = "Timing on a busy runner; reworded."
    write_json(run.flake_pin, flakes)
    git(run.repo, "add", "-A")
    git(run.repo, "commit", "-qm", "flake pin: a clearer note")
    assert git(run.repo, "diff", "--name-only", run.base) == f"{planted}\npins/flakes.json"
    # Scored, not taken for a pin change; properties refuses the bytecode, and the decision
    # names the pin edited beside it (row 4 comes before the missing property ledger).
    result = gate_refused_in_properties(run_cli, run.repo, run.base, tmp_path / "gate", row=4)
    assert "properties A (fixpin-orders-a): exit 2: bytecode" in result.out
    assert planted in result.out


# --- bytecode git ignores, left in the tree before the gate ---------------------------------


@pytest.fixture
def ignoring_repo(tmp_path: Path, run_cli: RunCli) -> Repo:
    """The example at its base, letting git ignore `__pycache__/` as almost every project does."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "pins/flakes.json").unlink()
    (root / ".gitignore").write_text("__pycache__/\n")
    return based_on(root, tmp_path / "ledgers", run_cli)


def ignored(repo: Repo) -> list[str]:
    listing = git(repo.root, "ls-files", "--others", "--ignored", "--exclude-standard")
    return sorted(listing.splitlines())


def test_an_ignored_unchecked_hash_pyc_of_the_base_product_is_refused_and_gate_rejects(
    ignoring_repo: Repo, tmp_path: Path
) -> None:
    """Left by a step before the gate (or planted by one): not part of the change, so the
    comparison with the base never sees it, but Python would run it in place of orders.py."""
    repo = ignoring_repo
    planted = base_product_bytecode(repo.root).relative_to(repo.root).as_posix()
    break_total(repo.root)
    repo.commit("the broken product")
    assert ignored(repo) == [planted]
    refused = repo.properties("a", PINS[0])
    assert refused.code == 2, refused.err
    assert f"refused: unchecked-hash bytecode under ROOT: {planted}: " in refused.first_error_line
    assert not (repo.ledgers / "p_a.json").exists()
    assert not (repo.ledgers / "p_a.log").exists(), "refused before anything ran"
    result = gate_refused_in_properties(repo.run_cli, repo.root, repo.base, tmp_path / "gate")
    step = "properties A (fixpin-orders-a): exit 2: unchecked-hash bytecode under ROOT"
    assert f"{step}: {planted}: " in result.out


@pytest.mark.usefixtures("writing_bytecode")
def test_an_honest_change_beside_the_bytecode_an_earlier_pytest_run_left_is_review(
    ignoring_repo: Repo,
) -> None:
    """Plain pytest, run on the base where Python writes bytecode, leaves a timestamp pyc of
    orders.py and pytest's rewrite cache of the tests (checked-hash under pytest 9); the change
    then edits orders.py, so the first is stale. Python checks both: no refusal."""
    repo = ignoring_repo
    subprocess.run([*PYTEST.split(), "-p", "no:cacheprovider"], cwd=repo.root, check=True)
    product = repo.root / "orders.py"
    product.write_text(product.read_text() + "\n# a comment\n")
    repo.commit("a harmless edit")
    left = ignored(repo)
    assert f"__pycache__/orders.{CACHE_TAG}.pyc" in left
    assert any(path.startswith("properties/__pycache__/test_orders.") for path in left), left
    decision = repo.ci()
    assert posture(decision) == ("review", 9), decision["reason"]
