"""Where `selftest` breaks the product, and how: pure functions over file names and source.

The product modules are the `.py` files under the properties pin's `product_paths` (the
closed model), those the property tests import by name first; without `product_paths`, the
module each property's test module imports first. A mutation is one small edit of one
expression (an operator swapped, a comparison turned, a constant moved), never a crash:
a broken product that only raises says nothing a plain import error would not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import PurePosixPath

from three_ledger.frozen import frozen
from three_ledger.paths import glob_matches

_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Mult: ast.Add,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
_TURNS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@frozen
class Mutation:
    """One edit of one product file: the new source, and what was changed, for the report."""

    path: str
    source: str
    describe: str


def is_test_module(path: str) -> bool:
    name = PurePosixPath(path).name
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def product_modules(tracked: Iterable[str], product_paths: Sequence[str]) -> list[str]:
    """The tracked `.py` files `product_paths` covers, test modules left out."""
    return [
        path
        for path in tracked
        if path.endswith(".py")
        and not is_test_module(path)
        and any(glob_matches(glob, path) for glob in product_paths)
    ]


def _module(source: str) -> ast.Module | None:
    """SOURCE parsed; None where it is not Python this interpreter reads."""
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def imported_names(source: str) -> list[str]:
    """The absolute module names SOURCE imports, in the order it imports them."""
    tree = _module(source)
    if tree is None:
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def names_used(source: str) -> set[str]:
    """Every name and attribute SOURCE reads (`IntRange` of `click.IntRange(0, 5)`)."""
    tree = _module(source)
    if tree is None:
        return set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used.add(node.name.rsplit(".", 1)[-1])
    return used


def names_defined(source: str) -> set[str]:
    """The names of SOURCE's module-level functions and classes."""
    tree = _module(source)
    if tree is None:
        return set()
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in tree.body if isinstance(node, kinds)}


def by_reference(
    modules: Sequence[str],
    imports: Iterable[str],
    defined: Mapping[str, set[str]],
    used: set[str],
) -> list[str]:
    """MODULES, those that define the most of the names the property tests use first (click's
    `types.py`, for `click.IntRange`), then those the tests import (a package's `__init__`,
    which may define nothing of its own), then the rest in their order: twelve trials spent
    in import order never reached the module the properties exercise."""
    imported = set(imports)
    order = {path: index for index, path in enumerate(modules)}
    return sorted(
        modules,
        key=lambda path: (-len(defined.get(path, set()) & used), path not in imported, order[path]),
    )


def module_files(name: str, folders: Sequence[str], exists: Iterable[str]) -> str | None:
    """The file under ROOT that module NAME is, looked for in FOLDERS (relative to ROOT)."""
    present = set(exists)
    stem = name.replace(".", "/")
    for folder in folders:
        prefix = f"{folder}/" if folder not in ("", ".") else ""
        for candidate in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
            if candidate in present:
                return candidate
    return None


def mutations(path: str, source: str, named: frozenset[str] = frozenset()) -> Iterator[Mutation]:
    """Each single-expression mutation of SOURCE that still parses, in source order: first the
    operators and constants, then each function's returned value dropped (`return None`).

    The functions the property tests NAME, and the methods of the classes they name (and of
    those classes' bases in the module), come first: the opening functions of a module
    (click's `ParamType.__class_getitem__`) are rarely what its tests exercise."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    lines = source.splitlines(keepends=True)
    functions = _functions(tree)
    if named:
        owners = _owners(tree)
        depth = {**_named_classes(tree, named), **dict.fromkeys(named, 0)}
        unwanted = len(depth) + 1

        def rank(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
            found = [depth[name] for name in owners.get(id(function), ()) if name in depth]
            return min(found, default=unwanted)

        functions.sort(key=rank)  # stable: source order within a rank
    for rewrite in (_mutated, _dropped_return):
        done: set[int] = set()
        for function in functions:
            for node in ast.walk(function):
                if id(node) in done:
                    continue
                done.add(id(node))
                changed = rewrite(node)
                if changed is None:
                    continue
                span, new_text, describe = changed
                edited = _replace(lines, span, new_text)
                if edited is not None and _parses(edited) and edited != source:
                    where = f"{path}:{span.lineno} in {function.name}()"
                    yield Mutation(path, edited, f"{describe} at {where}")


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    found = [node for node in ast.walk(tree) if isinstance(node, kinds)]
    return sorted(found, key=lambda node: node.lineno)


def _owners(tree: ast.Module) -> dict[int, set[str]]:
    """For each function (by id), what makes it wanted: the names of the classes around a
    method (a method's own name, `convert`, is every class's), a function's own name."""
    owners: dict[int, set[str]] = {}

    def walk(node: ast.AST, around: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, around | {child.name})
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                owners[id(child)] = set(around) if around else {child.name}
                walk(child, around)
            else:
                walk(child, around)

    walk(tree, frozenset())
    return owners


