"""`vet` over small generated suites: each operator's kill, weak and strict, ceremony, unread
and skipping properties, a collection error under mutation, --per-file, a failing baseline,
a baseline whose slices collect other tests, a crash (the hollow suite, one vet run, is in
tests/commands/test_vet_hollow.py).
The children run with plugin autoload off, so each of vet's runs is a bare pytest.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, write_json
from helpers.vet_suites import (
    claim,
    ledger,
    make_suite,
    run_vet,
    slow_suite,
    snapshot,
    vet_args,
)

pytestmark = pytest.mark.pytest_child


@pytest.fixture(autouse=True)
def bare_pytest_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """vet's children are plain pytest with only the staged plugin: fast, and predictable."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


# --- each operator kills a property built to detect it -------------------------------------

DETECTORS = """
def test_negate():
    assert load("negate.json")["amount"] >= 0


def test_drop():
    assert len(load("drop.json")["items"]) == 3


def test_swap_values():
    pair = load("swap.json")
    assert pair["first"] < pair["second"]


def test_drop_line():
    assert len(lines("three.txt")) == 3


def test_swap_lines():
    assert lines("sorted.txt") == sorted(lines("sorted.txt"))


def test_zero():
    assert load("zero.json")["n"] != 0


def test_bump():
    n = load("bump.json")["n"]
    assert n % 2 == 1 or n == 0


def test_blow_up():
    assert load("big.json")["n"] < 2**53


@pytest.mark.parametrize("name", ["pair_a", "pair_b"])
def test_swap_files(name):
    assert load(f"{name}.json")["name"] == name


def test_empty():
    assert (FIXTURES / "empty.txt").read_bytes() != b""


def test_flip():
    assert (FIXTURES / "flip.txt").read_bytes().isascii()


def test_truncate():
    data = (FIXTURES / "truncate.txt").read_bytes()
    assert data == b"" or data.endswith(b"\\n")
"""
DETECTOR_FIXTURES = {
    "negate.json": b'{"amount": 7}\n',
    "drop.json": b'{"items": [1, 2, 3]}\n',
    "swap.json": b'{"first": "a", "second": "b"}\n',
    "three.txt": b"one\ntwo\nthree\n",
    "sorted.txt": b"a\nb\nc\n",
    "zero.json": b'{"n": 4}\n',
    "bump.json": b'{"n": 3}\n',
    "big.json": b'{"n": 10}\n',
    "pair_a.json": b'{"name": "pair_a"}\n',
    "pair_b.json": b'{"name": "pair_b"}\n',
    "empty.txt": b"x\n",
    "flip.txt": b"abc\n",
    "truncate.txt": b"abcd\n",
}
# property id: (test, domain, the operator that must kill it first, verdict)
DETECTED = {
    "detect.negate": ("test_negate", ["negate.json"], "json.negate_number", "strong"),
    "detect.drop": ("test_drop", ["drop.json"], "json.drop_element", "strong"),
    "detect.swap-values": ("test_swap_values", ["swap.json"], "json.swap_values", "strong"),
    "detect.drop-line": ("test_drop_line", ["three.txt"], "text.drop_line", "strong"),
    "detect.swap-lines": ("test_swap_lines", ["sorted.txt"], "text.swap_lines", "strong"),
    "detect.zero": ("test_zero", ["zero.json"], "json.zero_number", "strong"),
    "detect.bump": ("test_bump", ["bump.json"], "json.bump_number", "strong"),
    "detect.blow-up": ("test_blow_up", ["big.json"], "json.blow_up_number", "strong"),
    "detect.swap-files": ("test_swap_files", ["pair_a.json", "pair_b.json"], "swap_files",
                          "strong"),
    "detect.empty": ("test_empty", ["empty.txt"], "empty", "weak"),
    "detect.flip": ("test_flip", ["flip.txt"], "flip_middle_byte", "weak"),
    "detect.truncate": ("test_truncate", ["truncate.txt"], "truncate_half", "weak"),
}  # fmt: skip


