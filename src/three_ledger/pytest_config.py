"""pytest's settings as pytest finds them in a folder, read without pytest.

The gate needs a few of them before any test runs: `pythonpath` (where the child imports
from), `python_files` and `norecursedirs` (which files pytest would collect as test modules).
pytest reads the first config file that holds its section, in the order below; so does this.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import configparser

# Where pytest finds its settings, in its order of precedence, and the section that holds them.
PYTEST_CONFIGS = (
    ("pytest.toml", "pytest"),
    (".pytest.toml", "pytest"),
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", "tool.pytest.ini_options"),
    ("pyproject.toml", "tool.pytest"),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)

# Reads one file of the folder by name: its bytes, or None where there is no such file.
Reader = Callable[[str], bytes | None]


def pytest_settings(read: Reader) -> Mapping[str, object]:
    """The settings of the first config file pytest would read; empty where there is none,
    or where that file cannot be parsed (pytest then refuses to start)."""
    for name, section in PYTEST_CONFIGS:
        data = read(name)
        if data is None:
            continue
        try:
            settings = _section(name, data.decode("utf-8"), section)
        except ValueError:  # not UTF-8, not TOML, not an ini file
            return {}
        if settings is not None:
            return settings
    return {}


def _section(name: str, text: str, section: str) -> Mapping[str, object] | None:
    """SECTION of the config file NAME holding TEXT; None where it has none (pytest looks
    further). ValueError where TEXT cannot be parsed."""
    if name.endswith(".toml"):
        table: object = _toml(text)
        for key in section.split("."):
            table = table.get(key) if isinstance(table, dict) else None
        # A view: the parsed file is kept for the next reader of the same text.
        return MappingProxyType(table) if isinstance(table, dict) else None
    try:
        parser = _ini(text)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if parser.has_section(section):
        return dict(parser[section])
    # A pytest.ini is pytest's config file even without a [pytest] section.
    return {} if name in ("pytest.ini", ".pytest.ini") else None


# Each file is parsed once per text. A run asks for the settings of one folder several times
# (the child's `pythonpath`, the cache provider, which files are test modules), and a
# `pyproject.toml` without `tool.pytest.ini_options` is looked into twice each time: tomli's,
# 5 KB, was parsed six times a run, 0.8 ms each. Each parser is imported where a file of its
# kind is read: a folder holds one config file or the other, and the two imports cost some 50
# million instructions together.
@functools.lru_cache(maxsize=4)
def _toml(text: str) -> dict[str, object]:
    import tomllib  # its error is a ValueError

    return tomllib.loads(text)


@functools.lru_cache(maxsize=4)
def _ini(text: str) -> configparser.ConfigParser:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as error:
        raise ValueError(str(error)) from None
    return parser


def entries(value: object) -> list[str]:
    """A list-valued setting: whitespace-separated in an ini file, a list in TOML."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [str(item) for item in value]
    return []
