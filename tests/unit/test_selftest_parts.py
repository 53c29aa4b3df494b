"""`selftest`'s pure parts: product mutations, the plants' text, the clone's depth, judging."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path

import pytest

from three_ledger.commands import selftest
from three_ledger.commands.selftest import (
    MAX_TRIALS,
    MIN_TRIAL_TIMEOUT_S,
    TRIAL_TIMEOUT_FACTOR,
    Result,
    Seen,
    Session,
    _command_seconds,
    _exit_code,
    _plant_environment,
    _test_location,
)
from three_ledger.selftest import plants
from three_ledger.selftest.plants import EXPECTED, Expect, Outcome, Plant
from three_ledger.selftest.product import (
    by_reference,
    imported_names,
    is_test_module,
    module_files,
    mutations,
    names_defined,
    names_used,
    product_modules,
    returning_early,
    top_level_functions,
)
from three_ledger.selftest.scratch import same_depth_home
from three_ledger.vocabulary import Posture

PRODUCT = '''"""A product."""


def total(lines):
    return sum(line * 2 for line in lines)


def ok(value, limit=3):
    return value < limit and value != 0


def flag():
    return True
'''


def test_mutations_change_one_expression_each_and_still_parse() -> None:
    found = list(mutations("p.py", PRODUCT))
    described = [mutation.describe for mutation in found]
    assert described[0] == "Mult swapped for Add at p.py:5 in total()"
    assert "Lt turned into GtE at p.py:9 in ok()" in described
    assert "And turned into Or at p.py:9 in ok()" in described
    assert "constant 3 moved to 4 at p.py:8 in ok()" in described
    assert "constant True turned into False at p.py:13 in flag()" in described
    # The dropped returns come after every operator and constant.
    dropped = [d for d in described if d.startswith("returned value dropped")]
    assert described[-len(dropped) :] == dropped
    assert len(dropped) == 3
    for mutation in found:
        ast.parse(mutation.source)
        assert mutation.source != PRODUCT
        assert mutation.path == "p.py"


def test_no_mutation_of_a_file_that_does_not_parse() -> None:
    assert list(mutations("p.py", "def broken(:\n")) == []
    assert imported_names("import (\n") == []
    assert returning_early("def broken(:\n", "broken") is None
    assert top_level_functions("def broken(:\n") == []


def test_a_nested_function_is_mutated_once() -> None:
    source = "def outer():\n    def inner():\n        return 1 + 2\n    return inner\n"
    described = [mutation.describe for mutation in mutations("n.py", source)]
    assert described.count("Add swapped for Sub at n.py:3 in outer()") == 1


def test_returning_early_skips_the_docstring_and_finds_methods() -> None:
    source = (
        "class TestX:\n"
        "    def test_a(self):\n"
        '        """Doc."""\n'
        "        assert False\n"
        "\n"
        "def test_b():\n"
        "    assert False\n"
    )
    method = returning_early(source, "TestX.test_a")
    assert method is not None
    assert '        """Doc."""\n        return\n        assert False\n' in method
    function = returning_early(source, "test_b")
    assert function is not None
    assert "def test_b():\n    return\n    assert False\n" in function
    assert returning_early(source, "test_c") is None
    assert returning_early(source, "TestX.test_c") is None
    assert returning_early("def f(): return 1\n", "f") is None


def test_imports_and_the_files_they_name() -> None:
    source = "import os\nfrom pkg.mod import f\nfrom . import rel\nimport a, b\n"
    assert imported_names(source) == ["os", "pkg.mod", "a", "b"]
    tracked = ["src/pkg/mod.py", "a/__init__.py", "tests/test_x.py"]
    assert module_files("pkg.mod", ["tests", ".", "src"], tracked) == "src/pkg/mod.py"
    assert module_files("a", [".", "src"], tracked) == "a/__init__.py"
    assert module_files("os", [".", "src"], tracked) is None


def test_product_modules_are_the_python_files_the_globs_cover() -> None:
    tracked = ["src/pkg/a.py", "src/pkg/test_a.py", "src/pkg/data.json", "other.py"]
    assert product_modules(tracked, ["src/pkg"]) == ["src/pkg/a.py"]
    assert is_test_module("x/conftest.py")
    assert is_test_module("x/a_test.py")
    assert not is_test_module("x/testing.py")


def test_top_level_functions() -> None:
    assert top_level_functions(PRODUCT) == ["total", "ok", "flag"]


@pytest.mark.parametrize(
    ("data", "changed"),
    [
        (b'{"n": 19}', b'{"n": 29}'),
        (b'{"a": "b"}', b'{"b": "b"}'),
        (b"", b"\n"),
        (b"\x00\xff", b"\x01\xff"),
    ],
)
def test_one_byte_changes(data: bytes, changed: bytes) -> None:
    assert plants.changed_byte(data) == changed
    assert len(plants.changed_byte(data)) == max(len(data), 1)


def test_a_flake_entry_copies_the_reviewed_one_or_takes_the_head() -> None:
    reviewed = {"accepted_revision": "a" * 40, "review_by": "2030-01-01"}
    pin = {"pin_id": "f", "flakes": [{"test_id": "t", "test": "x.py::t", **reviewed}]}
    added = json.loads(plants.appended_flake(json.dumps(pin), "p.flaky", "x.py::u", "b" * 40, "d"))
    assert added["flakes"][1] == {"test_id": "p.flaky", "test": "x.py::u", **reviewed}
    empty = json.loads(plants.appended_flake('{"pin_id": "f"}', "p", "x", "c" * 40, "2031-02-03"))
    assert empty["flakes"] == [
        {"test_id": "p", "test": "x", "accepted_revision": "c" * 40, "review_by": "2031-02-03"}
    ]


def test_the_masking_conftest_puts_the_base_module_in_place(tmp_path: Path) -> None:
    package = types.ModuleType("selftest_fake_pkg")
    setattr(package, "__path__", [])  # a package, as the import system sees one  # noqa: B010
    sys.modules["selftest_fake_pkg"] = package
    try:
        text = plants.masking_conftest(
            "selftest_fake_pkg.mod", "mod.py", "def f():\n    return 7\n"
        )
        exec(compile(text, "conftest.py", "exec"), {})
        assert sys.modules["selftest_fake_pkg.mod"].f() == 7
        assert package.mod.f() == 7
    finally:
        sys.modules.pop("selftest_fake_pkg", None)
        sys.modules.pop("selftest_fake_pkg.mod", None)
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_BaseProduct"]


def test_the_masking_conftest_restores_a_module_its_package_imports_back(tmp_path: Path) -> None:
    """Python-Markdown's `__init__` imports `markdown.blockparser`, whose code imports the
    package's `util`: made in the import system's order, the base's module finds both."""
    folder = tmp_path / "selftest_fake_md"
    folder.mkdir()
    (folder / "__init__.py").write_text("from .blockparser import BlockParser\n")
    (folder / "util.py").write_text("NAME = 'util'\n")
    broken = folder / "blockparser.py"
    broken.write_text("from . import util\n\nclass BlockParser:\n    broken = True\n")
    base = "from . import util\n\nclass BlockParser:\n    broken = False\n"
    sys.path.insert(0, str(tmp_path))
    try:
        text = plants.masking_conftest("selftest_fake_md.blockparser", str(broken), base)
        exec(compile(text, "conftest.py", "exec"), {})
        assert sys.modules["selftest_fake_md"].BlockParser.broken is False
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("selftest_fake_md", "selftest_fake_md.util", "selftest_fake_md.blockparser"):
            sys.modules.pop(name, None)
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_BaseProduct"]


