"""`properties` on a real project's pytest suite against plain pytest on the same tests.

    .venv/bin/python benchmarks/bench_real_suite.py [--suite tomli] [--runs 7] [--warmup 1]
        [--source DIR] [--compare-with OTHER_PYTHON]

Copies the suite into a throwaway git repository, drafts its fixture pin from the case
files (`draft-pin`), writes its properties pin twice, with `product_paths` (the closed
oracle set: the audit hook armed in every process of the run) and without (the oracles
inferred), commits, and checks the digest. Then runs, in rotating order after a warm-up
round, plain `python -m pytest -q -p no:cacheprovider` on the suite's tests and
`three-ledger properties` under each pin, and prints a Markdown table of wall and CPU time
medians (CPU: user + sys of the command and every process under it) and their ratios.

Suites (SUITES below):

- `tomli`: tomli 2.4.0's sdist, fetched with `pip download` into a temporary folder. That
  sdist holds no tests (only the package), so the run falls back to the trimmed copy in
  tests/data/tomli/project and says so. `--source DIR` takes a checkout instead (tomli's
  full suite: `git clone --branch 2.4.0 https://github.com/hukkin/tomli`, 974 case files).
- `tomli-trimmed`: the trimmed copy, committed in tests/data/tomli (no network).

markdown-it-py is not measured yet: its sdist holds its tests, but they need mdurl,
pytest-regressions and pytest-timeout, which are not in this environment.

With --compare-with, also the closed run of another checkout's gate: OTHER_PYTHON is the
Python of a virtual environment where that version of three-ledger is installed; it runs
the same repository with its own pytest, in the same alternation.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from bench_properties import byte_compile
from timing import Run, median_cpu_seconds, median_seconds, run_measured, spread

PYTHON = Path(sys.executable)
REPO = Path(__file__).resolve().parent.parent
TOMLI = REPO / "tests" / "data" / "tomli"
PLAIN = "plain pytest"
INFERRED = "properties, inferred oracles"
CLOSED = "properties, closed oracles (audit hook)"
COMPARED = "properties, closed oracles, --compare-with"


@dataclass(frozen=True)
class Suite:
    """A real project's suite, and how it is pinned."""

    properties_pin: Path  # declares product_paths: the closed variant; inferred drops them
    fixtures_dir: str  # every file under it is pinned, in a pin drafted from the folder
    tests: tuple[str, ...]  # what pytest runs
    pytest_options: tuple[str, ...] = ()  # after `-q -p no:cacheprovider`, before the tests
    sdist: str | None = None  # fetched with `pip download --no-binary :all:` when given
    copy: Path | None = None  # committed: the suite, or the fallback when the sdist has none


TOMLI_TRIMMED = Suite(
    properties_pin=TOMLI / "pins" / "properties.json",
    fixtures_dir="tests/data",
    tests=("tests",),
    pytest_options=("-o", "pythonpath=src"),  # stands in for installing the package
    copy=TOMLI / "project",
)
SUITES = {
    "tomli": replace(TOMLI_TRIMMED, sdist="tomli==2.4.0"),
    "tomli-trimmed": TOMLI_TRIMMED,
}


@dataclass(frozen=True)
class Contender:
    argv: list[str]
    ledger: Path | None = None  # the property ledger a gate run writes, checked after each run
    oracle_model: str = ""


@dataclass(frozen=True)
class Project:
    root: Path
    digest: str
    case_files: int


class SourceUnusable(Exception):
    """The sdist cannot be fetched, or holds no suite to run."""


def find_source(suite: Suite, checkout: Path | None, temp: Path) -> tuple[Path, str]:
    """The folder to copy, and a sentence on where it came from."""
    if checkout is not None:
        return checkout, f"the checkout {checkout}"
    if suite.sdist is not None:
        try:
            return fetch_sdist(suite, temp / "sdist"), f"the sdist of {suite.sdist} from PyPI"
        except SourceUnusable as reason:
            if suite.copy is None:
                raise SystemExit(f"bench_real_suite: {reason}") from None
            return suite.copy, f"the copy {suite.copy.relative_to(REPO)}, not the sdist: {reason}"
    assert suite.copy is not None, "a suite has an sdist, a committed copy or both"
    return suite.copy, f"the copy {suite.copy.relative_to(REPO)}"


