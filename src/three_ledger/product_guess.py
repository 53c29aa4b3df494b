"""What `plan` proposes as a properties pin's `product_paths`, and what each guess rests on.

Four sources, each named beside its glob: the packages the project's `pyproject.toml`
builds (setuptools, hatch, poetry), a `src/` layout, a folder that setuptools' `package_dir`
maps the top-level packages to (`setup.py`, `setup.cfg` or `pyproject.toml`: PyYAML's
`lib/`), and the top-level modules of ROOT, `src/` or that folder that the collected test
modules import. Nothing test-like is ever proposed: a file pytest would
collect (`test_*.py`, `*_test.py`), a `conftest.py`, anything in a folder named `tests`,
`test` or `testing`, or a collected test module. What is test-like inside a proposed folder
(a package that ships `pkg/test_tools.py` or `pkg/testing.py`, which the tests assert
through) is named apart, for `oracle_paths`, which an edit under it moves whatever
`product_paths` says (`test_like_under`). A person reviews the proposal before it becomes a
pin; it is a draft, never written anywhere.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from three_ledger.frozen import frozen
from three_ledger.plugin.wire import TEST_FOLDERS as TEST_FOLDERS

# pytest's default `python_files`.
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")


@frozen
class Proposal:
    glob: str
    because: str


def propose(root: Path, test_modules: Iterable[str]) -> list[Proposal]:
    """Globs of the code under test in ROOT, each once, first reason kept, sorted by glob."""
    collected = set(test_modules)
    found: dict[str, str] = {}
    mapped = package_dir(root)
    for proposal in (*_from_pyproject(root), *_from_src_layout(root), *_mapped(root, mapped)):
        found.setdefault(proposal.glob, proposal.because)
    folders = ["", "src/", *(f"{folder}/" for folder, _ in mapped)]
    for proposal in _imported_by_tests(root, sorted(collected), folders):
        found.setdefault(proposal.glob, proposal.because)
    return [
        Proposal(glob, because)
        for glob, because in sorted(found.items())
        if not _test_like(glob.removesuffix("/**"), collected)
    ]


def test_like_under(root: Path, globs: Iterable[str]) -> list[str]:
    """The Python files test-like by name inside the folders of GLOBS (`pkg/**`; a test
    folder once, as a folder), sorted: each belongs in `oracle_paths`. A module named
    `testing.py`, `tests.py` or `test.py` is not one: in a package it is the product's own
    more often than not (`click.testing`, which its users' tests import; Pygments'
    `pygments/lexers/testing.py`, a lexer, which in `oracle_paths` went to the test owners
    unscored when broken)."""
    found: set[str] = set()
    for glob in globs:
        if not glob.endswith("/**") or any(char in glob[:-3] for char in "*?["):
            continue
        folder = glob.removesuffix("/**")
        for current, folders, files in os.walk(root / folder):
            here = Path(current).relative_to(root).as_posix()
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
            for name in sorted(folders):
                if name in TEST_FOLDERS:
                    found.add(f"{here}/{name}")
            folders[:] = [f for f in folders if f not in TEST_FOLDERS]
            found.update(
                f"{here}/{name}"
                for name in files
                if name.endswith(".py")
                and _test_like(name, set())
                and name.removesuffix(".py") not in TEST_FOLDERS
            )
    return sorted(found)


def _test_like(path: str, collected: set[str]) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    return (
        path in collected
        or bool(TEST_FOLDERS & set(parts))
        or name == "conftest.py"
        or name.removesuffix(".py") in TEST_FOLDERS
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in TEST_FILE_PATTERNS)
    )


def _from_pyproject(root: Path) -> Iterator[Proposal]:
    try:
        document = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    tool = document.get("tool", {})
    because = "pyproject.toml builds it"
    for package in _list(_get(tool, "hatch", "build", "targets", "wheel", "packages")):
        yield from _folder(root, str(package), because)
    for package in _list(_get(tool, "setuptools", "packages")):
        yield from _folder(root, str(package).replace(".", "/"), because)
    for where in _list(_get(tool, "setuptools", "packages", "find", "where")):
        for init in sorted((root / str(where)).glob("*/__init__.py")):
            yield from _folder(root, init.parent.relative_to(root).as_posix(), because)
    for entry in _list(_get(tool, "poetry", "packages")):
        if isinstance(entry, dict) and isinstance(entry.get("include"), str):
            base = f"{entry['from']}/" if isinstance(entry.get("from"), str) else ""
            yield from _folder(root, base + entry["include"], because)


def _get(table: Any, *keys: str) -> Any:
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _folder(root: Path, path: str, because: str) -> Iterator[Proposal]:
    if (root / path).is_dir():
        yield Proposal(f"{path.rstrip('/')}/**", because)


def _from_src_layout(root: Path) -> Iterator[Proposal]:
    for init in sorted((root / "src").glob("*/__init__.py")):
        yield Proposal(f"{init.parent.relative_to(root).as_posix()}/**", "src layout")


def package_dir(root: Path) -> list[tuple[str, str]]:
    """The folders setuptools' `package_dir` maps the top-level packages to (`{"": "lib"}`),
    each with the file that says so; a folder that is not there is left out."""
    found: list[tuple[str, str]] = []
    try:
        tree = ast.parse((root / "setup.py").read_bytes())
    except (OSError, SyntaxError, ValueError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.keyword) and node.arg == "package_dir"):
            continue
        if isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if _constant(key) == "" and isinstance(folder := _constant(value), str):
                    found.append((folder, "setup.py's package_dir"))
    found += [(folder, "setup.cfg's package_dir") for folder in _package_dir_in_setup_cfg(root)]
    try:
        document = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        document = {}
    mapping = _get(document, "tool", "setuptools", "package-dir")
    if isinstance(mapping, dict) and isinstance(folder := mapping.get(""), str):
        found.append((folder, "pyproject.toml's package-dir"))
    kept: dict[str, str] = {}
    for folder, because in found:
        folder = folder.strip().strip("/")
        usable = folder and folder != "src" and ".." not in folder.split("/")
        if usable and (root / folder).is_dir():
            kept.setdefault(folder, because)
    return list(kept.items())


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _package_dir_in_setup_cfg(root: Path) -> list[str]:
    """`[options] package_dir = =lib` (one mapping a line; `=lib` maps the top level)."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string((root / "setup.cfg").read_text(encoding="utf-8"))
        value = parser.get("options", "package_dir", fallback="")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return []
    lines = (line.strip() for line in value.splitlines())
    return [line.split("=", 1)[1] for line in lines if line.startswith("=")]


def _mapped(root: Path, mapped: list[tuple[str, str]]) -> Iterator[Proposal]:
    for folder, because in mapped:
        for init in sorted((root / folder).glob("*/__init__.py")):
            yield Proposal(f"{init.parent.relative_to(root).as_posix()}/**", because)


def _imported_by_tests(
    root: Path, test_modules: list[str], folders: list[str]
) -> Iterator[Proposal]:
    """What the test modules import from the top of each of FOLDERS ("" for ROOT, "src/")."""
    for module in test_modules:
        for name in _top_level_imports(root / module):
            for candidate in (f"{folder}{name}.py" for folder in folders):
                if (root / candidate).is_file():
                    yield Proposal(candidate, f"imported by {module}")
            for package in (f"{folder}{name}" for folder in folders):
                if (root / package / "__init__.py").is_file():
                    yield Proposal(f"{package}/**", f"imported by {module}")


def _top_level_imports(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return list(dict.fromkeys(names))
