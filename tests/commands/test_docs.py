"""The documentation cannot drift from the program: usage, links and schemas."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import REPO, RunCli

README = REPO / "README.md"


def usage_block(markdown: str) -> str:
    match = re.search(r"## Usage\n\n```text\n(.*?)```\n", markdown, re.DOTALL)
    assert match is not None, "README.md has no ```text block under '## Usage'"
    return match.group(1)


def test_readme_usage_is_the_program_help(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = run_cli("--help")
    assert result.code == 0
    assert usage_block(README.read_text(encoding="utf-8")) == result.out


def test_readme_opens_with_the_two_commands() -> None:
    start = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert "make demo" in start
    assert "make test" in start


DOCUMENTS = [
    README,
    REPO / "CONTRIBUTING.md",
    REPO / "CHANGELOG.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "benchmarks" / "README.md",
]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_resolve(document: Path) -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", document.read_text(encoding="utf-8"))
    relative = [link for link in links if "://" not in link]
    missing = [link for link in relative if not (document.parent / link).exists()]
    assert missing == []


# The documents that cite this repository's own files (the user docs show a user's project).
CITING = [
    README,
    REPO / "CONTRIBUTING.md",
    REPO / "CHANGELOG.md",
    REPO / "docs" / "threat-model.md",
    REPO / "benchmarks" / "README.md",
]


@pytest.mark.parametrize("document", CITING, ids=lambda p: p.name)
def test_source_and_test_files_named_in_the_docs_exist(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    pattern = r"(?<![\w/.-])(?:tests|src/three_ledger|benchmarks)/[\w/]+\.py\b"
    named = set(re.findall(pattern, text))
    assert sorted(path for path in named if not (REPO / path).is_file()) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_make_targets_named_in_the_docs_exist(document: Path) -> None:
    targets = set(re.findall(r"^([\w.-]+):", (REPO / "Makefile").read_text(), re.MULTILINE))
    named = set(re.findall(r"`make ([\w-]+)", document.read_text(encoding="utf-8")))
    assert sorted(named - targets) == []


def test_every_subcommand_has_help(run_cli: RunCli) -> None:
    help_text = run_cli("--help").out
    commands = re.findall(r"^    ([a-z-]+)\s", help_text, re.MULTILINE)
    assert "digest" in commands
    for command in commands:
        assert run_cli(command, "--help").code == 0, command