def _named_classes(tree: ast.Module, named: frozenset[str]) -> dict[str, int]:
    """The classes of TREE that NAMED names (0), and, through the module, their bases, each
    with how many steps up it lies: `IntRange` gets `convert` from `_NumberRangeBase[int,
    int]` (1); the root every class shares comes last."""
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = {name: 0 for name in classes if name in named}
    layer = list(found)
    while layer:
        upper: list[str] = []
        for owner in layer:
            for base in classes[owner].bases:
                while isinstance(base, ast.Subscript):
                    base = base.value
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
                if name in classes and name not in found:
                    found[name] = found[owner] + 1
                    upper.append(name)
        layer = upper
    return found


def _mutated(node: ast.AST) -> tuple[ast.expr, str, str] | None:
    """(the span replaced, its new text, what changed) for an operator or a constant."""
    if not isinstance(node, ast.expr):
        return None
    new: ast.expr | None = None
    describe = ""
    if isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
        new_op = _SWAPS[type(node.op)]()
        new = ast.BinOp(node.left, new_op, node.right)
        describe = f"{type(node.op).__name__} swapped for {type(new_op).__name__}"
    elif isinstance(node, ast.Compare) and type(node.ops[0]) in _TURNS:
        turned = _TURNS[type(node.ops[0])]()
        new = ast.Compare(node.left, [turned, *node.ops[1:]], node.comparators)
        describe = f"{type(node.ops[0]).__name__} turned into {type(turned).__name__}"
    elif isinstance(node, ast.BoolOp):
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        new = ast.BoolOp(other, node.values)
        describe = f"{type(node.op).__name__} turned into {type(other).__name__}"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        new = ast.Constant(not node.value)
        describe = f"constant {node.value} turned into {not node.value}"
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        new = ast.Constant(node.value + 1)
        describe = f"constant {node.value} moved to {node.value + 1}"
    if new is None:
        return None
    return node, f"({ast.unparse(new)})", describe


def _dropped_return(node: ast.AST) -> tuple[ast.expr, str, str] | None:
    if isinstance(node, ast.Return) and node.value is not None:
        return node.value, "None", "returned value dropped"
    return None


def _replace(lines: Sequence[str], node: ast.AST, text: str) -> str | None:
    """LINES with NODE's span replaced by TEXT, or None without a span."""
    end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
    if None in (end_line, end_col, line, col):
        return None
    assert line is not None
    assert col is not None
    assert end_line is not None
    assert end_col is not None
    first = lines[line - 1].encode("utf-8")
    last = lines[end_line - 1].encode("utf-8")
    before = first[:col].decode("utf-8")
    after = last[end_col:].decode("utf-8")
    return "".join([*lines[: line - 1], f"{before}{text}{after}", *lines[end_line:]])


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def returning_early(source: str, function: str) -> str | None:
    """SOURCE with `return` as the first statement of FUNCTION (`name` or `Class.name`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    target = _find(tree, function.split("."))
    if target is None:
        return None
    first = target.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(target.body) > 1
    ):
        first = target.body[1]
    lines = source.splitlines(keepends=True)
    indent = lines[first.lineno - 1][: first.col_offset]
    if first.lineno - 1 < len(lines) and lines[first.lineno - 1][: first.col_offset].strip():
        return None  # a body on the `def` line itself: left alone
    edited = [*lines[: first.lineno - 1], f"{indent}return\n", *lines[first.lineno - 1 :]]
    text = "".join(edited)
    return text if _parses(text) else None


def _find(tree: ast.AST, names: Sequence[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    body = getattr(tree, "body", [])
    for node in body:
        if getattr(node, "name", None) != names[0]:
            continue
        if len(names) == 1 and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
        if len(names) > 1 and isinstance(node, ast.ClassDef):
            return _find(node, names[1:])
    return None


def top_level_functions(source: str) -> list[str]:
    """The names of SOURCE's module-level functions, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [node.name for node in tree.body if isinstance(node, kinds)]
