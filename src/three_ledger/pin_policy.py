"""What a properties pin sets for its run: the network policy and the sandbox policy.

Apart from `vocabulary`, which holds the ledgers' words and names these two: reading a pin
(`check-pins`, `digest`) needs only them.
"""

from __future__ import annotations

import enum


class Network(enum.StrEnum):
    """A properties pin's network policy (SPEC 3.2)."""

    BANNED = "banned"
    ALLOWED = "allowed"


class SandboxPolicy(enum.StrEnum):
    """A properties pin's `sandbox`: whether a run may go on with a layer missing."""

    # Each layer that can be made is; a missing one is recorded, and the run goes on.
    BEST_EFFORT = "best_effort"
    # A run with any layer missing is an infrastructure failure (exit 4) before it starts.
    REQUIRED = "required"
