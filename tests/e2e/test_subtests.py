"""A unittest `TestCase` looping over hundreds of fixtures with `subTest`, run under pytest.

One failing sub-test must make the property `fail`; it is `pass` only when every sub-test
passed. The run goes through a real pytest subprocess with the plugin, as `properties` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from three_ledger.results import property_statuses, read_results_file
from three_ledger.vocabulary import Outcome

pytestmark = pytest.mark.pytest_child

FIXTURE_COUNT = 300
NODE_ID = "test_conformance.py::ConformanceTest::test_every_valid_input_parses"
PROPERTY_ID = "conformance.valid.parses"

UNITTEST_FILE = f"""\
import json
import os
import unittest
from pathlib import Path


class ConformanceTest(unittest.TestCase):
    def test_every_valid_input_parses(self):
        paths = sorted(Path(os.environ["THREE_LEDGER_FIXTURES"]).glob("valid/*.json"))
        self.assertEqual(len(paths), {FIXTURE_COUNT})
        for path in paths:
            with self.subTest(fixture=path.name):
                json.loads(path.read_text(encoding="utf-8"))
"""


def run_suite(tmp_path: Path, broken: int | None) -> tuple[int, str, Path]:
    """Write the fixtures (one broken, or none) and the unittest file; run pytest on it."""
    fixtures = tmp_path / "fixtures" / "valid"
    fixtures.mkdir(parents=True)
    for index in range(FIXTURE_COUNT):
        text = "{" if index == broken else json.dumps({"case": index})
        (fixtures / f"case_{index:03d}.json").write_text(text, encoding="utf-8")
    (tmp_path / "test_conformance.py").write_text(UNITTEST_FILE, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    env = {
        **os.environ,
        "PYTEST_PLUGINS": "three_ledger.plugin.hooks",
        "THREE_LEDGER_RESULTS": str(results),
        "THREE_LEDGER_FIXTURES": str(tmp_path / "fixtures"),
    }
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_conformance.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr, results


@pytest.mark.parametrize("broken", [0, FIXTURE_COUNT // 2, FIXTURE_COUNT - 1])
def test_one_failing_subtest_fails_the_property(tmp_path: Path, broken: int) -> None:
    code, output, results_path = run_suite(tmp_path, broken)
    assert code == 1, output
    assert f"case_{broken:03d}.json" in output
    results = read_results_file(results_path)
    assert [(result.id, result.outcome) for result in results] == [(NODE_ID, Outcome.FAIL)]
    assert property_statuses({PROPERTY_ID: NODE_ID}, results) == {PROPERTY_ID: "fail"}


def test_all_subtests_passing_passes_the_property(tmp_path: Path) -> None:
    code, output, results_path = run_suite(tmp_path, broken=None)
    assert code == 0, output
    results = read_results_file(results_path)
    assert [(result.id, result.outcome) for result in results] == [(NODE_ID, Outcome.PASS)]
    assert property_statuses({PROPERTY_ID: NODE_ID}, results) == {PROPERTY_ID: "pass"}
