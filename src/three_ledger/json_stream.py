"""A JSON object read from its file a piece at a time, so that its text is never held whole
beside what it parses to: the text of a fixture pin of 500,000 paths is some 30 MB.

Only a well-formed object is read here. Anything else is declined (None), and the caller
reads the file whole, as every other document is read, which names the problem. What is
accepted is what the same decoder gives for the whole text: each value is parsed by its
own scanner, and only the whitespace and punctuation between them are read here.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO

_CHUNK_BYTES = 1 << 20
# json's own, already compiled (typeshed leaves it out).
_WHITESPACE = json.decoder.WHITESPACE  # type: ignore[attr-defined]
# What may follow the first characters of a number and still be part of it.
_NUMBER_GOES_ON = frozenset("0123456789.eE+-")
# A \uD800-\uDFFF escape: valid JSON, but a lone one is not Unicode and cannot be written back.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_object(
    path: Path, decoder: json.JSONDecoder, max_bytes: int, *, chunk_bytes: int = _CHUNK_BYTES
) -> tuple[dict[str, Any], bool] | None:
    """The object at PATH as DECODER parses it, and whether its text holds a \\uD800-\\uDFFF
    escape (valid JSON, but a lone one is not Unicode, which the caller checks as it would
    for the whole text). None when the file is not an object, is larger than MAX_BYTES, or
    cannot be read. Only a regular file is opened here: what a pipe holds is read once, by
    the caller."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with path.open("rb") as stream:
            return _Reader(stream, decoder, max_bytes, chunk_bytes).document()
    except (_Declined, OSError, ValueError, RecursionError):
        return None


class _Declined(Exception):
    pass


class _Reader:
    """The file's text from `at` on, in `text`, refilled as it is parsed."""

    def __init__(
        self, stream: BinaryIO, decoder: json.JSONDecoder, max_bytes: int, chunk_bytes: int
    ) -> None:
        self._stream = stream
        self._chunk_bytes = chunk_bytes
        self._decode = codecs.getincrementaldecoder("utf-8")().decode
        self._scan = decoder.scan_once  # type: ignore[attr-defined]
        self._make_object = decoder.object_pairs_hook
        self._bytes_left = max_bytes
        self._escapes = False
        self._ended = False
        self.text = ""
        self.at = 0
        # Where the last run ended that did not parse as one list, in this piece.
        self._cut_tried = -1

    def document(self) -> tuple[dict[str, Any], bool]:
        self._skip()
        if self._next() != "{" or self._make_object is None:
            raise _Declined
        pairs: list[tuple[str, Any]] = []
        self._skip()
        if self._peek() == "}":
            self.at += 1
        else:
            self._pairs(pairs)
        self._skip()
        if self._peek():
            raise _Declined  # something after the object
        escapes = self._escapes or SURROGATE_ESCAPE.search(self.text) is not None
        return self._make_object(pairs), escapes

    def _pairs(self, pairs: list[tuple[str, Any]]) -> None:
        while True:
            if self._peek() != '"':
                raise _Declined
            key = self._value()
            self._skip()
            if self._next() != ":":
                raise _Declined
            self._skip()
            pairs.append((key, self._list() if self._peek() == "[" else self._value()))
            self._skip()
            mark = self._next()
            if mark == "}":
                return
            if mark != ",":
                raise _Declined
            self._skip()

    def _list(self) -> list[Any]:
        self.at += 1  # its "["
        items: list[Any] = []
        self._skip()
        if self._peek() == "]":
            self.at += 1
            return items
        while True:
            self._run(items)
            self._skip()
            items.append(self._value())
            self._skip()
            mark = self._next()
            if mark == "]":
                return items
            if mark != ",":
                raise _Declined

    def _run(self, items: list[Any]) -> None:
        """The items ahead up to the last string followed by a comma read so far, parsed at
        once. Whether that comma ends an item (its quote might be escaped, its string part
        of a deeper list) the scanner decides: the run parses as one list only if it does."""
        cut = self.text.rfind('",', self.at)
        if cut < 0 or cut == self._cut_tried:
            return
        self._cut_tried = cut
        run = f"[{self.text[self.at : cut + 1]}]"
        try:
            parsed, end = self._scan(run, 0)
        except (json.JSONDecodeError, StopIteration):
            return  # item by item, up to the next piece
        if end == len(run):
            items.extend(parsed)
            self.at = cut + 2

    def _value(self) -> Any:
        """The value at `at`, read on until it is whole: a number is whole only once what
        follows it cannot go on with it (`1` of `1.5` parses alone)."""
        while True:
            try:
                value, end = self._scan(self.text, self.at)
            except (json.JSONDecodeError, StopIteration):
                self._more()
                continue
            if self._ended or (end < len(self.text) and self.text[end] not in _NUMBER_GOES_ON):
                self.at = end
                return value
            self._more()

    def _skip(self) -> None:
        while True:
            self.at = _WHITESPACE.match(self.text, self.at).end()
            if self.at < len(self.text) or self._ended:
                return
            self._more()

    def _peek(self) -> str:
        while self.at >= len(self.text) and not self._ended:
            self._more()
        return self.text[self.at : self.at + 1]

    def _next(self) -> str:
        mark = self._peek()
        self.at += len(mark)
        return mark

    def _more(self) -> None:
        """Drop what was parsed and read on: as much again as is left unparsed, so that a
        value longer than a piece costs reads that double, not a scan per piece."""
        if self._ended:
            raise _Declined
        escape = SURROGATE_ESCAPE.search(self.text, 0, self.at)
        self._escapes = self._escapes or escape is not None
        left = self.text[self.at :]
        data = self._stream.read(min(max(self._chunk_bytes, len(left)), self._bytes_left + 1))
        self._bytes_left -= len(data)
        if self._bytes_left < 0:
            raise _Declined
        self._ended = not data
        self.text = left + self._decode(data, final=self._ended)
        self.at = 0
        self._cut_tried = -1
