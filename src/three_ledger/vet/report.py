"""What `vet` tells the reviewer: one line per property on stdout, warnings on stderr."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence

from three_ledger.exit_codes import ExitCode
from three_ledger.other_ledgers import PropertyVet, VetLedger, VetTrial
from three_ledger.vet.judge import KILLS
from three_ledger.vet.mutations import Kind
from three_ledger.vocabulary import Status, VetVerdict

# At most this many paths per warning on stderr; the ledger lists them all.
SHOWN_PATHS = 10


def report(ledger: VetLedger) -> int:
    """One line per property on stdout; warnings and the verdict on stderr."""
    for property_id, found in ledger.properties.items():
        print(property_line(property_id, found, strict=ledger.strict))
    for property_id, found in ledger.properties.items():
        _warn_property(property_id, found)
    if ledger.unread_pinned_files:
        _warn_paths(
            f"{len(ledger.unread_pinned_files)} pinned file(s) no property reads",
            ledger.unread_pinned_files,
        )
    if ledger.per_file is not None and ledger.per_file.unnoticed:
        _warn_paths(
            f"--per-file: {len(ledger.per_file.unnoticed)} of {len(ledger.per_file.files)} "
            "sampled file(s) changed no property's outcome when mutated alone",
            ledger.per_file.unnoticed,
        )
    return _verdict(ledger)


def property_line(property_id: str, found: PropertyVet, *, strict: bool) -> str:
    return f"{found.verdict.value:<8}  {property_id}: {finding(found, strict=strict)}"


def finding(found: PropertyVet, *, strict: bool) -> str:
    """What vet found for one property, in words: what killed it, or that nothing did."""
    match found.verdict:
        case VetVerdict.STRONG:
            killer = next(t for t in found.trials if t.kind is Kind.WELL_FORMED and _kills(t))
            text = f"killed by {killer.operator} ({_status_text(killer)})"
        case VetVerdict.WEAK:
            killer = next(t for t in found.trials if _kills(t))
            if killer.kind is Kind.CRASH:
                # pycodestyle's trial: a test that reads no file was "the parser's guard"
                # because emptying a file broke collection, and with it the whole run.
                how, guards = "a crash of the whole run", "it fails with the run, not its claim"
            else:
                how, guards = "malformed input", "it guards the parser, not its claim"
            text = f"killed only by {how} ({killer.operator}: {_status_text(killer)}): {guards}"
            if strict:
                text += "; --strict counts it as surviving: not a gate"
        case VetVerdict.SURVIVED:
            text = f"cannot fail on its fixtures: not a gate ({len(found.trials)} mutant(s))"
    return text + "".join(_notes(found))


def _kills(trial: VetTrial) -> bool:
    return trial.status in KILLS


def _status_text(trial: VetTrial) -> str:
    if trial.command_exit in (0, 1):
        return trial.status.value
    return f"{trial.status.value}: the run exited {trial.command_exit}"


def _notes(found: PropertyVet) -> Iterator[str]:
    for status in (Status.SKIP, Status.MISSING):
        operators = [t.operator for t in found.trials if t.status == status]
        if operators:
            yield f"; {status.value} under {', '.join(operators)}"
    read = found.domain_files - len(found.unread_domain_files)
    if read == 0:
        yield "; read none of its domain files: not a gate"
    elif found.unread_domain_files:
        yield f"; never read {len(found.unread_domain_files)} of {found.domain_files} domain files"


def _warn_property(property_id: str, found: PropertyVet) -> None:
    if found.verdict is VetVerdict.WEAK:
        _warn(f"{property_id} is weak: no well-formed mutant made it fail")
    if found.unread_domain_files:
        _warn_paths(
            f"{property_id} never read {len(found.unread_domain_files)} of its "
            f"{found.domain_files} domain file(s)",
            found.unread_domain_files,
        )


def _warn(message: str) -> None:
    print(f"three-ledger: warning: {message}", file=sys.stderr)


def _warn_paths(message: str, paths: Sequence[str]) -> None:
    _warn(message + ":")
    for path in paths[:SHOWN_PATHS]:
        print(f"  {path}", file=sys.stderr)
    if len(paths) > SHOWN_PATHS:
        print(
            f"  ... and {len(paths) - SHOWN_PATHS} more (the ledger lists them all)",
            file=sys.stderr,
        )


def _verdict(ledger: VetLedger) -> int:
    counts = {verdict: 0 for verdict in VetVerdict}
    for found in ledger.properties.values():
        counts[found.verdict] += 1
    tally = ", ".join(f"{count} {verdict.value}" for verdict, count in counts.items() if count)
    print(f"three-ledger: {tally}; {ledger.runs} run(s) of the command", file=sys.stderr)
    line = not_a_gate_line(ledger.properties, strict=ledger.strict)
    if line is not None:
        print(f"three-ledger: {line}", file=sys.stderr)
        return ExitCode.NOT_A_GATE
    return ExitCode.OK


def not_a_gate_line(properties: Mapping[str, PropertyVet], *, strict: bool) -> str | None:
    """vet's last line when some property is not a gate, naming each under its reason: no
    mutant made it fail (with --strict, none but a crash or malformed input), or one did but
    it read none of its domain files. None when every property is a gate."""
    not_gates = [pid for pid, found in properties.items() if not found.gate]
    if not not_gates:
        return None
    unread = [pid for pid in not_gates if _killed(properties[pid], strict=strict)]
    survived = [pid for pid in not_gates if pid not in unread]
    reasons = [
        f"{len(ids)} {why}: {', '.join(ids)}"
        for ids, why in (
            (survived, "cannot fail on their fixtures"),
            (unread, "read none of their domain files"),
        )
        if ids
    ]
    return f"{len(not_gates)} propert(ies) are not a gate: {'; '.join(reasons)}"


def _killed(found: PropertyVet, *, strict: bool) -> bool:
    """Whether a mutant made the property fail, as vet counts it: any well-formed one, or,
    without --strict, a crash or malformed input too."""
    return found.verdict is VetVerdict.STRONG or (found.verdict is VetVerdict.WEAK and not strict)
