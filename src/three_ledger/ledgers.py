"""The ledger records, and the one way they are read, stamped and written (SPEC 4, 5).

The fixture and property ledgers live here; the kinds that neither `digest` nor `properties`
writes live in `other_ledgers.py`, so that those commands do not make their dataclasses at
start (about 0.3 ms each). Every kind is read and written by the functions below.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import hashlib
import operator
import os
import time
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from three_ledger import __version__, jsonio
from three_ledger.base_resolution import BaseResolution
from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.plugin.wire import OUTSIDE_ROOT
from three_ledger.vocabulary import (
    LAYER_HELD,
    Enforcement,
    Network,
    OracleModel,
    Outcome,
    Status,
    Tripwire,
)

TOOL_NAME = "three-ledger"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def fresh_recorded_at(
    seen: Iterable[str] = (), clock: Callable[[], datetime.datetime] = utc_now
) -> str:
    """This process's own UTC clock, with microseconds, unequal to every stamp in `seen`."""
    taken = set(seen)
    while True:
        stamp = clock().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        if stamp not in taken:
            return stamp
        time.sleep(0.000_01)


def new_ledger_id() -> str:
    """A random (version 4) UUID as 32 lowercase hex digits.

    Built from `os.urandom` as RFC 9562 lays it out: importing `uuid` costs every
    command several milliseconds of start-up for this one call.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC variant
    return raw.hex()


# A ledger's JSON document is generated from its dataclass: one key per field, in field
# order, after `kind`. Nested records, tuples, maps and enums convert by their declared type.


def encode(value: Any) -> Any:
    """A record (or any value inside one) as the JSON value a ledger holds."""
    if type(value) in _AS_IS:  # checked first: a fixture ledger holds 300,000 of them
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: encode(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return _encode_items(value)
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    return value


_AS_IS = frozenset({str, int, float, bool, type(None)})


def _encode_items(items: tuple[Any, ...] | list[Any]) -> list[Any]:
    """Each item encoded. Plain values (a shard plan's 20,000 ids) are kept as they are, and
    records of one type whose fields hold only plain values (a fixture ledger's 100,000
    files) are converted field by field, in C loops."""
    kinds = set(map(type, items))
    if kinds <= _AS_IS:
        return list(items)
    plain = _plain_columns(items, kinds)
    if plain is None:
        return [encode(item) for item in items]
    return jsonio.Rows(*plain).objects()


def _plain_columns(
    items: tuple[Any, ...] | list[Any], kinds: set[type] | None = None
) -> tuple[tuple[str, ...], tuple[list[Any], ...]] | None:
    """Field names and one list of values per field, for records of one type (KINDS, the
    items' types, where known) whose fields hold only plain values; None for anything else."""
    kinds = set(map(type, items)) if kinds is None else kinds
    record_type = next(iter(kinds)) if len(kinds) == 1 else None
    if record_type is None or not dataclasses.is_dataclass(record_type):
        return None
    names = _field_names(record_type)
    columns = tuple(list(map(operator.attrgetter(name), items)) for name in names)
    if not all(set(map(type, column)) <= _AS_IS for column in columns):
        return None
    return names, columns


def decode(kind: Any, value: Any) -> Any:
    """The inverse of `encode`, guided by the declared type KIND; absent keys take defaults."""
    return _decoder(kind)(value)


@functools.cache
def _field_names(record_type: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(record_type))


@functools.cache
def _decoder(kind: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is tuple:
        item = _decoder(args[0])
        return lambda value: tuple(item(v) for v in value)
    if origin is dict:
        item = _decoder(args[1])
        return lambda value: {key: item(v) for key, v in value.items()}
    if origin in (types.UnionType, typing.Union):
        present = _decoder(next(arg for arg in args if arg is not type(None)))
        return lambda value: None if value is None else present(value)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _record_decoder(kind)
    return lambda value: value


def _record_decoder(record_type: type) -> Callable[[Any], Any]:
    hints = typing.get_type_hints(record_type)
    fields = {name: _decoder(hints[name]) for name in _field_names(record_type)}

    def build(document: dict[str, Any]) -> Any:
        given = {name: fields[name](document[name]) for name in fields if name in document}
        return record_type(**given)

    return build


class _Encoded:
    """`to_json` and `from_json` for a ledger record, generated from its fields."""

    KIND: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.KIND, **encode(self)}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Any:
        return decode(cls, {key: value for key, value in document.items() if key != "kind"})


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One pinned file in a fixture ledger: its path, size and own SHA-256."""

    path: str
    size: int
    sha256: str


# A file entry's keys in a fixture ledger: one per field, in field order.
FILE_ENTRY_KEYS = _field_names(FileEntry)


@frozen
class Tool:
    """The program that wrote a ledger, and its version."""

    name: str
    version: str


@frozen(kw_only=True)
class FixtureLedger(_Encoded):
    """The fixture ledger (SPEC 4.1): which fixture bytes a run used, file by file."""

    KIND: ClassVar[str] = "fixture"
    SCHEMA: ClassVar[str] = "fixture-ledger"
    ledger_id: str
    pin_id: str
    digest: str
    algorithm: str = "sha256"
    # The pin's folders as the pin names them: its one `fixtures_dir`, else `fixtures_dirs`.
    # The document holds the one that is set.
    fixtures_dir: str | None = None
    fixtures_dirs: tuple[str, ...] | None = None
    files: tuple[FileEntry, ...]
    tool: Tool = dataclasses.field(default_factory=lambda: Tool(TOOL_NAME, __version__))
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        document = super().to_json()
        unset = "fixtures_dirs" if self.fixtures_dirs is None else "fixtures_dir"
        del document[unset]
        return document


@frozen
class FailingTest:
    """A test a non-passing property matched, how it ended, and why it skipped (if it did)."""

    id: str
    outcome: Outcome
    reason: str | None = None


@frozen
class UnpinnedFailures:
    """Failed or errored tests outside every property and flake entry: how many, the first ids."""

    count: int = 0
    first_ids: tuple[str, ...] = ()


@frozen
class ShardsProvenance:
    """The shard plan (sha256 of its bytes), its slice count, and each shard ledger merged,
    in index order."""

    plan_sha256: str
    total: int
    ledger_ids: tuple[str, ...]
    ledger_sha256s: tuple[str, ...]


@frozen
class PluginSource:
    """A registered plugin: its name, and its file under ROOT or its distribution."""

    name: str
    source: str


@frozen(kw_only=True)
class Harness:
    """What steered the test run besides the tests: pytest, its config, conftests, plugins."""

    pytest: str
    rootdir: str
    config_file: str | None
    main: str
    conftests: tuple[str, ...]
    plugins: tuple[PluginSource, ...]
    pythonpath: tuple[str, ...]
    addopts: tuple[str, ...]
    shadowing: dict[str, str]
    test_side_modules: tuple[str, ...]

    def files_under_root(self) -> dict[str, str]:
        """Each file under ROOT that steered the run, with why it counts as an oracle."""
        reasons: dict[str, str] = {}
        for path in self.test_side_modules:
            reasons[path] = "test-side module"
        for path, why in self.shadowing.items():
            reasons[path] = f"module that {why}"
        for plugin in self.plugins:
            if plugin.source.endswith(".py") and not plugin.source.startswith("<"):
                reasons[plugin.source] = f"pytest plugin {plugin.name}"
        for path in self.conftests:
            reasons[path] = "conftest"
        if self.main.endswith(".py"):
            reasons[self.main] = "the run's __main__"
        if self.config_file is not None and self.config_file != OUTSIDE_ROOT:
            reasons[self.config_file] = "pytest config file"
        reasons.pop(OUTSIDE_ROOT, None)
        return reasons


@frozen
class Sandbox:
    """How the run was shut in: each layer `held` or `missing: WHY`, which of the job's
    variable names the child did not get and which it kept beyond the allow-list, and the
    files the measured run read where it may write (`writable_paths`)."""

    layers: dict[str, str]
    env_removed: tuple[str, ...]
    env_kept: tuple[str, ...]
    writable_reads: tuple[str, ...] = ()

    def missing(self) -> dict[str, str]:
        """Each layer that did not hold, with its `missing: WHY`."""
        return {name: state for name, state in self.layers.items() if state != LAYER_HELD}


@frozen
class Seed:
    """The seed a shuffling plugin (pytest-randomly: `randomly`) chose for a worker's run."""

    plugin: str
    seed: int


@frozen
class OrderFile:
    """Where a long run order is kept: a file beside the ledger, and the sha256 of its bytes."""

    path: str
    sha256: str


@frozen
class RunOrder:
    """Per worker (an xdist worker id, or `main`), the node ids that ran, in order; and the
    seed of any plugin that shuffled them. A long order is held in FILE instead (`run_order.py`)."""

    tests: int
    seeds: dict[str, Seed]
    workers: dict[str, tuple[str, ...]] | None
    file: OrderFile | None = None


@frozen(kw_only=True)
class PropertyLedger(_Encoded):
    """The property ledger (SPEC 4.2): each pinned property's status on one digest."""

    KIND: ClassVar[str] = "property"
    SCHEMA: ClassVar[str] = "property-ledger"
    ledger_id: str
    pin_id: str
    property_pin_id: str
    property_pin_sha256: str
    fixture_digest: str
    status_by_id: dict[str, Status]
    oracle_moved: bool
    oracle_changes: tuple[str, ...]
    # Why each of oracle_changes counts as an oracle (measured_oracles.py).
    oracle_change_reasons: dict[str, str]
    # Explicit oracle_paths entries that match nothing at the base or in the tree.
    oracle_paths_unmatched: tuple[str, ...]
    # `closed` with the pin's product_paths (measured), else `inferred` (from names).
    oracle_model: OracleModel = OracleModel.INFERRED
    # Closed model: ignored files the run read; they move no oracle.
    untracked_reads: tuple[str, ...] = ()
    # New test modules the run left out (`--ignore`) and never loaded: nothing scored them.
    unscored_new_files: tuple[str, ...] = ()
    base_revision: str
    # The base asked for, the commit used (base_revision) and how: ancestor or merge-base.
    base_resolution: BaseResolution
    head_revision: str
    command: tuple[str, ...]
    command_exit: int
    # The --junit-xml report the statuses were read from (path relative to ROOT); None when
    # they came from the pytest plugin.
    junit_report: FileEntry | None
    duration_ms: int
    network: Network
    network_enforcement: Enforcement
    sandbox: Sandbox
    flake_results: dict[str, Outcome]
    tripwire: Tripwire
    # What steered the run (pytest mode), or None (JUnit mode).
    harness: Harness | None
    # The order the tests ran in (pytest mode), or None (JUnit mode).
    run_order: RunOrder | None = None
    # Per property, the distinct results it counted (expected skips left out).
    tests_matched: dict[str, int] = dataclasses.field(default_factory=dict)
    # Per property, the results left out as expected skips; a property with none is absent.
    expected_skips_left_out: dict[str, int] = dataclasses.field(default_factory=dict)
    # Per property that is not `pass`, the first tests that did not pass.
    failing_tests: dict[str, tuple[FailingTest, ...]] = dataclasses.field(default_factory=dict)
    # Per property in `failing_tests`, how many of its counted results did not pass: the
    # tests beyond the first few are counted, not named.
    failing_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    # Per property that is `missing`, why: nothing counted, or short of the pin's min_tests
    # or tests_sha256.
    missing_reasons: dict[str, str] = dataclasses.field(default_factory=dict)
    unpinned_failures: UnpinnedFailures = dataclasses.field(default_factory=UnpinnedFailures)
    # Where `combine` wrote it: the plan and the shard ledgers it merged; None when not sharded.
    shards: ShardsProvenance | None = None
    recorded_at: str

    def failing_ids(self) -> list[str]:
        return [prop_id for prop_id, status in self.status_by_id.items() if status != Status.PASS]

    def failing_count(self, prop_id: str) -> int:
        """How many tests behind PROP_ID's miss did not pass (`failing_tests` names the first)."""
        return self.failing_counts.get(prop_id, 0)


class Record(Protocol):
    KIND: ClassVar[str]
    SCHEMA: ClassVar[str]

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> typing.Self: ...

    @property
    def recorded_at(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


RecordT = TypeVar("RecordT", bound=Record)


@frozen
class LedgerFile(Generic[RecordT]):
    """A ledger as read from disk: where it was, the sha256 of its bytes, and its record."""

    path: Path
    sha256: str
    record: RecordT


def read_ledger(path: Path, kind: type[RecordT]) -> LedgerFile[RecordT]:
    """Read and validate a ledger of one kind; anything malformed is refused (exit 2)."""
    what = f"{kind.KIND.replace('_', '-')} ledger"
    data = jsonio.read_bytes_capped(path, what)
    document = jsonio.parse_json(data, path, what)
    if isinstance(document, dict) and document.get("kind") != kind.KIND:
        raise Refused(f"{path}: $.kind: expected {kind.KIND!r}, found {document.get('kind')!r}")
    jsonio.validate(document, kind.SCHEMA, path, what)
    _check_recorded_at(document["recorded_at"], path)
    record: RecordT = kind.from_json(document)
    _check_base_used(record, path)
    return LedgerFile(path, hashlib.sha256(data).hexdigest(), record)


def _check_recorded_at(stamp: str, path: Path) -> None:
    try:
        datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError as exc:
        raise Refused(f"{path}: $.recorded_at: {stamp!r} is not a real UTC time") from exc


def _check_base_used(record: object, path: Path) -> None:
    """The commit a ledger says it used is its base_revision: where they differ, it was edited."""
    resolution = getattr(record, "base_resolution", None)
    base_revision = getattr(record, "base_revision", None)
    if isinstance(resolution, BaseResolution) and resolution.used != base_revision:
        raise Refused(
            f"{path}: $.base_resolution.used is {resolution.used!r}, not $.base_revision "
            f"{base_revision!r}: the ledger was edited"
        )


def write_ledger(path: Path, record: Record) -> None:
    """Validate `record` against its own schema, then write it atomically."""
    document = record.to_json()
    jsonio.validate(document, record.SCHEMA, path, "ledger about to be written")
    jsonio.write_json(path, document)


def write_fixture_ledger(
    path: Path, ledger: FixtureLedger, files: jsonio.Rows | None = None
) -> None:
    """`write_ledger` for a fixture ledger, whose `files` (100,000 for a large pin) reach
    the schema check and the file as columns (`jsonio.Rows`), never as one dict each.

    FILES, when given, are the entries as columns (FILE_ENTRY_KEYS), written in place of
    the ledger's own `files`: then no FileEntry need be made per file. Same bytes as
    `write_ledger`, and the same refusals: only the route differs.
    """
    document = dataclasses.replace(ledger, files=()).to_json()
    if files is None:
        plain = _plain_columns(ledger.files)
        files = None if plain is None else jsonio.Rows(*plain)
    document["files"] = encode(ledger.files) if files is None else files
    jsonio.validate(document, ledger.SCHEMA, path, "ledger about to be written")
    jsonio.write_json(path, document)


def ledger_text(words: Sequence[str]) -> tuple[str, ...]:
    """Words from the OS (argv, git's file names) as a UTF-8 ledger can hold them.

    Bytes that are not UTF-8 reach Python as lone surrogates; they are written as `\\xff`.
    """
    return tuple(_unicode(word) for word in words)


def _unicode(word: str) -> str:
    try:
        raw = word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from a byte
        return word.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
