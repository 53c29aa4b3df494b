"""`init`: drafts, never pins; nothing over an existing file; nothing at all on a refusal.

The collection here is a stand-in that writes what the plugin's collection writes (named
`pytest`, as the network ban asks of a command it cannot shut in a namespace); the real one
runs in tests/e2e/test_init_end_to_end.py.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from helpers import RunCli, git, make_tree
from helpers.markdown_project import PORT_FOLDER, SPEC_FOLDER, fresh_repository, write_project
from three_ledger.ci_workflow import PLACEHOLDER_PACKAGE
from three_ledger.pins import load_fixture_pin, load_flake_pin, load_properties_pin

COMMIT = "0123456789abcdef0123456789abcdef01234567"
STAND_IN = """#!{python}
import json, os, sys
ids = [
    "tests/test_spec.py::test_spec_example[ATX headings]",
    "tests/test_spec.py::test_spec_example[Lists]",
    "tests/test_port/test_fixtures.py::test_fixture[two items]",
    "tests/test_api/test_render.py::test_empty_input_renders_nothing",
]
skips = {skips!r}
xfails = {xfails!r}
with open(os.environ["THREE_LEDGER_COLLECT"], "a") as out:
    for node in [*ids, *skips, *xfails]:
        line = {{"id": node, "property_ids": [], "skip_reason": skips.get(node)}}
        if node in xfails:
            line["xfail"] = True
        out.write(json.dumps(line) + "\\n")
