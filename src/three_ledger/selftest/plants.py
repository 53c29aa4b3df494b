"""The regressions `selftest` plants, as data: each one's name, what it changes, and what the
gate must answer. The edits themselves are text: conftests, canaries and a byte changed.

No edit carries a marker a run could read: a canary's sleeper sleeps for a random time, its
listener is a random port, and the commit message is the project's own kind of message.
"""

from __future__ import annotations

import enum
import json
from pathlib import PurePosixPath

from three_ledger.frozen import frozen
from three_ledger.vocabulary import Posture


class Plant(enum.StrEnum):
    BROKEN_PRODUCT = "broken-product"
    MOVED_FIXTURE = "moved-fixture"
    UNPINNED_FIXTURE = "unpinned-fixture"
    WEAKENED_ORACLE = "weakened-oracle"
    WEAKENED_HELPER = "weakened-helper"
    FORCING_CONFTEST = "forcing-conftest"
    MASKING_CONFTEST = "masking-conftest"
    PIN_MUTATION = "pin-mutation"
    REPLAYED_LEDGER = "replayed-ledger"
    SHARED_CLOCK = "shared-clock"
    FRESH_CLOCK_FORGERY = "fresh-clock-forgery"
    SETSID_SLEEPER = "setsid-sleeper"
    FIXTURE_WRITE = "fixture-write"
    NETWORK = "network"
    COMMITTED_BYTECODE = "committed-bytecode"


class Outcome(enum.StrEnum):
    CAUGHT = "caught"
    ESCAPED = "escaped"
    NOT_APPLICABLE = "not_applicable"
    # The threat model names it as a hole: reported, never counted against the gate.
    KNOWN_ESCAPE = "known_escape"
    INFRA_FAILURE = "infra_failure"


@frozen
class Expect:
    """What the gate must answer: a posture and row, any reject, or (canaries) nothing seen."""

    posture: Posture | None
    row: int | None
    # The properties step's exit, where it is part of the answer (the tripwire's 4).
    properties_exit: int | None = None

    def __str__(self) -> str:
        if self.posture is None:
            return "nothing happens"
        said = self.posture.value if self.row is None else f"{self.posture.value} row {self.row}"
        if self.properties_exit is not None:
            said += f" (properties exit {self.properties_exit})"
        return said

    def holds(self, posture: Posture | None, row: int | None, properties_exit: int | None) -> bool:
        if self.posture is not None and posture is not self.posture:
            return False
        if self.row is not None and row != self.row:
            return False
        return self.properties_exit is None or properties_exit == self.properties_exit


_REJECT = Posture.REJECT
EXPECTED: dict[Plant, Expect] = {
    Plant.BROKEN_PRODUCT: Expect(_REJECT, 7),
    Plant.MOVED_FIXTURE: Expect(_REJECT, 1),
    Plant.UNPINNED_FIXTURE: Expect(_REJECT, 1),
    Plant.WEAKENED_ORACLE: Expect(_REJECT, 5),
    Plant.WEAKENED_HELPER: Expect(_REJECT, 5),
    Plant.FORCING_CONFTEST: Expect(_REJECT, 2, properties_exit=4),
    Plant.MASKING_CONFTEST: Expect(_REJECT, 5),
    Plant.PIN_MUTATION: Expect(_REJECT, 4),
    Plant.REPLAYED_LEDGER: Expect(_REJECT, 2),
    Plant.SHARED_CLOCK: Expect(_REJECT, 3),
    Plant.FRESH_CLOCK_FORGERY: Expect(_REJECT, None),
    Plant.SETSID_SLEEPER: Expect(None, None),
    Plant.FIXTURE_WRITE: Expect(None, None),
    Plant.NETWORK: Expect(None, None),
    Plant.COMMITTED_BYTECODE: Expect(_REJECT, None),
}

DESCRIPTIONS: dict[Plant, str] = {
    Plant.BROKEN_PRODUCT: "a product mutation that makes a pinned property fail",
    Plant.MOVED_FIXTURE: "a byte changed in a pinned fixture file",
    Plant.UNPINNED_FIXTURE: "a new file in a fixture folder",
    Plant.WEAKENED_ORACLE: "the test behind a broken property returns early, with the broken "
    "product",
    Plant.WEAKENED_HELPER: "every function of a helper the property tests import returns "
    "early, with the broken product",
    Plant.FORCING_CONFTEST: "a root conftest.py forcing every report to pass, with the broken "
    "product",
    Plant.MASKING_CONFTEST: "a root conftest.py restoring the base's product, with the broken "
    "product",
    Plant.PIN_MUTATION: "an id appended to the flake pin, with the broken product",
    Plant.REPLAYED_LEDGER: "merge given the clean run's property ledger for a later commit",
    Plant.SHARED_CLOCK: "merge given a property ledger stamped with the fixture ledger's "
    "recorded_at",
    Plant.FRESH_CLOCK_FORGERY: "merge given the broken product's property ledger edited to "
    "pass, with a fresh clock (a known escape: the threat model's forged ledger)",
    Plant.SETSID_SLEEPER: "the product starts a setsid sleeper when imported; none may outlive "
    "the run",
    Plant.FIXTURE_WRITE: "the product writes to a pinned fixture when imported; the bytes "
    "must not change",
    Plant.NETWORK: "the product connects to a listener outside the run when imported; no "
    "connection may arrive",
    Plant.COMMITTED_BYTECODE: "bytecode of the base's product committed beside the broken source",
}

