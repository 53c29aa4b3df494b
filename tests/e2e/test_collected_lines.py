"""The collection file's lines, held to one `iter_markers` walk and one `json.dumps` per item.

`plugin/collect.py` looks up what lies above an item (its parents' markers, its test class's
skip) once per run of items with one parent, and writes each line with `json`'s string
encoder. A real pytest child collects a suite of every kind of marker and skip, with its
items interleaved across parents, and writes both texts: the plugin's, and the plain way
this conftest computes them item by item. They must be the same bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.pytest_child

CONFTEST = """
import json

from three_ledger.plugin.collect import collected_lines


def pytest_collection_modifyitems(items):
    # Interleave the parents: every run of one parent is one item long.
    items.sort(key=lambda item: (item.name, item.nodeid))


def pytest_collection_finish(session):
    with open("plugin.jsonl", "w", encoding="utf-8") as stream:
        stream.write("".join(collected_lines(session.items)))
    with open("plain.jsonl", "w", encoding="utf-8") as stream:
        for item in session.items:
            stream.write(json.dumps(plain_line(item)) + "\\n")


def plain_line(item):
    markers = {}
    for marker in item.iter_markers():
        markers.setdefault(marker.name, []).append(marker)
    ids = sorted({arg for marker in markers.get("property", ()) for arg in marker.args})
    line = {"id": item.nodeid, "property_ids": ids}
    reason = plain_skip(item, markers)
    if reason is not None:
        line["skip_reason"] = reason
    if plain_xfail(item, markers):
        line["xfail"] = True
    return line


def plain_xfail(item, markers):
    if getattr(getattr(item, "obj", None), "__unittest_expecting_failure__", False) is True:
        return True
    for marker in markers.get("xfail", ()):
        if "condition" in marker.kwargs:
            conditions = (marker.kwargs["condition"],)
        else:
            conditions = marker.args
        if not conditions:
            return True
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return True
    return False


def plain_skip(item, markers):
    for marker in markers.get("skip", ()):
        reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
        return reason if isinstance(reason, str) else "unconditional skip"
    for marker in markers.get("skipif", ()):
        conditions = marker.args or (marker.kwargs.get("condition"),)
        reason = marker.kwargs.get("reason")
        if all(isinstance(c, bool) for c in conditions) and any(conditions):
            return reason if isinstance(reason, str) else None
    for owner in (getattr(item, "obj", None), getattr(item, "cls", None)):
        if getattr(owner, "__unittest_skip__", False):
            why = getattr(owner, "__unittest_skip_why__", "")
            return why if isinstance(why, str) else None
    return None
"""

SUITE = '''
import sys
import unittest

import pytest

pytestmark = [pytest.mark.property("m.module"), pytest.mark.skipif(False, reason="never")]


def test_plain():
    pass


@pytest.mark.property("f.b", "f.a")
@pytest.mark.property("f.a")
def test_marked():
    pass


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        pytest.param("skipped", marks=pytest.mark.skip(reason="a param's skip")),
        pytest.param("marked", marks=pytest.mark.property("p.param")),
        pytest.param("quoted", id='quote"back\\\\slash'),
        pytest.param("accent", id="caf\u00e9-\u2603"),
    ],
)
def test_params(value):
    pass


@pytest.mark.skip
def test_skip_without_reason():
    pass


@pytest.mark.skip(reason=3)
def test_skip_reason_not_a_string():
    pass


@pytest.mark.skipif(True, reason="decided at collection")
def test_skipif_true():
    pass


@pytest.mark.skipif(True)
def test_skipif_true_without_reason():
    pass


@pytest.mark.skipif("sys.platform != 'nowhere'", reason="decided when it runs")
def test_skipif_string():
    pass


@pytest.mark.skipif(False, True, reason="any true condition")
def test_skipif_two_conditions():
    pass


@pytest.mark.property("c.class")
@pytest.mark.skip(reason="the class's skip")
class TestSkippedClass:
    @pytest.mark.skip(reason="the method's own skip")
    def test_closest_wins(self):
        pass

    @pytest.mark.property("c.method")
    def test_in_class(self):
        pass


class TestPlainClass:
    def test_one(self):
        pass

    @pytest.mark.parametrize("n", [1, 2])
    def test_two(self, n):
        pass


@unittest.skip("the case is skipped")
class SkippedCase(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        pass


class Case(unittest.TestCase):
    @unittest.skip("one method")
    def test_skipped(self):
        pass

    def test_runs(self):
        pass

    @unittest.expectedFailure
    def test_unittest_expected_failure(self):
        assert False


@pytest.mark.xfail(reason="a known bug")
def test_xfail():
    assert False


@pytest.mark.xfail(False, reason="not this time")
def test_xfail_false():
    pass


@pytest.mark.xfail("sys.platform != 'nowhere'", reason="decided when it runs")
def test_xfail_string():
    assert False


def doubled(n):
    """
    >>> doubled(2)
    4
    """
    return 2 * n
'''


def test_the_plugins_lines_are_the_plain_walks_bytes(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST), encoding="utf-8")
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "test_other.py").write_text(
        'import pytest\n\n@pytest.mark.property("o.other")\ndef test_plain():\n    pass\n',
        encoding="utf-8",
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "--doctest-modules"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    plugin = (tmp_path / "plugin.jsonl").read_bytes()
    assert plugin == (tmp_path / "plain.jsonl").read_bytes()
    lines = {line["id"]: line for line in map(json.loads, plugin.decode().splitlines())}
    # Not a vacuous comparison: every kind of line is there, in an order that leaves the
    # items of one parent apart.
    assert len(lines) == 28
    suite = "test_suite.py::"
    assert lines[f"{suite}test_marked"]["property_ids"] == ["f.a", "f.b", "m.module"]
    assert lines[f"{suite}test_params[skipped]"]["skip_reason"] == "a param's skip"
    assert lines[f"{suite}test_params[marked]"]["property_ids"] == ["m.module", "p.param"]
    assert f'{suite}test_params[quote"back\\\\slash]' in lines
    assert lines[f"{suite}TestSkippedClass::test_closest_wins"]["skip_reason"] == (
        "the method's own skip"
    )
    assert lines[f"{suite}TestSkippedClass::test_in_class"]["property_ids"] == [
        "c.class",
        "c.method",
        "m.module",
    ]
    assert lines[f"{suite}SkippedCase::test_b"]["skip_reason"] == "the case is skipped"
    assert lines[f"{suite}Case::test_skipped"]["skip_reason"] == "one method"
    assert "skip_reason" not in lines[f"{suite}Case::test_runs"]
    assert lines[f"{suite}test_skip_reason_not_a_string"]["skip_reason"] == "unconditional skip"
    assert "skip_reason" not in lines[f"{suite}test_skipif_string"]
    assert lines[f"{suite}test_xfail"]["xfail"] is True
    assert lines[f"{suite}Case::test_unittest_expected_failure"]["xfail"] is True
    assert "xfail" not in lines[f"{suite}test_xfail_false"]
    assert "xfail" not in lines[f"{suite}test_xfail_string"]
    assert "test_suite.py::test_suite.doubled" in lines
    # Sorted by name: the two parents' items alternate, and a class's run is two long.
    assert list(lines)[:5] == [
        f"{suite}SkippedCase::test_a",
        f"{suite}SkippedCase::test_b",
        f"{suite}TestSkippedClass::test_closest_wins",
        f"{suite}TestSkippedClass::test_in_class",
        f"{suite}test_marked",
    ]
