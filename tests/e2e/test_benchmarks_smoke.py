"""The benchmarks in benchmarks/, on tiny trees: they run, and their agreement check bites.

No timing is asserted: `make test` must not depend on how busy the machine is.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

BENCHMARKS = REPO / "benchmarks"
SHAPES = ["large-8x128MiB", "huge-1x2GiB", "small-100000x1KiB", "small-500000x1KiB", "mixed-5000"]


def run_script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def tree_fingerprint(root: Path) -> str:
    """One hash over every file's relative path and bytes under ROOT."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_tiny_trees_agree_across_every_contender(tmp_path: Path) -> None:
    result = run_script("bench_digest.py", "--data", tmp_path, "--tiny", "--runs", "1")
    assert result.returncode == 0, result.stderr
    assert "every digest agreed" in result.stdout
    for shape in SHAPES:
        assert f"| {shape} | three-ledger digest |" in result.stdout
        assert f"| {shape} | baseline (read_bytes + rglob) |" in result.stdout
        assert f"| {shape} | single SHA-256 stream (hashlib) |" in result.stdout
    assert "| small-100000x1KiB | git hash-object --stdin-paths |" in result.stdout
    assert "| small-500000x1KiB | git hash-object --stdin-paths |" in result.stdout


def test_an_older_checkout_and_cold_runs_join_the_alternation(tmp_path: Path) -> None:
    """--compare-with runs another checkout's digest, --cold every contender evicted first."""
    older = tmp_path / "older"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{REPO}", older], check=True)
    commit = subprocess.run(
        ["git", "-C", older, "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    result = run_script(
        "bench_digest.py", "--data", tmp_path / "data", "--tiny", "--runs", "1",
        "--warmup", "0", "--shape", "mixed-5000", "--compare-with", older, "--cold",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for contender in (
        "three-ledger digest",
        f"three-ledger digest, --compare-with {commit}",
        "three-ledger digest, cold",
        f"three-ledger digest, --compare-with {commit}, cold",
        "baseline (read_bytes + rglob), cold",
    ):
        assert f"| mixed-5000 | {contender} |" in result.stdout
    assert "and cold (`, cold`: the tree evicted first)" in result.stdout


@pytest.mark.parametrize(
    ("dumps", "caught"),
    [
        ("json.dumps(ledger, indent=2) + '\\n'", "digest: three-ledger digest 0000"),
        ("json.dumps(ledger)", "three-ledger digest: the ledger is not in the form of SPEC 4.1"),
    ],
)
def test_a_tool_that_disagrees_is_caught(tmp_path: Path, dumps: str, caught: str) -> None:
    wrong = tmp_path / "wrong-digest"
    wrong.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        'out = sys.argv[sys.argv.index("--out") + 1]\n'
        'ledger = {"digest": "0" * 64, "files": []}\n'
        f'open(out, "w").write({dumps})\n'
        'print("0" * 64)\n'
    )
    wrong.chmod(0o755)
    data = tmp_path / "data"
    result = run_script(
        "bench_digest.py", "--data", data, "--tiny", "--runs", "1", "--warmup", "0",
        "--shape", "mixed-5000", "--three-ledger", wrong,
    )  # fmt: skip
    assert result.returncode == 1
    assert caught in result.stderr


def test_trees_are_the_same_bytes_every_time(tmp_path: Path) -> None:
    for data in (tmp_path / "first", tmp_path / "second"):
        result = run_script("make_trees.py", "--data", data, "--tiny", "--shape", "mixed-5000")
        assert result.returncode == 0, result.stderr
    first, second = (tmp_path / name / "mixed-5000-tiny" for name in ("first", "second"))
    assert tree_fingerprint(first) == tree_fingerprint(second)
    assert len(list((first / "fixtures").rglob("*.dat"))) == 60


def test_startup_benchmark_runs() -> None:
    result = run_script("bench_startup.py", "--runs", "1", "--warmup", "0")
    assert result.returncode == 0, result.stderr
    assert "| three-ledger --version |" in result.stdout
    targets = "Targets against `python -c pass` (issue 25): `three-ledger --version` <= 2x: "
    assert targets in result.stdout


def test_imports_benchmark_times_a_command_and_a_compared_version() -> None:
    result = run_script(
        "bench_imports.py", "--command", "check-pins", "--runs", "1", "--warmup", "0",
        "--compare-with", sys.executable,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| version |")
    assert rows[1].startswith("| this checkout |")
    assert rows[2].startswith(f"| {sys.executable} |")


def counted_rows(stdout: str) -> dict[str, float]:
    """count_instructions.py's table: each process and its millions of instructions."""
    rows = (
        line.strip("| ").split(" | ")[:2]
        for line in stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| process")
    )
    return {label: float(value.replace(",", "")) for label, value in rows}


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_instruction_counts_see_the_gates_plugin_and_its_tripwire() -> None:
    """The child's environment is the gate's: each layer of it executes more than the last."""
    result = run_script("count_instructions.py", "--tests", "1", "--skip-gate")
    assert result.returncode == 0, result.stderr
    rows = counted_rows(result.stdout)
    counts = list(rows.values())
    assert list(rows) == [
        "plain pytest",
        "pytest, the gate's environment without the tripwire",
        "the gate's test child",
    ]
    assert counts[0] < counts[1] < counts[2]
    event = re.search(r"An audit event: ([\d,]+) instructions .*, ([\d,]+) more", result.stdout)
    assert event is not None, result.stdout
    assert all(int(cost.replace(",", "")) > 0 for cost in event.groups())


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_instruction_counts_of_a_real_suite_see_each_layer_and_the_closed_set() -> None:
    """On a real suite's run, the closed set's child is the inferred one with the measurement's
    hook staged first: it executes more still (the script refuses a count whose hook recorded
    nothing, or whose command did not run its tests)."""
    result = run_script("count_instructions.py", "--suite", "tomli-trimmed", "--skip-gate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tomli-trimmed's suite from the copy tests/data/tomli/project;")
    rows = counted_rows(result.stdout)
    counts = list(rows.values())
    assert list(rows) == [
        "plain pytest",
        "pytest, the gate's environment without the tripwire (oracles inferred)",
        "the gate's test child, oracles inferred",
        "the gate's test child, closed oracle set",
    ]
    assert counts[0] < counts[1] < counts[2] < counts[3]


def test_properties_benchmark_runs_and_scores_every_test() -> None:
    result = run_script(
        "bench_properties.py", "--tests", "5", "--runs", "1", "--decompose", "--without-layers"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("5 trivial tests, 1 runs each; network ban: ")
    for contender in ("plain pytest", "pytest + plugin", "three-ledger properties"):
        assert f"| {contender} | " in result.stdout
    assert "Target (issue 16): `three-ledger properties` <= 1.10x plain pytest: " in result.stdout
    assert "| the gate's own process (start-up, checks, results, ledger) | " in result.stdout
    # The gate without the PID and mount layers really ran without them (its own assertion).
    assert "| three-ledger properties, without the sandbox's layers | " in result.stdout
    assert "The sandbox's layers against the same gate without them: " in result.stdout


def test_shards_benchmark_combines_to_the_unsharded_statuses() -> None:
    result = run_script("bench_shards.py", "--tests", "8", "--properties", "2", "--runs", "1")
    # It exits non-zero when the combined statuses differ from the unsharded run's.
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("8 tests, 2 properties, medians of 1 runs\n")
    rows = {line.split(" | ")[0].lstrip("| ") for line in result.stdout.splitlines()}
    assert {
        "pytest --collect-only",
        "shard-plan --shards 4",
        "4 shard runs (sum)",
        "combine",
        "pytest (plain)",
        "properties (all tests)",
    } <= rows


def test_real_suite_benchmark_runs_the_trimmed_tomli_copy_under_both_pins() -> None:
    result = run_script("bench_real_suite.py", "--suite", "tomli-trimmed", "--runs", "1")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()[:2]
    assert first == "Suite tomli-trimmed, from the copy tests/data/tomli/project."
    assert second.startswith("42 case files pinned; plain pytest: 16 passed"), second
    rows = {line.split(" | ")[0].lstrip("| ") for line in result.stdout.splitlines()}
    assert {
        "plain pytest",
        "properties, inferred oracles",
        "properties, closed oracles (audit hook)",
        "closed / inferred: the audit hook and the closed set",
    } <= rows


def test_real_suite_benchmark_clones_the_suite_source_at_the_suites_tag(tmp_path: Path) -> None:
    source = tmp_path / "tomli"
    shutil.copytree(REPO / "tests" / "data" / "tomli" / "project", source)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-C", str(source)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tomli"], check=True)
    subprocess.run([*git, "tag", "2.4.0"], check=True)
    # After the tag: a clone of the branch's tip would pin 43 case files.
    (source / "tests" / "data" / "after-the-tag.txt").write_text("not in 2.4.0\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "after the tag"], check=True)
    url = f"file://{source}"
    result = run_script(
        "bench_real_suite.py", "--suite", "tomli", "--runs", "1", "--warmup", "0",
        "--suite-source", url,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()[:2]
    assert first == f"Suite tomli, from {url} at 2.4.0."
    assert second.startswith("42 case files pinned; plain pytest: 16 passed"), second
    assert "Target (issue 25): the closed run <= 1.15x plain pytest in CPU time: " in result.stdout


def test_real_suite_benchmark_names_a_source_it_cannot_clone(tmp_path: Path) -> None:
    missing = f"file://{tmp_path / 'nothing-here'}"
    result = run_script("bench_real_suite.py", "--suite", "tomli", "--suite-source", missing)
    assert result.returncode == 1
    assert f"bench_real_suite: `git clone --branch 2.4.0 {missing}` failed (" in result.stderr
    assert "Traceback" not in result.stderr


def test_digest_profile_walks_every_step(tmp_path: Path) -> None:
    result = run_script("profile_digest.py", "--data", tmp_path, "--tiny", "--tracemalloc")
    assert result.returncode == 0, result.stderr
    for step in ["load the pin", "check the tree", "hash the files", "check and write the ledger"]:
        assert f"| {step} | " in result.stdout


def test_bench_vet_runs_on_tiny_suites_and_checks_the_verdicts() -> None:
    result = run_script("bench_vet.py", "--tiny")
    assert result.returncode == 0, result.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in result.stdout.splitlines()}
    assert rows["vet, example"].endswith("| 11 |")
    # The baseline, then each property's first mutant (each a subject of its own) kills it.
    assert rows["vet, conformance (40 fixtures, 2 properties)"].endswith("| 3 |")
    assert "| vet on the conformance suite <= 8x properties |" in result.stdout


def test_bench_vet_compares_jobs_1_with_jobs_2_on_a_tiny_suite() -> None:
    # The script itself stops when the two ledgers differ beyond their timing fields.
    result = run_script("bench_vet.py", "--tiny", "--jobs")
    assert result.returncode == 0, result.stderr
    assert "| --jobs 1 | " in result.stdout
    assert "| --jobs 2 | " in result.stdout
    assert "| --jobs 2 >= 1.6x faster than --jobs 1 | " in result.stdout


def test_the_flake_rerun_benchmark_gives_a_slope_over_the_runs_counted() -> None:
    result = run_script("bench_flake.py", "--runs", "1", "--warmup", "0", "--reruns", "1", "2")
    assert result.returncode == 0, result.stderr
    # The victim never stops early: two modes a round, to the count asked.
    assert "| flake-evidence --reruns 1 | 2 |" in result.stdout
    assert "| flake-evidence --reruns 2 | 4 |" in result.stdout
    assert "One rerun: " in result.stdout
