"""The Action's lockfile (requirements/action.txt) against pyproject.toml.

The Action installs the gate's dependencies from this file alone, hash-checked, so it must pin
every runtime dependency within the range pyproject.toml allows, and the build backend within
the range the build system requires. That the file is closed (every dependency of a pinned
package pinned too) is shown by installing it with `--require-hashes`, which refuses
otherwise: tests/e2e/test_action.py does, on every run of the Action.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "action.txt"
LOCK_INPUT = ROOT / "requirements" / "action.in"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# A pinned requirement and its continuation lines: `name==version \` then `--hash=...` lines.
_ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)((?:\s*\\\n\s+--hash=\S+)+)", re.M)


def locked(text: str) -> dict[str, tuple[Version, list[str]]]:
    """Each pinned name (canonical) with its version and hashes."""
    return {
        canonicalize_name(name): (Version(version), re.findall(r"--hash=(\S+)", hashes))
        for name, version, hashes in _ENTRY.findall(text)
    }


def wanted() -> list[Requirement]:
    runtime = [Requirement(line) for line in PYPROJECT["project"]["dependencies"]]
    backend = [Requirement(line) for line in PYPROJECT["build-system"]["requires"]]
    return runtime + backend


LOCKED = locked(LOCK.read_text(encoding="utf-8"))


@pytest.mark.parametrize("requirement", wanted(), ids=str)
def test_the_lock_pins_each_dependency_within_its_range(requirement: Requirement) -> None:
    name = canonicalize_name(requirement.name)
    assert name in LOCKED, f"{LOCK.name} does not pin {requirement.name}"
    version, _ = LOCKED[name]
    assert requirement.specifier.contains(version, prereleases=False), (requirement, version)


def test_every_pinned_package_carries_sha256_hashes() -> None:
    lines = [
        line
        for line in LOCK.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "--hash"))
    ]
    assert len(lines) == len(LOCKED) >= len(wanted())
    for name, (_, hashes) in LOCKED.items():
        assert hashes, name
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", digest) for digest in hashes), name


def test_the_lock_input_asks_for_the_ranges_pyproject_declares() -> None:
    asked = [
        Requirement(line)
        for line in LOCK_INPUT.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert sorted(map(str, asked)) == sorted(map(str, wanted()))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("jsonschema==4.26.0 \\\n    --hash=sha256:" + "a" * 64 + "\n", {"jsonschema"}),
        # Pinned without a hash, or not pinned: not an entry the Action could install.
        ("jsonschema==4.26.0\n", set()),
        ("jsonschema>=4.18 \\\n    --hash=sha256:" + "a" * 64 + "\n", set()),
    ],
)
def test_the_reader_takes_only_pinned_and_hashed_entries(text: str, found: set[str]) -> None:
    assert set(locked(text)) == found
