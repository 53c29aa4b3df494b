"""`vet` against its targets: the example in <= 20 s, and a conformance suite of 1,000 fixtures
with two properties in <= 8x one `properties` run on the same suite.

    .venv/bin/python benchmarks/bench_vet.py [--runs 3] [--fixtures 1000] [--tiny]

The example is `examples/orders` in a throwaway git repository, vetted with its own test
command. The conformance suite is generated (seeded): a small `key = value` record parser,
`fixtures/valid/` holding record files and the JSON each must parse to (read when the test
module is imported, as conformance suites do), `fixtures/invalid/` holding records that
must be rejected, and one parametrised test per fixture. `properties` and `vet` run on it in
alternation after a warm-up round; figures are medians. Every vet run must exit 0 with every
property killed by a well-formed mutant (the example's round-trip property is weak by design).

With `--jobs`, `vet --jobs 1` and `--jobs 2` run on the conformance suite in alternated
pairs, their ledgers compared pair by pair, and the median time of each of vet's phases
(from its `vet: phases:` progress line) is printed per `--jobs`, so that the bound on what
`--jobs` can save is read from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import Run, median_seconds, run_measured, spread

PYTHON = Path(sys.executable)
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "orders"
EXAMPLE_TARGET_S = 20.0
RATIO_TARGET = 8.0
# Issue 26: vet --jobs 2 at least this many times faster than --jobs 1.
JOBS_TARGET = 1.6

PARSER = '''"""A tiny record format: `key = value` lines; values are integers, "strings", true,
false, or [lists, of, integers]."""

import re

KEY = re.compile(r"[a-z][a-z0-9_]*")
INTEGER = re.compile(r"-?[0-9]+")
STRING = re.compile(r'"[^"]*"')


class ParseError(ValueError):
    pass


def parse(text):
    document = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        key, equals, value = (part.strip() for part in line.partition("="))
        if not equals or not KEY.fullmatch(key) or key in document:
            raise ParseError(f"line {number}: bad key {key!r}")
        document[key] = value_of(value, number)
    return document


def value_of(text, number):
    if text in ("true", "false"):
        return text == "true"
    if STRING.fullmatch(text):
        return text[1:-1]
    if INTEGER.fullmatch(text):
        return int(text)
    if text.startswith("[") and text.endswith("]"):
        items = [item.strip() for item in text[1:-1].split(",") if item.strip()]
        if all(INTEGER.fullmatch(item) for item in items):
            return [int(item) for item in items]
    raise ParseError(f"line {number}: bad value {text!r}")
'''
VALID_TESTS = """import json
from pathlib import Path

import pytest
from records import parse

CASES = sorted((Path(__file__).parent.parent / "fixtures" / "valid").glob("*.rec"))
EXPECTED = {case.stem: json.loads(case.with_suffix(".json").read_text()) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.stem)
def test_valid(case):
    assert parse(case.read_text()) == EXPECTED[case.stem]
"""
INVALID_TESTS = """from pathlib import Path

import pytest
from records import ParseError, parse

CASES = sorted((Path(__file__).parent.parent / "fixtures" / "invalid").glob("*.rec"))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.stem)
def test_invalid(case):
    with pytest.raises(ParseError):
        parse(case.read_text())
