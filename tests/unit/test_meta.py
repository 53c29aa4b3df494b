"""The package's shape: each folder keeps its rule, found by walking the package, not a list.

- `plugin/` runs inside the test child: the standard library, pytest and itself only.
- Nothing outside `plugin/` imports pytest: the CLI never needs it.
- The flat domain modules import no folder above them (`run/`, `report/`, `vet/`, `demo/`,
  `workflow/`, `commands/`); only the CLI, the commands and the demo import a command.
- `report/` turns records into text: it imports no loader, git, runner or run, and opens no
  file.
- No command imports another command's private names.
- No import cycle in the package.
- CONTRIBUTING's module map names every module, and names no module that is gone.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import three_ledger

PACKAGE = Path(three_ledger.__file__).resolve().parent
REPO = PACKAGE.parent.parent
FOLDERS_ABOVE_THE_DOMAIN = {
    "run",
    "report",
    "vet",
    "flake",
    "selftest",
    "demo",
    "workflow",
    "commands",
    "cli",
}


@dataclass(frozen=True)
class Import:
    """One import statement: the module it names (absolute), the names it takes, its line."""

    module: str
    names: tuple[str, ...]
    line: int
    relative: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> Iterator[Import]:
    """Every import in PATH, lazy ones too, but those only a type checker reads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in ast.walk(block)
    }
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    for node in ast.walk(tree):
        if id(node) in checking_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, (), node.lineno, relative=False)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level == 0:
                yield Import(node.module or "", names, node.lineno, relative=False)
            else:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
                yield Import(target, names, node.lineno, relative=True)


def package_targets(statement: Import, known: dict[str, Path]) -> set[str]:
    """The package's modules a statement imports: the module, and names that are modules."""
    targets = {statement.module} if statement.module in known else set()
    targets |= {f"{statement.module}.{n}" for n in statement.names} & known.keys()
    return targets


MODULES = modules()
PLUGIN = {name: path for name, path in MODULES.items() if name.startswith("three_ledger.plugin")}


def test_the_walk_finds_every_folder() -> None:
    folders = {name.split(".")[1] for name in MODULES if name.count(".") >= 2}
    assert {"plugin", "run", "report", "vet", "demo", "workflow", "commands"} <= folders
    assert REPORT
    assert "three_ledger.plugin.hooks" in PLUGIN


@pytest.mark.parametrize("name", sorted(PLUGIN))
def test_the_plugin_imports_only_the_standard_library_pytest_and_itself(name: str) -> None:
    outside = [
        f"line {statement.line}: {statement.module}"
        for statement in imports(PLUGIN[name])
        if not statement.relative
        and statement.module.split(".")[0] not in (*sys.stdlib_module_names, "pytest")
    ]
    relative_elsewhere = [
        f"line {statement.line}: {statement.module}"
        for statement in imports(PLUGIN[name])
        if statement.relative and not statement.module.startswith("three_ledger.plugin")
    ]
    assert outside + relative_elsewhere == []


@pytest.mark.parametrize("name", sorted(set(MODULES) - set(PLUGIN)))
def test_nothing_outside_the_plugin_imports_pytest(name: str) -> None:
    found = [
        f"line {statement.line}: {statement.module}"
        for statement in imports(MODULES[name])
        if statement.module.split(".")[0] in ("pytest", "_pytest", "pluggy")
    ]
    assert found == []


def layer(name: str) -> str:
    """The folder a module belongs to, or `domain` for the flat modules."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1] == "cli":
        return "cli"
    return parts[1] if name in MODULES and MODULES[name].parent != PACKAGE else "domain"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) == "domain"))
def test_the_domain_imports_no_folder_above_it(name: str) -> None:
    upward = [
        f"line {statement.line}: {target}"
        for statement in imports(MODULES[name])
        for target in package_targets(statement, MODULES)
        if layer(target) in FOLDERS_ABOVE_THE_DOMAIN and name != "three_ledger.__main__"
    ]
    assert upward == []


REPORT = {name: path for name, path in MODULES.items() if layer(name) == "report"}
# What reads files, asks git or starts a child: a report gets its records from its caller.
NOT_FOR_REPORTS = {"three_ledger.git", "three_ledger.runner", "three_ledger.jsonio"}
LOADERS = re.compile(r"^(load_\w+|read_\w+)$")
FILE_CALLS = {
    "open",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "stat",
    "exists",
    "is_file",
}


@pytest.mark.parametrize("name", sorted(REPORT))
def test_a_report_imports_no_loader_git_runner_or_run(name: str) -> None:
    found = [
        f"line {statement.line}: {statement.module} {list(statement.names)}"
        for statement in imports(REPORT[name])
        if statement.module in NOT_FOR_REPORTS
        or layer(statement.module) in ("run", "workflow", "commands", "cli")
        or any(LOADERS.match(imported) for imported in statement.names)
    ]
    assert found == []


@pytest.mark.parametrize("name", sorted(REPORT))
def test_a_report_opens_no_file(name: str) -> None:
    tree = ast.parse(REPORT[name].read_text(encoding="utf-8"))
    calls = [
        f"line {node.lineno}: {ast.unparse(node.func)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id in FILE_CALLS)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in FILE_CALLS)
        )
    ]
    assert calls == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_cli_the_commands_and_the_demo_import_a_command(name: str) -> None:
    if layer(name) in ("cli", "commands", "demo"):
        return
    found = [
        f"line {statement.line}: {target}"
        for statement in imports(MODULES[name])
        for target in package_targets(statement, MODULES)
        if layer(target) in ("commands", "cli") and name != "three_ledger.__main__"
    ]
    assert found == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if layer(n) == "commands"))
def test_no_command_imports_another_commands_private_names(name: str) -> None:
    private = []
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    bound: dict[str, str] = {}  # local name -> command module it stands for
    for statement in imports(MODULES[name]):
        if statement.module == "three_ledger.commands":
            bound.update({n: f"three_ledger.commands.{n}" for n in statement.names})
        elif layer(statement.module) == "commands" and statement.module != name:
            private += [f"{statement.module}.{n}" for n in statement.names if n.startswith("_")]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
        ):
            private.append(f"{bound[node.value.id]}.{node.attr}")
    assert private == []


def import_graph() -> dict[str, set[str]]:
    return {
        name: {
            target
            for statement in imports(path)
            for target in package_targets(statement, MODULES)
            if target != name
        }
        for name, path in MODULES.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(import_graph()) == []


def mapped_paths() -> set[str]:
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Where is...?", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"src/three_ledger/[\w/]+\.py", section))


def holds_code(path: Path) -> bool:
    """A module, or a package's `__init__.py` that holds more than its docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstring_only = len(tree.body) == 1 and ast.get_docstring(tree) is not None
    return path.name != "__init__.py" or not docstring_only


def test_contributings_module_map_names_every_module_and_no_other() -> None:
    every = {
        f"src/three_ledger/{path.relative_to(PACKAGE).as_posix()}"
        for path in MODULES.values()
        if holds_code(path)
    }
    mapped = mapped_paths()
    assert sorted(every - mapped) == []  # missing from the map
    assert sorted(mapped - every) == []  # named in the map, but gone
