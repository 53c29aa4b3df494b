"""`vet` end to end (slow): real pytest children on small generated suites, real signals.

Each suite is a project of its own: fixtures, pins, and property tests built to react (or
not) to one kind of mutation. The children run with plugin autoload off, as the staged
plugin needs nothing else, so each of vet's runs costs a bare pytest start.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import RunCli, is_gone, make_tree, write_json

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
READ = """
import json
import os
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def lines(name):
    return (FIXTURES / name).read_text().splitlines()
"""


@pytest.fixture(autouse=True)
def bare_pytest_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """vet's children are plain pytest with only the staged plugin: fast, and predictable."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


def make_suite(
    root: Path,
    fixtures: dict[str, bytes],
    tests: dict[str, str],
    properties: list[dict[str, Any]],
) -> Path:
    make_tree(root, {f"fixtures/{name}": data for name, data in fixtures.items()})
    for name, body in tests.items():
        make_tree(root, {f"properties/{name}": (READ + textwrap.dedent(body)).encode()})
    (root / "pytest.ini").write_text("[pytest]\n")
    files = sorted(f"fixtures/{name}" for name in fixtures)
    write_json(
        root / "pins/fixtures.json",
        {"pin_id": "fixpin-test", "algorithm": "sha256", "files": files},
    )
    write_json(
        root / "pins/properties.json",
        {"pin_id": "proppin-test", "fixture_pins": ["fixpin-test"], "properties": properties},
    )
    return root


def claim(property_id: str, test: str, *domain: str) -> dict[str, Any]:
    return {
        "id": property_id,
        "claim": f"{property_id} holds.",
        "domain": list(domain),
        "test": test,
    }


def vet_args(root: Path, *extra: str | Path) -> list[str | Path]:
    return [
        "vet", "--pin", root / "pins/fixtures.json", "--properties", root / "pins/properties.json",
        "--command", f"{PYTEST} properties", "--root", root, "--out", root.parent / "vet.json",
        *extra,
    ]  # fmt: skip


def ledger(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root.parent / "vet.json").read_text())
    return document


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ROOT: its mode and its bytes (a link: its target)."""
    entries: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            content: bytes | str = os.readlink(path)
        elif stat.S_ISREG(mode):
            content = path.read_bytes()
        else:
            content = ""
        entries[str(path.relative_to(root))] = (oct(mode), content)
    return entries


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


def run_vet(root: Path, *extra: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    """vet as a child process, as CI runs it."""
    command = [sys.executable, "-P", "-m", "three_ledger", *map(str, vet_args(root, *extra))]
    return subprocess.run(
        command,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


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


def test_independent_properties_share_runs(
    detectors: Detected,
) -> None:
    _, written, _, _ = detectors
    longest = max(len(found["trials"]) for found in written["properties"].values())
    # The baseline, then one run per round: every property's next mutant at once.
    assert written["runs"] == 1 + longest == 5
    assert written["kind"] == "vet"
    assert written["unread_pinned_files"] == []


def test_the_user_tree_is_unchanged_after_a_normal_run(
    detectors: Detected,
) -> None:
    _, _, before, after = detectors
    assert after == before


def test_the_ledger_is_valid_against_its_schema(detectors: Detected, tmp_path: Path) -> None:
    from three_ledger.ledgers import VetLedger, read_ledger

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
    assert "not a gate: detect.empty" in strict.err
    assert ledger(root)["properties"]["detect.empty"]["gate"] is False
    assert ledger(root)["strict"] is True


# --- what cannot fail: ceremony, unread, skipping; an import-time loader ---------------------

HOLLOW = """
def test_ceremony():
    (FIXTURES / "ceremony.json").read_bytes()  # read, and nothing asserted about it


def test_unread():
    assert FIXTURES.is_dir()


def test_skipping():
    try:
        document = load("skipping.json")
    except ValueError:
        pytest.skip("broken input")
    assert isinstance(document, dict)
"""
LOADER = """
LOADED = load("loaded.json")  # at import: a malformed file breaks collection


def test_loaded():
    assert LOADED["ok"] is True
