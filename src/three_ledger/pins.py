"""Loading and validating the three human-reviewed pin kinds (SPEC 3). Never writes them."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from three_ledger import env_policy, jsonio
from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.paths import all_plain_under, casefold_twins, glob_matches, is_under, path_problem
from three_ledger.pin_policy import Network, SandboxPolicy
from three_ledger.selection import ExpectedSkip, TestsRequirement, selector_tuple

DEFAULT_FIXTURES_DIR = "fixtures"
DEFAULT_ORACLE_PATHS = ("properties", "tests")


@frozen
class FixturePin:
    """A fixture pin as read and checked: the reviewed paths a run may read."""

    source: Path
    pin_id: str
    # The closed folders, in the pin's order: `fixtures_dir` is a list of one.
    fixtures_dirs: tuple[str, ...]
    digest: str | None
    description: str | None
    files: tuple[str, ...]
    # Whether the pin names its folders as `fixtures_dirs`: domains are then relative to ROOT,
    # not to the one folder.
    listed: bool = False

    @classmethod
    def from_json(cls, document: dict[str, Any], source: Path) -> FixturePin:
        listed = "fixtures_dirs" in document
        pin = cls(
            source=source,
            pin_id=document["pin_id"],
            fixtures_dirs=(
                tuple(document["fixtures_dirs"])
                if listed
                else (document.get("fixtures_dir", DEFAULT_FIXTURES_DIR),)
            ),
            digest=document.get("digest"),
            description=document.get("description"),
            files=tuple(document["files"]),
            listed=listed,
        )
        pin._check_paths()
        return pin

    @property
    def first_dir(self) -> str:
        """The first folder: `THREE_LEDGER_FIXTURES` names it."""
        return self.fixtures_dirs[0]

    def folders_key(self) -> str:
        """The key that names the folders in the pin, for messages."""
        return "fixtures_dirs" if self.listed else "fixtures_dir"

    def shown_folders(self) -> str:
        """The folders as a message names them: `'fixtures'`, or `'a', 'b'`."""
        return ", ".join(map(repr, self.fixtures_dirs))

    def ledger_folders(self) -> dict[str, Any]:
        """The folders as its fixture ledger names them: the key the pin uses, and only it."""
        if self.listed:
            return {"fixtures_dirs": self.fixtures_dirs}
        return {"fixtures_dir": self.first_dir}

    def domain_path(self, entry: str) -> str:
        """A domain entry as a path relative to ROOT (a `dir/` entry keeps its slash)."""
        return entry if self.listed else f"{self.first_dir}/{entry}"

    def _check_paths(self) -> None:
        for index, folder in enumerate(self.fixtures_dirs):
            where = f"$.fixtures_dirs[{index}]" if self.listed else "$.fixtures_dir"
            _refuse_bad_path(self.source, where, folder)
        for inner, outer in folder_overlaps(self.fixtures_dirs):
            raise Refused(
                f"{self.source}: $.fixtures_dirs[{inner}]: {self.fixtures_dirs[inner]!r} "
                f"overlaps $.fixtures_dirs[{outer}] {self.fixtures_dirs[outer]!r}: each folder "
                "is closed on its own, so no folder may hold another (or be it, in any case)"
            )
        if all_plain_under(self.files, self.fixtures_dirs):
            return
        for index, path in enumerate(self.files):
            problem = path_problem(path)
            if problem is None and not any(is_under(path, d) for d in self.fixtures_dirs):
                problem = f"is not under {self.folders_key()} {self.shown_folders()}"
            if problem is not None:
                raise Refused(f"{self.source}: $.files[{index}]: {path!r} {problem}")
        for first, second in casefold_twins(self.files):
            raise Refused(
                f"{self.source}: $.files: {first!r} and {second!r} differ only in case "
                "(one file on a case-insensitive filesystem)"
            )


def folder_overlaps(folders: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs (inner, outer) of indexes of FOLDERS where one lies in, or is, the other: equal
    under `str.casefold()` (one folder on macOS or Windows) counts as being it."""
    folded = [folder.rstrip("/").casefold() for folder in folders]
    return [
        (inner, outer) if len(folded[inner]) >= len(folded[outer]) else (outer, inner)
        for outer, inner in itertools.combinations(range(len(folders)), 2)
        if folded[inner] == folded[outer]
        or is_under(folded[inner], folded[outer])
        or is_under(folded[outer], folded[inner])
    ]