sys.exit({exit_code})
"""
DRAFTS = ["pins.draft/fixtures.json", "pins.draft/flakes.json", "pins.draft/properties.json"]
WORKFLOW = ".github/workflows/three-ledger.yml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "mdit"
    write_project(repo)
    fresh_repository(repo)
    return repo


def stand_in(
    folder: Path,
    exit_code: int,
    skips: dict[str, str] | None = None,
    xfails: tuple[str, ...] = (),
) -> str:
    """A collection of four tests (and SKIPS, node id: reason; and XFAILS, node ids marked
    to fail) that exits EXIT_CODE."""
    script = folder / "pytest"
    folder.mkdir()
    text = STAND_IN.format(
        python=sys.executable, exit_code=exit_code, skips=skips or {}, xfails=list(xfails)
    )
    script.write_text(text, "utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def collector(tmp_path: Path) -> str:
    return stand_in(tmp_path / "bin", 0)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ROOT but git's own, with its bytes."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def test_init_drafts_three_pins_and_the_workflow_and_says_what_comes_next(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    before = tree(project)
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    written = sorted(set(tree(project)) - set(before))
    assert written == sorted([*DRAFTS, WORKFLOW])
    assert {path: tree(project)[path] for path in before} == before
    fixtures = load_fixture_pin(project / DRAFTS[0])
    assert (fixtures.pin_id, fixtures.fixtures_dirs, fixtures.listed) == (
        "fixpin-mdit",
        (SPEC_FOLDER, PORT_FOLDER),
        True,
    )
    assert fixtures.digest is not None
    properties = load_properties_pin(project / DRAFTS[2])
    assert [(p.id, p.test, p.requirement.min_tests) for p in properties.properties] == [
        ("test_api.test_render", ("tests/test_api/test_render.py",), 1),
        ("test_port.test_fixtures", ("tests/test_port/test_fixtures.py",), 1),
        ("test_spec", ("tests/test_spec.py",), 2),
    ]
    assert properties.product_paths == ("mdit/**",)
    assert properties.fixture_pins == ("fixpin-mdit",)
    assert load_flake_pin(project / DRAFTS[1]).flakes == ()
    # The drafts are a pins folder as they stand.
    checked = run_cli("check-pins", "--pins-dir", project / "pins.draft", "--root", project)
    assert checked.code == 0, checked.err
    lines = result.out.splitlines()
    assert lines[0] == "init: drafted 4 files; none is a pin yet, and nothing is committed"
    steps = lines[lines.index("next steps:") :]
    assert steps[1].startswith("  1. Review every draft")
    assert steps[2].startswith("  2. Move the drafts into the pins folder, in a commit of its own")
    assert steps[5].startswith("  3. three-ledger plan --pin ")
    assert steps[6].startswith("  4. three-ledger vet --pin ")
    assert steps[7].startswith("  5. Commit ")
    assert f"{WORKFLOW} in a change of its own, with ledgers/ (where vet and gate " in steps[7]
    assert "set TL_PACKAGE" in steps[-1]
    assert git(project, "status", "--porcelain").splitlines() == ["?? .github/", "?? pins.draft/"]
    # idna's trial: no lockfile, and the drafted job's install step would fail on it.
    assert (
        "note: the drafted workflow installs the tests' dependencies from "
        "requirements-test.txt, which is not there" in result.err
    )


def test_a_lockfile_the_project_has_is_named_in_the_workflow_without_a_note(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    (project / "requirements").mkdir()
    (project / "requirements/dev.txt").write_text("pytest==9.0.0\n")
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    assert 'TL_REQUIREMENTS: "requirements/dev.txt"' in (project / WORKFLOW).read_text()
    assert "is not there" not in result.err


def test_packages_in_a_package_dir_off_pytests_path_are_noted(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    """PyYAML's trial: its packages are in `lib/` (`package_dir={'': 'lib'}`), and the drafted
    workflow, which installs no project, ran its tests against an installed copy."""
    make_tree(
        project, {"lib/mdlib/__init__.py": b"", "setup.py": b"setup(package_dir={'': 'lib'})\n"}
    )
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    assert (
        "note: the packages are in lib/ (setup.py's package_dir), which pytest's settings do "
        "not put on the path (`pythonpath`)" in result.err
    )
    properties = json.loads((project / "pins.draft/properties.json").read_text())
    assert "lib/mdlib/**" in properties["product_paths"]
    # On the path, by pytest's settings or by the command: no note.
    for folder in ("pins.draft", ".github"):
        shutil.rmtree(project / folder)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = lib\n")
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    assert "note: the packages are in" not in result.err


def test_the_workflow_names_the_pinned_source_given(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    package = f"git+https://git.example.org/tools/three-ledger@{COMMIT}"
    result = run_cli("init", "--root", project, "--command", collector, "--package", package)
    assert result.code == 0, result.err
    workflow = yaml.safe_load((project / WORKFLOW).read_text(encoding="utf-8"))
    install = next(
        s for s in workflow["jobs"]["gate"]["steps"] if s.get("name") == "Install three-ledger"
    )
    assert install["env"]["TL_PACKAGE"] == package
    assert "set TL_PACKAGE" not in result.out


def test_gitlab_gets_a_job_to_include_and_the_same_drafts(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    result = run_cli("init", "--root", project, "--command", collector, "--ci", "gitlab")
    assert result.code == 0, result.err
    job = yaml.safe_load((project / ".gitlab/three-ledger.yml").read_text(encoding="utf-8"))
    assert job["three-ledger"]["variables"]["TL_PACKAGE"] == PLACEHOLDER_PACKAGE
    assert not (project / ".github").exists()
    assert "Include it from .gitlab-ci.yml" in result.out


def test_a_root_below_the_top_of_the_work_tree(
    run_cli: RunCli, tmp_path: Path, collector: str
) -> None:
    top = tmp_path / "mono"
    write_project(top / "packages" / "mdit")
    fresh_repository(top)
    root = top / "packages" / "mdit"
    result = run_cli("init", "--root", root, "--command", collector)
    assert result.code == 0, result.err
    assert (root / "pins.draft/properties.json").is_file()
    steps = yaml.safe_load((top / WORKFLOW).read_text(encoding="utf-8"))["jobs"]["gate"]["steps"]
    env = {key: value for step in steps for key, value in step.get("env", {}).items()}
    assert (env["TL_ROOT"], env["TL_PINS_DIR"]) == ("packages/mdit", "packages/mdit/pins")
    assert env["TL_REQUIREMENTS"] == "packages/mdit/requirements-test.txt"


@pytest.mark.parametrize("existing", [*DRAFTS, WORKFLOW])
def test_an_existing_file_is_refused_and_nothing_is_written(
    run_cli: RunCli, project: Path, collector: str, existing: str
) -> None:
    make_tree(project, {existing: b"mine\n"})
    before = tree(project)
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 2
    assert result.first_error_line.startswith("three-ledger: refused: ")
    assert f"{existing} already exists: init writes nothing over a file" in result.first_error_line
    assert tree(project) == before


def test_a_drafts_folder_that_is_a_link_is_refused(
    run_cli: RunCli, project: Path, collector: str, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (project / "pins.draft").symlink_to(tmp_path / "elsewhere")
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 2
    assert "pins.draft is not a plain folder" in result.first_error_line
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_skips_at_collection_are_expected_and_an_untracked_data_file_is_warned_about(
    run_cli: RunCli, project: Path, tmp_path: Path
) -> None:
    skips = {
        "tests/test_spec.py::test_spec_example[Tables]": "GFM only",
        "tests/test_gpu.py::test_render_on_gpu": "needs a GPU",
    }
    make_tree(project, {f"{PORT_FOLDER}/new.md": b"x\n.\nx\n.\n<p>x</p>\n.\n"})
    result = run_cli("init", "--root", project, "--command", stand_in(tmp_path / "s", 0, skips))
    assert result.code == 0, result.err
    document = json.loads((project / DRAFTS[2]).read_text(encoding="utf-8"))
    assert document["expected_skips"] == [
        {"test": "tests/test_spec.py", "reason": "GFM only"},
        {"test": "tests/test_gpu.py", "reason": "needs a GPU"},
    ]
    counts = {prop["test"]: prop["min_tests"] for prop in document["properties"]}
    assert counts["tests/test_spec.py"] == 2
    assert "tests/test_gpu.py" not in counts
    assert (
        "three-ledger: tests/test_gpu.py: no property drafted: its tests skip at collection"
        in result.err.splitlines()
    )
    assert f"1 drafted file is untracked ({PORT_FOLDER}/new.md)" in result.err


def test_a_module_with_a_test_marked_xfail_gets_no_property_and_is_named(
    run_cli: RunCli, project: Path, tmp_path: Path
) -> None:
    """An expected failure scores `fail`: a drafted property counting one would reject every
    change at row 7."""
    known_bug = "tests/test_api/test_render.py::test_known_bug"
    collector = stand_in(tmp_path / "s", 0, xfails=(known_bug,))
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    document = json.loads((project / DRAFTS[2]).read_text(encoding="utf-8"))
    assert "tests/test_api/test_render.py" not in {prop["test"] for prop in document["properties"]}
    assert "tests/test_spec.py" in {prop["test"] for prop in document["properties"]}
    assert (
        "three-ledger: tests/test_api/test_render.py: no property drafted: 1 of its tests are "
        "marked xfail, and an expected failure scores fail: pin the others by hand"
        in result.err.splitlines()
    )


def test_a_folder_of_python_cases_is_named_as_not_drafted(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    # A formatter's cases are Python source: init cannot tell them from code, so it leaves
    # the folder out, and says so.
    make_tree(project, {"tests/cases/comments.py": b"x = 1  # a comment\n"})
    git(project, "add", "-A")
    git(project, "commit", "-qm", "formatting cases")
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    assert (
        "three-ledger: note: not drafted, since they hold Python: tests/cases; if those files "
        "are data the tests read (a formatter's cases, say), not code, draft again naming each "
        "folder with --fixtures-dir"
    ) in result.err.splitlines()
    fixtures = json.loads((project / DRAFTS[0]).read_text(encoding="utf-8"))
    assert "tests/cases" not in fixtures["fixtures_dirs"]


def test_a_fixtures_folder_that_is_a_package_is_named_as_not_drafted(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    # mistune's trial: its tests/fixtures is a package that loads the cases beside it.
    make_tree(
        project,
        {"tests/fixtures/__init__.py": b"", "tests/fixtures/strike.txt": b"~~a~~\n"},
    )
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a fixtures package")
    result = run_cli("init", "--root", project, "--command", collector)
    assert result.code == 0, result.err
    assert (
        "three-ledger: note: not drafted, since they are Python packages (an __init__.py of "
        "their own): tests/fixtures; if the package holds the data the tests read, draft again "
        "naming it with --fixtures-dir"
    ) in result.err
    fixtures = json.loads((project / DRAFTS[0]).read_text(encoding="utf-8"))
    assert "tests/fixtures" not in fixtures["fixtures_dirs"]


def test_a_failed_collection_writes_nothing(run_cli: RunCli, project: Path, tmp_path: Path) -> None:
    before = tree(project)
    result = run_cli("init", "--root", project, "--command", stand_in(tmp_path / "broken", 3))
    assert result.code == 4
    assert "collection failed" in result.first_error_line
    assert tree(project) == before


def test_no_data_folder_is_refused_with_the_flag_to_name_one(
    run_cli: RunCli, tmp_path: Path, collector: str
) -> None:
    make_tree(tmp_path / "p", {"pkg/__init__.py": b"", "tests/test_a.py": b""})
    result = run_cli("init", "--root", tmp_path / "p", "--command", collector)
    assert result.code == 2
    assert "no data folder found" in result.first_error_line
    assert "--fixtures-dir DIR" in result.first_error_line
    assert not (tmp_path / "p" / "pins.draft").exists()


def test_fixtures_dir_names_the_folders_and_overlaps_are_refused(
    run_cli: RunCli, project: Path, collector: str
) -> None:
    result = run_cli(
        "init", "--root", project, "--command", collector,
        "--fixtures-dir", "tests/test_port", "--fixtures-dir", PORT_FOLDER,
    )  # fmt: skip
    assert result.code == 2
    assert "--fixtures-dir 'tests/test_port/fixtures' overlaps" in result.first_error_line
    assert not (project / "pins.draft").exists()
    result = run_cli(
        "init", "--root", project, "--command", collector, "--fixtures-dir", PORT_FOLDER
    )
    assert result.code == 0, result.err
    document = json.loads((project / DRAFTS[0]).read_text(encoding="utf-8"))
    assert document["fixtures_dirs"] == [PORT_FOLDER]


@pytest.mark.parametrize("package", ["three-ledger", "git+https://github.com/o/tl@main"])
def test_a_package_that_is_not_pinned_is_a_usage_error(
    run_cli: RunCli, project: Path, package: str
) -> None:
    result = run_cli("init", "--root", project, "--package", package)
    assert result.code == 64
    assert "is not a pinned source" in result.first_error_line
    assert not (project / "pins.draft").exists()
