"""The ledger records, and the one way they are read, stamped and written (SPEC 4, 5)."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from three_ledger import __version__, jsonio
from three_ledger.errors import GateError, Refused

TOOL_NAME = "three-ledger"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


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


@dataclass(frozen=True)
class FileEntry:
    path: str
    size: int
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class FixtureLedger:
    KIND: ClassVar[str] = "fixture"
    SCHEMA: ClassVar[str] = "fixture-ledger"
    ledger_id: str
    pin_id: str
    digest: str
    fixtures_dir: str
    files: tuple[FileEntry, ...]
    tool_version: str
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.KIND,
            "ledger_id": self.ledger_id,
            "pin_id": self.pin_id,
            "digest": self.digest,
            "algorithm": "sha256",
            "fixtures_dir": self.fixtures_dir,
            "files": [entry.to_json() for entry in self.files],
            "tool": {"name": TOOL_NAME, "version": self.tool_version},
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> FixtureLedger:
        return cls(
            ledger_id=document["ledger_id"],
            pin_id=document["pin_id"],
            digest=document["digest"],
            fixtures_dir=document["fixtures_dir"],
            files=tuple(FileEntry(**entry) for entry in document["files"]),
            tool_version=document["tool"]["version"],
            recorded_at=document["recorded_at"],
        )


@dataclass(frozen=True)
class PropertyLedger:
    KIND: ClassVar[str] = "property"
    SCHEMA: ClassVar[str] = "property-ledger"
    ledger_id: str
    pin_id: str
    property_pin_id: str
    property_pin_sha256: str
    fixture_digest: str
    status_by_id: dict[str, str]
    oracle_moved: bool
    oracle_changes: tuple[str, ...]
    base_revision: str
    head_revision: str
    command: tuple[str, ...]
    command_exit: int
    duration_ms: int
    network: str
    network_enforcement: str
    flake_results: dict[str, str]
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.KIND,
            "ledger_id": self.ledger_id,
            "pin_id": self.pin_id,
            "property_pin_id": self.property_pin_id,
            "property_pin_sha256": self.property_pin_sha256,
            "fixture_digest": self.fixture_digest,
            "status_by_id": dict(self.status_by_id),
            "oracle_moved": self.oracle_moved,
            "oracle_changes": list(self.oracle_changes),
            "base_revision": self.base_revision,
            "head_revision": self.head_revision,
            "command": list(self.command),
            "command_exit": self.command_exit,
            "duration_ms": self.duration_ms,
            "network": self.network,
            "network_enforcement": self.network_enforcement,
            "flake_results": dict(self.flake_results),
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> PropertyLedger:
        fields = {key: value for key, value in document.items() if key != "kind"}
        fields["oracle_changes"] = tuple(fields["oracle_changes"])
        fields["command"] = tuple(fields["command"])
        return cls(**fields)

    def failing_ids(self) -> list[str]:
        return [prop_id for prop_id, status in self.status_by_id.items() if status != "pass"]


@dataclass(frozen=True)
class StatusDifference:
    left: str
    right: str


@dataclass(frozen=True)
class DualPinLedger:
    """A dual-pin comparison; `run` is False for the `--not-run` record."""

    KIND: ClassVar[str] = "dual_pin"
    SCHEMA: ClassVar[str] = "dual-pin-ledger"
    ledger_id: str
    run: bool
    drift: bool
    left_pin_id: str
    right_pin_id: str
    left_digest: str
    right_digest: str
    differences: dict[str, StatusDifference]
    recorded_at: str

    @classmethod
    def not_run(cls, ledger_id: str, recorded_at: str) -> DualPinLedger:
        return cls(ledger_id, False, False, "", "", "", "", {}, recorded_at)

    def to_json(self) -> dict[str, Any]:
        head = {"kind": self.KIND, "ledger_id": self.ledger_id}
        if not self.run:
            return {**head, "dual_pin": "not_run", "recorded_at": self.recorded_at}
        differences = {
            prop_id: {"left": diff.left, "right": diff.right}
            for prop_id, diff in self.differences.items()
        }
        return {
            **head,
            "dual_pin": "run",
            "drift": self.drift,
            "left_pin_id": self.left_pin_id,
            "right_pin_id": self.right_pin_id,
            "left_digest": self.left_digest,
            "right_digest": self.right_digest,
            "differences": differences,
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> DualPinLedger:
        if document["dual_pin"] == "not_run":
            return cls.not_run(document["ledger_id"], document["recorded_at"])
        differences = {
            prop_id: StatusDifference(**diff) for prop_id, diff in document["differences"].items()
        }
        return cls(
            ledger_id=document["ledger_id"],
            run=True,
            drift=document["drift"],
            left_pin_id=document["left_pin_id"],
            right_pin_id=document["right_pin_id"],
            left_digest=document["left_digest"],
            right_digest=document["right_digest"],
            differences=differences,
            recorded_at=document["recorded_at"],
        )


@dataclass(frozen=True)
class FlakeLedger:
    KIND: ClassVar[str] = "flake"
    SCHEMA: ClassVar[str] = "flake-ledger"
    ledger_id: str
    test_id: str
    flake_pin_id: str
    accepted_revision: str
    review_by: str
    observed: str
    fixture_digest: str
    property_ledger_sha256: str
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.KIND, **self.__dict__}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> FlakeLedger:
        return cls(**{key: value for key, value in document.items() if key != "kind"})


@dataclass(frozen=True)
class MergeInputs:
    fixture: str | None
    property: str | None
    dual_pin: str | None
    flakes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "fixture": self.fixture,
            "property": self.property,
            "dual_pin": self.dual_pin,
            "flakes": list(self.flakes),
        }


@dataclass(frozen=True)
class MergeDecision:
    KIND: ClassVar[str] = "merge"
    SCHEMA: ClassVar[str] = "merge-decision"
    ledger_id: str
    posture: str
    row: int
    reason: str
    inputs: MergeInputs
    recorded_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.KIND,
            "ledger_id": self.ledger_id,
            "posture": self.posture,
            "row": self.row,
            "reason": self.reason,
            "inputs": self.inputs.to_json(),
            "recorded_at": self.recorded_at,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> MergeDecision:
        inputs = document["inputs"]
        return cls(
            ledger_id=document["ledger_id"],
            posture=document["posture"],
            row=document["row"],
            reason=document["reason"],
            inputs=MergeInputs(
                inputs["fixture"], inputs["property"], inputs["dual_pin"], tuple(inputs["flakes"])
            ),
            recorded_at=document["recorded_at"],
        )


class Record(Protocol):
    KIND: ClassVar[str]
    SCHEMA: ClassVar[str]

    @property
    def recorded_at(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


RecordT = TypeVar(
    "RecordT", FixtureLedger, PropertyLedger, DualPinLedger, FlakeLedger, MergeDecision
)


@dataclass(frozen=True)
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
    return LedgerFile(path, hashlib.sha256(data).hexdigest(), kind.from_json(document))


def _check_recorded_at(stamp: str, path: Path) -> None:
    try:
        datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError as exc:
        raise Refused(f"{path}: $.recorded_at: {stamp!r} is not a real UTC time") from exc


def write_ledger(path: Path, record: Record) -> None:
    """Validate `record` against its own schema, then write it atomically."""
    document = record.to_json()
    jsonio.validate(document, record.SCHEMA, path, "ledger about to be written")
    jsonio.write_atomic(path, jsonio.dumps(document))


def tool_version() -> str:
    return __version__


@contextlib.contextmanager
def nothing_left_on_failure(out: Path) -> Iterator[None]:
    """On any failure, leave no file at `out`: a stale ledger from an earlier run is removed."""
    try:
        yield
    except BaseException as exc:
        note = remove_stale(out)
        if note is not None:
            if isinstance(exc, GateError):
                exc.notes.append(note)
            else:
                print(f"three-ledger: {note}", file=sys.stderr)
        raise


def remove_stale(out: Path) -> str | None:
    """Remove whatever sits at `out`, and say so; None when nothing was there."""
    try:
        out.unlink()
    except FileNotFoundError:
        return None
    except OSError as exc:
        # A read-only filesystem refuses the unlink (EROFS) even when nothing is there.
        if not os.path.lexists(out):
            return None
        return f"could not remove the stale file at {out}: {exc.strerror or exc}"
    return f"removed the stale file at {out}: it does not describe this run"


def refuse_out_over_inputs(out: Path, inputs: Iterable[Path]) -> None:
    """Refuse an `--out` that would overwrite one of the ledgers being read."""
    target = out.resolve()
    for path in inputs:
        if path.resolve() == target:
            raise Refused(f"--out {out} is also an input ledger: it would be overwritten")