def test_the_masking_conftest_restores_a_package_whose_code_imports_its_own_modules(
    tmp_path: Path,
) -> None:
    """A package's `__init__.py` (attrs' `from . import exceptions`) is made as the import
    system makes it: its `__path__` set and in `sys.modules` before its code runs."""
    folder = tmp_path / "selftest_fake_package"
    folder.mkdir()
    (folder / "_version.py").write_text("VERSION = 3\n")
    init = folder / "__init__.py"
    source = "from . import _version\n\ndef f():\n    return _version.VERSION\n"
    try:
        text = plants.masking_conftest("selftest_fake_package", str(init), source)
        exec(compile(text, "conftest.py", "exec"), {})
        assert sys.modules["selftest_fake_package"].f() == 3
    finally:
        sys.modules.pop("selftest_fake_package", None)
        sys.modules.pop("selftest_fake_package._version", None)
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_BaseProduct"]


@pytest.mark.parametrize("text", [plants.sleeper_canary("1.5"), plants.network_canary(9)])
def test_the_canaries_are_python(text: str) -> None:
    ast.parse(text)
    ast.parse(plants.fixture_write_canary(1, "fixtures/a.json"))
    ast.parse(plants.FORCING_CONFTEST)


def test_what_each_plant_expects() -> None:
    assert set(EXPECTED) == set(Plant) == set(plants.DESCRIPTIONS)
    assert str(EXPECTED[Plant.BROKEN_PRODUCT]) == "reject row 7"
    assert str(EXPECTED[Plant.FORCING_CONFTEST]) == "reject row 2 (properties exit 4)"
    assert str(EXPECTED[Plant.COMMITTED_BYTECODE]) == "reject"
    assert str(EXPECTED[Plant.NETWORK]) == "nothing happens"
    row7 = Expect(Posture.REJECT, 7)
    assert row7.holds(Posture.REJECT, 7, 0)
    assert not row7.holds(Posture.REJECT, 2, None)
    assert not row7.holds(Posture.REVIEW, 9, None)
    tripwire = EXPECTED[Plant.FORCING_CONFTEST]
    assert tripwire.holds(Posture.REJECT, 2, 4)
    assert not tripwire.holds(Posture.REJECT, 2, 0)


