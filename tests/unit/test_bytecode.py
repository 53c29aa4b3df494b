"""Bytecode a run must not load: new or changed against the base, or a `.pyc` outside
`__pycache__` where the test child imports from; and what a pin change may not hold."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
from pathlib import Path

import pytest

from helpers import git, make_tree
from three_ledger import bytecode
from three_ledger.base_resolution import BaseResolution
from three_ledger.errors import Refused
from three_ledger.gate_plan import Change
from three_ledger.run.measured_oracles import before_run
from three_ledger.vocabulary import BaseHow

BASE = "0123456789abcdef" * 2 + "01234567"


# --- what counts as bytecode ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("orders.pyc", True),
        ("properties/__pycache__/test_orders.cpython-311-pytest-9.2.0.pyc", True),
        ("legacy/module.pyo", True),
        ("orders.py", False),
        ("__pycache__/README", False),
        ("notes.pyc.txt", False),
    ],
)
def test_bytecode_is_a_pyc_or_pyo_file(path: str, expected: bool) -> None:
    assert bytecode.is_bytecode(path) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("orders.cpython-311-x86_64-linux-gnu.so", True),
        ("pkg/_speedups.abi3.so", True),
        ("pkg/_speedups.cp311-win_amd64.pyd", True),
        ("vendor/libfast.so.1", True),
        ("vendor/libfast.so.1.2.3", True),
        ("fixtures/report.so.json", False),
        ("vendor/libfast.dylib", True),
        ("orders.py", False),
        ("docs/so.md", False),
        ("fixtures/also.json", False),
    ],
)
def test_native_code_is_an_extension_module_or_a_shared_library(path: str, expected: bool) -> None:
    assert bytecode.is_native_code(path) is expected
    assert bytecode.is_compiled(path) is expected


# --- new or changed against the base ----------------------------------------------------------


def test_new_or_changed_bytecode_is_refused_each_file_named() -> None:
    differing = {
        "orders.py": "blob-1",
        "__pycache__/orders.cpython-311.pyc": "blob-2",
        "properties/__pycache__/test_orders.cpython-311-pytest-9.2.0.pyc": "blob-3",
    }
    with pytest.raises(Refused) as refused:
        bytecode.refuse_new_compiled(BASE, differing)
    message = refused.value.message
    assert message.startswith(
        f"bytecode new or changed against the base {BASE[:12]}: "
        "__pycache__/orders.cpython-311.pyc (and 1 more): Python or pytest could load it"
    )
    assert refused.value.details == [
        "__pycache__/orders.cpython-311.pyc",
        "properties/__pycache__/test_orders.cpython-311-pytest-9.2.0.pyc",
    ]


def test_one_new_bytecode_file_is_named_in_the_headline_alone() -> None:
    with pytest.raises(Refused, match=r"base 0123456789ab: legacy\.pyo: Python") as refused:
        bytecode.refuse_new_compiled(BASE, {"legacy.pyo": "blob"})
    assert refused.value.details == []


def test_deleted_bytecode_and_other_changes_are_no_refusal() -> None:
    bytecode.refuse_new_compiled(BASE, {"__pycache__/orders.cpython-311.pyc": None, "a.py": "b"})


def test_new_or_changed_native_code_is_refused_each_file_named() -> None:
    """An extension module stands in for the `.py` module of its name: the source under review
    is never run (a `.so` of the base's `orders` beside a broken `orders.py` passed)."""
    differing = {
        "orders.py": "blob-1",
        "orders.cpython-311-x86_64-linux-gnu.so": "blob-2",
        "vendor/libfast.so.1": "blob-3",
        "gone.abi3.so": None,
    }
    with pytest.raises(Refused) as refused:
        bytecode.refuse_new_compiled(BASE, differing)
    assert refused.value.message.startswith(
        f"native code new or changed against the base {BASE[:12]}: "
        "orders.cpython-311-x86_64-linux-gnu.so (and 1 more): Python imports an extension "
        "module ahead of the `.py` module of its name"
    )
    assert refused.value.details == [
        "orders.cpython-311-x86_64-linux-gnu.so",
        "vendor/libfast.so.1",
    ]


def test_what_git_lists_against_the_base_is_what_is_refused(tmp_path: Path) -> None:
    """Tracked or new and not ignored is refused; ignored is left to the other rule."""
    make_tree(tmp_path, {"orders.py": b"X = 1\n", ".gitignore": b"ignored/\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = git(tmp_path, "rev-parse", "HEAD")
    make_tree(
        tmp_path,
        {
            "__pycache__/orders.cpython-311.pyc": b"\x00",
            "ignored/__pycache__/x.cpython-311.pyc": b"\x00",
        },
    )
    with pytest.raises(Refused) as refused:
        bytecode.refuse_new_compiled(base, before_run(tmp_path, base).differing)
    assert "__pycache__/orders.cpython-311.pyc: Python" in refused.value.message
    assert "ignored/" not in refused.value.message


# --- sourceless bytecode where the child imports from -----------------------------------------


def test_a_pyc_outside_pycache_at_root_is_refused(tmp_path: Path) -> None:
    make_tree(tmp_path, {"pytest.pyc": b"\x00", "orders.py": b""})
    with pytest.raises(Refused) as refused:
        bytecode.refuse_bytecode_in_tree(tmp_path, {})
    assert refused.value.message.startswith(
        "bytecode outside __pycache__ where the test child imports from: pytest.pyc (outside "
        "__pycache__ under ROOT): Python imports such a file without its source"
    )


def test_every_pyc_outside_pycache_is_listed_with_where_it_was_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "pkg/__init__.py": b"",
            "pkg/core.pyc": b"\x00",
            "tests/helpers.pyc": b"\x00",
            "pkg/__pycache__/core.cpython-311.pyc": b"\x00",
        },
    )
    assert bytecode.tree_bytecode(tmp_path, {}).sourceless == {
        "pkg/core.pyc": "ROOT",
        "tests/helpers.pyc": "ROOT",
    }
    with pytest.raises(Refused) as refused:
        bytecode.refuse_bytecode_in_tree(tmp_path, {})
    assert refused.value.details == [
        "pkg/core.pyc (outside __pycache__ under ROOT)",
        "tests/helpers.pyc (outside __pycache__ under ROOT)",
    ]


def test_bytecode_in_pycache_a_pyo_or_a_virtual_environment_is_no_refusal(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "__pycache__/orders.cpython-311.pyc": b"\x00",
            "legacy.pyo": b"\x00",
            ".venv/pyvenv.cfg": b"home = /usr/bin\n",
            ".venv/lib/python3.11/site-packages/vendored.pyc": b"\x00",
            ".git/objects/x.pyc": b"\x00",
        },
    )
    bytecode.refuse_bytecode_in_tree(tmp_path, {})


