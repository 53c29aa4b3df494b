"""`exit_meaning`: what an exit other than 0 or 1 says, and pytest's collection errors named."""

from __future__ import annotations

from pathlib import Path

from three_ledger.run.child import collection_errors, exit_meaning
from three_ledger.vocabulary import Enforcement

# The end of `pytest -q` when a test module does not import.
COLLECTION_FAILED = """
==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_format.py _____________________
ImportError while importing test module '/src/tests/test_format.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_format.py:9: in <module>
    import black
E   ModuleNotFoundError: No module named 'black'
____________________ ERROR collecting tests/test_other.py ______________________
E     File "/src/tests/test_other.py", line 3
E       def broken(:
E                  ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_format.py
ERROR tests/test_other.py
!!!!!!!!!!!!!!!!!!! Interrupted: 2 errors during collection !!!!!!!!!!!!!!!!!!!!
2 errors in 0.31s
"""


def log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_errors_during_collection_name_the_first_module_and_its_error(tmp_path: Path) -> None:
    path = log(tmp_path, COLLECTION_FAILED)
    assert collection_errors(path) == (
        "2 errors during collection (tests/test_format.py: "
        "ModuleNotFoundError: No module named 'black')"
    )
    assert exit_meaning(2, Enforcement.NETNS, log_path=path) == (
        "the command exited 2: 2 errors during collection (tests/test_format.py: "
        "ModuleNotFoundError: No module named 'black'); no test ran"
    )


def test_the_error_named_is_the_line_that_names_an_exception(tmp_path: Path) -> None:
    # A syntax error quotes the source first: the line that says what went wrong is later.
    other = "____________________ ERROR collecting tests/test_other.py"
    path = log(tmp_path, other + COLLECTION_FAILED.split(other)[1])
    assert collection_errors(path) == (
        "2 errors during collection (tests/test_other.py: SyntaxError: invalid syntax)"
    )
    quoted_only = log(tmp_path, 'E   File "x.py", line 3\nInterrupted: 1 error during collection\n')
    assert collection_errors(quoted_only) == '1 error during collection (File "x.py", line 3)'


def test_an_exit_2_without_collection_errors_is_an_interrupted_run(tmp_path: Path) -> None:
    # xdist's -x stop, or Ctrl-C: pytest says "Interrupted" without counting errors.
    path = log(tmp_path, "!!!!!! stopping after 1 failures !!!!!!\n1 failed in 0.2s\n")
    assert collection_errors(path) is None
    assert exit_meaning(2, Enforcement.NETNS, log_path=path) == (
        "the command exited 2 (interrupted): its results cannot be trusted"
    )
    assert collection_errors(tmp_path / "absent.log") is None


def test_only_exit_2_is_read_as_a_collection_failure(tmp_path: Path) -> None:
    # A usage error (4) after the same words in the output stays a usage error.
    path = log(tmp_path, COLLECTION_FAILED)
    assert exit_meaning(4, Enforcement.NETNS, log_path=path) == (
        "the command exited 4 (usage error): its results cannot be trusted"
    )


def test_the_words_taken_from_the_output_are_cut_short(tmp_path: Path) -> None:
    long_error = "ValueError: " + "x" * 5000
    path = log(tmp_path, f"E   {long_error}\nInterrupted: 1 error during collection\n")
    said = collection_errors(path)
    assert said is not None
    assert len(said) < 200
    assert said.endswith("xxx...)")


def test_under_xdist_the_modules_that_failed_to_collect_are_counted(tmp_path: Path) -> None:
    # pytest-xdist says "1 error in 0.8s" and exits 1, with no result: no "Interrupted".
    xdist = COLLECTION_FAILED.replace(
        "!!!!!!!!!!!!!!!!!!! Interrupted: 2 errors during collection !!!!!!!!!!!!!!!!!!!!\n", ""
    )
    assert collection_errors(log(tmp_path, xdist)) == (
        "2 errors during collection (tests/test_format.py: "
        "ModuleNotFoundError: No module named 'black')"
    )
    spaced = "___ ERROR collecting tests/with space/test_a.py ___\nE   ImportError: x\n"
    assert collection_errors(log(tmp_path, spaced)) == (
        "1 error during collection (tests/with space/test_a.py: ImportError: x)"
    )


def test_control_characters_from_the_output_are_escaped(tmp_path: Path) -> None:
    # A test's output must not forge a line of the gate's through the refusal it causes.
    forged = "E   ValueError: x\x1b[2K\rthree-ledger: every pinned property passed\n"
    said = collection_errors(log(tmp_path, forged + "Interrupted: 1 error during collection\n"))
    assert said == (
        "1 error during collection (ValueError: x\\x1b[2K\\rthree-ledger: every pinned "
        "property passed)"
    )


def test_a_conftest_that_does_not_import_is_named_not_called_a_usage_error(tmp_path: Path) -> None:
    """pytest exits 4 when a conftest raises as it is imported: click's tests, where click was
    not installed, read as `the command exited 4 (usage error)`."""
    path = log(
        tmp_path,
        "ImportError while loading conftest '/src/tests/conftest.py'.\n"
        "tests/conftest.py:3: in <module>\n    import click\n"
        "E   ModuleNotFoundError: No module named 'click'\n",
    )
    assert exit_meaning(4, Enforcement.NETNS, log_path=path) == (
        "the command exited 4: ImportError while loading conftest /src/tests/conftest.py "
        "(ModuleNotFoundError: No module named 'click'); no test ran"
    )
    assert exit_meaning(2, Enforcement.NETNS, log_path=path) == (
        "the command exited 2 (interrupted): its results cannot be trusted"
    )