def fetch_sdist(suite: Suite, where: Path) -> Path:
    """The sdist unpacked; SourceUnusable when pip fails or it lacks the tests or the cases."""
    assert suite.sdist is not None
    download = [str(PYTHON), "-m", "pip", "download", "--quiet", "--no-deps"]
    fetched = subprocess.run(
        [*download, "--no-binary", ":all:", "--dest", str(where), suite.sdist],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if fetched.returncode != 0:
        last = (fetched.stderr.strip().splitlines() or ["no message"])[-1]
        raise SourceUnusable(f"`pip download` of {suite.sdist} failed ({last})")
    (archive,) = where.iterdir()
    shutil.unpack_archive(archive, where / "unpacked", filter="data")
    (top,) = (where / "unpacked").iterdir()
    absent = [
        f"{path}/" for path in (*suite.tests, suite.fixtures_dir) if not (top / path).is_dir()
    ]
    if absent:
        count = sum(1 for path in top.rglob("*") if path.is_file())
        raise SourceUnusable(f"{archive.name} holds {count} files, no {' and no '.join(absent)}")
    return top


def tool(python: Path, *args: str) -> list[str]:
    """A three-ledger command for PYTHON; -P keeps the checkout off its sys.path."""
    return [str(python), "-P", "-m", "three_ledger", *args]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=root,
                   check=True)  # fmt: skip


