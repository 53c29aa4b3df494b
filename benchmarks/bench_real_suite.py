"""`properties` on a real project's pytest suite against plain pytest on the same tests.

    .venv/bin/python benchmarks/bench_real_suite.py [--suite tomli|markdown-it-py|jsonschema|
        tomli-trimmed] [--runs 7] [--warmup 1] [--suite-source PATH_OR_GIT_URL]
        [--suite-python PYTHON] [--compare-with OTHER_PYTHON]

Copies the suite into a throwaway git repository, drafts its fixture pin from the case
files (`draft-pin`), writes its properties pin twice, with `product_paths` (the closed
oracle set: the audit hook armed in every process of the run) and without (the oracles
inferred), commits, and checks the digest. Then runs, in rotating order after a warm-up
round, plain `python -m pytest -q -p no:cacheprovider -p no:hypothesispytest` on the suite's
tests (none of the suites uses hypothesis; see PLUGINS_OFF in bench_properties.py) and
`three-ledger properties` under each pin, and prints a Markdown table of wall and CPU time
medians (CPU: user + sys of the command and every process under it) and their ratios.
Every contender runs without PYTHONDONTWRITEBYTECODE, so that the warm-up round writes the
project's bytecode and every later run reads it (`bench_properties.contender_environment`).

Suites (SUITES below), each fetched at benchmark time and never committed:

- `tomli`: tomli 2.4.0's sdist, fetched with `pip download` into a temporary folder. That
  sdist holds no tests (only the package), so the run falls back to the trimmed copy in
  tests/data/tomli/project and says so; `--suite-source` gives the full suite (974 case
  files).
- `markdown-it-py`: markdown-it-py 4.2.0's own tests (981, the CommonMark spec and the
  ported fixtures among them), cloned from GitHub at its tag.
- `jsonschema`: jsonschema 4.26.0's test suite (7,815 tests, most of them the
  JSON-Schema-Test-Suite's cases, which it keeps in `json/`), cloned from GitHub at its tag.
- `tomli-trimmed`: the trimmed copy, committed in tests/data/tomli (no network).

`--suite-source` takes a checkout (a folder) or a git URL or repository to clone at the
suite's tag (a local mirror works as well as GitHub). A suite with requirements of its own
(mdurl, referencing, ...) runs its tests with the Python of a virtual environment made for it
under bench-data/ (`pip install` of pytest, at the version this Python has, and those
requirements; reused while they stay the same), or with `--suite-python`. The gates run
that Python as their test command too: only the gate differs between the contenders.

With --compare-with, also the closed run of another checkout's gate: OTHER_PYTHON is the
Python of a virtual environment where that version of three-ledger is installed; it runs
the same repository and the same test command, in the same alternation.
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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench_properties import (
    PLUGINS_OFF,
    byte_compile,
    contender_environment,
    write_plugin_rewrites,
)
from timing import Run, median_cpu_seconds, median_seconds, run_measured, spread

PYTHON = Path(sys.executable)
REPO = Path(__file__).resolve().parent.parent
TOMLI = REPO / "tests" / "data" / "tomli"
BENCH_DATA = REPO / "bench-data"
PLAIN = "plain pytest"
INFERRED = "properties, inferred oracles"
CLOSED = "properties, closed oracles (audit hook)"
COMPARED = "properties, closed oracles, --compare-with"
TARGET_RATIO = 1.15  # issue 25: CPU time of the gate over plain pytest, on each real suite


@dataclass(frozen=True)
class Suite:
    """A real project's suite, and how it is pinned."""

    # The properties pin, with product_paths: the closed variant; inferred drops them.
    properties: Mapping[str, Any]
    fixtures_dir: str  # every file under it is pinned, in a pin drafted from the folder
    tests: tuple[str, ...]  # what pytest runs
    pytest_options: tuple[str, ...] = ()  # after `-q` and PLUGINS_OFF, before the tests
    sdist: str | None = None  # fetched with `pip download --no-binary :all:` when given
    copy: Path | None = None  # committed: the suite, or the fallback when the sdist has none
    repository: str | None = None  # cloned at `tag` when there is neither an sdist nor a copy
    tag: str | None = None  # what --suite-source is cloned at, when it is a git URL
    # Installed beside pytest into the suite's own virtual environment: its test dependencies.
    requirements: tuple[str, ...] = ()


