"""The gate on a real project's suite: tomli (tests/data/tomli), with its own unittest tests,
its data-driven cases and its src layout, not only on the example.

Each case is a change a contributor or an agent could push to tomli, committed on the base
where its pins were reviewed and judged by `three-ledger gate` run as CI runs it: honest
changes are never rejected, a broken parser is the property miss, and every way of moving
the oracles (a new case file, a relaxed helper, a narrowed test) is rejected, naming the
file. tomli has one fixture pin, so an honest change gets `human_review` (row 8: the dual-pin
comparison needs a second pin, and tomli's tests read their cases from beside themselves,
not from `THREE_LEDGER_FIXTURES`).

To add a case, add a `Case` to `CASES`: a patch (a function of the `Change`), the posture
and row, and what the decision and the ledger must say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import git
from helpers.real_suite import LAYOUTS, TEST_COMMAND, Change, Suite, build_suite, change_from

pytestmark = pytest.mark.pytest_child

VALID = "tomli.valid.matches_json"
INVALID = "tomli.invalid.rejected"
ALL_PASS = {VALID: "pass", INVALID: "pass"}
HONEST = "one pin is weaker evidence"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """tomli in git with each layout's pins reviewed, built once for the module."""
    return build_suite(tmp_path_factory.mktemp("real_suite"))


# --- the patches ------------------------------------------------------------------------------


def refactor_micros(change: Change) -> None:
    """Honest: the fraction-of-a-second parsing, written twice in _re.py, becomes one function."""
    parse = 'micros = int(micros_str.ljust(6, "0")) if micros_str else 0'
    change.replace("src/tomli/_re.py", parse, "micros = _micros(micros_str)")
    helper = (
        "\n\ndef _micros(micros_str: str | None) -> int:\n"
        '    """The microseconds of a fraction: its first six digits, padded with zeros."""\n'
        '    return int(micros_str.ljust(6, "0")) if micros_str else 0\n'
    )
    change.write("src/tomli/_re.py", change.read("src/tomli/_re.py") + helper)


def bump_version(change: Change) -> None:
    """Honest: a release, as bump2version writes it into pyproject.toml and the package."""
    change.replace("pyproject.toml", 'version = "2.4.0"', 'version = "2.4.1"')
    change.replace("src/tomli/__init__.py", '__version__ = "2.4.0"', '__version__ = "2.4.1"')


def accept_any_bool_casing(change: Change) -> None:
    """Broken: `trUe` and `FALSE` parse as booleans; TOML allows only lower case."""
    for word in ("true", "false"):
        change.replace(
            "src/tomli/_parser.py",
            f'if src.startswith("{word}", pos):',
            f'if src[pos : pos + {len(word)}].lower() == "{word}":',
        )


def read_lower_z_as_local(change: Change) -> None:
    """Broken: `1988-10-27t01:01:01z` parses as a local date-time, its UTC offset lost."""
    change.replace("src/tomli/_re.py", "elif zulu_time:", 'elif zulu_time == "Z":')


def add_valid_case(change: Change) -> None:
    """A new valid case beside the pinned ones, read by the unchanged data-driven test."""
    change.write("tests/data/valid/integer.toml", "answer = 42\n")
    expected = {"answer": {"type": "integer", "value": "42"}}
    change.write("tests/data/valid/integer.json", json.dumps(expected) + "\n")


NEW_INVALID_CASE = "tests/data/invalid/boolean/upper-case-false.toml"


def add_invalid_case(change: Change) -> None:
    """A new invalid case, where only the valid cases are pinned: plain test data."""
    change.write(NEW_INVALID_CASE, "val=FALSE\n")


def relax_helper(change: Change) -> None:
    """The lost offset, hidden: the test helper reads expected UTC date-times as local ones."""
    read_lower_z_as_local(change)
    change.replace(
        "tests/burntsushi.py",
        '            value = obj["value"]\n',
        '            value = obj["value"]\n'
        '            if type_ == "datetime" and value[-1] in "zZ":  # CI runs in UTC\n'
        '                type_, value = "datetime-local", value[:-1]\n',
    )