@frozen
class Property:
    """One property of the properties pin: its stable id, claim and tests."""

    id: str
    claim: str
    domain: tuple[str, ...]
    # Its selectors: none when only `@pytest.mark.property` markers name it.
    test: tuple[str, ...]
    # What it asks of the tests it counts (pin keys `min_tests`, `tests_sha256`).
    requirement: TestsRequirement = dataclasses.field(default_factory=TestsRequirement)


@frozen
class PropertiesPin:
    """The properties pin as read and checked."""

    source: Path
    sha256: str
    pin_id: str
    fixture_pins: tuple[str, ...]
    network: Network
    oracle_paths: tuple[str, ...]
    properties: tuple[Property, ...]
    # Entry-point names of the pytest plugins the run may load; None: autoload as usual.
    plugins: tuple[str, ...] | None = None
    expected_skips: tuple[ExpectedSkip, ...] = ()
    # Globs of the code under test; None: the oracles are inferred from names (no audit hook).
    product_paths: tuple[str, ...] | None = None
    # Names of the job's environment the test child keeps beyond the allow-list.
    env: tuple[str, ...] = ()
    # Folders under ROOT the run may write: an empty tmpfs each, in the sandbox's mount layer.
    writable_paths: tuple[str, ...] = ()
    sandbox: SandboxPolicy = SandboxPolicy.BEST_EFFORT

    @classmethod
    def from_json(cls, document: dict[str, Any], source: Path, sha256: str) -> PropertiesPin:
        properties = tuple(
            Property(
                id=entry["id"],
                claim=entry["claim"],
                domain=tuple(entry["domain"]),
                test=selector_tuple(entry.get("test")),
                requirement=TestsRequirement(entry.get("min_tests"), entry.get("tests_sha256")),
            )
            for entry in document["properties"]
        )
        pin = cls(
            source=source,
            sha256=sha256,
            pin_id=document["pin_id"],
            fixture_pins=tuple(document["fixture_pins"]),
            network=Network(document.get("network", Network.BANNED)),
            oracle_paths=tuple(document.get("oracle_paths", DEFAULT_ORACLE_PATHS)),
            properties=properties,
            plugins=tuple(document["plugins"]) if "plugins" in document else None,
            expected_skips=tuple(
                ExpectedSkip(test=skip["test"], reason=skip["reason"])
                for skip in document.get("expected_skips", ())
            ),
            product_paths=(
                tuple(document["product_paths"]) if "product_paths" in document else None
            ),
            env=tuple(document.get("env", ())),
            writable_paths=tuple(document.get("writable_paths", ())),
            sandbox=SandboxPolicy(document.get("sandbox", SandboxPolicy.BEST_EFFORT)),
        )
        pin._check()
        return pin

    def selectors(self) -> dict[str, tuple[str, ...]]:
        """Each property's selectors by id, as `results.answers_for` and `pinned` take them."""
        return {prop.id: prop.test for prop in self.properties}

    def requirements(self) -> dict[str, TestsRequirement]:
        """What each property asks of the tests it counts, by id, as `score_properties` takes it."""
        return {prop.id: prop.requirement for prop in self.properties}

    def _check(self) -> None:
        seen: set[str] = set()
        for index, prop in enumerate(self.properties):
            if prop.id in seen:
                raise Refused(f"{self.source}: $.properties[{index}].id: {prop.id!r} is repeated")
            seen.add(prop.id)
            for position, entry in enumerate(prop.domain):
                where = f"$.properties[{index}].domain[{position}]"
                _refuse_bad_path(self.source, where, entry.removesuffix("/"))
        for index, path in enumerate(self.oracle_paths):
            _refuse_bad_path(self.source, f"$.oracle_paths[{index}]", path.removesuffix("/"))
        for index, path in enumerate(self.writable_paths):
            _refuse_bad_path(self.source, f"$.writable_paths[{index}]", path.removesuffix("/"))
        for index, glob in enumerate(self.product_paths or ()):
            plain = glob.removesuffix("/").replace("**", "x").replace("*", "x").replace("?", "x")
            _refuse_bad_path(self.source, f"$.product_paths[{index}]", plain)
        for index, skip in enumerate(self.expected_skips):
            if "*" in skip.test:
                raise Refused(
                    f"{self.source}: $.expected_skips[{index}].test: {skip.test!r} holds `*`: "
                    "an expected skip names its tests without wildcards"
                )
        for index, name in enumerate(self.env):
            why = env_policy.reserved(name)
            if why is not None:
                raise Refused(f"{self.source}: $.env[{index}]: {name!r} cannot be kept: {why}")

    def is_product(self, path: str) -> bool:
        """Whether PATH (relative to ROOT) is code under test by `product_paths`."""
        return any(glob_matches(glob, path) for glob in self.product_paths or ())

    def check_against(self, fixture_pin: FixturePin) -> None:
        """Refuse unless this pin may be scored against `fixture_pin` (SPEC 3.2, 4.2 step 1)."""
        if fixture_pin.pin_id not in self.fixture_pins:
            raise Refused(
                f"{self.source}: $.fixture_pins: fixture pin {fixture_pin.pin_id!r} "
                f"({fixture_pin.source}) is not listed"
            )
        for index, prop in enumerate(self.properties):
            for position, entry in enumerate(prop.domain):
                if not domain_covers(entry, fixture_pin):
                    raise Refused(
                        f"{self.source}: $.properties[{index}].domain[{position}]: "
                        f"{entry!r} names no file pinned by {fixture_pin.source} "
                        f"{domain_base(fixture_pin)}{domain_hint(entry, fixture_pin)}"
                    )


