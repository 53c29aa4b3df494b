"""Command line: parse arguments, dispatch to one command, map errors to exit codes."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from three_ledger import __version__
from three_ledger.errors import GateError, UsageError
from three_ledger.exit_codes import ExitCode

PROG = "three-ledger"
# SPEC 4.2: `properties --timeout` defaults to half an hour.
DEFAULT_TIMEOUT_S = 1800.0
# Where `vet` writes its ledger when no --out is given.
DEFAULT_VET_LEDGER = Path("ledgers/vet_ledger.json")
# SPEC 4.7: the pin id `draft-pin` writes when none is given.
DEFAULT_PIN_ID = "fixpin-draft"
# What `add_subparsers` returns; argparse does not export its class.
Subparsers = Any

_LABELS = {
    ExitCode.REFUSED: "refused",
    ExitCode.FLAKE_REFUSED: "flake write refused",
    ExitCode.INFRA_FAILURE: "infrastructure failure",
    ExitCode.USAGE: "usage error",
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors exit 64 (never 2, which means "score refused")."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _command_words(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split {text!r}: {exc}") from None
    if not words:
        raise argparse.ArgumentTypeError("the command is empty")
    return words


@dataclass(frozen=True)
class Option:
    """One command-line option as every command that takes it declares it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]

    def but(self, **changes: Any) -> Option:
        """The same option with some settings changed (a command's own help, say)."""
        return Option(self.flags, {**self.settings, **changes})

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(*self.flags, **self.settings)


def option(*flags: str, **settings: Any) -> Option:
    """An option, written as `parser.add_argument` takes it."""
    return Option(flags, settings)


class Opts:
    """The options more than one command takes, declared once; commands compose them."""

    pin = option("--pin", type=Path, required=True, help="fixture pin (JSON)")
    properties = option("--properties", type=Path, required=True, help="properties pin (JSON)")
    command = option(
        "--command", type=_command_words, required=True, metavar="CMD", help="test command"
    )
    root = option("--root", type=Path, default=Path("."), help="checkout root (default .)")
    out = option("--out", type=Path, required=True)
    log = option("--log", type=Path, metavar="PATH")
    base = option("--base", metavar="REV")
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


def _command(commands: Subparsers, name: str, *options: Option, **settings: Any) -> Any:
    """Add subcommand NAME with OPTIONS, in order; SETTINGS go to its parser."""
    parser = commands.add_parser(name, **settings)
    for each in options:
        each.add_to(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="A merge gate that keeps fixture, property and flake evidence in "
        "three separate ledgers.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    for add_command in (
        _add_digest,
        _add_plan,
        _add_properties,
        _add_shard_plan,
        _add_combine,
        _add_dual_pin,
        _add_flake_observe,
        _add_merge,
        _add_gate,
        _add_check_pins,
        _add_draft_pin,
        _add_explain,
        _add_vet,
        _add_demo,
    ):
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
        help="show what each pinned property matches; no test runs",
        description="Run the test command as `properties` would, with --collect-only added "
        "through PYTEST_ADDOPTS, and print per property how many tests it matches (and the "
        "first 5), close node ids for a selector that matches nothing, marker ids the pin "
        "does not list, skips already known at collection, and how many tests lie outside "
        "every property and flake entry. Exit 0 when every property matches a test, 1 when "
        "one matches none.",
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
        help="score the pinned properties on a matching fixture digest",
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
        Opts.log.but(help="keep the collection's output"),
        Opts.out.but(help="shard plan to write"),
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
            "--out-dir", type=Path, default=Path("ledgers"), metavar="DIR", help="default ledgers"
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
        help="run the whole workflow (digest, properties, dual-pin, flake-observe, merge)",
        description="Find the properties pin, the fixture pins it names and the flake pin in "
        "--pins-dir; run digest and properties on each fixture pin, dual-pin (or --not-run), "
        "flake-observe for each flake entry that did not pass, then merge. Each ledger is a "
        "file of its own in --out-dir; a step that refuses leaves its ledger absent and the "
        "chain goes on to merge. Exit: merge's (1 reject, 0 otherwise). A change that touches "
        "only --pins-dir is not scored: check-pins runs and the posture is human_review.",
    )


def _add_check_pins(commands: Subparsers) -> None:
    _command(
        commands,
        "check-pins",
        option("--pins-dir", type=Path, default=Path("pins"), metavar="DIR", help="default pins"),
        Opts.root,
        help="validate every pin in a pins folder, listing every problem",
        description="Check that each pin parses and matches its schema, that fixture_pins "
        "names fixture pins of the folder, that every domain names pinned files, and that "
        "every pinned path exists under ROOT. Exit 2 lists every problem. An expired "
        "review_by is a warning, not a failure.",
    )


def _add_draft_pin(commands: Subparsers) -> None:
    _command(
        commands,
        "draft-pin",
        option("--fixtures-dir", required=True, metavar="DIR", help="folder under ROOT"),
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
        "KIND is added, removed or changed; '-' marks the side without the file.\n"
        "Exit 0: equal digests over equal file lists; 1: anything else (a difference, or a\n"
        "ledger that does not match its own digest); 2: a ledger is not a valid fixture ledger.",
    )