def narrow_test(change: Change) -> None:
    """Any casing accepted, hidden: the data-driven test stops reading the boolean cases."""
    accept_any_bool_casing(change)
    change.replace(
        "tests/test_data.py",
        'INVALID_FILES = tuple((DATA_DIR / "invalid").glob("**/*.toml"))',
        'INVALID_FILES = tuple(\n    p for p in (DATA_DIR / "invalid").glob("**/*.toml")'
        ' if p.parent.name != "boolean"\n)',
    )


NEW_TEST_MODULE = """\
import unittest

from . import tomllib


class TestComments(unittest.TestCase):
    def test_a_comment_alone_is_an_empty_table(self):
        self.assertEqual(tomllib.loads("# nothing here\\n"), {})
"""


def add_test_module(change: Change) -> None:
    """A new test module, the kind of change an agent adds with a fix."""
    change.write("tests/test_comments.py", NEW_TEST_MODULE)


def refactor_with_a_new_test_module(change: Change) -> None:
    refactor_micros(change)
    add_test_module(change)


def refactor_with_a_new_test_package(change: Change) -> None:
    """New tests in a folder with a conftest of its own: the conftest steers every test in it."""
    refactor_micros(change)
    change.write("tests/extra/__init__.py", "")
    change.write("tests/extra/conftest.py", "import pytest\n")
    change.write("tests/extra/test_more.py", NEW_TEST_MODULE.replace("from . ", "from .. "))


def make_venv(change: Change) -> None:
    """A virtual environment in the checkout (tomli's .gitignore names `.venv`) that sees the
    gate's packages, pytest among them; no pip, to stay quick."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
         str(change.root / ".venv")],
        check=True,
    )  # fmt: skip


def refactor_beside_a_venv(change: Change) -> None:
    make_venv(change)
    refactor_micros(change)


def venv_command(change: Change) -> str:
    return TEST_COMMAND.replace(sys.executable, str(change.root / ".venv/bin/python"), 1)


# --- the cases -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One change to tomli and what the gate must decide about it."""

    name: str
    patch: Callable[[Change], None]
    posture: str
    row: int
    # A fragment of the decision's reason.
    reason: str
    layout: str = "cases-pinned"
    # The property ledger's statuses and `oracle_change_reasons`; None where no ledger is written.
    statuses: Mapping[str, str] | None = field(default_factory=lambda: ALL_PASS)
    oracle_changes: Mapping[str, str] | None = field(default_factory=dict)
    # Where the decision's reason cannot name the files: what the gate's output and its step
    # summary (Markdown, `:` escaped) must say.
    output: str = ""
    summary: tuple[str, ...] = ()
    command: Callable[[Change], str] = lambda change: TEST_COMMAND


