"""Tests for three_ledger.plugin.reads: which pinned files each item opened, in real pytest runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.pytest_child

# A suite that reads its data every way vet must see: in a test, in a fixture shared by two
# tests, at import (collection time), in a conftest.py at start-up, through os.open; and ways
# that are not reads of pinned data: a file written, a file outside the watched folder.
CONFTEST = """
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
(DATA / "startup.txt").read_text()


@pytest.fixture(scope="session")
def shared():
    return (DATA / "shared.txt").read_text()
"""
MODULE_A = """
from pathlib import Path

DATA = Path(__file__).parent / "data"
LOADED_AT_IMPORT = (DATA / "collected.txt").read_text()


def test_reads_own(tmp_path):
    (DATA / "own.txt").read_bytes()
    (tmp_path / "elsewhere.txt").write_text("not watched")
    (tmp_path / "elsewhere.txt").read_text()


def test_uses_shared_first(shared):
    pass


def test_writes_only():
    with open(DATA / "written.txt", "w") as stream:
        stream.write("output, not input")


def test_os_open():
    import os

    os.close(os.open(DATA / "low_level.txt", os.O_RDONLY))
"""
MODULE_B = """
def test_uses_shared_later(shared_again):
    pass


def test_reads_nothing():
    pass


def test_a_child_of_a_test_is_not_asked_to_record():
    import os

    assert "THREE_LEDGER_READS" not in os.environ
"""
CONFTEST_B = """
import pytest


@pytest.fixture
def shared_again(shared):
    return shared
"""
BOTH_VARIABLES = {"THREE_LEDGER_READS": "/r", "THREE_LEDGER_READS_UNDER": "/w"}
DATA_FILES = ("startup.txt", "collected.txt", "shared.txt", "own.txt", "low_level.txt")


def write_suite(folder: Path) -> Path:
    (folder / "data").mkdir(parents=True)
    for name in DATA_FILES:
        (folder / "data" / name).write_text(name)
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (folder / "test_a.py").write_text(textwrap.dedent(MODULE_A))
    (folder / "sub").mkdir()
    (folder / "sub" / "conftest.py").write_text(textwrap.dedent(CONFTEST_B))
    (folder / "sub" / "test_b.py").write_text(textwrap.dedent(MODULE_B))
    return folder


def reads_env(folder: Path, reads: Path, watched: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "THREE_LEDGER_"))}
    env.update(
        PYTEST_PLUGINS="three_ledger.plugin.hooks",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        THREE_LEDGER_READS=str(reads),
        THREE_LEDGER_READS_UNDER=watched,
    )
    return env


def run_reading(folder: Path, *args: str, watched: str | None = None) -> dict[str, list[str]]:
    reads = folder.parent / f"reads-{folder.name}"
    reads.mkdir()
    env = reads_env(folder, reads, watched or str(folder / "data"))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines: dict[str, list[str]] = {}
    for path in sorted(reads.glob("reads-*.jsonl")):
        for text in path.read_text().splitlines():
            record = json.loads(text)
            lines[record["id"]] = record["reads"]
    return lines


@pytest.fixture(scope="module", params=["serial", "xdist"])
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[str]]:
    folder = write_suite(tmp_path_factory.mktemp(request.param) / "suite")
    workers = ["-p", "xdist", "-n", "2"] if request.param == "xdist" else []
    return run_reading(folder, *workers)


def test_one_line_per_item_that_ran(recorded: dict[str, list[str]]) -> None:
    assert sorted(recorded) == [
        "sub/test_b.py::test_a_child_of_a_test_is_not_asked_to_record",
        "sub/test_b.py::test_reads_nothing",
        "sub/test_b.py::test_uses_shared_later",
        "test_a.py::test_os_open",
        "test_a.py::test_reads_own",
        "test_a.py::test_uses_shared_first",
        "test_a.py::test_writes_only",
    ]


def test_a_test_s_own_reads_count_for_it_alone(recorded: dict[str, list[str]]) -> None:
    assert "own.txt" in recorded["test_a.py::test_reads_own"]
    assert "own.txt" not in recorded["test_a.py::test_writes_only"]
    assert "low_level.txt" in recorded["test_a.py::test_os_open"]


def test_import_time_reads_count_for_every_item_of_the_module(
    recorded: dict[str, list[str]],
) -> None:
    for item, reads in recorded.items():
        assert ("collected.txt" in reads) == item.startswith("test_a.py"), item


def test_start_up_reads_count_for_every_item(recorded: dict[str, list[str]]) -> None:
    assert all("startup.txt" in reads for reads in recorded.values())


def test_a_shared_fixture_s_reads_count_for_each_test_using_it(
    recorded: dict[str, list[str]],
) -> None:
    # The session fixture is set up once, in whichever item comes first; both users count it.
    assert "shared.txt" in recorded["test_a.py::test_uses_shared_first"]
    assert "shared.txt" in recorded["sub/test_b.py::test_uses_shared_later"]
    assert "shared.txt" not in recorded["sub/test_b.py::test_reads_nothing"]


def test_writes_and_files_outside_the_watched_folder_are_not_reads(
    recorded: dict[str, list[str]],
) -> None:
    every_read = {path for reads in recorded.values() for path in reads}
    assert every_read == set(DATA_FILES)


def test_paths_are_relative_to_the_watched_folder_even_through_a_link(tmp_path: Path) -> None:
    real = write_suite(tmp_path / "real")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    watched = os.pathsep.join([str(tmp_path / "link" / "data"), str(real / "data")])
    recorded = run_reading(tmp_path / "link", watched=watched)
    assert "own.txt" in recorded["test_a.py::test_reads_own"]


@pytest.mark.parametrize(
    ("variables", "hooked"),
    [({}, False), ({"THREE_LEDGER_READS": "/r"}, False), (BOTH_VARIABLES, True)],
)
def test_the_hook_is_installed_only_when_the_gate_asks(
    variables: dict[str, str], hooked: bool
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREE_LEDGER_")}
    probe = "import three_ledger.plugin.reads as r; print(r._LOG is not None)"
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**env, **variables},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout == f"{hooked}\n"
