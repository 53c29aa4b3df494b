"""Every name the gate and the plugin share: the child's environment, the marker, the records.

The gate sets these variables for the test child and reads the files they name; the plugin
reads the variables and writes the files. Standard library only: the plugin imports this
module inside every test run, and the gate imports it without pytest.
"""

from __future__ import annotations

import enum
import os

# The measurement's variables live with the hook, which runs as a module of its own.
from .measure import MEASURE_ENV as MEASURE_ENV
from .measure import MEASURE_ROOT_ENV as MEASURE_ROOT_ENV

# The environment the gate gives the child (SPEC 6). The plugin pops its own variables at
# configure time, so that the tests themselves never see them.
RESULTS_ENV = "THREE_LEDGER_RESULTS"  # where the plugin writes one JSON line per test item
FIXTURES_ENV = "THREE_LEDGER_FIXTURES"  # the pinned fixtures folder, for the property tests
FIXTURES_DIRS_ENV = "THREE_LEDGER_FIXTURES_DIRS"  # every pinned folder, joined by os.pathsep
PIN_ID_ENV = "THREE_LEDGER_PIN_ID"  # which fixture pin the run scores
NETWORK_ENV = "THREE_LEDGER_NETWORK"  # NETWORK_BANNED: the in-process socket guard is on
TRIPWIRE_ENV = "THREE_LEDGER_TRIPWIRE"  # where the tripwire records its sentinels and findings
TRIPWIRE_SEED_ENV = "THREE_LEDGER_TRIPWIRE_SEED"  # hex: where the sentinels go, and their names
PRODUCT_PATHS_ENV = "THREE_LEDGER_PRODUCT_PATHS"  # JSON: the pin's product_paths, for the tripwire
HARNESS_ENV = "THREE_LEDGER_HARNESS"  # where the plugin records what steered the run
ROOT_ENV = "THREE_LEDGER_ROOT"  # the project root the harness is measured against
COLLECT_ENV = "THREE_LEDGER_COLLECT"  # plan: where the collected items go
SHARD_IDS_ENV = "THREE_LEDGER_SHARD_IDS"  # a shard: the file of node ids this slice runs
PLANNED_ENV = "THREE_LEDGER_PLANNED"  # a shard: the file of every node id its plan holds
UNPLANNED_ENV = "THREE_LEDGER_UNPLANNED"  # a shard: where collected tests the plan lacks go
DESELECT_ENV = "THREE_LEDGER_DESELECT"  # vet: the file of node ids a mutant's run leaves out
SLICE_ENV = "THREE_LEDGER_SLICE"  # vet: `K/N`, the slice of the baseline this run runs
SLICE_COLLECTED_ENV = "THREE_LEDGER_SLICE_COLLECTED"  # vet: where a slice's collected ids go
READS_ENV = "THREE_LEDGER_READS"  # vet: where each item's reads of pinned files go
WATCHED_ENV = "THREE_LEDGER_READS_UNDER"  # vet: the folders whose reads are recorded
PYTEST_SEEN_ENV = "THREE_LEDGER_PYTEST_SEEN"  # --junit-xml: where pytest records that it ran
ORDER_ENV = "THREE_LEDGER_ORDER"  # where the controller records a shuffling plugin's seed
RUN_IDS_ENV = "THREE_LEDGER_RUN_IDS"  # flake-evidence: the node ids a rerun runs, in order

NETWORK_BANNED = "ban"
# What the harness records for a file outside the project root.
OUTSIDE_ROOT = "<outside ROOT>"

# `@pytest.mark.property("id")`, and the user property that carries it on a report.
PROPERTY_MARKER = "property"
# How `pytest --markers` describes it; registered by the hooks and by an inert entry point.
PROPERTY_MARKER_HELP = "property(id): the three-ledger property id this test checks (repeatable)."
PROPERTY_KEY = "three_ledger.property"

# The keys of the plugin's results, collection and reads files (one JSON object a line).
ID_KEY = "id"
PROPERTY_IDS_KEY = "property_ids"
OUTCOME_KEY = "outcome"
SKIP_REASON_KEY = "skip_reason"
# A mark of a test expected to fail: on a collection line, known at collection; on a results
# line, its `fail` is an xfail. Either way it scores `fail`.
XFAIL_KEY = "xfail"
# Which process ran the item: an xdist worker's id ("gw0"), or MAIN_WORKER without xdist.
WORKER_KEY = "worker"
MAIN_WORKER = "main"
# The order file's entries: the plugin that shuffled the run, and its seed.
SEED_PLUGIN_KEY = "plugin"
SEED_KEY = "seed"
READS_KEY = "reads"
# The keys of the tripwire's record: one line per machinery finding, as it is found, and one
# line per pytest session with its sentinels (node id to "pass" or "fail") and how they were
# made ("sentinels" or "basic").
MACHINERY_KEY = "machinery"
MADE_BY_KEY = "by"
SENTINELS_KEY = "sentinels"
MECHANISM_KEY = "mechanism"
# The folders whose files are the tests' own, by name, wherever they are in ROOT.
TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def the_tests_own(relative: str) -> bool:
    """Whether RELATIVE (a `/`-separated path under ROOT) is a conftest or a file in a folder
    named like tests: the tests' own, whatever else names them."""
    parts = relative.split("/")
    return parts[-1] == "conftest.py" or not TEST_FOLDERS.isdisjoint(parts[:-1])


def in_the_tests_own_folder(relative: str) -> bool:
    """Whether RELATIVE is a conftest, or lies in a `tests`, `test` or `testing` folder at the
    top of ROOT: the tests' own, for `gate`. One deeper lies in a package, whose code may
    read it (a price table in `orderlib/testing/` that the product read: the sixth red team)."""
    first, _, rest = relative.partition("/")
    return relative.rsplit("/", 1)[-1] == "conftest.py" or (bool(rest) and first in TEST_FOLDERS)


# On a session's line: how many of the project's tests pytest reported failing, by node id,
# and which: their ids where they fit in FAILED_IDS_BUDGET characters, else a digest of each
# (`failed_id_digest`), whatever the ids' length.
FAILED_KEY = "failed"
FAILED_IDS_KEY = "failed_ids"
FAILED_DIGESTS_KEY = "failed_digests"
FAILED_IDS_BUDGET = 4 * 1024 * 1024


def failed_id_digest(test_id: str) -> str:
    """TEST_ID as 32 hex digits (128 bits of SHA-256 over its UTF-8): the same size for any
    id. The project's code chooses how long an id is (a parametrised object's `__name__`),
    and it must not be able to push the ids out of the record to leave the count alone."""
    import hashlib  # here: `check-pins` reads this module and loads no OpenSSL (issue 25)

    data = test_id.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def tripwire_may_arm() -> bool:
    """Whether this process may be asked for the tripwire: under the gate, which names its
    record, or in an xdist worker, which learns at configure time whether the gate asked.
    Elsewhere (a collection, a run outside the gate) its modules are not even imported."""
    return bool(os.environ.get(TRIPWIRE_ENV) or os.environ.get("PYTEST_XDIST_WORKER"))


class Outcome(enum.StrEnum):
    """How one test item ended, over all its reports (SPEC 6)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


# Higher is worse: error > fail > skip > pass (SPEC 4.2 step 7).
SEVERITY = {Outcome.PASS: 0, Outcome.SKIP: 1, Outcome.FAIL: 2, Outcome.ERROR: 3}