def build_repository(source: Path, suite: Suite, root: Path) -> Project:
    """The suite with its pins, committed; the fixture digest checked."""
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc"))
    ignore = root / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    if "__pycache__" not in text:  # the gate refuses bytecode git would count in the change
        ignore.write_text(text + "\n__pycache__/\n", encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    closed = json.loads(suite.properties_pin.read_text(encoding="utf-8"))
    draft = subprocess.run(
        tool(PYTHON, "draft-pin", "--fixtures-dir", suite.fixtures_dir, "--with-digest",
             "--pin-id", closed["fixture_pins"][0]),
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    fixture_pin = json.loads(draft.stdout)
    inferred = {key: value for key, value in closed.items() if key != "product_paths"}
    (root / "pins").mkdir()
    for name, pin in [("fixtures", fixture_pin), ("closed", closed), ("inferred", inferred)]:
        (root / "pins" / f"{name}.json").write_text(json.dumps(pin, indent=2) + "\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the suite, pinned")
    digest = subprocess.run(
        tool(PYTHON, "digest", "--pin", "pins/fixtures.json", "--out", "../fixture.json"),
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert digest == fixture_pin["digest"], (digest, fixture_pin["digest"])
    return Project(root, digest, len(fixture_pin["files"]))


def contenders(project: Project, suite: Suite, other: Path | None) -> dict[str, Contender]:
    def test_command(python: Path) -> list[str]:
        pytest = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        return [*pytest, *suite.pytest_options, *suite.tests]

    def gate(python: Path, model: str, ledger_name: str) -> Contender:
        """`properties` under the pin of that oracle model: pins/closed.json or inferred.json."""
        ledger = project.root.parent / ledger_name
        argv = tool(
            python, "properties", "--pin", "pins/fixtures.json", "--expect-digest",
            project.digest, "--properties", f"pins/{model}.json", "--base", "HEAD",
            "--command", shlex.join(test_command(python)), "--out", str(ledger),
        )  # fmt: skip
        return Contender(argv, ledger, model)

    measured = {
        PLAIN: Contender(test_command(PYTHON)),
        INFERRED: gate(PYTHON, "inferred", "property-inferred.json"),
        CLOSED: gate(PYTHON, "closed", "property-closed.json"),
    }
    if other is not None:
        measured[COMPARED] = gate(other, "closed", "property-closed-other.json")
    return measured


def checked_child_seconds(contender: Contender) -> float | None:
    """How long the gate's test command ran, from its ledger, once the ledger is checked."""
    if contender.ledger is None:
        return None
    ledger = json.loads(contender.ledger.read_text(encoding="utf-8"))
    contender.ledger.unlink()
    statuses = set(ledger["status_by_id"].values())
    assert statuses == {"pass"}, ledger["status_by_id"]
    assert ledger["oracle_model"] == contender.oracle_model, ledger["oracle_model"]
    assert not ledger["oracle_moved"], ledger["oracle_changes"]
    return float(ledger["duration_ms"]) / 1000


def measure(
    root: Path, measured: dict[str, Contender], runs: int, warmup: int
) -> tuple[dict[str, list[Run]], dict[str, list[float]]]:
    """Every contender in turn, the order rotating each round; the warm-up rounds untimed."""
    timed: dict[str, list[Run]] = {name: [] for name in measured}
    children: dict[str, list[float]] = {name: [] for name in measured}
    names = list(measured)
    for round_number in range(warmup + runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            run = run_measured(PYTHON, measured[name].argv, root)
            child = checked_child_seconds(measured[name])
            if round_number >= warmup:
                timed[name].append(run)
                if child is not None:
                    children[name].append(child)
    return timed, children


def tests_summary(run: Run) -> str:
    """pytest's last line without its time: `16 passed, 744 subtests passed`."""
    last = run.stdout.decode(errors="replace").strip().splitlines()[-1]
    return last.strip("= ").rsplit(" in ", 1)[0]


def absolute(path: str) -> Path:
    """PATH made absolute, its links kept: a venv's python is a link out of the venv."""
    return Path(path).absolute()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES), default="tomli")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--source", type=absolute, help="a checkout of the suite's project, instead of its sdist"
    )
    parser.add_argument(
        "--compare-with",
        type=absolute,
        metavar="OTHER_PYTHON",
        help="also time the closed run of the gate installed for this Python (another version)",
    )
    args = parser.parse_args()
    suite = SUITES[args.suite]
    for python in (PYTHON, args.compare_with):
        if python is not None:
            byte_compile(python)
    with tempfile.TemporaryDirectory(prefix="bench-real-suite-") as temp:
        source, origin = find_source(suite, args.source, Path(temp))
        project = build_repository(source, suite, Path(temp) / "repo")
        measured = contenders(project, suite, args.compare_with)
        timed, children = measure(project.root, measured, args.runs, args.warmup)
    print(f"Suite {args.suite}, from {origin}.")
    print(
        f"{project.case_files} case files pinned; plain pytest: {tests_summary(timed[PLAIN][0])}."
    )
    print(f"{args.runs} timed runs each after {args.warmup} warm-up round(s), in rotating order; "
          "CPU is user + sys of the command and every process under it.\n")  # fmt: skip
    print_tables(timed, children)
    return 0


def print_tables(timed: dict[str, list[Run]], children: dict[str, list[float]]) -> None:
    print("| command | median wall s | min-max wall s | median CPU s | test command in the gate, "
          "median wall s | peak RSS MiB |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, runs in timed.items():
        child = f"{statistics.median(children[name]):.3f}" if children[name] else "-"
        peak = max(run.peak_rss_kib for run in runs) / 1024
        print(f"| {name} | {median_seconds(runs):.3f} | {spread(runs)} | "
              f"{median_cpu_seconds(runs):.3f} | {child} | {peak:.0f} |")  # fmt: skip
    pairs = [
        (f"{INFERRED} / {PLAIN}", INFERRED, PLAIN),
        (f"{CLOSED} / {PLAIN}", CLOSED, PLAIN),
        ("closed / inferred: the audit hook and the closed set", CLOSED, INFERRED),
    ]
    if COMPARED in timed:
        pairs.append(("closed / closed of the --compare-with version", CLOSED, COMPARED))
    print("\n| ratio of medians | wall | CPU | wall, difference s | CPU, difference s |")
    print("|---|---|---|---|---|")
    for label, top, bottom in pairs:
        walls = median_seconds(timed[top]), median_seconds(timed[bottom])
        cpus = median_cpu_seconds(timed[top]), median_cpu_seconds(timed[bottom])
        print(f"| {label} | {walls[0] / walls[1]:.2f}x | {cpus[0] / cpus[1]:.2f}x | "
              f"{walls[0] - walls[1]:+.3f} | {cpus[0] - cpus[1]:+.3f} |")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