def detector_suite(root: Path) -> Path:
    properties = [
        claim(pid, f"properties/test_detect.py::{test}", *domain)
        for pid, (test, domain, _, _) in DETECTED.items()
    ]
    return make_suite(root, DETECTOR_FIXTURES, {"test_detect.py": DETECTORS}, properties)


Detected = tuple[subprocess.CompletedProcess[str], dict[str, Any], Any, Any]


@pytest.fixture(scope="module")
def detectors(tmp_path_factory: pytest.TempPathFactory) -> Detected:
    """One vet run over the detector suite: how it ended, its ledger, the tree before and
    after."""
    root = detector_suite(tmp_path_factory.mktemp("detectors") / "suite")
    before = snapshot(root)
    done = run_vet(root)
    return done, ledger(root), before, snapshot(root)


@pytest.mark.parametrize("property_id", DETECTED)
def test_each_operator_kills_the_property_built_to_detect_it(
    detectors: Detected, property_id: str
) -> None:
    _, written, _, _ = detectors
    found = written["properties"][property_id]
    _, _, operator, verdict = DETECTED[property_id]
    assert found["killed_by"] == [operator]
    assert found["verdict"] == verdict
    assert found["operators_tried"][-1] == operator
    assert found["survived"] == found["operators_tried"][:-1]
    assert found["unread_domain_files"] == []
    assert found["gate"] is True


def test_the_detector_run_exits_0_with_one_line_per_property(
    detectors: Detected,
) -> None:
    done, _, _, _ = detectors
    code, stdout, stderr = done.returncode, done.stdout, done.stderr
    assert code == 0, stderr
    assert [line.split()[1].rstrip(":") for line in stdout.splitlines()] == list(DETECTED)
    assert "strong    detect.negate: killed by json.negate_number (fail)" in stdout
    assert "weak      detect.empty: killed only by malformed input (empty: fail)" in stdout
    assert "detect.flip is weak" in stderr
    assert "Traceback" not in stderr


def test_each_subject_runs_its_own_mutants(
    detectors: Detected,
) -> None:
    _, written, _, _ = detectors
    mutants = sum(len(found["trials"]) for found in written["properties"].values())
    # The baseline, then each property (a subject of its own) through its own mutants.
    assert written["runs"] == 1 + mutants
    assert written["reused_runs"] == 0
    assert written["kind"] == "vet"
    assert written["unread_pinned_files"] == []


def test_the_user_tree_is_unchanged_after_a_normal_run(
    detectors: Detected,
) -> None:
    _, _, before, after = detectors
    assert after == before


def test_the_ledger_is_valid_against_its_schema(detectors: Detected, tmp_path: Path) -> None:
    from three_ledger.ledgers import read_ledger
    from three_ledger.other_ledgers import VetLedger

    _, written, _, _ = detectors
    path = write_json(tmp_path / "vet.json", written)
    record = read_ledger(path, VetLedger).record
    assert record.properties["detect.negate"].verdict == "strong"


# --- weak, strict ---------------------------------------------------------------------------


def test_a_weak_property_fails_under_strict(run_cli: RunCli, tmp_path: Path) -> None:
    weak = 'def test_empty():\n    assert (FIXTURES / "empty.txt").read_bytes() != b""\n'
    root = make_suite(
        tmp_path / "suite",
        {"empty.txt": b"x\n"},
        {"test_w.py": weak},
        [claim("detect.empty", "properties/test_w.py::test_empty", "empty.txt")],
    )
    lenient = run_cli(*vet_args(root))
    assert lenient.code == 0, lenient.err
    strict = run_cli(*vet_args(root, "--strict"))
    assert strict.code == 1, strict.err
    assert "--strict counts it as surviving" in strict.out
    assert "are not a gate: 1 cannot fail on their fixtures: detect.empty" in strict.err
    assert ledger(root)["properties"]["detect.empty"]["gate"] is False
    assert ledger(root)["strict"] is True


# --- --per-file -------------------------------------------------------------------------------