def _pin(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


TOMLI_TRIMMED = Suite(
    properties=_pin(TOMLI / "pins" / "properties.json"),
    fixtures_dir="tests/data",
    tests=("tests",),
    pytest_options=("-o", "pythonpath=src"),  # stands in for installing the package
    copy=TOMLI / "project",
    tag="2.4.0",
)
MARKDOWN_FIXTURES = (
    "alerts.md", "commonmark_extras.md", "commonmark_spec.md", "disable_code_block.md",
    "fatal.md", "issue-fixes.md", "linkify.md", "normalize.md", "proto.md", "punycode.md",
    "smartquotes.md", "strikethrough.md", "strikethrough_single_tilde.md", "tables.md",
    "tasklists.md", "typographer.md", "xss.md",
)  # fmt: skip
MARKDOWN_IT = Suite(
    properties={
        "pin_id": "proppin-markdown-it",
        "fixture_pins": ["fixpin-markdown-it-fixtures"],
        "oracle_paths": ["tests"],
        "product_paths": ["markdown_it/**"],
        "properties": [
            {
                "id": "markdown.port.fixtures",
                "claim": "Each ported fixture renders to the HTML it records.",
                "domain": list(MARKDOWN_FIXTURES),
                "test": "tests/test_port/test_fixtures.py",
            },
            {
                "id": "markdown.commonmark.spec",
                "claim": "Every example of the CommonMark spec renders as the spec says.",
                "domain": ["commonmark_spec.md"],
                "test": "tests/test_cmark_spec/test_spec.py",
            },
        ],
    },
    fixtures_dir="tests/test_port/fixtures",
    tests=("tests",),
    pytest_options=("-o", "pythonpath=."),  # stands in for installing the package
    repository="https://github.com/executablebooks/markdown-it-py",
    tag="v4.2.0",
    requirements=(
        "mdurl~=0.1",
        "linkify-it-py",
        "mdit-py-plugins",
        "pytest-regressions",
        "pytest-timeout",
    ),
)
# The suite's own skips (the start of each reason): format checkers whose optional packages
# are not installed, and the cases jsonschema marks as unsupported.
JSONSCHEMA_SKIPS = (
    "Format checker '",
    "Leap seconds are unsupported.",
    "ECMA regex support will be added",
    "Complex email validation is (intentionally) unsupported.",
    "Vocabulary support is still in-progress.",
)
JSONSCHEMA_DRAFTS = ("draft3", "draft4", "draft6", "draft7", "draft2019-09", "draft2020-12")
JSONSCHEMA = Suite(
    properties={
        "pin_id": "proppin-jsonschema",
        "fixture_pins": ["fixpin-jsonschema-suite"],
        "oracle_paths": ["jsonschema/tests"],
        "product_paths": ["jsonschema/*.py", "jsonschema/benchmarks/**"],
        "properties": [
            {
                "id": "jsonschema.suite",
                "claim": "Every case of the JSON-Schema-Test-Suite validates as it records.",
                "domain": [f"{draft}/" for draft in JSONSCHEMA_DRAFTS],
                "test": "jsonschema/tests/test_jsonschema_test_suite.py",
            },
            {
                "id": "jsonschema.validators",
                "claim": "The validators check, iterate and explain errors as documented.",
                "domain": ["draft2020-12/"],
                "test": "jsonschema/tests/test_validators.py",
            },
        ],
        "expected_skips": [
            {"test": "jsonschema/tests/test_jsonschema_test_suite.py", "reason": reason}
            for reason in JSONSCHEMA_SKIPS
        ],
    },
    fixtures_dir="json/tests",  # `latest` is a link there: the copy holds its files
    tests=("jsonschema/tests",),
    repository="https://github.com/python-jsonschema/jsonschema",
    tag="v4.26.0",
    # Its own metadata too (test_cli asks for its version): installed without dependencies,
    # while the checkout's package is the one imported (pytest puts ROOT first).
    requirements=(
        "attrs>=22.2.0",
        "jsonschema-specifications>=2023.03.6",
        "referencing>=0.28.4",
        "rpds-py>=0.25.0",
        "jsonpath-ng",
        "--no-deps",
        "jsonschema==4.26.0",
    ),
)
SUITES = {
    "tomli": replace(
        TOMLI_TRIMMED, sdist="tomli==2.4.0", repository="https://github.com/hukkin/tomli"
    ),
    "markdown-it-py": MARKDOWN_IT,
    "jsonschema": JSONSCHEMA,
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


def find_source(suite: Suite, given: str | None, temp: Path) -> tuple[Path, str]:
    """The folder to copy, and a sentence on where it came from."""
    if given is not None and Path(given).is_dir() and not _is_bare_repository(Path(given)):
        return Path(given).absolute(), f"the checkout {given}"
    if given is not None or (suite.sdist is None and suite.copy is None):
        return clone(given or suite.repository, suite.tag, temp / "clone")
    if suite.sdist is not None:
        try:
            return fetch_sdist(suite, temp / "sdist"), f"the sdist of {suite.sdist} from PyPI"
        except SourceUnusable as reason:
            if suite.copy is None:
                raise SystemExit(f"bench_real_suite: {reason}") from None
            return suite.copy, f"the copy {suite.copy.relative_to(REPO)}, not the sdist: {reason}"
    assert suite.copy is not None
    return suite.copy, f"the copy {suite.copy.relative_to(REPO)}"


def _is_bare_repository(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir()


def clone(url: str | None, tag: str | None, where: Path) -> tuple[Path, str]:
    """A shallow clone of URL (a git URL, or a repository on disk) at TAG."""
    if url is None or tag is None:
        raise SystemExit("bench_real_suite: this suite needs --suite-source, a checkout")
    cloned = subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", "--branch", tag, url, str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if cloned.returncode != 0:
        last = (cloned.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"bench_real_suite: `git clone --branch {tag} {url}` failed ({last})")
    return where, f"{url} at {tag}"


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
    closed = dict(suite.properties)
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


def contenders(
    project: Project, suite: Suite, tests_python: Path, other: Path | None
) -> dict[str, Contender]:
    """Plain pytest and the gates, all running the same test command with TESTS_PYTHON."""
    pytest = [str(tests_python), "-m", "pytest", "-q", *PLUGINS_OFF.split()]
    test_command = [*pytest, *suite.pytest_options, *suite.tests]

    def gate(python: Path, model: str, ledger_name: str) -> Contender:
        """`properties` under the pin of that oracle model: pins/closed.json or inferred.json."""
        ledger = project.root.parent / ledger_name
        argv = tool(
            python, "properties", "--pin", "pins/fixtures.json", "--expect-digest",
            project.digest, "--properties", f"pins/{model}.json", "--base", "HEAD",
            "--command", shlex.join(test_command), "--out", str(ledger),
        )  # fmt: skip
        return Contender(argv, ledger, model)

    measured = {
        PLAIN: Contender(test_command),
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
            run = run_measured(PYTHON, measured[name].argv, root, env=contender_environment())
            child = checked_child_seconds(measured[name])
            if round_number >= warmup:
                timed[name].append(run)
                if child is not None:
                    children[name].append(child)
    return timed, children


def suite_python(name: str, suite: Suite, given: Path | None) -> Path:
    """The Python that runs the suite's tests: GIVEN, this one for a suite with no requirements,
    else that of a virtual environment under bench-data/ with pytest (this Python's version)
    and the suite's requirements, made once and reused while they stay the same."""
    if given is not None:
        return given
    if not suite.requirements:
        return PYTHON
    import pytest

    wanted = [f"pytest=={pytest.__version__}", *suite.requirements]
    venv = BENCH_DATA / f"suite-venv-{name}"
    stamp = venv / "bench-requirements.json"
    python = venv / "bin" / "python"
    if stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == wanted:
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([str(PYTHON), "-m", "venv", str(venv)], check=True)
    install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # Each run of "--no-deps" and what follows it in its own install.
    groups = " ".join(wanted).split(" --no-deps ")
    subprocess.run([*install, *groups[0].split()], check=True)
    for group in groups[1:]:
        subprocess.run([*install, "--no-deps", *group.split()], check=True)
    stamp.write_text(json.dumps(wanted), encoding="utf-8")
    return python


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
        "--suite-source",
        "--source",
        metavar="PATH_OR_GIT_URL",
        help="a checkout of the suite's project, or a git URL or repository to clone at its tag",
    )
    parser.add_argument(
        "--suite-python",
        type=absolute,
        metavar="PYTHON",
        help="the Python that runs the suite's tests (default: a venv made under bench-data/)",
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
    tests_python = suite_python(args.suite, suite, args.suite_python)
    write_plugin_rewrites(tests_python)
    with tempfile.TemporaryDirectory(prefix="bench-real-suite-") as temp:
        source, origin = find_source(suite, args.suite_source, Path(temp))
        project = build_repository(source, suite, Path(temp) / "repo")
        measured = contenders(project, suite, tests_python, args.compare_with)
        timed, children = measure(project.root, measured, args.runs, args.warmup)
    print(f"Suite {args.suite}, from {origin}.")
    print(
        f"{project.case_files} case files pinned; plain pytest: {tests_summary(timed[PLAIN][0])}."
    )
    print(f"{args.runs} timed runs each after {args.warmup} warm-up round(s), in rotating order; "
          "CPU is user + sys of the command and every process under it.\n")  # fmt: skip
    if tests_python != PYTHON:
        print(f"Tests run by {tests_python} (every contender).\n")
    print_tables(timed, children)
    ratio = median_cpu_seconds(timed[CLOSED]) / median_cpu_seconds(timed[PLAIN])
    verdict = "met" if ratio <= TARGET_RATIO else "**missed**"
    print(f"\nTarget (issue 25): the closed run <= {TARGET_RATIO:.2f}x plain pytest in CPU "
          f"time: {ratio:.2f}x, {verdict}.")  # fmt: skip
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
