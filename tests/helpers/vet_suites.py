"""Small generated suites for `vet`: fixtures, pins and property tests built to react (or
not) to one kind of mutation; vet run over them; snapshots of a tree."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import make_tree, write_json

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
READ = """
import json
import os
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def lines(name):
    return (FIXTURES / name).read_text().splitlines()
"""


def make_suite(
    root: Path,
    fixtures: dict[str, bytes],
    tests: dict[str, str],
    properties: list[dict[str, Any]],
    env: Sequence[str] = (),
) -> Path:
    """A vet suite; ENV: the variables its tests read, which its properties pin keeps."""
    make_tree(root, {f"fixtures/{name}": data for name, data in fixtures.items()})
    for name, body in tests.items():
        make_tree(root, {f"properties/{name}": (READ + textwrap.dedent(body)).encode()})
    (root / "pytest.ini").write_text("[pytest]\n")
    files = sorted(f"fixtures/{name}" for name in fixtures)
    write_json(
        root / "pins/fixtures.json",
        {"pin_id": "fixpin-test", "algorithm": "sha256", "files": files},
    )
    pin: dict[str, Any] = {"pin_id": "proppin-test", "fixture_pins": ["fixpin-test"]}
    if env:
        pin["env"] = list(env)
    write_json(root / "pins/properties.json", {**pin, "properties": properties})
    return root


def claim(property_id: str, test: str, *domain: str) -> dict[str, Any]:
    return {
        "id": property_id,
        "claim": f"{property_id} holds.",
        "domain": list(domain),
        "test": test,
    }


def vet_args(root: Path, *extra: str | Path) -> list[str | Path]:
    return [
        "vet", "--pin", root / "pins/fixtures.json", "--properties", root / "pins/properties.json",
        "--command", f"{PYTEST} properties", "--root", root, "--out", root.parent / "vet.json",
        *extra,
    ]  # fmt: skip


def ledger(root: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((root.parent / "vet.json").read_text())
    return document


def snapshot(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ROOT: its mode and its bytes (a link: its target)."""
    entries: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            content: bytes | str = os.readlink(path)
        elif stat.S_ISREG(mode):
            content = path.read_bytes()
        else:
            content = ""
        entries[str(path.relative_to(root))] = (oct(mode), content)
    return entries


def run_vet(root: Path, *extra: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    """vet as a child process, as CI runs it."""
    command = [sys.executable, "-P", "-m", "three_ledger", *map(str, vet_args(root, *extra))]
    return subprocess.run(
        command,
        env={
            **os.environ,
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            # The result cache of this suite alone, beside it.
            "XDG_CACHE_HOME": str(root.parent / f"{root.name}-cache"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


SLOW = """
def test_slow_when_mutated():
    data = (FIXTURES / "slow.json").read_bytes()
    if data != b'{"n": 1}\\n':
        Path(os.environ["VET_TEST_PID_FILE"]).write_text(f"{os.getpid()}\\n")
        time.sleep(120)
    assert json.loads(data)["n"] == 1
"""


def slow_suite(root: Path) -> Path:
    return make_suite(
        root,
        {"slow.json": b'{"n": 1}\n'},
        {"test_slow.py": SLOW},
        [claim("slow.n", "properties/test_slow.py::test_slow_when_mutated", "slow.json")],
        env=["VET_TEST_PID_FILE"],
    )
