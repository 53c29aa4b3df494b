"""The command line's grammar: every option declared once, composed into each subcommand.

`build_parser` is all `main` needs; a parse error exits 64 (usage), never 2 (refused).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from three_ledger import __version__, env_policy
from three_ledger.cli.help_text import COMMAND_HELP
from three_ledger.errors import UsageError
from three_ledger.frozen import frozen

PROG = "three-ledger"
# SPEC 4.2: `properties --timeout` defaults to half an hour.
DEFAULT_TIMEOUT_S = 1800.0
# Where `vet` writes its ledger when no --out is given.
DEFAULT_VET_LEDGER = Path("ledgers/vet_ledger.json")
# Where `flake-evidence` writes its ledger when no --out is given.
DEFAULT_FLAKE_EVIDENCE = Path("ledgers/flake_evidence.json")
# `flake-evidence --reruns` and `--budget-s` (and `gate --flake-reruns`, `--flake-budget-s`).
DEFAULT_FLAKE_RERUNS = 20
DEFAULT_FLAKE_BUDGET_S = 600.0
# `check-pins --warn-days`: a flake entry due for review this soon is warned about.
DEFAULT_WARN_DAYS = 14
# `flake-audit --min-runs`: the runs an entry needs before it is judged.
DEFAULT_MIN_RUNS = 10
# Where `selftest` writes its ledger when no --out is given.
DEFAULT_SELFTEST_LEDGER = Path("ledgers/selftest.json")
# SPEC 4.7: the pin id `draft-pin` writes when none is given.
DEFAULT_PIN_ID = "fixpin-draft"
# What `init` collects with when no --command is given.
DEFAULT_INIT_COMMAND = ["python", "-m", "pytest", "-q"]
# What `add_subparsers` returns; argparse does not export its class.
Subparsers = Any


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors exit 64 (never 2, which means "score refused")."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every argument added (to check its metavar), and a
        # formatter without a width imports `shutil` for the terminal's: 5 ms of a start
        # that never prints help. The width is the one `shutil` would give.
        # Every HelpFormatter takes `width`; typeshed's protocol names `prog` alone.
        return self.formatter_class(prog=self.prog, width=_help_width())  # type: ignore[call-arg]


def _help_width() -> int:
    """What `argparse.HelpFormatter` takes when given no width: the terminal's columns (or
    COLUMNS, or 80), less 2, found as `shutil.get_terminal_size` finds them."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    stdout = sys.__stdout__
    if columns <= 0 and stdout is not None:
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns if columns > 0 else 80) - 2


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _command_words(text: str) -> list[str]:
    import shlex  # only the commands that run a test command pay for it

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split {text!r}: {exc}") from None
    if not words:
        raise argparse.ArgumentTypeError("the command is empty")
    return words


def _ledger_path(text: str) -> Path:
    """An output file: never `-`, since a ledger is a file written whole, atomically."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "'-' (standard output) is not a file: a ledger is written atomically, give a path"
        )
    return Path(text)


def _positive_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def _variable_name(text: str) -> str:
    if not env_policy.is_variable_name(text):
        raise argparse.ArgumentTypeError(f"not an environment variable name: {text!r}")
    return text


@frozen
class Option:
    """One command-line option as every command that takes it declares it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]

    def but(self, **changes: Any) -> Option:
        """The same option with some settings changed (a command's own help, say)."""
        return Option(self.flags, {**self.settings, **changes})

    def named(self, *flags: str, **changes: Any) -> Option:
        """The same option under other FLAGS (`gate --flake-reruns` is `--reruns`)."""
        return Option(flags, {**self.settings, **changes})

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(*self.flags, **self.settings)


def option(*flags: str, **settings: Any) -> Option:
    """An option, written as `parser.add_argument` takes it."""
    return Option(flags, settings)


