"""The documentation cannot drift from the program: usage, links, schemas, variables, exits."""

from __future__ import annotations

import ast
import itertools
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPO, RunCli
from three_ledger.exit_codes import ExitCode

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


# What users copy: fenced code blocks in the documents, and the CI files themselves.
COPIED = [*DOCUMENTS, REPO / "action.yml", REPO / "templates" / "three-ledger.yml"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
# A remote branch by its short name: a tag or a branch of that name would be taken instead.
SHORT_REMOTE = re.compile(r"(?<![\w/.:-])origin/")


def copied_text(document: Path) -> str:
    text = document.read_text(encoding="utf-8")
    return text if document.suffix != ".md" else "\n".join(FENCE.findall(text))


@pytest.mark.parametrize("document", COPIED, ids=lambda p: p.name)
def test_examples_name_a_base_branch_in_full(document: Path) -> None:
    lines = copied_text(document).splitlines()
    assert [line for line in lines if SHORT_REMOTE.search(line)] == []


def test_a_short_remote_name_in_an_example_would_be_found() -> None:
    assert SHORT_REMOTE.search('bash ci/gate.sh "origin/$GITHUB_BASE_REF"')
    assert SHORT_REMOTE.search("three-ledger gate --base origin/main")
    assert not SHORT_REMOTE.search("--base refs/remotes/origin/main")
    assert not SHORT_REMOTE.search("git fetch origin +refs/heads/main:refs/remotes/origin/main")


# The documents that cite this repository's own files (the user docs show a user's project).
CITING = [
    README,
    REPO / "CONTRIBUTING.md",
    REPO / "CHANGELOG.md",
    REPO / "docs" / "threat-model.md",
    REPO / "docs" / "architecture.md",
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


# --- anchors --------------------------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation out, spaces to -."""
    text = heading.strip().lower()
    kept = "".join(char for char in text if char in " -_" or unicodedata.category(char)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", document.read_text(encoding="utf-8"), flags=re.S | re.M)
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        anchor, number = github_anchor(heading), 1
        while anchor in found:  # GitHub numbers repeated headings: name, name-1, ...
            anchor, number = f"{github_anchor(heading)}-{number}", number + 1
        found.add(anchor)
    return found


def test_github_anchor_follows_githubs_rules() -> None:
    assert github_anchor("`plan --json`") == "plan---json"
    assert github_anchor("The gate's own code") == "the-gates-own-code"
    assert github_anchor("1. Draft the fixture pin") == "1-draft-the-fixture-pin"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_anchors_into_the_docs_resolve(document: Path) -> None:
    links = re.findall(r"\]\(([^)\s]*)#([^)\s]+)\)", document.read_text(encoding="utf-8"))
    targets = [(document.parent / path if path else document, anchor) for path, anchor in links]
    broken = [
        f"{target.name}#{anchor}"
        for target, anchor in targets
        if target.suffix == ".md" and anchor not in anchors(target)
    ]
    assert broken == []


# --- formats.md: the reference tables --------------------------------------------------------

FORMATS = REPO / "docs" / "formats.md"
PACKAGE = REPO / "src" / "three_ledger"
THREE_LEDGER_NAME = re.compile(r"THREE_LEDGER_[A-Z0-9_]+")


def section(markdown: str, title: str) -> str:
    """The text under the level-2 heading TITLE, up to the next level-2 heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", markdown, re.S | re.M)
    assert match is not None, f"formats.md has no section '## {title}'"
    return match.group(1)


def table_rows(text: str) -> list[list[str]]:
    """The cells of every body row of the Markdown tables in TEXT (no header, no rule)."""
    lines = [line for line in text.splitlines() if line.startswith("|")] + [""]
    rule = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+$")
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line, following in itertools.pairwise(lines)
        if not rule.match(line) and not rule.match(following)
    ]


def test_every_schema_is_named_in_formats_md() -> None:
    text = FORMATS.read_text(encoding="utf-8")
    schemas = sorted(path.name for path in (PACKAGE / "schemas").glob("*.schema.json"))
    assert len(schemas) >= 11
    assert [name for name in schemas if name not in text] == []
    named = set(re.findall(r"[\w-]+\.schema\.json", text))
    assert sorted(named - set(schemas)) == []


def _literal_strings(node: ast.expr) -> list[str]:
    """A string constant, or a tuple or list of them; [] for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List):
        items = [_literal_strings(item) for item in node.elts]
        if all(len(item) == 1 for item in items):
            return [item[0] for item in items]
    return []


def _is_environment(node: ast.expr) -> bool:
    """`os.environ`, `environ`, or a mapping named `env` (a child's environment)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id in {"env", "environ"}


def _module_strings(tree: ast.Module) -> dict[str, list[str]]:
    """Names bound at module level to strings, and loop variables that walk such a tuple."""
    bound: dict[str, list[str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            value = _literal_strings(statement.value)
            for target in statement.targets:
                if isinstance(target, ast.Name) and value:
                    bound[target.id] = value
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Name)
            and node.iter.id in bound
        ):
            bound[node.target.id] = bound[node.iter.id]
    return bound


def _keys_used(node: ast.AST) -> Iterator[ast.expr]:
    """The key expressions NODE reads, sets or removes in an environment."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        method, receiver = node.func.attr, node.func.value
        from_environment = method in {"get", "pop", "setdefault"} and _is_environment(receiver)
        if from_environment or method == "getenv":
            yield node.args[0]
    elif isinstance(node, ast.Subscript) and _is_environment(node.value):
        yield node.slice


def environment_variables(source: str) -> set[str]:
    """Every variable SOURCE names: THREE_LEDGER_* literals, and keys used in an environment."""
    tree = ast.parse(source)
    bound = _module_strings(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(THREE_LEDGER_NAME.findall(node.value))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and _is_environment(node.func.value)
        ):
            found.update(keyword.arg for keyword in node.keywords if keyword.arg is not None)
        for key in _keys_used(node):
            name = bound.get(key.id, []) if isinstance(key, ast.Name) else _literal_strings(key)
            found.update(name)
    return found


def test_the_environment_scan_finds_reads_sets_and_names() -> None:
    source = """
import os
RESULTS = "THREE_LEDGER_RESULTS"
GITLAB = ("CI_ONE", "CI_TWO")
def f(env):
    os.environ.get("HOME")
    os.getenv("SHELL")
    env[RESULTS] = "x"
    env.update(GIT_AUTHOR_NAME="demo")
    print(f"THREE_LEDGER_ROW={1}")
    for variable in GITLAB:
        env.get(variable)
    other = {}
    other.get("NOT_A_VARIABLE")
"""
    assert environment_variables(source) == {
        "HOME", "SHELL", "THREE_LEDGER_RESULTS", "GIT_AUTHOR_NAME", "THREE_LEDGER_ROW",
        "CI_ONE", "CI_TWO",
    }  # fmt: skip


def variables_the_code_names() -> set[str]:
    found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "example" not in path.relative_to(PACKAGE).parts:
            found |= environment_variables(path.read_text(encoding="utf-8"))
    return found


def documented_variables() -> set[str]:
    text = section(FORMATS.read_text(encoding="utf-8"), "Environment variables")
    return {name for row in table_rows(text) for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row[0])}


def test_every_environment_variable_the_code_names_is_in_the_table() -> None:
    named = variables_the_code_names()
    # The scan is real: it sees a variable read, one set for git, one the plugin pops.
    assert {"GITHUB_STEP_SUMMARY", "GIT_NO_REPLACE_OBJECTS", "THREE_LEDGER_TRIPWIRE"} <= named
    assert sorted(named - documented_variables()) == []


def test_every_exit_code_is_in_the_table() -> None:
    rows = table_rows(section(FORMATS.read_text(encoding="utf-8"), "Exit codes"))
    documented = {(row[0], name) for row in rows for name in re.findall(r"`([A-Z_]+)`", row[1])}
    members = {(str(int(code)), name) for name, code in ExitCode.__members__.items()}
    assert len(members) == len(ExitCode.__members__)
    assert sorted(members - documented) == []