def domain_covers(entry: str, fixture_pin: FixturePin) -> bool:
    """Whether a domain entry names a pinned file, or a folder (`valid/`) holding one."""
    full = fixture_pin.domain_path(entry)
    if entry.endswith("/"):
        return any(path.startswith(full) for path in fixture_pin.files)
    return full in fixture_pin.files


def domain_hint(entry: str, fixture_pin: FixturePin) -> str:
    """The entry a domain entry spelled from ROOT stands for, in a pin of one folder."""
    prefix = f"{fixture_pin.first_dir}/"
    if fixture_pin.listed or not entry.startswith(prefix):
        return ""
    inner = entry.removeprefix(prefix)
    return f": did you mean {inner!r}?" if inner and domain_covers(inner, fixture_pin) else ""


def domain_base(fixture_pin: FixturePin) -> str:
    """Where a domain entry is read from, for a message: the one folder, or ROOT."""
    if fixture_pin.listed:
        return "(domains are relative to ROOT with fixtures_dirs)"
    return f"under {fixture_pin.first_dir!r}"


@frozen
class FlakeEntry:
    """One entry of the flake pin: a test a person listed as flaky."""

    test_id: str
    test: str
    accepted_revision: str
    review_by: datetime.date
    owner: str | None
    note: str | None

    def expired(self, today: datetime.date) -> bool:
        """An entry holds through the whole UTC day of its `review_by`, never longer."""
        return today > self.review_by


@frozen
class FlakePin:
    """The flake pin as read and checked."""

    source: Path
    sha256: str
    pin_id: str
    flakes: tuple[FlakeEntry, ...]

    def selectors(self) -> dict[str, str]:
        """Each entry's `test` selector by its test_id."""
        return {entry.test_id: entry.test for entry in self.flakes}

    @classmethod
    def from_json(cls, document: dict[str, Any], source: Path, sha256: str) -> FlakePin:
        entries: list[FlakeEntry] = []
        seen: set[str] = set()
        for index, entry in enumerate(document["flakes"]):
            where = f"{source}: $.flakes[{index}]"
            if entry["test_id"] in seen:
                raise Refused(f"{where}.test_id: {entry['test_id']!r} is repeated")
            seen.add(entry["test_id"])
            entries.append(
                FlakeEntry(
                    test_id=entry["test_id"],
                    test=entry.get("test", entry["test_id"]),
                    accepted_revision=entry["accepted_revision"],
                    review_by=_parse_date(entry["review_by"], f"{where}.review_by"),
                    owner=entry.get("owner"),
                    note=entry.get("note"),
                )
            )
        return cls(source=source, sha256=sha256, pin_id=document["pin_id"], flakes=tuple(entries))

    def entry(self, test_id: str) -> FlakeEntry | None:
        return next((entry for entry in self.flakes if entry.test_id == test_id), None)

    def unaccepted(self, root: Path, base: str) -> dict[str, str]:
        """Why each entry fails SPEC 3.3's rule: accepted at the base or one of its ancestors.

        Keyed by test_id; an entry that holds is absent. Refused when BASE itself does not
        resolve in the work tree that contains ROOT.
        """
        # Here, not at the top: reading a pin (check-pins) needs no git.
        from three_ledger import git

        top = git.work_tree_top(root)
        base_commit = git.resolve_base_commit(top, base)
        reasons: dict[str, str] = {}
        for entry in self.flakes:
            revision = f"accepted_revision {entry.accepted_revision!r}"
            try:
                git.resolve_commit(top, entry.accepted_revision)
            except Refused:
                reasons[entry.test_id] = f"{revision} does not resolve to a commit"
                continue
            if not git.is_ancestor_or_same(top, entry.accepted_revision, base_commit):
                reasons[entry.test_id] = (
                    f"{revision} is neither the base {base} nor one of its ancestors"
                )
        return reasons


