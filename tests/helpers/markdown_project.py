"""A small project laid out like markdown-it-py: a renderer, and its cases in two data folders
under `tests/` (`tests/test_cmark_spec`, `tests/test_port/fixtures`) with the test code beside
them. The tests read each folder from `THREE_LEDGER_FIXTURES_DIRS` when the gate runs them
(by position: the spec cases first, the ported fixtures second), else from their own place.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import git, make_tree

SPEC_FOLDER = "tests/test_cmark_spec"
PORT_FOLDER = "tests/test_port/fixtures"

RENDERER = '''
"""A very small Markdown renderer: ATX headings, bullet lists and paragraphs."""

import html


def render(text):
    out, items = [], []
    for line in text.splitlines():
        if line.startswith("- "):
            items.append(f"<li>{html.escape(line[2:].strip())}</li>")
            continue
        if items:
            out.append("<ul>\\n" + "\\n".join(items) + "\\n</ul>")
            items = []
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body = html.escape(line[level:].strip())
            out.append(f"<h{level}>{body}</h{level}>")
        elif line.strip():
            out.append(f"<p>{html.escape(line.strip())}</p>")
    if items:
        out.append("<ul>\\n" + "\\n".join(items) + "\\n</ul>")
    return "\\n".join(out) + "\\n" if out else ""
'''

FOLDERS_OF_THE_RUN = '''
import os
from pathlib import Path


def data_folder(position, own):
    """The gate's folder at POSITION in THREE_LEDGER_FIXTURES_DIRS, else OWN."""
    given = os.environ.get("THREE_LEDGER_FIXTURES_DIRS")
    return Path(given.split(os.pathsep)[position]) if given else own
'''

SPEC_TEST = """
import json
from pathlib import Path

import pytest

from mdit import render
from tests.folders import data_folder

SPEC = data_folder(0, Path(__file__).parent / "test_cmark_spec")
CASES = json.loads((SPEC / "commonmark.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[case["section"] for case in CASES])
def test_spec_example(case):
    assert render(case["markdown"]) == case["html"]
"""

PORT_TEST = """
from pathlib import Path

import pytest

from mdit import render
from tests.folders import data_folder

FIXTURES = data_folder(1, Path(__file__).parent / "fixtures")


def cases():
    found = []
    for path in sorted(FIXTURES.rglob("*.md")):
        blocks = path.read_text(encoding="utf-8").split("\\n.\\n")
        for title, given, expected in zip(blocks[0::3], blocks[1::3], blocks[2::3]):
            found.append(pytest.param(given + "\\n", expected + "\\n", id=title.strip()))
    return found


@pytest.mark.parametrize(("given", "expected"), cases())
def test_fixture(given, expected):
    assert render(given) == expected
"""

TOKEN_TEST = """
from mdit import render


def test_empty_input_renders_nothing():
    assert render("") == ""
"""

SPEC_CASES = [
    {"section": "ATX headings", "markdown": "# foo\n", "html": "<h1>foo</h1>\n"},
    {"section": "ATX headings 2", "markdown": "### bar\n", "html": "<h3>bar</h3>\n"},
    {"section": "Paragraphs", "markdown": "aaa\n\nbbb\n", "html": "<p>aaa</p>\n<p>bbb</p>\n"},
    {"section": "Lists", "markdown": "- a\n- b\n", "html": "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"},
]

PORT_FIXTURES = {
    "headings.md": "escaped heading\n.\n# a < b\n.\n<h1>a &lt; b</h1>\n.\n",
    "lists/bullets.md": "two items\n.\n- x\n- y\n.\n<ul>\n<li>x</li>\n<li>y</li>\n</ul>\n.\n",
}


def write_project(root: Path, spec: str = SPEC_FOLDER, port: str = PORT_FOLDER) -> None:
    """The renderer, its tests and their cases: SPEC and PORT are the two data folders."""
    files = {
        "mdit/__init__.py": RENDERER,
        "tests/__init__.py": "",
        "tests/folders.py": FOLDERS_OF_THE_RUN,
        "tests/test_spec.py": SPEC_TEST,
        "tests/test_port/__init__.py": "",
        "tests/test_port/test_fixtures.py": PORT_TEST,
        "tests/test_api/__init__.py": "",
        "tests/test_api/test_render.py": TOKEN_TEST,
        "pyproject.toml": '[project]\nname = "mdit"\nversion = "0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        ".gitignore": "__pycache__/\nledgers/\n",
        f"{spec}/commonmark.json": json.dumps(SPEC_CASES, indent=1) + "\n",
        f"{spec}/spec.md": "# CommonMark spec (excerpt)\n\nSee commonmark.json.\n",
        **{f"{port}/{name}": text for name, text in PORT_FIXTURES.items()},
    }
    make_tree(root, {path: textwrap.dedent(text).lstrip().encode() for path, text in files.items()})


def fresh_repository(root: Path) -> str:
    """A git repository of ROOT's files, one commit; its id."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "mdit: renderer, tests and their cases")
    return git(root, "rev-parse", "HEAD")