"""


@pytest.fixture(scope="module")
def hollow(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    root = make_suite(
        tmp_path_factory.mktemp("hollow") / "suite",
        {
            "ceremony.json": b'{"total": 5, "lines": [1, 2]}\n',
            "unread.json": b'{"total": 5}\n',
            "skipping.json": b'{"total": 5, "lines": [1, 2]}\n',
            "loaded.json": b'{"ok": true}\n',
            "nobody.json": b"{}\n",
        },
        {"test_hollow.py": HOLLOW, "test_loader.py": LOADER},
        [
            claim("hollow.ceremony", "properties/test_hollow.py::test_ceremony", "ceremony.json"),
            claim("hollow.unread", "properties/test_hollow.py::test_unread", "unread.json"),
            claim("hollow.skipping", "properties/test_hollow.py::test_skipping", "skipping.json"),
            claim("hollow.loaded", "properties/test_loader.py::test_loaded", "loaded.json"),
        ],
    )
    done = run_vet(root)
    return done, ledger(root)


def test_a_ceremony_property_survives_every_operator_and_exit_1_names_it(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    assert done.returncode == 1, done.stderr
    found = written["properties"]["hollow.ceremony"]
    assert found["verdict"] == "survived"
    assert found["killed_by"] == []
    assert found["statuses_seen"] == ["pass"]
    assert len(found["operators_tried"]) >= 6  # every well-formed and malformed operator
    assert "survived  hollow.ceremony: cannot fail on its fixtures: not a gate" in done.stdout
    verdict = done.stderr.splitlines()[-1]
    assert verdict.startswith("three-ledger: 3 propert(ies) cannot fail on their fixtures")
    assert "hollow.ceremony, hollow.unread, hollow.skipping" in verdict


def test_a_property_that_never_opens_its_domain_is_reported_unread(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    assert written["properties"]["hollow.unread"]["unread_domain_files"] == ["fixtures/unread.json"]
    assert written["properties"]["hollow.ceremony"]["unread_domain_files"] == []
    assert (
        "hollow.unread never read 1 of its 1 domain file(s):\n  fixtures/unread.json" in done.stderr
    )
    assert "read none of its domain files: not a gate" in done.stdout
    assert written["unread_pinned_files"] == ["fixtures/nobody.json", "fixtures/unread.json"]


def test_a_property_that_skips_on_broken_input_is_reported_as_skipping(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    found = written["properties"]["hollow.skipping"]
    assert found["verdict"] == "survived"
    assert found["statuses_seen"] == ["pass", "skip"]
    skipped = [t["operator"] for t in found["trials"] if t["status"] == "skip"]
    assert skipped == ["empty", "flip_middle_byte", "truncate_half"]
    line = next(line for line in done.stdout.splitlines() if "hollow.skipping" in line)
    assert line.endswith("; skip under empty, flip_middle_byte, truncate_half")


def test_a_collection_error_under_mutation_is_a_kill(
    hollow: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    done, written = hollow
    found = written["properties"]["hollow.loaded"]
    assert found["verdict"] == "weak"
    assert found["killed_by"] == ["empty"]
    assert found["trials"][-1]["command_exit"] == 2
    assert found["unread_domain_files"] == []  # read at import, attributed to its items
    assert "(empty: error: the run exited 2)" in done.stdout


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


# --- the user's tree: signals and timeouts ------------------------------------------------------

SLOW = """
def test_slow_when_mutated():
    data = (FIXTURES / "slow.json").read_bytes()
    if data != b'{"n": 1}\\n':
        Path(os.environ["VET_TEST_PID_FILE"]).write_text(f"{os.getpid()}\\n")
        time.sleep(120)
    assert json.loads(data)["n"] == 1
"""


def slow_suite(root: Path) -> Path:
    return make_suite(
        root,
        {"slow.json": b'{"n": 1}\n'},
        {"test_slow.py": SLOW},
        [claim("slow.n", "properties/test_slow.py::test_slow_when_mutated", "slow.json")],
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_user_tree_is_unchanged_after_a_signal(tmp_path: Path, signum: int) -> None:
    root = slow_suite(tmp_path / "suite")
    before = snapshot(root)
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    pid_file = tmp_path / "pid"
    command = [sys.executable, "-P", "-m", "three_ledger", *map(str, vet_args(root))]
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "VET_TEST_PID_FILE": str(pid_file),
        "TMPDIR": str(scratch_parent),
    }
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as vet:
        from conftest import wait_for_pid

        test_pid = wait_for_pid(pid_file, timeout_s=120)
        vet.send_signal(signum)
        stdout, stderr = vet.communicate(timeout=60)
    assert vet.returncode == 4, stderr
    assert f"interrupted by {signal.Signals(signum).name}" in stderr
    assert stdout == ""
    assert is_gone(test_pid)
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    assert list(scratch_parent.iterdir()) == []  # the scratch copy is gone too


def test_the_user_tree_is_unchanged_after_a_timeout(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = slow_suite(tmp_path / "suite")
    before = snapshot(root)
    monkeypatch.setenv("VET_TEST_PID_FILE", str(tmp_path / "pid"))
    started = time.monotonic()
    result = run_cli(*vet_args(root, "--timeout", "20"))
    assert result.code == 4
    assert "timed out" in result.first_error_line
    assert "under mutation (json.negate_number" in result.first_error_line
    assert time.monotonic() - started < 120
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    log = (root.parent / "vet.json.log").read_text()
    assert "=== vet run 2: under mutation (json.negate_number on 1 file(s) of slow.n) ===" in log
    assert "=== the command timed out after 20.0 s ===" in log


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
    assert "vet needs a passing baseline: 2 propert(ies)" in result.first_error_line
    assert "  base.broken: fail" in result.err
    assert "  base.missing: missing" in result.err
    assert not stale.exists()
    assert result.out == ""


# --- the example ----------------------------------------------------------------------------------


def test_every_property_of_the_example_passes_vet(run_cli: RunCli, orders_repo: Path) -> None:
    before = snapshot(orders_repo)
    command = f"{PYTEST} properties/test_orders.py"
    result = run_cli(
        "vet", "--pin", orders_repo / "pins/fixtures.json",
        "--properties", orders_repo / "pins/properties.json", "--command", command,
        "--root", orders_repo, "--out", orders_repo.parent / "vet.json",
    )  # fmt: skip
    assert result.code == 0, result.err
    verdicts = {
        pid: found["verdict"]
        for pid, found in json.loads((orders_repo.parent / "vet.json").read_text())[
            "properties"
        ].items()
    }
    assert verdicts == {
        "orders.total.non_negative": "strong",
        "orders.total.matches_lines": "strong",
        "orders.id.stable": "strong",
        "orders.json.round_trip": "weak",
    }
    assert snapshot(orders_repo) == before


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

    monkeypatch.setattr(vet_command, "mutate_batch", crash)
    result = run_cli(*vet_args(root))
    assert result.code == 70
    assert "internal error" in result.first_error_line
    assert snapshot(root) == before
    assert not (root.parent / "vet.json").exists()
    assert list(scratch_parent.iterdir()) == []