"""
BROKEN_LINES = ("count 3", 'name = "open', "size = 12x", "sizes = [1, 2", "Bad = 1", "= 4")


def record(rng: random.Random, index: int) -> tuple[str, dict[str, object]]:
    """A valid record and the value it parses to."""
    name, count, active = f"item-{index:04d}", rng.randint(-1000, 1000), rng.random() < 0.5
    sizes = [rng.randint(0, 99) for _ in range(rng.randint(0, 4))]
    lines = [
        f'name = "{name}"',
        f"count = {count}",
        f"active = {'true' if active else 'false'}",
        f"sizes = [{', '.join(map(str, sizes))}]",
    ]
    return "\n".join(lines) + "\n", {"name": name, "count": count, "active": active, "sizes": sizes}


def build_conformance(root: Path, fixtures: int) -> None:
    """The suite, its pins, committed; FIXTURES files: half valid pairs, half invalid."""
    rng = random.Random(1000)
    pairs = fixtures // 4
    for index in range(pairs):
        text, value = record(rng, index)
        write(root / f"fixtures/valid/{index:04d}.rec", text)
        write(root / f"fixtures/valid/{index:04d}.json", json.dumps(value, indent=2) + "\n")
    for index in range(fixtures - 2 * pairs):
        text, _ = record(rng, index)
        lines = text.splitlines()
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(BROKEN_LINES))
        write(root / f"fixtures/invalid/{index:04d}.rec", "\n".join(lines) + "\n")
    write(root / "records.py", PARSER)
    write(root / "tests/test_valid.py", VALID_TESTS)
    write(root / "tests/test_invalid.py", INVALID_TESTS)
    write(root / "pytest.ini", "[pytest]\npythonpath = .\naddopts = -p no:cacheprovider\n")
    fixtures_tree = (root / "fixtures").rglob("*")
    files = sorted(p.relative_to(root).as_posix() for p in fixtures_tree if p.is_file())
    pin = {"pin_id": "fixpin-conformance", "algorithm": "sha256", "files": files}
    write(root / "pins/fixtures.json", json.dumps(pin, indent=2) + "\n")
    properties = {
        "pin_id": "proppin-conformance",
        "fixture_pins": ["fixpin-conformance"],
        "properties": [
            {
                "id": "records.valid",
                "claim": "Every valid record parses to the value its JSON twin records.",
                "domain": ["valid/"],
                "test": "tests/test_valid.py::test_valid",
            },
            {
                "id": "records.invalid",
                "claim": "Every invalid record is rejected with ParseError.",
                "domain": ["invalid/"],
                "test": "tests/test_invalid.py::test_invalid",
            },
        ],
    }
    write(root / "pins/properties.json", json.dumps(properties, indent=2) + "\n")
    commit(root)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def commit(root: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=root, check=True
        )


def tool(*args: str) -> list[str]:
    # -P: ROOT (the working folder) stays off the gate's own sys.path.
    return [str(PYTHON), "-P", "-m", "three_ledger", *args]


def vet_command(test_command: str, out: str) -> list[str]:
    return tool(
        "vet", "--pin", "pins/fixtures.json", "--properties", "pins/properties.json",
        "--command", test_command, "--out", out, "--no-cache",
    )  # fmt: skip


def checked_vet(ledger_path: Path, weak: set[str]) -> dict[str, str]:
    """The verdicts of a vet ledger; every one strong, but those expected weak."""
    verdicts = {
        pid: found["verdict"]
        for pid, found in json.loads(ledger_path.read_text())["properties"].items()
    }
    expected = {pid: "weak" if pid in weak else "strong" for pid in verdicts}
    if verdicts != expected:
        raise SystemExit(f"bench_vet: unexpected verdicts {verdicts}")
    return verdicts


def bench_example(work: Path, runs: int, env: dict[str, str]) -> tuple[list[Run], int]:
    root = work / "orders"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", "ledgers"))
    commit(root)
    argv = vet_command(f"{PYTHON} -m pytest -q properties/test_orders.py", "../example-vet.json")
    measured = []
    for _ in range(runs):
        measured.append(run_measured(PYTHON, argv, root, env=env))
        checked_vet(work / "example-vet.json", weak={"orders.json.round_trip"})
    return measured, json.loads((work / "example-vet.json").read_text())["runs"]


def bench_conformance(
    work: Path, fixtures: int, runs: int, env: dict[str, str]
) -> tuple[list[Run], list[Run], int]:
    root = work / "conformance"
    build_conformance(root, fixtures)
    digest = subprocess.run(
        tool("digest", "--pin", "pins/fixtures.json", "--out", "../fixture.json"),
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    test_command = f"{PYTHON} -m pytest -q tests"
    properties = tool(
        "properties", "--pin", "pins/fixtures.json", "--expect-digest", digest,
        "--properties", "pins/properties.json", "--command", test_command, "--base", "HEAD",
        "--out", "../property.json",
    )  # fmt: skip
    vet = vet_command(test_command, "../conformance-vet.json")
    scored: list[Run] = []
    vetted: list[Run] = []
    for attempt in range(runs + 1):  # the first round warms the caches
        one = run_measured(PYTHON, properties, root, env=env)
        two = run_measured(PYTHON, vet, root, env=env)
        checked_vet(work / "conformance-vet.json", weak=set())
        if attempt:
            scored.append(one)
            vetted.append(two)
    return scored, vetted, json.loads((work / "conformance-vet.json").read_text())["runs"]


def same_but_timing(path: Path) -> dict[str, object]:
    """A vet ledger without the fields that differ between two honest runs of it."""
    ledger = json.loads(path.read_text())
    for key in ("ledger_id", "duration_ms", "recorded_at"):
        ledger.pop(key)
    return ledger


def bench_jobs(work: Path, fixtures: int, pairs: int, env: dict[str, str]) -> int:
    """`--jobs 1` against `--jobs 2` on the conformance suite, alternated pairs, no cache."""
    load_before = os.getloadavg()
    root = work / "conformance"
    build_conformance(root, fixtures)
    test_command = f"{PYTHON} -m pytest -q tests"
    argv = {
        jobs: [*vet_command(test_command, f"../jobs-{jobs}.json"), "--jobs", str(jobs),
               "--no-cache"]
        for jobs in (1, 2)
    }  # fmt: skip
    timed: dict[int, list[Run]] = {1: [], 2: []}
    said = {jobs: work / f"jobs-{jobs}.stderr" for jobs in (1, 2)}
    for attempt in range(pairs + 1):  # the first pair warms the caches
        order = (1, 2) if attempt % 2 else (2, 1)
        for jobs in order:
            run = run_measured(PYTHON, argv[jobs], root, env=env, stderr=said[jobs])
            checked_vet(work / f"jobs-{jobs}.json", weak=set())
            if attempt:
                timed[jobs].append(run)
        if same_but_timing(work / "jobs-1.json") != same_but_timing(work / "jobs-2.json"):
            raise SystemExit("bench_vet: --jobs 1 and --jobs 2 wrote different ledgers")
    one, two = median_seconds(timed[1]), median_seconds(timed[2])
    ends = (load_before, os.getloadavg())
    loads = " / ".join(" ".join(f"{x:.2f}" for x in load) for load in ends)
    print(f"{pairs} timed pair(s), alternated; medians; load average (1, 5, 15 min) before / "
          f"after: {loads}\n")  # fmt: skip
    print("| vet on the conformance suite | median s | min-max s | CPU s |")
    print("|---|---|---|---|")
    for jobs in (1, 2):
        print(f"| --jobs {jobs} | {median_seconds(timed[jobs]):.2f} | "
              f"{spread(timed[jobs], digits=2)} | {cpu(timed[jobs])} |")  # fmt: skip
    print_phases({jobs: phase_times(said[jobs].read_text())[1:] for jobs in (1, 2)}, timed)
    speedup = one / two
    print(f"\n| target | measured | verdict |\n|---|---|---|\n"
          f"| --jobs 2 >= {JOBS_TARGET:g}x faster than --jobs 1 | {speedup:.2f}x | "
          f"{'met' if speedup >= JOBS_TARGET else '**missed**'} |")  # fmt: skip
    return 0


PHASES = re.compile(r"^vet: phases: (.*) \(([0-9.]+) s in all\)$", re.MULTILINE)
RUN_END = re.compile(r"^vet: run (\d+): .* in ([0-9.]+) s", re.MULTILINE)


def phase_times(said: str) -> list[dict[str, float]]:
    """Per vet in SAID (its stderr), the seconds of each phase, of the baseline run (the
    whole, or its slices together) and of its slowest mutant run, from its progress lines."""
    found = []
    start = 0
    for match in PHASES.finditer(said):
        times = {}
        for part in match.group(1).split(", "):
            name, seconds, _ = part.rsplit(" ", 2)
            times[name] = float(seconds)
        runs = {
            int(number): float(seconds)
            for number, seconds in RUN_END.findall(said[start : match.start()])
        }
        times["(baseline run)"] = runs.get(1, 0.0)
        times["(slowest mutant run)"] = max((s for n, s in runs.items() if n > 1), default=0.0)
        times["(in all)"] = float(match.group(2))
        found.append(times)
        start = match.end()
    return found


def print_phases(phases: dict[int, list[dict[str, float]]], timed: dict[int, list[Run]]) -> None:
    """Median phase times per --jobs: where the time went, and so what --jobs can save."""
    names = list(dict.fromkeys(name for each in phases.values() for one in each for name in one))
    print("\n| phase (median s) | --jobs 1 | --jobs 2 |\n|---|---|---|")
    for name in names:
        cells = [statistics.median(one.get(name, 0.0) for one in phases[jobs]) for jobs in (1, 2)]
        print(f"| {name} | {cells[0]:.2f} | {cells[1]:.2f} |")
    start_up = [
        statistics.median(
            run.seconds - one["(in all)"]
            for run, one in zip(timed[jobs], phases[jobs], strict=True)
        )
        for jobs in (1, 2)
    ]
    print(f"| (start-up: wall less in all) | {start_up[0]:.2f} | {start_up[1]:.2f} |")


def cpu(runs: list[Run]) -> str:
    return f"{sorted(run.cpu_seconds for run in runs)[len(runs) // 2]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fixtures", type=int, default=1000)
    parser.add_argument("--tiny", action="store_true", help="40 fixtures, one run: a smoke test")
    parser.add_argument(
        "--jobs", action="store_true", help="compare vet --jobs 1 with --jobs 2 (RUNS pairs)"
    )
    args = parser.parse_args()
    runs, fixtures = (1, 40) if args.tiny else (args.runs, args.fixtures)
    env = dict(os.environ)
    if args.jobs:
        with tempfile.TemporaryDirectory(prefix="bench-vet-") as temp:
            return bench_jobs(Path(temp), fixtures, runs, env)
    with tempfile.TemporaryDirectory(prefix="bench-vet-") as temp:
        work = Path(temp)
        example, example_runs = bench_example(work, runs, env)
        scored, vetted, vet_runs = bench_conformance(work, fixtures, runs, env)
    example_s = median_seconds(example)
    ratio = median_seconds(vetted) / median_seconds(scored)
    print(f"{runs} timed run(s) each; medians; CPU is user+sys of the command and its children\n")
    print("| what | median s | min-max s | CPU s | runs of the test command |")
    print("|---|---|---|---|---|")
    print(f"| vet, example | {example_s:.2f} | {spread(example, digits=2)} | {cpu(example)} | "
          f"{example_runs} |")  # fmt: skip
    print(f"| properties, conformance ({fixtures} fixtures) | {median_seconds(scored):.2f} | "
          f"{spread(scored, digits=2)} | {cpu(scored)} | 1 |")  # fmt: skip
    print(f"| vet, conformance ({fixtures} fixtures, 2 properties) | "
          f"{median_seconds(vetted):.2f} | {spread(vetted, digits=2)} | {cpu(vetted)} | "
          f"{vet_runs} |\n")  # fmt: skip
    print("| target | measured | verdict |")
    print("|---|---|---|")
    print(f"| vet on the example <= {EXAMPLE_TARGET_S:g} s | {example_s:.2f} s | "
          f"{'met' if example_s <= EXAMPLE_TARGET_S else '**missed**'} |")  # fmt: skip
    print(f"| vet on the conformance suite <= {RATIO_TARGET:g}x properties | {ratio:.2f}x | "
          f"{'met' if ratio <= RATIO_TARGET else '**missed**'} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
