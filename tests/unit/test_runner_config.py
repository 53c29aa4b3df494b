"""Tests for run/runner_config.py: what steers mocha, jest and vitest, in a real git repo."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import git, make_tree
from three_ledger.run.runner_config import analyse, relative_file, runner_oracle_changes

PACKAGE: dict[str, Any] = {
    "name": "lib",
    "version": "1.0.0",
    "scripts": {"test": "mocha", "lint": "eslint ."},
    "mocha": {"spec": "test/**/*.spec.js", "require": ["./support/from-package.js", "chai"]},
    "jest": {"setupFilesAfterEnv": ["<rootDir>/support/jest-key.js"]},
    "dependencies": {"lodash": "4.17.21"},
    "devDependencies": {"mocha": "11.8.0", "mocha-junit-reporter": "2.2.1", "chai": "5.0.0"},
}
FILES = {
    ".mocharc.json": b'{\n  // comments are allowed\n  "require": "./support/setup.js"\n}\n',
    ".mocharc.yml": b"require:\n  - ./support/from-yaml.js\nreporter: spec\n",
    "jest.config.js": b"module.exports = { globalSetup: './support/global.js', transform: {} };\n",
    "vitest.config.ts": b"export default { test: { setupFiles: ['./support/vitest.ts'] } };\n",
    "support/setup.js": b"// setup\n",
    "support/from-yaml.js": b"// yaml\n",
    "support/from-package.js": b"// package\n",
    "support/jest-key.js": b"// jest key\n",
    "support/global.js": b"// global\n",
    "support/vitest.ts": b"// vitest\n",
    "support/cli.js": b"// cli\n",
    "support/preload.js": b"// preload\n",
    "support/unrelated.js": b"// not referenced\n",
    "src/lib.js": b"module.exports = 1;\n",
    "src/__snapshots__/lib.test.js.snap": b"exports[`a 1`] = `1`;\n",
    "test/lib.spec.js": b"// tests\n",
}
LOCKFILE = {"packages": {"node_modules/mocha": {"version": "11.8.0"}, "node_modules/lodash": {}}}


@pytest.fixture
def js_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "lib"
    make_tree(repo, FILES)
    write(repo, "package.json", PACKAGE)
    write(repo, "package-lock.json", LOCKFILE)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def write(repo: Path, name: str, document: Any) -> None:
    (repo / name).write_text(json.dumps(document, indent=2) + "\n")


def changes(repo: Path, command: str) -> list[str]:
    return runner_oracle_changes(repo, "HEAD", shlex.split(command))


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "// edited\n")


def package_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(PACKAGE))
    change(document)
    return document


def test_nothing_changed_nothing_listed(js_repo: Path) -> None:
    assert changes(js_repo, "npx mocha --reporter mocha-junit-reporter") == []


@pytest.mark.parametrize(
    ("path", "command"),
    [
        (".mocharc.json", "npx mocha"),
        (".mocharc.yml", "npx mocha"),
        ("support/setup.js", "npx mocha"),  # required by .mocharc.json
        ("support/from-yaml.js", "npx mocha"),  # required by .mocharc.yml
        ("support/from-package.js", "npx mocha"),  # required by package.json's mocha key
        ("support/cli.js", "npx mocha --require ./support/cli.js"),
        ("support/cli.js", "npx mocha -r=support/cli.js"),
        ("jest.config.js", "npx jest --ci"),
        ("support/global.js", "npx jest --ci"),  # globalSetup of jest.config.js
        ("support/jest-key.js", "npx jest --ci"),  # setupFilesAfterEnv of package.json's jest
        ("vitest.config.ts", "npx vitest run"),
        ("support/vitest.ts", "npx vitest run"),
        ("src/__snapshots__/lib.test.js.snap", "npx jest --ci"),
        ("support/setup.js", "npm test"),  # the test script runs mocha
    ],
)
def test_a_file_that_steers_the_runner_is_an_oracle(js_repo: Path, path: str, command: str) -> None:
    edit(js_repo / path)
    assert changes(js_repo, command) == [path]


@pytest.mark.parametrize(
    ("path", "command"),
    [
        ("support/unrelated.js", "npx mocha"),
        ("src/lib.js", "npx mocha"),  # the library under test is never an oracle
        ("jest.config.js", "npx mocha"),  # another runner's config
        (".mocharc.json", "python -m pytest"),
        (".mocharc.json", "npm run lint"),
        ("src/lib.js", "npx mocha -c src"),  # mocha's -c is --colors; src is a folder
    ],
)
def test_what_does_not_steer_the_run_is_not_listed(js_repo: Path, path: str, command: str) -> None:
    edit(js_repo / path)
    assert changes(js_repo, command) == []


def test_a_deleted_snapshot_and_a_new_snapshot_folder_are_listed(js_repo: Path) -> None:
    (js_repo / "src/__snapshots__/lib.test.js.snap").unlink()
    make_tree(js_repo, {"lib/__snapshots__/new.snap": b"x"})
    assert changes(js_repo, "npx vitest run") == [
        "lib/__snapshots__/new.snap",
        "src/__snapshots__/lib.test.js.snap",
    ]


def test_a_new_npmrc_and_the_file_its_node_options_preload(js_repo: Path) -> None:
    (js_repo / ".npmrc").write_text("node-options=--require ./support/preload.js\n")
    git(js_repo, "add", ".npmrc")
    git(js_repo, "commit", "-q", "-m", "preload")
    edit(js_repo / "support/preload.js")
    assert changes(js_repo, "npx mocha") == ["support/preload.js"]
    assert runner_oracle_changes(js_repo, "HEAD~1", ["npx", "mocha"]) == [
        ".npmrc",
        "support/preload.js",
    ]


@pytest.mark.parametrize(
    ("change", "command", "listed"),
    [
        (lambda p: p["mocha"].update(timeout=1), "npx mocha", ["package.json:mocha"]),
        (
            lambda p: p.update({"jest-junit": {"outputName": "x.xml"}}),
            "npx jest --ci",
            ["package.json:jest-junit"],
        ),
        (lambda p: p.update({"jest-junit": {"outputName": "x.xml"}}), "npx mocha", []),
        (lambda p: p.update(version="2.0.0"), "npx mocha", []),
        (
            lambda p: p["scripts"].update(test="mocha --grep nothing"),
            "npm test",
            ["package.json:scripts.test"],
        ),
        (lambda p: p["scripts"].update(test="mocha --grep x"), "npx mocha", []),
        (
            lambda p: p["devDependencies"].update({"mocha-junit-reporter": "9.9.9"}),
            "npx mocha",
            ["package.json:devDependencies.mocha-junit-reporter"],
        ),
        (
            lambda p: p["devDependencies"].update(chai="0.0.1"),  # required by the mocha key
            "npx mocha",
            ["package.json:devDependencies.chai"],
        ),
        (
            lambda p: p.update(overrides={"mocha": "1.0.0"}),
            "npx mocha",
            ["package.json:overrides.mocha"],
        ),
        (lambda p: p["dependencies"].update(lodash="1.0.0"), "npx mocha", []),
    ],
)
def test_package_json_entries_that_steer_the_run(
    js_repo: Path, change: Callable[[dict[str, Any]], None], command: str, listed: list[str]
) -> None:
    write(js_repo, "package.json", package_with(change))
    assert changes(js_repo, command) == listed


def test_a_pretest_script_added_for_npm_test_is_listed(js_repo: Path) -> None:
    write(js_repo, "package.json", package_with(lambda p: p["scripts"].update(pretest="x")))
    assert changes(js_repo, "npm test") == ["package.json:scripts.pretest"]


def test_the_locked_version_of_the_runner(js_repo: Path) -> None:
    lockfile = json.loads(json.dumps(LOCKFILE))
    lockfile["packages"]["node_modules/mocha"]["version"] = "10.0.0"
    lockfile["packages"]["node_modules/lodash"]["version"] = "1.0.0"
    write(js_repo, "package-lock.json", lockfile)
    assert changes(js_repo, "npx mocha") == ["package-lock.json:packages.node_modules/mocha"]


def test_a_package_json_broken_by_the_patch_is_listed(js_repo: Path) -> None:
    (js_repo / "package.json").write_text("{ not json")
    listed = changes(js_repo, "npx mocha")
    assert "package.json:mocha" in listed
    assert "package.json:devDependencies.mocha" in listed


@pytest.mark.parametrize(
    ("command", "runners"),
    [
        ("npx mocha", {"mocha"}),
        ("./node_modules/.bin/_mocha test", {"mocha"}),
        ("node node_modules/jest/bin/jest.js", {"jest"}),
        ("npx vitest@4.1.12 run", {"vitest"}),
        ("sh -c 'npx jest --ci && npx vitest run'", {"jest", "vitest"}),
        ("npm test", {"mocha"}),
        ("npm run lint", set()),
        ("python -m pytest", set()),
        ("npx @vitest/ui", set()),
    ],
)
def test_which_runners_a_command_runs(command: str, runners: set[str]) -> None:
    assert analyse(shlex.split(command), PACKAGE).runners == runners


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("./support/setup.js", "support/setup.js"),
        ("<rootDir>/support/setup.js", "support/setup.js"),
        ("support/setup.js", "support/setup.js"),  # exists
        ("support/absent.js", None),  # neither exists nor starts like a path
        ("../outside.js", None),
        ("chai", None),
        (".", None),
    ],
)
def test_relative_file(js_repo: Path, value: str, expected: str | None) -> None:
    assert relative_file(js_repo, value) == expected
