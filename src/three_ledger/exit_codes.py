"""The exit codes of every subcommand, as SPEC section 2 fixes them."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    # The same number means a different thing to each command that returns it.
    PROPERTY_MISS = 1  # `properties`: a pinned property is not `pass`
    REJECT = 1  # `merge`: the posture is `reject`
    LEDGERS_DIFFER = 1  # `explain`: the two fixture ledgers have different digests
    SCENARIO_FAILED = 1  # `demo`: a scenario did not end in its expected posture
    NOT_A_GATE = 1  # `vet`: a pinned property cannot fail on its fixtures
    # A pin, ledger or fixture tree is invalid, or a digest does not match. Nothing is written.
    REFUSED = 2
    DRIFT = 3  # `dual-pin`: the two pins disagree
    FLAKE_REFUSED = 3  # `flake-observe`: the write was refused
    # `properties`: timeout, start failure, signal, or no readable results. No ledger.
    INFRA_FAILURE = 4
    # `properties`: the oracles moved against the base; the ledger is written and invalid.
    ORACLE_MOVED = 5
    USAGE = 64
    # A bug in three-ledger itself: never a verdict code (EX_SOFTWARE from sysexits.h).
    INTERNAL_ERROR = 70
    # The gate was interrupted outside `properties` (128 + SIGINT).
    INTERRUPTED = 130
