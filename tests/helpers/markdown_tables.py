"""The step summary's tables as GitHub renders them, cut into the runs a browser cannot break.

Markdown is rendered with cmark-gfm, GitHub's own parser. A cell's *run* is a stretch of
characters with no break opportunity in it: no whitespace, no zero-width space (U+200B), no
`<br>` and, unless GitHub's sanitizer is assumed to have stripped it, no `<wbr>`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

# What breaks a run inside a cell's text: any whitespace, and the zero-width space.
_BREAK = re.compile(r"[\s\u200b]+")
_WBR = re.compile(r"<wbr\s*/?>", re.I)


def gfm_html(markdown: str) -> str:
    # GitHub renders with cmark-gfm's table extension and keeps raw HTML such as <wbr>.
    rendered = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return str(rendered)


class _Tables(HTMLParser):
    """Each table as rows of cells; each cell as its runs of unbreakable characters."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = [""]
        elif tag in ("wbr", "br") and self._cell is not None:
            self._cell.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            words = _BREAK.split(data)
            self._cell[-1] += words[0]
            self._cell.extend(words[1:])


def tables_of(markdown: str, *, wbr_stripped: bool = False) -> list[list[list[list[str]]]]:
    """Every table of MARKDOWN rendered; with WBR_STRIPPED, as after GitHub's sanitizer."""
    rendered = gfm_html(markdown)
    if wbr_stripped:
        rendered = _WBR.sub("", rendered)
    parser = _Tables()
    parser.feed(rendered)
    return parser.tables


def longest_runs(markdown: str, *, wbr_stripped: bool = False) -> list[str]:
    """The longest run of each table cell of MARKDOWN."""
    return [
        max(runs, key=len)
        for table in tables_of(markdown, wbr_stripped=wbr_stripped)
        for row in table
        for runs in row
    ]
