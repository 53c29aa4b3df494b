"""Command line: parse arguments (`parser.py`), dispatch to one command, map errors to exit
codes."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from three_ledger.cli.parser import PROG, build_parser
from three_ledger.errors import GateError, UsageError
from three_ledger.exit_codes import ExitCode
from three_ledger.progress import set_quiet

_LABELS = {
    ExitCode.REFUSED: "refused",
    ExitCode.FLAKE_REFUSED: "flake write refused",
    ExitCode.INFRA_FAILURE: "infrastructure failure",
    ExitCode.USAGE: "usage error",
}


def main(argv: Sequence[str] | None = None, loaded: Callable[[], None] | None = None) -> int:
    """Run the command ARGV names; LOADED is called once its module is imported. Under GitHub
    Actions, nothing it prints reads as a workflow command but its own (`console_guard.py`)."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from three_ledger.console_guard import guarded

        with guarded(os.environ):
            return _main(argv, loaded)
    return _main(argv, loaded)


def _main(argv: Sequence[str] | None, loaded: Callable[[], None] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(given[0] if given else None)
    try:
        args = parser.parse_args(given)
        set_quiet(getattr(args, "quiet", False))
        return _dispatch(parser, args, loaded)
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


def _dispatch(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    loaded: Callable[[], None] | None = None,
) -> int:
    if args.subcommand is None:
        parser.print_usage(sys.stderr)
        raise UsageError("choose a command")
    # One module per command (`commands/<name>.py`), imported here rather than by its runner
    # alone, so that LOADED knows when the start-up's imports are done.
    importlib.import_module(f"three_ledger.commands.{args.subcommand.replace('-', '_')}")
    if loaded is not None:
        loaded()
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
        return git.resolve_base_commit(root, base) if base is not None else None
    except GateError:
        return None


def _run_plan(args: argparse.Namespace) -> int:
    from three_ledger.commands.plan import plan
    from three_ledger.run.collection import PlanRequest

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
            base=args.base,
            keep_env=tuple(args.keep_env),
        )
    )


def _run_properties(args: argparse.Namespace) -> int:
    from three_ledger.commands.properties import Request, properties

    if (args.shard_plan is None) != (args.shard is None):
        raise UsageError("properties: give --shard-plan and --shard together, or neither")
    request = Request(
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
        keep_env=tuple(args.keep_env),
    )
    if args.shard_plan is None:
        return properties(request)
    # `properties --shard-plan PLAN --shard K`: one slice of a plan, a command of its own.
    from three_ledger.commands.property_shard import property_shard

    if args.junit_xml is not None:
        raise UsageError("properties: --shard-plan needs the pytest plugin; drop --junit-xml")
    return property_shard(request, args.shard_plan, args.shard)


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
            base=args.base,
            keep_env=tuple(args.keep_env),
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
        flake_evidence_path=args.flake_evidence,
    )


def _run_gate(args: argparse.Namespace) -> int:
    from three_ledger.commands.flake_evidence import DEFAULT_BUDGET_S, DEFAULT_RERUNS
    from three_ledger.commands.gate import GateRequest, gate

    reruns, budget_s = args.flake_reruns, args.flake_budget_s
    if (reruns is not None or budget_s is not None) and not args.flake_evidence:
        raise UsageError("gate: --flake-reruns and --flake-budget-s go with --flake-evidence")
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
            keep_env=tuple(args.keep_env),
            flake_evidence=args.flake_evidence,
            flake_reruns=DEFAULT_RERUNS if reruns is None else reruns,
            flake_budget_s=DEFAULT_BUDGET_S if budget_s is None else budget_s,
        )
    )


def _run_check_pins(args: argparse.Namespace) -> int:
    from three_ledger.commands.check_pins import check_pins

    return check_pins(pins_dir=args.pins_dir, root=args.root, warn_days=args.warn_days)


def _run_draft_pin(args: argparse.Namespace) -> int:
    from three_ledger.commands.draft_pin import draft_pin

    return draft_pin(
        fixtures_dirs=args.fixtures_dir,
        root=args.root,
        pin_id=args.pin_id,
        with_digest=args.with_digest,
        tracked_only=args.tracked_only,
    )


def _run_init(args: argparse.Namespace) -> int:
    from three_ledger.ci_workflow import CI
    from three_ledger.commands.init import InitRequest, init

    return init(
        InitRequest(
            root=args.root,
            command=args.command,
            fixtures_dirs=tuple(args.fixtures_dir),
            ci=CI(args.ci),
            package=args.package,
            requirements=args.requirements,
            timeout_s=args.timeout,
            keep_env=tuple(args.keep_env),
        )
    )


def _run_explain(args: argparse.Namespace) -> int:
    from three_ledger.commands.explain import explain

    return explain(left_path=args.left, right_path=args.right)


def _run_vet(args: argparse.Namespace) -> int:
    from three_ledger.commands.vet import Request, vet
    from three_ledger.vet.cache import result_cache_folder

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
            base=args.base,
            keep_env=tuple(args.keep_env),
            jobs=args.jobs or os.cpu_count() or 1,
            cache=None if args.no_cache else result_cache_folder(os.environ),
        )
    )


def _run_flake_evidence(args: argparse.Namespace) -> int:
    from three_ledger.commands.flake_evidence import Request, flake_evidence

    return flake_evidence(
        Request(
            fixture_ledger=args.fixture_ledger,
            property_ledger=args.property_ledger,
            pin_path=args.pin,
            properties_path=args.properties,
            command=args.command,
            out=args.out,
            root=args.root,
            flake_pin_path=args.flake_pin,
            candidates=tuple(args.candidates),
            reruns=args.reruns,
            budget_s=args.budget_s,
            confidence=args.confidence,
            log_path=args.log,
            keep_env=tuple(args.keep_env),
        )
    )


def _run_selftest(args: argparse.Namespace) -> int:
    from three_ledger.commands.selftest import Request, selftest

    return selftest(
        Request(
            pins_dir=args.pins_dir,
            command=args.command,
            root=args.root,
            out=args.out,
            only=tuple(args.only),
            keep=args.keep,
            timeout_s=args.timeout,
            quiet=args.quiet,
        )
    )


def _run_flake_audit(args: argparse.Namespace) -> int:
    from three_ledger.commands.flake_audit import flake_audit

    return flake_audit(
        ledgers=args.ledgers, min_runs=args.min_runs, flake_pin=args.flake_pin, as_json=args.json
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
    "init": _run_init,
    "explain": _run_explain,
    "vet": _run_vet,
    "flake-evidence": _run_flake_evidence,
    "flake-audit": _run_flake_audit,
    "selftest": _run_selftest,
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