def test_a_link_to_a_folder_is_not_followed(tmp_path: Path) -> None:
    make_tree(tmp_path / "elsewhere", {"module.pyc": b"\x00"})
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "linked").symlink_to(tmp_path / "elsewhere")
    assert bytecode.tree_bytecode(tmp_path / "root", {}).sourceless == {}


def test_import_folders_are_root_pytests_pythonpath_and_pythonpath_under_root(
    tmp_path: Path,
) -> None:
    make_tree(
        tmp_path,
        {"pytest.ini": b"[pytest]\npythonpath = src .venv/lib\n", "src/a.py": b"", "lib/b.py": b""},
    )
    (tmp_path / ".venv/lib").mkdir(parents=True)
    env = {"PYTHONPATH": os.pathsep.join(["lib", str(tmp_path.parent), "", "missing"])}
    folders = bytecode.import_folders(tmp_path, env)
    assert folders == {
        tmp_path: "ROOT",
        tmp_path / "src": "pytest's pythonpath src",
        tmp_path / ".venv/lib": "pytest's pythonpath .venv/lib",
        tmp_path / "lib": "PYTHONPATH entry lib",
    }


def test_a_pythonpath_entry_inside_a_virtual_environment_is_walked(tmp_path: Path) -> None:
    site = ".venv/lib/python3.11/site-packages"
    make_tree(tmp_path, {".venv/pyvenv.cfg": b"", f"{site}/planted.pyc": b"\x00"})
    found = bytecode.tree_bytecode(tmp_path, {"PYTHONPATH": str(tmp_path / site)}).sourceless
    assert found == {f"{site}/planted.pyc": f"PYTHONPATH entry {tmp_path / site}"}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pytest.ini": "[pytest]\npythonpath = src\n"}, ["src"]),
        ({"pytest.ini": "# no section\n", "pyproject.toml": "[tool.pytest]\n"}, []),
        ({".pytest.ini": "[pytest]\npythonpath = a b\n"}, ["a", "b"]),
        ({"pytest.toml": '[pytest]\npythonpath = ["src"]\n', "pytest.ini": "[pytest]\n"}, ["src"]),
        ({"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src", "lib"]\n'},
         ["src", "lib"]),
        ({"pyproject.toml": '[tool.pytest]\npythonpath = "src"\n'}, ["src"]),
        ({"pyproject.toml": "[project]\nname = 'x'\n", "tox.ini": "[pytest]\npythonpath = t\n"},
         ["t"]),
        ({"setup.cfg": "[tool:pytest]\npythonpath = s\n"}, ["s"]),
        ({"setup.cfg": "[metadata]\nname = x\n"}, []),
        ({"pyproject.toml": "[tool.pytest.ini_options]\npythonpath = 3\n"}, []),
        ({"pytest.ini": "[pytest\n"}, []),
        ({}, []),
    ],
)  # fmt: skip
def test_pytests_pythonpath_comes_from_the_config_file_pytest_reads(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    make_tree(tmp_path, {name: text.encode() for name, text in files.items()})
    assert bytecode.pytest_pythonpath(tmp_path) == expected


# --- unchecked-hash bytecode in __pycache__ ------------------------------------------------------

CACHED = f"__pycache__/orders.{sys.implementation.cache_tag}.pyc"


def compiled(root: Path, pyc: str, mode: py_compile.PycInvalidationMode) -> Path:
    """ROOT/orders.py's bytecode at ROOT/PYC, written by Python itself in MODE."""
    source = root / "orders.py"
    if not source.exists():
        source.write_text("def order_total(order):\n    return 0\n")
    py_compile.compile(str(source), cfile=str(root / pyc), doraise=True, invalidation_mode=mode)
    return root / pyc


@pytest.mark.parametrize(
    ("mode", "unchecked"),
    [
        (py_compile.PycInvalidationMode.UNCHECKED_HASH, True),
        (py_compile.PycInvalidationMode.CHECKED_HASH, False),
        (py_compile.PycInvalidationMode.TIMESTAMP, False),
    ],
)
def test_only_an_unchecked_hash_pyc_is_unchecked(
    tmp_path: Path, mode: py_compile.PycInvalidationMode, unchecked: bool
) -> None:
    assert bytecode.is_unchecked_hash(compiled(tmp_path, CACHED, mode)) is unchecked


@pytest.mark.parametrize(
    "header",
    [
        b"",  # empty
        importlib.util.MAGIC_NUMBER + b"\x01\x00\x00\x00",  # too short: Python reads 16 bytes
        b"\x00\x00\x00\x00" + b"\x01\x00\x00\x00" + bytes(8),  # no pyc magic
        importlib.util.MAGIC_NUMBER + b"\x05\x00\x00\x00" + bytes(8),  # flags Python rejects
    ],
)
def test_a_file_python_cannot_load_is_not_unchecked(tmp_path: Path, header: bytes) -> None:
    (tmp_path / "x.pyc").write_bytes(header + b"code")
    assert not bytecode.is_unchecked_hash(tmp_path / "x.pyc")


def test_an_unchecked_hash_pyc_is_unchecked_whatever_python_wrote_it(tmp_path: Path) -> None:
    """Another Python version's magic number: the child may run another interpreter."""
    other_magic = b"\x42\x0d\x0d\x0a"
    (tmp_path / "x.pyc").write_bytes(other_magic + b"\x01\x00\x00\x00" + bytes(8) + b"code")
    assert bytecode.is_unchecked_hash(tmp_path / "x.pyc")


def test_unchecked_hash_bytecode_in_any_pycache_under_root_is_refused_ignored_or_not(
    tmp_path: Path,
) -> None:
    unchecked = py_compile.PycInvalidationMode.UNCHECKED_HASH
    compiled(tmp_path, CACHED, unchecked)
    (tmp_path / "pkg/deep").mkdir(parents=True)
    (tmp_path / "pkg/deep/__pycache__").mkdir()
    nested = compiled(tmp_path, "pkg/deep/__pycache__/core.cpython-311-pytest-9.2.0.pyc", unchecked)
    compiled(
        tmp_path, "pkg/__pycache__/honest.cpython-311.pyc", py_compile.PycInvalidationMode.TIMESTAMP
    )
    (tmp_path / ".gitignore").write_text("__pycache__/\n")
    git(tmp_path, "init", "-q")
    assert bytecode.tree_bytecode(tmp_path, {}).unchecked == [
        CACHED,
        nested.relative_to(tmp_path).as_posix(),
    ]
    with pytest.raises(Refused) as refused:
        bytecode.refuse_bytecode_in_tree(tmp_path, {})
    assert refused.value.message == (
        f"unchecked-hash bytecode under ROOT: {CACHED} (and 1 more): Python loads such a file "
        "in place of its source without comparing the two, so the run would execute code other "
        "than the source under review; delete it (`git rm` where git tracks it)"
    )
    assert refused.value.details == [
        CACHED,
        "pkg/deep/__pycache__/core.cpython-311-pytest-9.2.0.pyc",
    ]


def test_timestamp_and_checked_hash_bytecode_is_no_refusal_stale_or_not(tmp_path: Path) -> None:
    """Python checks both against their source, and compiles the source where they are stale."""
    compiled(tmp_path, CACHED, py_compile.PycInvalidationMode.TIMESTAMP)
    checked = f"__pycache__/orders.{sys.implementation.cache_tag}.opt-1.pyc"
    compiled(tmp_path, checked, py_compile.PycInvalidationMode.CHECKED_HASH)
    (tmp_path / "orders.py").write_text("def order_total(order):\n    return 1  # moved on\n")
    assert bytecode.tree_bytecode(tmp_path, {}) == bytecode.TreeBytecode({}, [])
    bytecode.refuse_bytecode_in_tree(tmp_path, {})


def test_unchecked_hash_bytecode_in_a_virtual_environment_or_git_is_left_alone(
    tmp_path: Path,
) -> None:
    site = ".venv/lib/python3.11/site-packages"
    make_tree(tmp_path, {".venv/pyvenv.cfg": b"", f"{site}/__pycache__/.keep": b""})
    (tmp_path / ".git/__pycache__").mkdir(parents=True)
    for pyc in (f"{site}/__pycache__/vendored.cpython-311.pyc", ".git/__pycache__/x.pyc"):
        compiled(tmp_path, pyc, py_compile.PycInvalidationMode.UNCHECKED_HASH)
    assert bytecode.tree_bytecode(tmp_path, {}).unchecked == []


def test_a_pycache_link_is_followed_as_python_follows_it_and_a_fifo_is_not_waited_on(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = compiled(elsewhere, "planted.pyc", py_compile.PycInvalidationMode.UNCHECKED_HASH)
    root = tmp_path / "root"
    (root / "pkg/__pycache__").mkdir(parents=True)
    (root / "pkg/__pycache__/core.cpython-311.pyc").symlink_to(planted)
    (root / "lib").mkdir()
    (root / "lib/__pycache__").symlink_to(elsewhere)
    os.mkfifo(root / "pkg/__pycache__/fifo.cpython-311.pyc")
    assert bytecode.tree_bytecode(root, {}).unchecked == [
        "lib/__pycache__/planted.pyc",
        "pkg/__pycache__/core.cpython-311.pyc",
    ]


# --- a pin change holds no bytecode -----------------------------------------------------------


def change(*paths: str) -> Change:
    resolution = BaseResolution(BASE, BASE, BaseHow.ANCESTOR)
    return Change(BASE, "--base", resolution, paths, pins_dir_in_top="pins", root_in_top="")


def test_a_change_to_pins_alone_is_a_pin_change() -> None:
    assert change("pins/flakes.json").pin_change_only


def test_a_pin_change_holding_bytecode_is_not_a_pin_change_only() -> None:
    assert not change("pins/flakes.json", "__pycache__/orders.cpython-311.pyc").pin_change_only
    assert not change("pins/flakes.json", "pins/__pycache__/x.cpython-311.pyc").pin_change_only