# The plants that need the broken product, and are not applicable without it.
NEEDS_BROKEN = frozenset(
    {
        Plant.WEAKENED_ORACLE,
        Plant.WEAKENED_HELPER,
        Plant.FORCING_CONFTEST,
        Plant.MASKING_CONFTEST,
        Plant.PIN_MUTATION,
        Plant.REPLAYED_LEDGER,
        Plant.SHARED_CLOCK,
        Plant.FRESH_CLOCK_FORGERY,
        Plant.COMMITTED_BYTECODE,
    }
)

FORCING_CONFTEST = """
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""


def masking_conftest(module: str, file_name: str, base_source: str) -> str:
    """A conftest that has the import system load the base's product in place of the
    change's: a finder first on `sys.meta_path` gives MODULE the base's source, and the
    conftest imports it at once (dropping a copy imported before it).

    The import system makes the module in its own order: the package above it first, then
    the module, in `sys.modules` before its code runs, a package with its `__path__`, so that
    the product's relative imports (`from . import exceptions`) and a package's `__init__`
    that imports the module back (Python-Markdown's `markdown.blockparser`) find what they
    would find in any run."""
    package = PurePosixPath(file_name).name == "__init__.py"
    folder = str(PurePosixPath(file_name).parent)
    return f"""
import importlib
import importlib.util
import sys

_SOURCE = {base_source!r}


class _BaseProduct:
    def find_spec(self, name, path=None, target=None):
        if name != {module!r}:
            return None
        spec = importlib.util.spec_from_loader(
            name, self, origin={file_name!r}, is_package={package!r}
        )
        spec.has_location = True
        if {package!r}:
            spec.submodule_search_locations = [{folder!r}]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(_SOURCE, {file_name!r}, "exec"), module.__dict__)


sys.meta_path.insert(0, _BaseProduct())
sys.modules.pop({module!r}, None)
importlib.import_module({module!r})
"""


def sleeper_canary(seconds: str) -> str:
    return (
        "\n\ndef _start_sleeper():\n"
        "    import subprocess\n"
        "    try:\n"
        f"        subprocess.Popen(['setsid', 'sleep', {seconds!r}], "
        "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, "
        "start_new_session=True)\n"
        "    except OSError:\n"
        "        pass\n\n\n"
        "_start_sleeper()\n"
    )


def fixture_write_canary(up: int, fixture: str) -> str:
    """Appends a byte to FIXTURE (relative to ROOT), UP folders above the product module."""
    return (
        "\n\ndef _touch_fixture():\n"
        "    import pathlib\n"
        "    try:\n"
        f"        target = pathlib.Path(__file__).resolve().parents[{up}] / {fixture!r}\n"
        "        with open(target, 'ab') as stream:\n"
        "            stream.write(b' ')\n"
        "    except OSError:\n"
        "        pass\n\n\n"
        "_touch_fixture()\n"
    )


def network_canary(port: int) -> str:
    return (
        "\n\ndef _call_out():\n"
        "    import socket\n"
        "    try:\n"
        f"        with socket.create_connection(('127.0.0.1', {port}), timeout=2) as sock:\n"
        "            sock.sendall(b'x')\n"
        "    except Exception:\n"
        "        pass\n\n\n"
        "_call_out()\n"
    )


def changed_byte(data: bytes) -> bytes:
    """DATA with one byte changed: the first digit moved on, else the first letter, else the
    first byte flipped; an empty file gets one byte."""
    for index, byte in enumerate(data):
        if 0x30 <= byte <= 0x39:
            return data[:index] + bytes([0x30 + (byte - 0x30 + 1) % 10]) + data[index + 1 :]
    for index, byte in enumerate(data):
        if 0x61 <= byte <= 0x7A:
            return data[:index] + bytes([0x61 + (byte - 0x61 + 1) % 26]) + data[index + 1 :]
    if not data:
        return b"\n"
    return bytes([data[0] ^ 0x01]) + data[1:]


def appended_flake(pin_text: str, test_id: str, test: str, revision: str, review_by: str) -> str:
    """The flake pin with one more entry, copying the first entry's review where there is one."""
    pin = json.loads(pin_text)
    flakes = pin.setdefault("flakes", [])
    reviewed = flakes[0] if flakes else {"accepted_revision": revision, "review_by": review_by}
    entry = {
        "test_id": test_id,
        "test": test,
        "accepted_revision": reviewed["accepted_revision"],
        "review_by": reviewed["review_by"],
    }
    flakes.append(entry)
    return json.dumps(pin, indent=2) + "\n"