def _positive_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
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
        option(
            "--strict",
            action="store_true",
            help="count a weak property (only malformed input kills it) as surviving",
        ),
        help="watch each pinned property fail on its own fixtures",
        description="Copy ROOT to a scratch folder, run the command once unmutated (every "
        "property must pass; which pinned files each test opens is recorded), then mutate "
        "each property's domain files and run it again. Exit 0: every property was killed "
        "by a mutant and read one of its domain files; 1: some property cannot fail on its "
        "fixtures (not a gate); 2: refused, or the baseline did not pass; 4: infrastructure "
        "failure. The user's tree is never written.",
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
        "demo repository's first commit, review_by lies 90 days after today (UTC). Exit 0 "
        "when every scenario ends as expected, 1 otherwise.",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _dispatch(parser, args)
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else ExitCode.USAGE
    except GateError as exc:
        _report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a bug must never look like a verdict
        return _report_crash(exc)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.subcommand is None:
        parser.print_usage(sys.stderr)
        raise UsageError("choose a command")
    return _RUNNERS[args.subcommand](args)


# Each runner imports its command module on use: `--version` and `--help` stay fast.
def _run_digest(args: argparse.Namespace) -> int:
    from three_ledger.commands.digest import digest

    base = args.base or _ci_base_for_messages(args.root)
    return digest(pin_path=args.pin, root=args.root, out=args.out, base=base)


def _ci_base_for_messages(root: Path) -> str | None:
    """The CI event's base, where it resolves: digest only uses it to name moved files."""
    from three_ledger import git
    from three_ledger.base_resolution import ci_revision

    try:
        base = ci_revision(None, os.environ)
        return git.resolve_commit(root, base) if base is not None else None
    except GateError:
        return None


def _run_plan(args: argparse.Namespace) -> int:
    from three_ledger.commands.plan import PlanRequest, plan

    from_report = args.junit_xml is not None or args.from_report
    if from_report and not (args.junit_xml is not None and args.from_report):
        raise UsageError("plan: --junit-xml FILE and --from-report go together")
    if from_report == (args.command is not None):
        raise UsageError("plan: give --command, or --junit-xml FILE --from-report, not both")
    return plan(
        PlanRequest(
            pin_path=args.pin,
            properties_path=args.properties,
            command=args.command,
            root=args.root,
            flake_pin_path=args.flake_pin,
            timeout_s=args.timeout,
            log_path=args.log,
            as_json=args.json,
            report=args.junit_xml,
        )
    )


def _run_properties(args: argparse.Namespace) -> int:
    if (args.shard_plan is None) != (args.shard is None):
        raise UsageError("properties: give --shard-plan and --shard together, or neither")
    if args.shard_plan is not None:
        return _run_property_shard(args)
    from three_ledger.commands.properties import Request, properties

    return properties(
        Request(
            pin_path=args.pin,
            expect_digest=args.expect_digest,
            properties_path=args.properties,
            command=args.command,
            out=args.out,
            root=args.root,
            base=args.base,
            timeout_s=args.timeout,
            junit_xml=args.junit_xml,
            log_path=args.log,
            flake_pin_path=args.flake_pin,
        )
    )


def _run_property_shard(args: argparse.Namespace) -> int:
    """`properties --shard-plan PLAN --shard K`: one slice of a plan, a command of its own."""
    from three_ledger.commands.property_shard import ShardRequest, property_shard

    if args.junit_xml is not None:
        raise UsageError("properties: --shard-plan needs the pytest plugin; drop --junit-xml")
    return property_shard(
        ShardRequest(
            pin_path=args.pin,
            expect_digest=args.expect_digest,
            properties_path=args.properties,
            command=args.command,
            out=args.out,
            root=args.root,
            base=args.base,
            timeout_s=args.timeout,
            log_path=args.log,
            flake_pin_path=args.flake_pin,
            shard_plan_path=args.shard_plan,
            shard_index=args.shard,
        )
    )


def _run_shard_plan(args: argparse.Namespace) -> int:
    from three_ledger.commands.shard_plan import ShardPlanRequest, shard_plan

    return shard_plan(
        ShardPlanRequest(
            pin_path=args.pin,
            properties_path=args.properties,
            command=args.command,
            shards=args.shards,
            root=args.root,
            flake_pin_path=args.flake_pin,
            durations_path=args.durations,
            all_tests=args.all,
            timeout_s=args.timeout,
            log_path=args.log,
            out=args.out,
        )
    )


def _run_combine(args: argparse.Namespace) -> int:
    from three_ledger.commands.combine import combine

    return combine(plan_path=args.plan, shard_paths=args.shards, out=args.out)


def _run_dual_pin(args: argparse.Namespace) -> int:
    from three_ledger.commands import dual_pin

    if args.not_run:
        if args.left or args.right:
            raise UsageError("dual-pin: --not-run takes no --left or --right")
        return dual_pin.dual_pin_not_run(out=args.out)
    if not (args.left and args.right):
        raise UsageError("dual-pin: give --left and --right, or --not-run")
    return dual_pin.dual_pin(left_path=args.left, right_path=args.right, out=args.out)