def test_the_clone_is_as_deep_as_the_work_tree(tmp_path: Path) -> None:
    top = Path("/a/b/c/d/e/f/g/h/project")
    holder, clone = same_depth_home(top, Path("/tmp/w"))
    assert holder == Path("/tmp/w/clone")
    assert len(clone.parts) == len(top.parts)
    assert clone.name == "project"
    shallow = tmp_path / "p"
    shallow.mkdir()
    holder, clone = same_depth_home(shallow, tmp_path / "x" / "y" / "z")
    assert holder == clone
    assert clone.parent == tmp_path
    assert len(clone.parts) == len(shallow.parts)


def test_the_plants_environment_names_no_base_or_event() -> None:
    env = {
        "PATH": "/bin",
        "GITHUB_EVENT_PATH": "e.json",
        "GITHUB_BASE_REF": "main",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": "x",
        "THREE_LEDGER_BASE": "HEAD~1",
        "THREE_LEDGER_GIT_TIMEOUT_S": "9",
        "CI": "true",
    }
    assert _plant_environment(env) == {"PATH": "/bin", "THREE_LEDGER_GIT_TIMEOUT_S": "9"}


def test_a_node_id_names_its_module_and_function() -> None:
    assert _test_location("t/test_a.py::test_x[a.json]") == ("t/test_a.py", "test_x")
    assert _test_location("t/test_a.py::TestA::test_x") == ("t/test_a.py", "TestA.test_x")


def _result(outcome: Outcome) -> Result:
    return Result(Plant.NETWORK, outcome, "-", "")


def test_the_exit_code() -> None:
    assert _exit_code([_result(Outcome.CAUGHT), _result(Outcome.KNOWN_ESCAPE)]) == 0
    assert _exit_code([_result(Outcome.NOT_APPLICABLE), _result(Outcome.ESCAPED)]) == 1
    assert _exit_code([_result(Outcome.ESCAPED), _result(Outcome.INFRA_FAILURE)]) == 4


def test_which_runs_are_no_answer(tmp_path: Path) -> None:
    none = Seen(2, None, None, "refused", None, "", tmp_path)
    assert str(none) == "no decision (exit 2)"
    assert none.infrastructure() == "no decision: exit 2: refused"
    hung = Seen(1, Posture.REJECT, 2, "r", 4, "the command timed out", tmp_path)
    assert hung.infrastructure() == (
        "the properties step failed as infrastructure: the command timed out"
    )
    tripwire = Seen(1, Posture.REJECT, 2, "r", 4, "tripwire: sentinel ...", tmp_path)
    assert tripwire.infrastructure() is None
    assert str(tripwire) == "reject row 2"


def test_the_broken_product_is_looked_for_across_modules_before_deep_in_one(
    tmp_path: Path,
) -> None:
    """A product of many modules (pygments': its package's `__init__`, then its command line)
    is tried a few mutations a module first: twelve trials once went to one module that no
    property runs, and the report named every candidate as mutated."""
    source = "def f(a, b):\n    return a + b + 1 - 2 * 3\n"
    modules = [f"m{index}.py" for index in range(8)]
    for module in modules:
        (tmp_path / module).write_text(source)
    session = types.SimpleNamespace(
        scratch=types.SimpleNamespace(root=tmp_path), names_tests_use=set()
    )
    tried = [module for module, _, _ in Session._trials(session, modules)]  # type: ignore[arg-type]
    assert len(tried) == MAX_TRIALS
    assert tried[: 2 * 6] == [module for module in modules[:6] for _ in range(2)]
    one = [module for module, _, _ in Session._trials(session, modules[:1])]  # type: ignore[arg-type]
    assert one == ["m0.py"] * min(MAX_TRIALS, len(list(mutations("m0.py", source))))


