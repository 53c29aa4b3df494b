"""What each subcommand's `--help` ends with: an example, and every exit code it can give.

One table, so that no subcommand's help goes without them; `docs/commands.md` says the same
at length. Codes 64 (usage error) and 70 (a bug in three-ledger) hold for every command and
are listed once each, at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from three_ledger.exit_codes import ExitCode
from three_ledger.frozen import frozen


@frozen
class CommandHelp:
    """What a subcommand's help ends with: its example and its exit codes."""

    example: str
    # (code, meaning), in the order a reader meets them.
    exits: Sequence[tuple[int, str]]

    def epilog(self) -> str:
        rows = [*self.exits, _USAGE, _INTERNAL, _INTERRUPTED]
        width = max(len(str(code)) for code, _ in rows)
        lines = ["example:", f"  {self.example}", "", "exit codes:"]
        lines += [f"  {str(code).ljust(width)}  {meaning}" for code, meaning in rows]
        return "\n".join(lines)


_USAGE = (ExitCode.USAGE, "usage error: a flag is missing, unknown or malformed")
_INTERNAL = (ExitCode.INTERNAL_ERROR, "a bug in three-ledger, never a verdict")
_INTERRUPTED = (ExitCode.INTERRUPTED, "interrupted (Ctrl-C, SIGTERM)")
_REFUSED = (ExitCode.REFUSED, "refused: a pin, ledger, tree or output is unusable; nothing written")
_INFRA = (ExitCode.INFRA_FAILURE, "infrastructure failure: the run is not evidence; no ledger")

