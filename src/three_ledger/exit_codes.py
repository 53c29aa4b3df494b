"""The exit codes of every subcommand, as SPEC section 2 fixes them."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    # `properties`: a pinned property is not `pass`; `merge`: posture `reject`.
    PROPERTY_MISS = 1
    REJECT = 1
    # A pin, ledger or fixture tree is invalid, or a digest does not match. Nothing is written.
    REFUSED = 2
    # `dual-pin`: the two pins disagree; `flake-observe`: the write was refused.
    DRIFT = 3
    FLAKE_REFUSED = 3
    # `properties`: timeout, start failure, signal, or no readable results. No ledger.
    INFRA_FAILURE = 4
    # `properties`: the oracles moved against the base; the ledger is written and invalid.
    ORACLE_MOVED = 5
    USAGE = 64
    # A bug in three-ledger itself: never a verdict code (EX_SOFTWARE from sysexits.h).
    INTERNAL_ERROR = 70
    # The gate was interrupted outside `properties` (128 + SIGINT).
    INTERRUPTED = 130