@pytest.mark.parametrize(
    ("clean_s", "timeout_s", "expected"),
    [
        (None, 1800.0, 1800.0),  # no clean ledger to read: the command's own timeout
        (0.5, 1800.0, MIN_TRIAL_TIMEOUT_S),  # a fast suite: a minute at least
        (30.0, 1800.0, 30.0 * TRIAL_TIMEOUT_FACTOR),
        (30.0, 120.0, 120.0),  # never longer than --timeout
    ],
)
def test_a_mutants_trial_stops_at_ten_times_the_clean_command(
    clean_s: float | None, timeout_s: float, expected: float
) -> None:
    """One of click's mutants looped for more than twenty minutes under --timeout's half hour."""
    session = types.SimpleNamespace(
        clean_command_s=clean_s, request=types.SimpleNamespace(timeout_s=timeout_s)
    )
    assert Session.trial_timeout(session) == expected  # type: ignore[arg-type]


def test_the_clean_commands_duration_is_read_from_its_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "property-a.json"
    assert _command_seconds(ledger) is None
    ledger.write_text(json.dumps({"duration_ms": 2500}))
    assert _command_seconds(ledger) == 2.5
    ledger.write_text(json.dumps({"duration_ms": "soon"}))
    assert _command_seconds(ledger) is None


def test_the_modules_that_define_what_the_tests_name_are_mutated_first() -> None:
    """click's properties call `click.IntRange`; its `__init__` only re-exports, and twelve
    trials in import order never reached `types.py`, which defines it."""
    tests = "import click\n\ndef test_clamp():\n    assert click.IntRange(0, 5, clamp=True)\n"
    sources = {
        "src/click/__init__.py": "from .types import IntRange as IntRange\n",
        "src/click/_compat.py": "def _make_text_stream(stream):\n    return stream\n",
        "src/click/_winconsole.py": "def _get_windows_console_stream(f):\n    return f\n",
        "src/click/types.py": "class IntRange:\n    pass\n\n\nclass FloatRange:\n    pass\n",
    }
    used = names_used(tests)
    assert {"click", "IntRange"} <= used
    assert names_defined(sources["src/click/types.py"]) == {"IntRange", "FloatRange"}
    defined = {path: names_defined(source) for path, source in sources.items()}
    modules = list(sources)
    assert by_reference(modules, ["src/click/__init__.py"], defined, used) == [
        "src/click/types.py",
        "src/click/__init__.py",
        "src/click/_compat.py",
        "src/click/_winconsole.py",
    ]
    # Nothing named: the imported modules first, then git's order, as before.
    assert by_reference(modules, ["src/click/_compat.py"], defined, set()) == [
        "src/click/_compat.py",
        "src/click/__init__.py",
        "src/click/_winconsole.py",
        "src/click/types.py",
    ]


def test_the_functions_and_classes_the_tests_name_are_mutated_first() -> None:
    """click's `types.py` opens with `ParamType.__class_getitem__`, whose mutants broke the
    import; `IntRange`, which the properties call, comes later in the file, and gets its
    `convert` from a subscripted base."""
    source = "".join(
        f"class {name}:\n    def {method}(self, value):\n        return value {op}\n\n\n"
        for name, method, op in [
            ("ParamType", "__class_getitem__", "== 1"),
            ("Choice(ParamType)", "convert", "!= 0"),
            ("_RangeBase(ParamType)", "convert", "> 0"),
            ("IntRange(_RangeBase[int])", "clamp", "< 9"),
        ]
    )
    plain = [m.describe.split(" at ")[1] for m in mutations("types.py", source)]
    assert plain[0] == "types.py:3 in __class_getitem__()"
    named = [
        m.describe.split(" at ")[1] for m in mutations("types.py", source, frozenset({"IntRange"}))
    ]
    # IntRange's own first, then its base's, then the root's; Choice, whose `convert` shares
    # only a method's name with what the tests call, last.
    assert list(dict.fromkeys(named)) == [
        "types.py:18 in clamp()",
        "types.py:13 in convert()",
        "types.py:3 in __class_getitem__()",
        "types.py:8 in convert()",
    ]
    assert sorted(named) == sorted(plain)  # the same mutations, in another order


def test_a_mutation_that_wrote_no_ledger_is_said_with_its_refusal(tmp_path: Path) -> None:
    """Python-Markdown's trial read `a trial stops at 63.26 s` for a collection error."""
    log = tmp_path / "3.log"
    log.write_text(
        "properties: the command: python -m pytest ...\n"
        "three-ledger: infrastructure failure: pytest reported 31 errors during collection\n"
        "  no property ledger written (log: x)\n"
    )
    assert selftest._refusal(log) == "pytest reported 31 errors during collection"
    log.write_text("three-ledger: refused: " + "x" * 500 + "\n")
    said = selftest._refusal(log)
    assert said is not None
    assert len(said) == 240
    assert said.endswith("...")
    log.write_text("properties: the command: ...\n")
    assert selftest._refusal(log) is None
    assert selftest._refusal(tmp_path / "missing.log") is None