COMMAND_HELP = {
    "digest": CommandHelp(
        "three-ledger digest --pin pins/fixtures.json --out ledgers/fixture.json",
        [(0, "the fixture ledger is written; its digest is printed"), _REFUSED],
    ),
    "plan": CommandHelp(
        "three-ledger plan --pin pins/fixtures.json --properties pins/properties.json "
        '--command "python -m pytest -q"',
        [
            (0, "every property matches at least one test"),
            (1, "a property matches no test"),
            _REFUSED,
            (ExitCode.INFRA_FAILURE, "the collection failed"),
        ],
    ),
    "properties": CommandHelp(
        'three-ledger properties --pin pins/fixtures.json --expect-digest "$DIGEST" '
        '--properties pins/properties.json --command "python -m pytest -q" '
        "--out ledgers/property.json",
        [
            (0, "every pinned property passed"),
            (1, "a pinned property is fail, skip or missing"),
            _REFUSED,
            _INFRA,
            (ExitCode.ORACLE_MOVED, "the oracles moved; the ledger is written and invalid"),
        ],
    ),
    "shard-plan": CommandHelp(
        "three-ledger shard-plan --pin pins/fixtures.json --properties pins/properties.json "
        '--command "python -m pytest -q" --shards 4 --out ledgers/plan.json',
        [(0, "the plan is written"), _REFUSED, (ExitCode.INFRA_FAILURE, "the collection failed")],
    ),
    "combine": CommandHelp(
        "three-ledger combine --plan ledgers/plan.json --out ledgers/property.json "
        "ledgers/shard-*.json",
        [
            (0, "every pinned property passed"),
            (1, "a pinned property is fail, skip or missing"),
            _REFUSED,
            (ExitCode.ORACLE_MOVED, "a shard's oracles moved; the ledger is written and invalid"),
        ],
    ),
    "dual-pin": CommandHelp(
        "three-ledger dual-pin --left ledgers/property-a.json --right ledgers/property-b.json "
        "--out ledgers/dual-pin.json",
        [(0, "the two pins agree, or --not-run"), _REFUSED, (ExitCode.DRIFT, "drift")],
    ),
    "flake-observe": CommandHelp(
        "three-ledger flake-observe --fixture-ledger ledgers/fixture.json --property-ledger "
        "ledgers/property.json --flake-pin pins/flakes.json --test-id ID --out ledgers/flake.json",
        [
            (0, "the flake ledger is written"),
            (ExitCode.FLAKE_REFUSED, "the flake write is refused"),
        ],
    ),
    "merge": CommandHelp(
        "three-ledger merge --fixture-ledger ledgers/fixture.json --property-ledger "
        "ledgers/property.json --dual-pin ledgers/dual-pin.json --out ledgers/decision.json",
        [(0, "review or human_review"), (1, "reject"), _REFUSED],
    ),
    "gate": CommandHelp(
        'three-ledger gate --pins-dir pins --command "python -m pytest -q" '
        "--base refs/remotes/origin/main --flake-evidence",
        [
            (0, "review or human_review (--flake-evidence never changes the code)"),
            (1, "reject"),
            _REFUSED,
        ],
    ),
    "check-pins": CommandHelp(
        "three-ledger check-pins --pins-dir pins",
        [(0, "every pin is usable (warnings allowed)"), (ExitCode.REFUSED, "a pin is broken")],
    ),
    "draft-pin": CommandHelp(
        "three-ledger draft-pin --fixtures-dir fixtures > pins.draft/fixtures.json",
        [(0, "the draft is printed"), _REFUSED],
    ),
    "init": CommandHelp(
        'three-ledger init --command "python -m pytest -q" --ci github',
        [
            (0, "the drafts and the workflow are written; the next steps are printed"),
            (ExitCode.REFUSED, "a file it would write exists, or no data folder; nothing written"),
            (ExitCode.INFRA_FAILURE, "the collection failed; nothing written"),
        ],
    ),
    "explain": CommandHelp(
        "three-ledger explain ledgers/old-fixture.json ledgers/fixture.json",
        [
            (0, "the two ledgers are equal"),
            (ExitCode.LEDGERS_DIFFER, "they differ, or one does not match its own digest"),
            (ExitCode.REFUSED, "a ledger is not a valid fixture ledger"),
        ],
    ),
    "vet": CommandHelp(
        "three-ledger vet --pin pins/fixtures.json --properties pins/properties.json "
        '--command "python -m pytest -q"',
        [
            (0, "every property can fail on its fixtures"),
            (ExitCode.NOT_A_GATE, "some property cannot fail on its fixtures; ledger written"),
            (ExitCode.REFUSED, "refused, or the unmutated run did not pass"),
            _INFRA,
        ],
    ),
    "flake-evidence": CommandHelp(
        "three-ledger flake-evidence --fixture-ledger ledgers/fixture.json --property-ledger "
        "ledgers/property.json --pin pins/fixtures.json --properties pins/properties.json "
        '--command "python -m pytest -q" --reruns 20 --budget-s 600',
        [
            (0, "the evidence ledger is written (whatever the verdicts)"),
            (
                ExitCode.REFUSED,
                (
                    "refused: the ledgers disagree, are not this HEAD's or pin's, oracles moved, "
                    "the tree does not match the pin, or P has no run_order; nothing written"
                ),
            ),
            (ExitCode.INFRA_FAILURE, "the scratch copy or the sandbox failed; no ledger"),
        ],
    ),
    "flake-audit": CommandHelp(
        "three-ledger flake-audit artifacts/ --flake-pin pins/flakes.json --min-runs 10",
        [
            (0, "the report is printed (whatever it says)"),
            (
                ExitCode.REFUSED,
                "a path is missing, a file is unreadable or not JSON, or the flake pin is invalid",
            ),
        ],
    ),
    "selftest": CommandHelp(
        'three-ledger selftest --pins-dir pins --command "python -m pytest -q" '
        "--out ledgers/selftest.json",
        [
            (0, "every applicable plant was caught; ledger written"),
            (ExitCode.NOT_A_GATE, "a plant escaped the gate (named); ledger written"),
            (ExitCode.REFUSED, "refused, or the clean run on HEAD was rejected (it says why)"),
            (ExitCode.INFRA_FAILURE, "a plant's run failed as infrastructure; ledger written"),
        ],
    ),
    "demo": CommandHelp(
        "three-ledger demo",
        [
            (0, "every scenario ended as expected"),
            (ExitCode.SCENARIO_FAILED, "a scenario did not"),
            (ExitCode.REFUSED, "--dir is not an empty folder; left untouched"),
            (ExitCode.INFRA_FAILURE, "git, pytest (the demo extra) or the example is missing"),
        ],
    ),
}
