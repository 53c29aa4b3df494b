"""Domain errors: each carries its exit code, one headline and optional detail lines."""

from __future__ import annotations

from collections.abc import Sequence

from three_ledger.exit_codes import ExitCode


class GateError(Exception):
    """A refusal or failure reported to the user as one line, then one line per detail."""

    exit_code: ExitCode = ExitCode.REFUSED

    def __init__(self, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details)
        self.notes: list[str] = []


class Refused(GateError):
    """Invalid pin, ledger or tree; a digest mismatch; an unresolvable base (exit 2)."""

    exit_code = ExitCode.REFUSED


class FlakeRefused(GateError):
    """`flake-observe` refused to write (exit 3)."""

    exit_code = ExitCode.FLAKE_REFUSED


class InfraFailure(GateError):
    """The property command could not produce trustworthy results (exit 4)."""

    exit_code = ExitCode.INFRA_FAILURE


class UsageError(GateError):
    """The command line itself is wrong (exit 64)."""

    exit_code = ExitCode.USAGE
