"""The words the ledgers are written in: outcomes, statuses, postures, what guarded a run.

Each is a `StrEnum` whose value is what the ledger holds. A test's `Outcome` is the plugin's
word (`plugin/wire.py`), and a pin's policies are the pin's (`pin_policy.py`), so they are
defined there and only named here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from three_ledger.pin_policy import Network as Network
from three_ledger.pin_policy import SandboxPolicy as SandboxPolicy
from three_ledger.plugin.wire import SEVERITY as SEVERITY
from three_ledger.plugin.wire import Outcome as Outcome


class Status(enum.StrEnum):
    """A pinned property's status in a property ledger: an outcome, or `missing`."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"
    # The property's selectors and markers matched no result.
    MISSING = "missing"


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """The worst outcome (error > fail > skip > pass); `pass` when there is none."""
    return max(outcomes, key=SEVERITY.__getitem__, default=Outcome.PASS)


def status_of(outcomes: Iterable[Outcome]) -> Status:
    """A property's status from the outcomes of every result it matches: `missing` if none."""
    matched = list(outcomes)
    return Status(worst(matched)) if matched else Status.MISSING


class Enforcement(enum.StrEnum):
    """What enforced the policy in one run, as the property ledger records it."""

    NETNS = "netns"
    SOCKET_GUARD = "socket-guard"
    NONE = "none"


# A sandbox layer that held in a run; one that did not is `missing: WHY` (the ledger's
# `sandbox.layers`), a sentence no enum could list.
LAYER_HELD = "held"


def layer_missing(why: str) -> str:
    """The ledger's word for a sandbox layer that could not be made, and why."""
    return f"missing: {why}"


class Tripwire(enum.StrEnum):
    """What guarded a run's reports, as the property ledger records it."""

    # Sentinels made like the project's own items, and the machinery audit.
    SENTINELS = "sentinels"
    # Where the project's items could not host them: sentinels of their own item class,
    # parented to the session, listed first; and the machinery audit.
    BASIC = "basic"
    # --junit-xml: nothing checked the reports.
    NONE = "none"


_TRIPWIRE_STRENGTH = {Tripwire.NONE: 0, Tripwire.BASIC: 1, Tripwire.SENTINELS: 2}


def weakest_tripwire(tripwires: Iterable[Tripwire]) -> Tripwire:
    """The weakest of TRIPWIRES (several pytest sessions, several shards); `none` if none."""
    return min(tripwires, key=_TRIPWIRE_STRENGTH.__getitem__, default=Tripwire.NONE)


class DualPinState(enum.StrEnum):
    RUN = "run"
    NOT_RUN = "not_run"


class Posture(enum.StrEnum):
    """What the merge table tells the people merging (SPEC 4.5)."""

    REJECT = "reject"
    HUMAN_REVIEW = "human_review"
    REVIEW = "review"


class MutationKind(enum.StrEnum):
    """Whether a `vet` mutant still parses (well-formed) or breaks its file's syntax; for a
    trial, `crash` when the run broke as a whole (a collection error, pytest's internal error):
    such a kill says the parser guards the file, never that the claim is checked."""

    MALFORMED = "malformed"
    WELL_FORMED = "well_formed"
    CRASH = "crash"


class VetVerdict(enum.StrEnum):
    """What `vet` found a property to be (SPEC extension: the vet ledger)."""

    # A well-formed mutation (one that only changes what a file says) made it fail.
    STRONG = "strong"
    # Only malformed mutations did: it guards the parser, not its claim.
    WEAK = "weak"
    # No mutation made it fail: it cannot fail on its fixtures.
    SURVIVED = "survived"


class FlakeVerdict(enum.StrEnum):
    """What `flake-evidence` found a candidate to be (SPEC extension: the evidence ledger)."""

    # Both outcomes in one mode of rerun.
    NON_DETERMINISTIC = "non_deterministic"
    # Fails after the tests that ran before it, passes alone (a polluter runs before it).
    ORDER_DEPENDENT_VICTIM = "order_dependent_victim"
    # Passes after them, fails alone (it needs a test before it).
    ORDER_DEPENDENT_BRITTLE = "order_dependent_brittle"
    CONSISTENT_FAILURE = "consistent_failure"
    NOT_REPRODUCED = "not_reproduced"
    # A rerun broke as a whole, or most of the tests before the candidate failed.
    INFRASTRUCTURE = "infrastructure"


class RerunMode(enum.StrEnum):
    """How `flake-evidence` reruns a candidate, each time in a fresh process."""

    # The tests that ran before it in its worker, in the same order, then the candidate.
    ORIGINAL = "original"
    ISOLATED = "isolated"
    # Those tests in reverse order, then the candidate.
    REVERSE = "reverse"


class OracleModel(enum.StrEnum):
    """How a property ledger found its oracles."""

    # The pin declares product_paths: every other file the run executed or read is an oracle.
    CLOSED = "closed"
    # From names, the measured harness and oracle_paths.
    INFERRED = "inferred"


class BaseHow(enum.StrEnum):
    """How the base commit a property ledger used was found from the revision asked for."""

    # The revision is HEAD or one of its ancestors: its commit is the base.
    ANCESTOR = "ancestor"
    # It is not (a branch that moved on, a force-pushed `before`): the base is HEAD's
    # merge-base with it, the last commit both histories share.
    MERGE_BASE = "merge-base"