def utc_today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def load_fixture_pin(path: Path) -> FixturePin:
    # Not hashed: nothing records a fixture pin's own digest, and one of 500,000 paths is
    # tens of megabytes.
    document, _ = _load(path, "fixture-pin", hashed=False)
    return FixturePin.from_json(document, path)


def load_properties_pin(path: Path) -> PropertiesPin:
    document, sha256 = _load(path, "properties-pin")
    return PropertiesPin.from_json(document, path, sha256)


def load_flake_pin(path: Path) -> FlakePin:
    document, sha256 = _load(path, "flake-pin")
    return FlakePin.from_json(document, path, sha256)


# The flag that takes each pin kind, for a message about a pin given to the wrong one.
_PIN_FLAGS = {"fixture-pin": "--pin", "properties-pin": "--properties", "flake-pin": "--flake-pin"}


def _load(path: Path, schema_name: str, *, hashed: bool = True) -> tuple[dict[str, Any], str]:
    """The pin at PATH, checked against its schema, and the SHA-256 of its bytes (empty when
    not HASHED)."""
    what = schema_name.replace("-", " ")
    if hashed:
        data = jsonio.read_bytes_capped(path, what)
        sha256 = small_sha256(data)
        document = jsonio.parse_json(data, path, what)
        del data
    else:
        sha256 = ""
        document = jsonio.read_json_object(path, what)
    if schema_name == "fixture-pin":
        _refuse_both_folder_keys(document, path)
    try:
        jsonio.validate(document, schema_name, path, what)
    except Refused as refusal:
        found = document_kind(document)
        if found is None or found == what:
            raise
        raise Refused(
            f"{path}: this is a {found}; {_PIN_FLAGS[schema_name]} takes a {what}"
        ) from refusal
    return document, sha256


def small_sha256(data: bytes) -> str:
    """The SHA-256 of DATA, a properties or a flake pin: small. From CPython's own
    implementation where the interpreter has one (`_sha2` since 3.12, `_sha256` before), the
    same digest as `hashlib`'s: importing `hashlib` loads OpenSSL, some 11 million
    instructions, more than a quarter of a bare Python's start, which `check-pins` pays for
    nothing else. `hashlib` where the interpreter was built without them."""
    for name in ("_sha2", "_sha256"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib  # only where the interpreter has no hash of its own

    return hashlib.sha256(data).hexdigest()


def _refuse_both_folder_keys(document: Any, path: Path) -> None:
    """One line for what the schema's `oneOf` says less plainly: one folder key, not both."""
    if isinstance(document, dict) and {"fixtures_dir", "fixtures_dirs"} <= document.keys():
        raise Refused(
            f"{path}: $: fixtures_dir and fixtures_dirs are both given; a fixture pin names one "
            "folder (fixtures_dir) or a list of folders (fixtures_dirs), never both"
        )


def document_kind(document: Any) -> str | None:
    """What a JSON document looks like (`fixture pin`, `property ledger`, ...), by its keys."""
    if not isinstance(document, dict):
        return None
    kind = document.get("kind")
    if isinstance(kind, str):
        return f"{kind.replace('_', '-')} ledger"
    if "properties" in document or "fixture_pins" in document:
        return "properties pin"
    if "flakes" in document:
        return "flake pin"
    if "files" in document or "algorithm" in document:
        return "fixture pin"
    return None


def _refuse_bad_path(source: Path, where: str, path: str) -> None:
    problem = path_problem(path)
    if problem is not None:
        raise Refused(f"{source}: {where}: {path!r} {problem}")


def _parse_date(text: str, where: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError as exc:
        raise Refused(f"{where}: {text!r} is not a calendar date") from exc