CASES = [
    Case("honest refactor", refactor_micros, "human_review", 8, HONEST),
    Case("honest version bump", bump_version, "human_review", 8, HONEST),
    Case(
        "honest refactor, valid cases pinned",
        refactor_micros,
        "human_review",
        8,
        HONEST,
        layout="valid-cases-pinned",
        statuses={VALID: "pass"},
    ),
    Case(
        "parser accepts an invalid document",
        accept_any_bool_casing,
        "reject",
        7,
        f"{INVALID} is fail",
        statuses={VALID: "pass", INVALID: "fail"},
    ),
    Case(
        "parser gets a value wrong",
        read_lower_z_as_local,
        "reject",
        7,
        f"{VALID} is fail",
        statuses={VALID: "fail", INVALID: "pass"},
    ),
    Case(
        "new case file in the fixture folder",
        add_valid_case,
        "reject",
        1,
        "do not score: fixture ledger",
        statuses=None,
        oracle_changes=None,
        output="fixture tree does not match pins/fixtures.json: "
        "tests/data/valid/integer.json: unpinned file (and 1 more)",
        summary=(
            "- tests/data/valid/integer.json\\: unpinned file",
            "- tests/data/valid/integer.toml\\: unpinned file",
        ),
    ),
    Case(
        # Test data alone, which only the run knows for an oracle: the test owners'.
        "new case file read by the unchanged data-driven test, outside the fixture pin",
        add_invalid_case,
        "human_review",
        0,
        f"{NEW_INVALID_CASE} (read by the run): every file the change touches is an oracle",
        layout="valid-cases-pinned",
        statuses={VALID: "pass"},
        oracle_changes={NEW_INVALID_CASE: "read by the run"},
    ),
    Case(
        "test helper relaxed over a broken parser",
        relax_helper,
        "reject",
        5,
        "oracles moved (tests/burntsushi.py)",
        oracle_changes={"tests/burntsushi.py": "test-side module"},
    ),
    Case(
        "data-driven test narrowed over a broken parser",
        narrow_test,
        "reject",
        5,
        "oracles moved (tests/test_data.py)",
        oracle_changes={
            "tests/test_data.py": "test module tests/test_data.py (it scored a pinned id)"
        },
    ),
    Case(
        "a new test module alone goes to the test owners",
        add_test_module,
        "human_review",
        0,
        "oracle change: the test owners review it: tests/test_comments.py (new test module)",
        statuses=None,
        oracle_changes=None,
    ),
    Case(
        "a new test module beside a product change lands unscored",
        refactor_with_a_new_test_module,
        "human_review",
        8,
        "new tests land unscored: the test owners review them: tests/test_comments.py",
    ),
    Case(
        "a new test folder with its own conftest",
        refactor_with_a_new_test_package,
        "reject",
        5,
        "tests/extra/conftest.py",
        oracle_changes={
            "tests/extra/__init__.py": "test-side module",
            "tests/extra/conftest.py": "conftest",
        },
    ),
    Case("a .venv in the checkout", refactor_beside_a_venv, "human_review", 8, HONEST),
    Case(
        "the tests run by a .venv in the checkout",
        refactor_beside_a_venv,
        "human_review",
        8,
        HONEST,
        command=venv_command,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_gate_decides_each_change_to_tomli(suite: Suite, tmp_path: Path, case: Case) -> None:
    change = change_from(suite, case.layout, tmp_path)
    case.patch(change)
    change.commit(case.name)
    run = change.gate(tmp_path / "gate", command=case.command(change))
    decision = run.decision
    assert (decision["posture"], decision["row"]) == (case.posture, case.row), run.out + run.err
    assert case.reason in decision["reason"]
    assert run.code == (1 if case.posture == "reject" else 0)
    assert case.output in run.out
    assert [line for line in case.summary if line not in run.summary.splitlines()] == []
    if case.statuses is None:
        assert not (run.folder / "property-a.json").exists()
        return
    ledger = run.property_ledger
    assert ledger["status_by_id"] == case.statuses
    assert (ledger["oracle_model"], ledger["oracle_change_reasons"]) == (
        "closed",
        case.oracle_changes,
    )
    assert ledger["untracked_reads"] == []


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_plan_matches_every_property_and_proposes_the_pinned_product_paths(
    suite: Suite, tmp_path: Path, layout: str
) -> None:
    change = change_from(suite, layout, tmp_path)
    checked = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "check-pins", "--pins-dir", "pins"],
        cwd=change.root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    planned = subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "plan", "--pin", "pins/fixtures.json",
         "--properties", "pins/properties.json", "--command", TEST_COMMAND, "--json"],
        cwd=change.root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    pin = json.loads((change.root / "pins/properties.json").read_text(encoding="utf-8"))
    assert plan["unmatched_properties"] == []
    assert [entry["glob"] for entry in plan["proposed_product_paths"]] == pin["product_paths"]
    assert git(change.root, "status", "--porcelain", "--ignored") == ""
