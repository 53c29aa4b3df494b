"""`gate` on a markdown-it-py-like layout: the cases in two data folders under `tests/`, test
code beside them, pinned by `fixtures_dirs`. Two such pins (A and B) agree: `review`. A file
no pin lists in the second folder, or a pinned case that moved, rejects at row 1."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import CI_VARIABLES, RunCli, git, make_tree, seed_digest, write_json
from helpers.markdown_project import (
    PORT_FIXTURES,
    PORT_FOLDER,
    SPEC_CASES,
    SPEC_FOLDER,
    fresh_repository,
    write_project,
)

pytestmark = pytest.mark.pytest_child

COMMAND = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
# Pin B: the same kinds of case, from a second source, in two folders of their own.
B_SPEC, B_PORT = "tests/more/cmark_spec", "tests/more/port_fixtures"
# A case only pin B holds: its run counts one spec test more, read through
# THREE_LEDGER_FIXTURES_DIRS.
B_ONLY_CASE = {"section": "Headings in B", "markdown": "## b\n", "html": "<h2>b</h2>\n"}


@dataclass(frozen=True)
class Project:
    repo: Path
    base: str


def fixture_pin(repo: Path, name: str, pin_id: str, folders: list[str]) -> None:
    files = sorted(
        path.relative_to(repo).as_posix()
        for folder in folders
        for path in (repo / folder).rglob("*")
        if path.is_file()
    )
    document = {"pin_id": pin_id, "algorithm": "sha256", "fixtures_dirs": folders}
    document.update(digest=seed_digest(repo, files), files=files)
    write_json(repo / "pins" / name, document)


def properties_pin(repo: Path) -> None:
    def prop(pid: str, claim: str, test: str, count: int) -> dict[str, object]:
        # "tests/": relative to ROOT, it covers the pinned files of pin A and of pin B.
        return {"id": pid, "claim": claim, "domain": ["tests/"], "test": test, "min_tests": count}

    write_json(
        repo / "pins/properties.json",
        {
            "pin_id": "proppin-mdit",
            "fixture_pins": ["fixpin-mdit-a", "fixpin-mdit-b"],
            "product_paths": ["mdit/**"],
            "properties": [
                prop("mdit.spec", "Every spec example renders.", "tests/test_spec.py", 4),
                prop(
                    "mdit.port",
                    "Every ported fixture renders as written.",
                    "tests/test_port/test_fixtures.py",
                    2,
                ),
            ],
        },
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    for key in (*CI_VARIABLES, "PYTEST_ADDOPTS"):
        monkeypatch.delenv(key, raising=False)
    repo = tmp_path / "mdit"
    write_project(repo)
    make_tree(
        repo,
        {
            f"{B_SPEC}/commonmark.json": json.dumps([*SPEC_CASES, B_ONLY_CASE]).encode(),
            f"{B_SPEC}/spec.md": b"# The same examples, from another copy of the spec\n",
            **{f"{B_PORT}/{name}": text.encode() for name, text in PORT_FIXTURES.items()},
        },
    )
    fresh_repository(repo)
    fixture_pin(repo, "fixtures.json", "fixpin-mdit-a", [SPEC_FOLDER, PORT_FOLDER])
    fixture_pin(repo, "fixtures_b.json", "fixpin-mdit-b", [B_SPEC, B_PORT])
    properties_pin(repo)
    git(repo, "add", "pins")
    git(repo, "commit", "-q", "-m", "pins: the cases of both data folders, reviewed")
    return Project(repo, git(repo, "rev-parse", "HEAD"))


def gate(run_cli: RunCli, project: Project, out: Path) -> tuple[int, str, dict[str, object]]:
    result = run_cli(
        "gate", "--pins-dir", project.repo / "pins", "--root", project.repo,
        "--command", COMMAND, "--base", project.base, "--out-dir", out,
    )  # fmt: skip
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    return result.code, result.out, decision


def test_two_pins_of_two_folders_each_agree_and_the_gate_says_review(
    run_cli: RunCli, project: Project, tmp_path: Path
) -> None:
    out = tmp_path / "gate"
    code, printed, decision = gate(run_cli, project, out)
    assert (code, decision["posture"], decision["row"]) == (0, "review", 9), printed
    fixture = json.loads((out / "fixture-a.json").read_text(encoding="utf-8"))
    assert fixture["fixtures_dirs"] == [SPEC_FOLDER, PORT_FOLDER]
    assert "fixtures_dir" not in fixture
    for side, spec_tests in (("a", 4), ("b", 5)):
        ledger = json.loads((out / f"property-{side}.json").read_text(encoding="utf-8"))
        assert ledger["status_by_id"] == {"mdit.spec": "pass", "mdit.port": "pass"}
        assert ledger["tests_matched"] == {"mdit.spec": spec_tests, "mdit.port": 2}
        assert ledger["oracle_model"] == "closed"
    dual = json.loads((out / "dual-pin.json").read_text(encoding="utf-8"))
    assert (dual["dual_pin"], dual["drift"]) == ("run", False)


def commit_with_a_product_edit(repo: Path, message: str) -> None:
    """Commit what the test changed, with an edit of the renderer: a change to score."""
    renderer = repo / "mdit/__init__.py"
    renderer.write_text(renderer.read_text(encoding="utf-8") + "\n# tidied\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_a_new_file_in_the_second_folder_is_unpinned_and_rejects_at_row_1(
    run_cli: RunCli, project: Project, tmp_path: Path
) -> None:
    make_tree(project.repo, {f"{PORT_FOLDER}/tables.md": b"t\n.\nx\n.\n<p>x</p>\n.\n"})
    commit_with_a_product_edit(project.repo, "mdit: tidy, and a new ported case")
    out = tmp_path / "gate"
    code, printed, decision = gate(run_cli, project, out)
    assert (code, decision["posture"], decision["row"]) == (1, "reject", 1)
    assert f"{PORT_FOLDER}/tables.md: unpinned file" in printed
    assert not (out / "fixture-a.json").exists()


def test_a_moved_case_in_the_first_folder_rejects_at_row_1_naming_it(
    run_cli: RunCli, project: Project, tmp_path: Path
) -> None:
    cases = project.repo / SPEC_FOLDER / "commonmark.json"
    cases.write_text(json.dumps(SPEC_CASES[:3]) + "\n", encoding="utf-8")
    commit_with_a_product_edit(project.repo, "mdit: tidy, and drop a spec case")
    code, printed, decision = gate(run_cli, project, tmp_path / "gate")
    assert (code, decision["posture"], decision["row"]) == (1, "reject", 1)
    assert str(decision["reason"]).endswith(
        f"moved since {project.base}: {SPEC_FOLDER}/commonmark.json"
    ), printed


def test_vet_mutates_the_pinned_files_of_both_folders_and_sees_each_read(
    run_cli: RunCli, project: Project, tmp_path: Path
) -> None:
    out = tmp_path / "vet.json"
    result = run_cli(
        "vet", "--pin", project.repo / "pins/fixtures.json",
        "--properties", project.repo / "pins/properties.json", "--root", project.repo,
        "--command", COMMAND, "--out", out, "--quiet",
    )  # fmt: skip
    ledger = json.loads(out.read_text(encoding="utf-8"))
    verdicts = ledger["properties"]
    assert result.code == 0, result.out + result.err
    assert {pid: verdict["gate"] for pid, verdict in verdicts.items()} == {
        "mdit.spec": True,
        "mdit.port": True,
    }
    # Reads are named from ROOT, whichever folder the file lies in.
    spec, port = f"{SPEC_FOLDER}/", f"{PORT_FOLDER}/"
    assert verdicts["mdit.spec"]["unread_domain_files"] == [
        f"{spec}spec.md", f"{port}headings.md", f"{port}lists/bullets.md",
    ]  # fmt: skip
    assert verdicts["mdit.port"]["unread_domain_files"] == [
        f"{spec}commonmark.json",
        f"{spec}spec.md",
    ]
    assert ledger["unread_pinned_files"] == [f"{spec}spec.md"]