def _run_flake_observe(args: argparse.Namespace) -> int:
    from three_ledger.base_resolution import ci_revision
    from three_ledger.commands.flake_observe import flake_observe
    from three_ledger.errors import FlakeRefused

    try:
        base = ci_revision(args.base, os.environ)
    except GateError as exc:
        raise FlakeRefused(exc.message, exc.details) from None
    return flake_observe(
        fixture_path=args.fixture_ledger,
        property_path=args.property_ledger,
        flake_pin_path=args.flake_pin,
        test_id=args.test_id,
        out=args.out,
        root=args.root,
        base=base,
    )


def _run_merge(args: argparse.Namespace) -> int:
    from three_ledger.base_resolution import ci_revision
    from three_ledger.commands.merge import merge

    if args.base is not None and args.pins_dir is None:
        raise UsageError("merge: --base goes with --pins-dir")
    base = ci_revision(args.base, os.environ) if args.pins_dir is not None else None
    if args.pins_dir is not None and base is None:
        raise UsageError("merge: --pins-dir needs --base REV (or a CI event that names the base)")
    if args.properties is not None and base is None:
        raise UsageError("merge: --properties needs --pins-dir and --base")
    return merge(
        fixture_path=args.fixture_ledger,
        property_path=args.property_ledger,
        dual_pin_path=args.dual_pin,
        flake_paths=args.flake_ledger,
        flake_pin_path=args.flake_pin,
        pin_path=args.pin,
        root=args.root,
        pins_dir=args.pins_dir,
        base=base,
        properties_pin_path=args.properties,
        out=args.out,
        summary_md=args.summary_md,
        verdict_junit=args.verdict_junit,
        verdict_dotenv=args.verdict_dotenv,
    )


def _run_gate(args: argparse.Namespace) -> int:
    from three_ledger.commands.gate import GateRequest, gate

    return gate(
        GateRequest(
            pins_dir=args.pins_dir,
            command=args.command,
            root=args.root,
            base=args.base,
            out_dir=args.out_dir,
            timeout_s=args.timeout,
            summary_md=args.summary_md,
            verdict_junit=args.verdict_junit,
            verdict_dotenv=args.verdict_dotenv,
            junit_xml=args.junit_xml,
        )
    )


def _run_check_pins(args: argparse.Namespace) -> int:
    from three_ledger.commands.check_pins import check_pins

    return check_pins(pins_dir=args.pins_dir, root=args.root)


def _run_draft_pin(args: argparse.Namespace) -> int:
    from three_ledger.commands.draft_pin import draft_pin

    return draft_pin(
        fixtures_dir=args.fixtures_dir,
        root=args.root,
        pin_id=args.pin_id,
        with_digest=args.with_digest,
        tracked_only=args.tracked_only,
    )


def _run_explain(args: argparse.Namespace) -> int:
    from three_ledger.commands.explain import explain

    return explain(left_path=args.left, right_path=args.right)


def _run_vet(args: argparse.Namespace) -> int:
    from three_ledger.commands.vet import Request, vet

    return vet(
        Request(
            pin_path=args.pin,
            properties_path=args.properties,
            command=args.command,
            root=args.root,
            out=args.out,
            log_path=args.log,
            per_file=args.per_file,
            timeout_s=args.timeout,
            strict=args.strict,
        )
    )


def _run_demo(args: argparse.Namespace) -> int:
    from three_ledger.commands.demo import demo

    return demo(directory=args.dir)


_RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "digest": _run_digest,
    "plan": _run_plan,
    "properties": _run_properties,
    "shard-plan": _run_shard_plan,
    "combine": _run_combine,
    "dual-pin": _run_dual_pin,
    "flake-observe": _run_flake_observe,
    "merge": _run_merge,
    "gate": _run_gate,
    "check-pins": _run_check_pins,
    "draft-pin": _run_draft_pin,
    "explain": _run_explain,
    "vet": _run_vet,
    "demo": _run_demo,
}


def _report(error: GateError) -> None:
    label = _LABELS.get(error.exit_code, "error")
    lines = [f"{PROG}: {label}: {error.message}"]
    lines += [f"  {detail}" for detail in error.details]
    lines += [f"{PROG}: {note}" for note in error.notes]
    print("\n".join(lines), file=sys.stderr)


def _report_crash(exc: Exception) -> int:
    print(
        f"{PROG}: internal error (a bug in {PROG}, please report it): {type(exc).__name__}: {exc}",
        file=sys.stderr,
    )
    if os.environ.get("THREE_LEDGER_DEBUG"):
        import traceback  # here: every start-up would pay for it, and only a crash needs it

        traceback.print_exc()
    else:
        print(f"{PROG}: set THREE_LEDGER_DEBUG=1 to see the traceback", file=sys.stderr)
    return ExitCode.INTERNAL_ERROR
