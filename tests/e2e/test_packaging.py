"""The package from each install path, installed in fresh virtual environments.

`python -m build` (`make dist`) makes the sdist, then the wheel from the unpacked sdist: what
an index or `pip install three_ledger-*.tar.gz` installs. `pip wheel CHECKOUT` makes the
wheel from the tree: what `pip install CHECKOUT` and the Action install. Both must carry the
example that `demo` builds its repository from; a symbolic link would be dropped from the
sdist, and the example with it. The builds and installs fetch hatchling, jsonschema and
pytest from the package index pip is configured with.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import three_ledger
from helpers import REPO, git
from helpers.markdown_project import fresh_repository, write_project
from three_ledger.demo.scenarios import SCENARIOS

# The environment of a fresh install: nothing that points Python at this checkout.
_LEAKY_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "VIRTUAL_ENV")


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel_from_sdist: Path
    wheel_from_tree: Path


def run(*argv: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in _LEAKY_VARIABLES}
    return subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


def checked(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """One build of each kind, shared by the module: `python -m build`, then `pip wheel`."""
    out = tmp_path_factory.mktemp("dist")
    checked(run(sys.executable, "-m", "build", "--outdir", out / "build", REPO, cwd=out))
    checked(run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                "--wheel-dir", out / "tree", REPO, cwd=out))  # fmt: skip
    [sdist] = (out / "build").glob("*.tar.gz")
    [from_sdist] = (out / "build").glob("*.whl")
    [from_tree] = (out / "tree").glob("*.whl")
    return Dists(sdist, from_sdist, from_tree)


def fresh_venv(folder: Path, *requirements: str | Path) -> Path:
    """A virtual environment with REQUIREMENTS only (this pip installs them); its bin folder."""
    checked(run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent))
    python = folder / "bin" / "python"
    checked(run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                *requirements, cwd=folder.parent))  # fmt: skip
    where = checked(run(python, "-c", "import three_ledger; print(three_ledger.__file__)",
                        cwd=folder.parent))  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(folder), "not the installed copy"
    return folder / "bin"


def tracked_example() -> dict[str, bytes]:
    """The example as git tracks it: path under examples/orders -> bytes."""
    paths = git(REPO, "ls-files", "-z", "examples/orders").split("\0")
    return {
        path.removeprefix("examples/orders/"): (REPO / path).read_bytes() for path in paths if path
    }


def wheel_files(wheel: Path) -> dict[str, bytes]:
    """Every file of WHEEL but its RECORD (which lists hashes of the others) -> bytes."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: archive.read(name)
            for name in archive.namelist()
            if not name.endswith(".dist-info/RECORD")
        }


def test_the_sdist_carries_the_example_as_files_and_the_license(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        members = sdist.getmembers()
        files = {
            member.name.split("/", 1)[1]: _read(sdist, member)
            for member in members
            if member.isfile()
        }
    assert [member.name for member in members if member.issym() or member.islnk()] == []
    shipped = {
        name.removeprefix("examples/orders/"): data
        for name, data in files.items()
        if name.startswith("examples/orders/")
    }
    assert shipped == tracked_example()
    assert files["LICENSE"] == (REPO / "LICENSE").read_bytes()


def _read(sdist: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    extracted = sdist.extractfile(member)
    assert extracted is not None
    with extracted:
        return extracted.read()


def test_the_wheel_from_the_sdist_and_from_the_tree_are_the_same(dists: Dists) -> None:
    from_sdist = wheel_files(dists.wheel_from_sdist)
    assert from_sdist == wheel_files(dists.wheel_from_tree)
    example = "three_ledger/example/"
    shipped = {
        name.removeprefix(example): data
        for name, data in from_sdist.items()
        if name.startswith(example)
    }
    assert shipped == tracked_example()
    templates = "three_ledger/init_templates/"
    assert {
        name.removeprefix(templates): data
        for name, data in from_sdist.items()
        if name.startswith(templates)
    } == {path.name: path.read_bytes() for path in (REPO / "templates/init").iterdir()}
    info = f"three_ledger-{three_ledger.__version__}.dist-info"
    assert from_sdist[f"{info}/licenses/LICENSE"] == (REPO / "LICENSE").read_bytes()
    metadata = from_sdist[f"{info}/METADATA"].decode()
    assert "Provides-Extra: demo\n" in metadata
    assert "Requires-Dist: pytest<10,>=7.0; extra == 'demo'\n" in metadata


def test_demo_runs_from_the_wheel_built_from_the_sdist(dists: Dists, tmp_path: Path) -> None:
    bin_dir = fresh_venv(tmp_path / "venv", f"{dists.wheel_from_sdist}[demo]")
    done = run(bin_dir / "three-ledger", "demo", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"demo: all {len(SCENARIOS)} scenarios ended as expected" in done.stdout
    assert "Traceback" not in done.stderr


def test_without_pytest_demo_says_in_one_line_how_to_get_it(dists: Dists, tmp_path: Path) -> None:
    bin_dir = fresh_venv(tmp_path / "venv", dists.wheel_from_tree)
    kept = tmp_path / "kept"
    done = run(bin_dir / "three-ledger", "demo", "--dir", kept, cwd=tmp_path)
    assert done.returncode == 4
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert f"run {bin_dir / 'python'} -m pip install pytest" in line
    assert "demo extra (pip install 'PATH[demo]'" in line
    assert not kept.exists()


def test_init_from_the_wheel_drafts_the_workflow_from_its_shipped_template(
    dists: Dists, tmp_path: Path
) -> None:
    bin_dir = fresh_venv(tmp_path / "venv", dists.wheel_from_sdist)
    repo = tmp_path / "mdit"
    write_project(repo)
    fresh_repository(repo)
    # The project's tests run with this Python (it has pytest); the gate is the wheel's.
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    done = run(bin_dir / "three-ledger", "init", "--command", command, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    workflow = (repo / ".github/workflows/three-ledger.yml").read_text(encoding="utf-8")
    assert workflow.startswith("# three-ledger: the merge gate, drafted by `three-ledger init`")
    # Installed from a local file, the gate has no pinned source to name: the placeholder.
    assert 'TL_PACKAGE: "git+https://github.com/OWNER/three-ledger@COMMIT"' in workflow
    assert sorted(path.name for path in (repo / "pins.draft").iterdir()) == [
        "fixtures.json", "flakes.json", "properties.json",
    ]  # fmt: skip


def test_pyroma_rates_the_sdist_at_least_9(dists: Dists, tmp_path: Path) -> None:
    done = run(sys.executable, "-m", "pyroma", "--quiet", "--min", "9", "--file", dists.sdist,
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(done.stdout.split()[-1]) >= 9
