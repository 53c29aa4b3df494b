"""pytest's settings read without pytest: the first config file pytest would read, parsed
with the one parser its kind needs; a file that cannot be parsed gives no settings."""

from __future__ import annotations

import pytest

from helpers import python_unmeasured
from three_ledger import pytest_config
from three_ledger.pytest_config import pytest_settings


@pytest.mark.parametrize(
    ("files", "settings"),
    [
        ({"pytest.ini": b"[pytest]\npythonpath = src\n"}, {"pythonpath": "src"}),
        ({"pytest.ini": b"# no section\n"}, {}),
        ({"pyproject.toml": b'[tool.pytest.ini_options]\npythonpath = ["src"]\n'},
         {"pythonpath": ["src"]}),
        # pytest.ini comes first, even beside a pyproject.toml with a section.
        ({"pytest.ini": b"[pytest]\nx = 1\n", "pyproject.toml": b"[tool.pytest.ini_options]\n"},
         {"x": "1"}),
        # A pyproject.toml without pytest's section: pytest looks further.
        ({"pyproject.toml": b"[tool.other]\n", "tox.ini": b"[pytest]\ny = 2\n"}, {"y": "2"}),
        ({"setup.cfg": b"[tool:pytest]\nz = 3\n"}, {"z": "3"}),
    ],
)  # fmt: skip
def test_the_first_file_pytest_reads_gives_the_settings(
    files: dict[str, bytes], settings: dict[str, object]
) -> None:
    assert pytest_settings(files.get) == settings


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": b"[tool.pytest.ini_options\n"},  # not TOML
        {"pytest.ini": b"[pytest]\n  indented first line\n"},  # not an ini file
        {"tox.ini": b"[pytest]\nx = 1\nx = 2\n"},  # a key twice
        {"pytest.ini": b"[pytest]\nx = \xff\n"},  # not UTF-8
    ],
)
def test_a_file_that_cannot_be_parsed_gives_no_settings(files: dict[str, bytes]) -> None:
    assert pytest_settings(files.get) == {}


@pytest.mark.parametrize(
    ("name", "text", "loaded"),
    [
        ("pytest.ini", "[pytest]\n", ["False", "True"]),
        ("pyproject.toml", "[tool.pytest.ini_options]\n", ["True", "False"]),
    ],
)
def test_only_the_parser_of_the_file_read_is_imported(
    name: str, text: str, loaded: list[str]
) -> None:
    code = (
        "import sys\n"
        "from three_ledger.pytest_config import pytest_settings\n"
        f"pytest_settings({{{name!r}: {text.encode()!r}}}.get)\n"
        "print('tomllib' in sys.modules, 'configparser' in sys.modules)\n"
    )
    done = python_unmeasured(code)  # coverage, measuring a child, imports both parsers
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == loaded


def test_each_text_is_parsed_once_and_its_settings_cannot_be_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run asks for one folder's settings several times, and a pyproject.toml without
    `tool.pytest.ini_options` is looked into twice each time: its text is parsed once. What
    is returned is a view, so that no reader can change what the next one gets."""
    import tomllib

    parsed: list[str] = []
    loads = tomllib.loads

    def counted(text: str) -> dict[str, object]:
        parsed.append(text)
        return loads(text)

    monkeypatch.setattr(tomllib, "loads", counted)
    pytest_config._toml.cache_clear()
    files = {"pyproject.toml": b'[tool.pytest]\npythonpath = ["src"]\n'}
    for _ in range(3):
        settings = pytest_settings(files.get)
        assert settings == {"pythonpath": ["src"]}
    assert len(parsed) == 1
    with pytest.raises(TypeError):
        settings["pythonpath"] = ["elsewhere"]  # type: ignore[index]
    # Another text is parsed afresh.
    assert pytest_settings({"pyproject.toml": b"[tool.pytest]\nx = 1\n"}.get) == {"x": 1}
    assert len(parsed) == 2