class Opts:
    """The options more than one command takes, declared once; commands compose them."""

    # flake-evidence's reruns and budget; gate takes them as --flake-reruns, --flake-budget-s.
    reruns = option(
        "--reruns",
        type=_positive_count,
        default=DEFAULT_FLAKE_RERUNS,
        metavar="N",
        help=f"runs per mode at most (default {DEFAULT_FLAKE_RERUNS})",
    )
    budget_s = option(
        "--budget-s",
        type=_positive_seconds,
        default=DEFAULT_FLAKE_BUDGET_S,
        metavar="S",
        help=f"seconds for every rerun together (default {DEFAULT_FLAKE_BUDGET_S:g})",
    )

    pin = option("--pin", type=Path, required=True, help="fixture pin (JSON)")
    properties = option("--properties", type=Path, required=True, help="properties pin (JSON)")
    command = option(
        "--command", type=_command_words, required=True, metavar="CMD", help="test command"
    )
    root = option("--root", type=Path, default=Path("."), help="checkout root (default .)")
    out = option("--out", type=_ledger_path, required=True)
    log = option("--log", type=Path, metavar="PATH")
    base = option("--base", metavar="REV")
    # For the commands that run the suite without scoring it against a base.
    new_tests_base = base.but(
        help="leave out test modules new against REV, as properties does "
        "(default: the CI event's base, if any)"
    )
    quiet = option("--quiet", action="store_true", help="no progress lines, only the results")
    flake_pin = option("--flake-pin", type=Path, metavar="FLAKES", help="flake pin (JSON)")
    timeout = option(
        "--timeout",
        type=_positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"default {DEFAULT_TIMEOUT_S:g}",
    )
    fixture_ledger = option(
        "--fixture-ledger", type=Path, required=True, metavar="F", help="fixture ledger"
    )
    property_ledger = option(
        "--property-ledger", type=Path, required=True, metavar="P", help="property ledger"
    )
    summary_md = option("--summary-md", type=Path, metavar="PATH", help="Markdown report")
    verdict_junit = option(
        "--verdict-junit", type=Path, metavar="FILE", help="verdict as JUnit XML"
    )
    verdict_dotenv = option(
        "--verdict-dotenv", type=Path, metavar="FILE", help="GitLab dotenv report of the verdict"
    )
    # For every command that runs the suite: the closed environment's one-run exception.
    keep_env = option(
        "--keep-env",
        type=_variable_name,
        action="append",
        default=[],
        metavar="NAME",
        help="keep the job's NAME in the test child's environment for this run (repeatable; "
        "recorded in the ledger; a name that looks like a credential is refused: list it in "
        "the properties pin's env)",
    )


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps a description as usual, but keeps text that holds its own line breaks (an
    example, a table of exit codes) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _command(commands: Subparsers, name: str, *options: Option, **settings: Any) -> Any:
    """Add subcommand NAME with OPTIONS, in order; SETTINGS go to its parser, which ends its
    help with the command's example and exit codes (`help_text.py`)."""
    settings.setdefault("formatter_class", _HelpFormatter)
    parser = commands.add_parser(name, epilog=COMMAND_HELP[name].epilog(), **settings)
    for each in options:
        each.add_to(parser)
    return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole grammar; with COMMAND, one of the subcommands, only that subcommand's (a
    start-up saving: building all of them is most of what a fast command's parse costs)."""
    parser = _Parser(
        prog=PROG,
        description="A merge gate that keeps fixture, property and flake evidence in "
        "three separate ledgers.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    if command in _COMMANDS:
        _COMMANDS[command](commands)
        return parser
    for add_command in _COMMANDS.values():
        add_command(commands)
    return parser


def _add_digest(commands: Subparsers) -> None:
    _command(
        commands,
        "digest",
        Opts.pin,
        Opts.root,
        Opts.out.but(help="fixture ledger to write"),
        Opts.base.but(help="on a digest mismatch, name files moved since REV"),
        help="write the fixture ledger for a fixture pin",
        description="Hash every file the fixture pin names under ROOT into one SHA-256 digest, "
        "refusing "
        "a pinned file that is missing, a file in the fixtures folder the pin does not name, "
        "and a reviewed `digest` (or, without one, the base's bytes) the tree no longer has. "
        "Writes the fixture ledger and prints the digest",
    )


def _add_plan(commands: Subparsers) -> None:
    _command(
        commands,
        "plan",
        Opts.pin,
        Opts.properties,
        Opts.command.but(required=False, help="pytest command"),
        option(
            "--junit-xml",
            type=Path,
            metavar="FILE",
            help="with --from-report: read the ids from this JUnit report instead of collecting",
        ),
        option(
            "--from-report",
            action="store_true",
            help="plan from an existing JUnit report (most non-pytest runners cannot collect)",
        ),
        Opts.root,
        Opts.flake_pin,
        Opts.timeout,
        Opts.log.but(help="keep the collection's output"),
        option("--json", action="store_true", help="print one JSON document"),
        Opts.new_tests_base,
        Opts.keep_env,
        help="show what each pinned property matches; no test runs",
        description="Run the test command as `properties` would, with --collect-only added "
        "through PYTEST_ADDOPTS, and print per property how many tests it matches (and the "
        "first 5), close node ids for a selector that matches nothing, marker ids the pin "
        "does not list, skips already known at collection, and how many tests lie outside "
        "every property and flake entry.",
    )


def _add_properties(commands: Subparsers) -> None:
    _command(
        commands,
        "properties",
        Opts.pin,
        option("--expect-digest", required=True, metavar="HEX", help="digest to insist on"),
        Opts.properties,
        Opts.command,
        Opts.out.but(help="property ledger to write"),
        Opts.root,
        Opts.base.but(help="base revision the oracles are compared to"),
        Opts.timeout,
        Opts.quiet,
        option(
            "--junit-xml",
            type=Path,
            metavar="PATH",
            help="read results from the JUnit XML report the command writes at PATH "
            "(removed before the run; relative to the current directory; see "
            "docs/runners.md)",
        ),
        Opts.log.but(help="command log (default OUT.log)"),
        Opts.flake_pin,
        option(
            "--shard-plan",
            type=Path,
            metavar="PLAN",
            help="run one slice of this shard plan and write a property_shard ledger",
        ),
        option("--shard", type=_index, metavar="K", help="with --shard-plan: slice K"),
        Opts.keep_env,
        help="score the pinned properties on a matching fixture digest",
        description="Check the pins, the fixture tree against --expect-digest and the tree "
        "against the "
        "base; run the command with the gate's pytest plugin (or read its --junit-xml "
        "report); record pass, fail, skip or missing per property id, whether the oracles "
        "moved against the base, and what the run measured",
    )


def _index(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a slice index (0, 1, ...): {text!r}")
    return int(text)


def _count_of_shards(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a number of shards >= 1: {text!r}")
    return int(text)


def _add_shard_plan(commands: Subparsers) -> None:
    _command(
        commands,
        "shard-plan",
        Opts.pin,
        Opts.properties,
        Opts.command.but(help="pytest command"),
        option("--shards", type=_count_of_shards, required=True, metavar="N"),
        option(
            "--durations", type=Path, metavar="FILE", help="JSON {node id: seconds} to balance by"
        ),
        Opts.root,
        Opts.flake_pin,
        option("--all", action="store_true", help="every collected test, not only pinned"),
        Opts.timeout,
        Opts.quiet,
        Opts.log.but(help="keep the collection's output"),
        Opts.out.but(help="shard plan to write"),
        Opts.new_tests_base,
        Opts.keep_env,
        help="fix the tests to run and split them into N slices for sharded scoring",
        description="Collect the tests once, as `plan` does, keep those a pinned property or "
        "flake entry matches (or all, with --all), and split them into N slices, balanced by "
        "--durations when given, else by count. Shards run with `properties --shard-plan "
        "PLAN --shard K`; `combine` merges them.",
    )


def _add_combine(commands: Subparsers) -> None:
    _command(
        commands,
        "combine",
        option("--plan", type=Path, required=True, help="the shard plan"),
        Opts.out.but(help="property ledger to write"),
        option("shards", type=Path, nargs="+", metavar="SHARD", help="shard ledgers"),
        help="merge the property_shard ledgers of a shard plan into one property ledger",
        description="Check that every shard of the plan is present once, ran on the plan's tree, "
        "pins "
        "and command, and ran exactly its slice; then score the properties over the union of "
        "their results, as one unsharded run would",
    )


def _add_dual_pin(commands: Subparsers) -> None:
    _command(
        commands,
        "dual-pin",
        option("--left", type=Path, help="property ledger scored on the first pin"),
        option("--right", type=Path, help="property ledger scored on the second pin"),
        option("--not-run", action="store_true", help="record that only one pin was run"),
        Opts.out.but(help="dual-pin ledger to write"),
        help="compare property ledgers from two fixture pins",
        description="Compare the statuses of two property ledgers scored on the same change with "
        "two "
        "fixture pins: any difference is fixture drift, never a flake. --not-run records "
        "that only one pin was scored",
    )


def _add_flake_observe(commands: Subparsers) -> None:
    _command(
        commands,
        "flake-observe",
        Opts.fixture_ledger,
        Opts.property_ledger,
        Opts.flake_pin.but(required=True, help="flake pin"),
        option("--test-id", required=True, metavar="ID", help="test_id in the flake pin"),
        Opts.out.but(help="flake ledger to write"),
        Opts.root,
        Opts.base.but(help="the flake pin must be unchanged since REV"),
        help="note that a pre-listed flaky test fired again (or exit 3)",
        description="Record that a test already on the human flake pin did not pass in this run; "
        "written "
        "only when the fixture and property ledgers agree on the digest, the oracles did "
        "not move, the pin is unchanged since the base and the entry has not expired",
    )


def _add_merge(commands: Subparsers) -> None:
    _command(
        commands,
        "merge",
        Opts.fixture_ledger,
        Opts.property_ledger,
        option("--dual-pin", type=Path, metavar="D", help="dual-pin ledger"),
        option(
            "--flake-ledger",
            type=Path,
            action="append",
            default=[],
            metavar="FL",
            help="flake ledger (repeatable)",
        ),
        Opts.flake_pin.but(help="check flake ledgers"),
        option(
            "--flake-evidence",
            type=Path,
            metavar="E",
            help="flake evidence ledger: a flake note whose test it finds failing every rerun "
            "is no flake",
        ),
        Opts.pin.but(required=False, help="fixture pin: recompute the live digest"),
        Opts.root,
        option("--pins-dir", type=Path, metavar="DIR", help="with --base: pin mutation"),
        Opts.base.but(help="with --pins-dir: the reviewed revision"),
        Opts.properties.but(
            required=False,
            metavar="PIN",
            help="with --pins-dir/--base: the properties pin the property ledger must be "
            "scored under",
        ),
        Opts.out.but(help="merge decision to write"),
        Opts.summary_md,
        Opts.verdict_junit,
        Opts.verdict_dotenv,
        help="apply the merge table and write the decision",
        description="Read the fixture, property, dual-pin and flake ledgers, bind them to ROOT's "
        "HEAD, "
        "the base and the pins, and apply the merge table's first matching row: reject, "
        "human_review or review, with the reason",
    )


def _add_gate(commands: Subparsers) -> None:
    _command(
        commands,
        "gate",
        option("--pins-dir", type=Path, required=True, metavar="DIR", help="pins folder"),
        Opts.command,
        Opts.root,
        Opts.base.but(help="base revision (default: the CI event's)"),
        option(
            "--out-dir",
            type=_ledger_path,
            default=Path("ledgers"),
            metavar="DIR",
            help="default ledgers",
        ),
        Opts.summary_md.but(metavar="FILE"),
        Opts.verdict_junit,
        Opts.verdict_dotenv,
        option(
            "--junit-xml",
            type=Path,
            metavar="REPORT",
            help="the runner's JUnit report (not pytest)",
        ),
        Opts.timeout,
        Opts.quiet,
        Opts.keep_env,
        option(
            "--flake-evidence",
            action="store_true",
            help="after flake-observe, run flake-evidence when there are candidates, writing "
            "flake_evidence.json in --out-dir; evidence for people: only a flake note whose test "
            "fails every rerun moves the posture, to human_review",
        ),
        Opts.reruns.named(
            "--flake-reruns",
            default=None,
            help=f"flake-evidence's runs per mode at most (default {DEFAULT_FLAKE_RERUNS})",
        ),
        Opts.budget_s.named(
            "--flake-budget-s",
            default=None,
            help="seconds for all of flake-evidence's reruns together (default "
            f"{DEFAULT_FLAKE_BUDGET_S:g})",
        ),
        help="run the whole workflow (digest, properties, dual-pin, flake-observe, merge)",
        description="Find the properties pin, the fixture pins it names and the flake pin in "
        "--pins-dir; run digest and properties on each fixture pin, dual-pin (or --not-run), "
        "flake-observe for each flake entry that did not pass, then merge. Each ledger is a "
        "file of its own in --out-dir; a step that refuses leaves its ledger absent and the "
        "chain goes on to merge, whose exit code gate gives. A change that touches only "
        "--pins-dir, or only tests, is not scored: it goes to its owners as human_review.",
    )


def _add_check_pins(commands: Subparsers) -> None:
    _command(
        commands,
        "check-pins",
        option("--pins-dir", type=Path, default=Path("pins"), metavar="DIR", help="default pins"),
        Opts.root,
        option(
            "--warn-days",
            type=_whole_number,
            default=DEFAULT_WARN_DAYS,
            metavar="N",
            help=f"warn about flake entries due for review within N days (default "
            f"{DEFAULT_WARN_DAYS})",
        ),
        help="validate every pin in a pins folder, listing every problem",
        description="Check that each pin parses and matches its schema, that fixture_pins "
        "names fixture pins of the folder, that every domain names pinned files, and that "
        "every pinned path exists under ROOT. A refusal lists every problem. An expired "
        "review_by is a warning, not a failure; so are, on stderr, a flake entry due for "
        "review within --warn-days, one with no owner, and two whose selectors match the "
        "same test.",
    )


def _add_draft_pin(commands: Subparsers) -> None:
    _command(
        commands,
        "draft-pin",
        option(
            "--fixtures-dir",
            required=True,
            action="append",
            metavar="DIR",
            help="folder under ROOT (repeatable: several folders make a fixtures_dirs pin)",
        ),
        Opts.root,
        option("--pin-id", default=DEFAULT_PIN_ID, metavar="ID", help=f"default {DEFAULT_PIN_ID}"),
        option("--with-digest", action="store_true", help="fill in the reviewed digest"),
        option(
            "--tracked-only",
            action="store_true",
            help="list only files git tracks (a clean checkout has no others)",
        ),
        help="print a draft fixture pin listing every file of a fixtures folder",
        description="Print to stdout a fixture pin listing every regular file under "
        "ROOT/DIR, in digest order. Nothing is written: the draft becomes a pin only "
        "through review, in a commit of its own.",
    )


def _pinned_source(text: str) -> str:
    from three_ledger.ci_workflow import is_pinned_source

    if not is_pinned_source(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a pinned source: give the gate's repository at a full commit id "
            "(git+https://HOST/PATH@COMMIT) or a wheel's https URL, never a bare name"
        )
    return text


def _add_init(commands: Subparsers) -> None:
    _command(
        commands,
        "init",
        Opts.root,
        Opts.command.but(
            required=False,
            default=DEFAULT_INIT_COMMAND,
            help="pytest command that collects the tests (default "
            f"{' '.join(DEFAULT_INIT_COMMAND)})",
        ),
        option(
            "--fixtures-dir",
            action="append",
            default=[],
            metavar="DIR",
            help="a data folder under ROOT (repeatable; default: the folders init finds)",
        ),
        option(
            "--ci",
            choices=["github", "gitlab"],
            default="github",
            help="the CI the workflow is for (default github)",
        ),
        option(
            "--package",
            type=_pinned_source,
            metavar="SPEC",
            help="where the workflow installs the gate from: git+https://...@COMMIT or a "
            "wheel's https URL (default: this installation's source, if pinned)",
        ),
        option(
            "--requirements",
            metavar="FILE",
            help="the tests' lockfile under ROOT the workflow installs from (default: the "
            "first of requirements-test.txt, requirements/test.txt, ... found)",
        ),
        Opts.timeout.but(help=f"for the collection, default {DEFAULT_TIMEOUT_S:g}"),
        Opts.keep_env,
        help="draft the pins and the CI workflow of a repository that has none",
        description="Find the data folders, collect the tests (none runs) and write drafts to "
        "ROOT/pins.draft/: a fixture pin of the folders (fixtures_dirs, with its digest), a "
        "properties pin with one property per test module (product_paths, min_tests, "
        "expected_skips as plan suggests them) and an empty flake pin; and the workflow for "
        "GitHub (.github/workflows/three-ledger.yml) or GitLab (.gitlab/three-ledger.yml). "
        "It writes nothing over an existing file, never writes a pin and commits nothing; it "
        "prints the next steps.",
    )


def _add_explain(commands: Subparsers) -> None:
    _command(
        commands,
        "explain",
        option("left", type=Path, metavar="LEFT", help="fixture ledger (before)"),
        option("right", type=Path, metavar="RIGHT", help="fixture ledger (after)"),
        help="say which pinned files moved between two fixture ledgers",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="One line per pinned path added, removed or changed, sorted by path, "
        "tab-separated:\n\n"
        "  KIND<TAB>PATH<TAB>size BEFORE -> AFTER<TAB>sha256 BEFORE -> AFTER\n\n"
        "KIND is added, removed or changed; '-' marks the side without the file.",
    )


def _whole_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _add_vet(commands: Subparsers) -> None:
    _command(
        commands,
        "vet",
        Opts.pin,
        Opts.properties,
        Opts.command,
        Opts.root,
        Opts.out.but(
            required=False, default=DEFAULT_VET_LEDGER, help=f"default {DEFAULT_VET_LEDGER}"
        ),
        Opts.log.but(help="every run's output (default OUT.log)"),
        option(
            "--per-file",
            type=_positive_count,
            metavar="N",
            help="also mutate up to N domain files one at a time (a fixed sample)",
        ),
        Opts.timeout.but(help=f"per run of the command, default {DEFAULT_TIMEOUT_S:g}"),
        Opts.quiet,
        option(
            "--strict",
            action="store_true",
            help="count a weak property (only malformed input kills it) as surviving",
        ),
        option(
            "--jobs",
            type=_positive_count,
            default=None,
            metavar="N",
            help="mutate up to N properties' files at once, each in a scratch copy of its "
            "own (default: the CPU count); the ledger is the same for every N",
        ),
        option(
            "--no-cache",
            action="store_true",
            help="neither reuse nor store mutant results in the cache "
            "($XDG_CACHE_HOME/three-ledger/vet)",
        ),
        Opts.new_tests_base,
        Opts.keep_env,
        help="watch each pinned property fail on its own fixtures",
        description="Copy ROOT to a scratch folder, run the command once unmutated (every "
        "property must pass; which pinned files each test opens is recorded), then mutate "
        "each property's domain files and run it again: a property passes vet when a mutant "
        "killed it and it read one of its domain files. The user's tree is never written.",
    )


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0.5 and below 1: {text!r}")
    return value


def _add_flake_evidence(commands: Subparsers) -> None:
    _command(
        commands,
        "flake-evidence",
        Opts.fixture_ledger,
        Opts.property_ledger,
        Opts.pin,
        Opts.properties,
        Opts.command,
        Opts.flake_pin,
        option(
            "--candidates",
            nargs="+",
            default=[],
            metavar="ID",
            help="node ids to rerun (default: flake entries that did not pass, the tests "
            "behind a failing property, unpinned failures)",
        ),
        Opts.reruns,
        Opts.budget_s,
        option(
            "--confidence",
            type=_confidence,
            default=0.95,
            metavar="LEVEL",
            help="the intervals' level (default 0.95)",
        ),
        Opts.root,
        Opts.out.but(
            required=False,
            default=DEFAULT_FLAKE_EVIDENCE,
            help=f"default {DEFAULT_FLAKE_EVIDENCE}",
        ),
        Opts.log.but(help="every rerun's output (default OUT.log)"),
        Opts.quiet,
        Opts.keep_env,
        help="rerun flake candidates in the sandbox and say what kind of failure each is",
        description="Rerun each candidate in a scratch copy of ROOT, each time in a fresh "
        "process in the sandbox of properties: in the order it ran (run_order), alone, and "
        "after the same tests reversed. Verdicts: non_deterministic, order_dependent_victim "
        "(with its polluter), order_dependent_brittle, consistent_failure, not_reproduced, "
        "infrastructure, each count with its exact interval. Writes evidence, never a pin or "
        "a posture; merge does not read it.",
    )


def _add_flake_audit(commands: Subparsers) -> None:
    parser = _command(
        commands,
        "flake-audit",
        option(
            "--min-runs",
            type=_positive_count,
            default=DEFAULT_MIN_RUNS,
            metavar="N",
            help=f"runs an entry needs before it is judged (default {DEFAULT_MIN_RUNS})",
        ),
        Opts.flake_pin.but(
            help="audit this pin's entries, those no run saw included (default: every "
            "entry the ledgers name)"
        ),
        option("--json", action="store_true", help="the report as JSON"),
        help="list flake entries that never fired, or failed every time, over past runs",
        description="Read the property and flake ledgers of past runs (files, or folders "
        "searched for *.json) and list each flake entry's outcomes: entries that passed in "
        "every run and entries that failed in every run are candidates for removal from the "
        "pin. Only the keys it needs are read; a ledger or key it cannot use is named on "
        "stderr and left out. Prints only; never writes a pin.",
    )
    parser.add_argument(
        "ledgers", nargs="+", type=Path, metavar="LEDGER", help="ledger files or folders"
    )


def _add_selftest(commands: Subparsers) -> None:
    _command(
        commands,
        "selftest",
        option("--pins-dir", type=Path, required=True, metavar="DIR", help="pins folder"),
        Opts.command,
        Opts.root,
        Opts.out.but(
            required=False,
            default=DEFAULT_SELFTEST_LEDGER,
            help=f"selftest ledger to write (default {DEFAULT_SELFTEST_LEDGER})",
        ),
        option(
            "--only",
            nargs="+",
            default=[],
            metavar="NAME",
            help="plant only these (the clean run always comes first)",
        ),
        option(
            "--keep",
            type=Path,
            metavar="DIR",
            help="keep every run's ledgers and logs here; must not exist or be empty",
        ),
        Opts.timeout.but(help=f"per run of the command, default {DEFAULT_TIMEOUT_S:g}"),
        Opts.quiet,
        help="plant known regressions in a scratch clone and watch the gate reject each",
        description="Clone ROOT's HEAD to a scratch folder (the user's tree is only read), run "
        "the gate on an empty change (it must not be rejected), then commit one regression "
        "at a time on HEAD (a broken product, a moved or unpinned fixture, a weakened oracle, "
        "forcing and masking conftests, a pin mutation, tampered ledgers, sandbox canaries, "
        "committed bytecode) and run the whole gate on each with --base its parent. Each "
        "plant is caught, escaped, or not applicable (and why).",
    )


def _add_demo(commands: Subparsers) -> None:
    _command(
        commands,
        "demo",
        option(
            "--dir",
            type=Path,
            metavar="DIR",
            help="keep everything here; must not exist or be empty (else exit 2)",
        ),
        help="run the whole workflow on example patches and show each posture",
        description="Build the example repository (orders fixtures, two fixture pins, a "
        "properties pin, a flake pin, property tests, git history) in a temporary folder or "
        "DIR, then run digest, properties, dual-pin, flake-observe and merge, each as a child "
        "process, on one patch per scenario, and print each step's exit and the merge "
        "posture. Setting up the example stamps its flake pin: accepted_revision names the "
        "demo repository's first commit, review_by lies 90 days after today (UTC).",
    )


# Every subcommand, in the order `--help` lists them.
_COMMANDS: dict[str, Callable[[Subparsers], None]] = {
    "digest": _add_digest,
    "plan": _add_plan,
    "properties": _add_properties,
    "shard-plan": _add_shard_plan,
    "combine": _add_combine,
    "dual-pin": _add_dual_pin,
    "flake-observe": _add_flake_observe,
    "merge": _add_merge,
    "gate": _add_gate,
    "check-pins": _add_check_pins,
    "draft-pin": _add_draft_pin,
    "init": _add_init,
    "explain": _add_explain,
    "vet": _add_vet,
    "flake-evidence": _add_flake_evidence,
    "flake-audit": _add_flake_audit,
    "selftest": _add_selftest,
    "demo": _add_demo,
}