def test_per_file_lists_the_files_whose_mutation_no_property_notices(
    run_cli: RunCli, tmp_path: Path
) -> None:
    tests = {
        "test_files.py": """
        def test_checked():
            assert load("checked.json")["total"] == 5


        def test_ignored():
            (FIXTURES / "ignored.json").read_bytes()
        """
    }
    root = make_suite(
        tmp_path / "suite",
        {"checked.json": b'{"total": 5}\n', "ignored.json": b'{"total": 5}\n'},
        tests,
        [
            claim("files.checked", "properties/test_files.py::test_checked", "checked.json"),
            claim("files.ignored", "properties/test_files.py::test_ignored", "ignored.json"),
        ],
    )
    result = run_cli(*vet_args(root, "--per-file", "5"))
    assert result.code == 1, result.err  # files.ignored cannot fail
    per_file = ledger(root)["per_file"]
    assert per_file["requested"] == 5
    by_path = {entry["path"]: entry for entry in per_file["files"]}
    assert by_path["fixtures/checked.json"]["noticed_by"] == ["files.checked"]
    assert by_path["fixtures/checked.json"]["operators_tried"] == ["json.negate_number"]
    assert by_path["fixtures/ignored.json"]["noticed_by"] == []
    assert by_path["fixtures/ignored.json"]["operators_tried"][-1] == "truncate_half"
    assert per_file["unnoticed"] == ["fixtures/ignored.json"]
    assert "--per-file: 1 of 2 sampled file(s) changed no property's outcome" in result.err


# --- refusals ------------------------------------------------------------------------------------


def test_a_baseline_failure_exits_2_naming_the_property(run_cli: RunCli, tmp_path: Path) -> None:
    tests = {"test_b.py": "def test_broken():\n    assert load('a.json')['n'] == 2\n"}
    root = make_suite(
        tmp_path / "suite",
        {"a.json": b'{"n": 1}\n'},
        tests,
        [
            claim("base.broken", "properties/test_b.py::test_broken", "a.json"),
            claim("base.missing", "properties/test_b.py::test_absent", "a.json"),
        ],
    )
    stale = write_json(root.parent / "vet.json", {"stale": True})
    result = run_cli(*vet_args(root))
    assert result.code == 2
    assert result.first_error_line.startswith(
        "three-ledger: refused: vet needs a passing baseline: 2 propert(ies) did not pass on "
        "the unmutated fixtures: base.broken: fail (and 1 more) (log: "
    ), result.first_error_line
    assert "  base.broken: fail" in result.err
    assert "  base.missing: missing" in result.err
    assert not stale.exists()
    assert result.out == ""


def test_slices_that_collect_other_tests_run_the_baseline_again_whole(tmp_path: Path) -> None:
    # The parametrisation names the process: each slice of the baseline collects its own id.
    tests = {
        "test_p.py": """
@pytest.mark.parametrize("process", [os.getpid()])
def test_n(process):
    assert load("a.json")["n"] == 1
"""
    }
    root = make_suite(
        tmp_path / "suite",
        {"a.json": b'{"n": 1}\n'},
        tests,
        [claim("p.n", "properties/test_p.py::test_n", "a.json")],
    )
    whole = run_vet(root, "--jobs", "1", "--no-cache")
    assert whole.returncode == 0, whole.stderr
    one = ledger(root)
    sliced = run_vet(root, "--jobs", "2", "--no-cache")
    assert sliced.returncode == 0, sliced.stderr
    assert "the baseline's slices did not collect the same tests" in sliced.stderr
    assert "vet: run 1 (whole, again): exit 0" in sliced.stderr
    two = ledger(root)
    assert two["runs"] == one["runs"] == 2
    assert two["properties"] == one["properties"]
    assert two["properties"]["p.n"]["verdict"] == "strong"


def test_the_user_tree_is_unchanged_after_a_crash(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from three_ledger.commands import vet as vet_command

    root = slow_suite(tmp_path / "suite")
    before = snapshot(root)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_parent))

    def crash(*args: object) -> None:
        raise RuntimeError("a bug in the middle of vetting")

    monkeypatch.setattr(vet_command, "mutate_subject", crash)
    result = run_cli(*vet_args(root))
    assert result.code == 70
    assert "internal error" in result.first_error_line
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    assert list(scratch_parent.iterdir()) == []
