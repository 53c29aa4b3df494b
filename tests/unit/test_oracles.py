"""Tests for run/oracles.py: which command lines rewrite the oracles they are judged by."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from three_ledger.run.oracles import rewriting_flag

# command line, package.json scripts (None: no package.json), the flag refused (None: allowed)
COMMANDS: list[tuple[str, dict[str, str] | None, str | None]] = [
    # jest and vitest: -u in every spelling and place
    ("npx jest -u", None, "-u"),
    ("npx jest --ci -u __tests__", None, "-u"),
    ("jest --updateSnapshot", None, "--updateSnapshot"),
    ("jest --update-snapshot", None, "--update-snapshot"),
    ("npx jest -ciu", None, "-ciu"),
    ("node node_modules/jest/bin/jest.js -u", None, "-u"),
    ("npx vitest -u", None, "-u"),
    ("npx vitest run -u", None, "-u"),
    ("vitest run --update", None, "--update"),
    ("vitest run --update=new", None, "--update=new"),
    ("npx vitest@4 run -u", None, "-u"),
    ("sh -c 'npx vitest run -u'", None, "-u"),
    ("npm test -- -u", {"test": "jest --ci"}, "-u"),
    ("npm run unit -- --update", {"unit": "vitest run"}, "--update"),
    ("npm test", {"test": "jest -u"}, "-u"),
    ("npm test", {"test": "npm run unit", "unit": "vitest run -u"}, "-u"),
    ("yarn test -u", {"test": "jest"}, "-u"),
    ("pnpm run test -- -u", {"test": "vitest run"}, "-u"),
    ("npm test", {"pretest": "jest -u", "test": "jest"}, "-u"),
    # ... and what must still run
    ("npx jest --ci", None, None),
    ("vitest run --update=none", None, None),
    ("vitest run --update=false", None, None),
    ("npm test", {"test": "jest --ci"}, None),
    ("python -u -m pytest -q", None, None),
    ("python3 -u -m pytest properties", None, None),
    ("npx mocha -u bdd test", None, None),  # mocha's -u is its interface, not an update
    ("npm test -- -u", {"test": "mocha"}, None),
    ("npm test -- -u", None, None),
    ("sort -u results.txt", None, None),
    # long forms and other tools, whatever the runner
    ("python -m pytest --snapshot-update", None, "--snapshot-update"),
    ("pytest --inline-snapshot=create,review", None, "--inline-snapshot=create,review"),
    ("pytest --inline-snapshot=review", None, None),
    ("sh -c 'pytest --force-regen'", None, "--force-regen"),
    ("cargo insta test --accept", None, "--accept"),
    ("env INSTA_UPDATE=always cargo nextest run", None, "INSTA_UPDATE=always"),
    ("env INSTA_UPDATE=no cargo nextest run", None, None),
    ("env UPDATE_EXPECT=1 cargo test", None, "UPDATE_EXPECT=1"),
    ("env INSTA_FORCE_PASS=1 cargo test", None, "INSTA_FORCE_PASS=1"),
    # go's golden-file convention, only where go test runs
    ("go test ./... -update", None, "-update"),
    ("go test ./... -args -update", None, "-update"),
    ("gotestsum --junitfile r.xml -- ./... -update", None, "-update"),
    ("go test ./...", None, None),
    ("apt-get -update", None, None),
]


@pytest.mark.parametrize(("command", "scripts", "refused"), COMMANDS)
def test_rewriting_flags(
    tmp_path: Path, command: str, scripts: dict[str, str] | None, refused: str | None
) -> None:
    if scripts is not None:
        (tmp_path / "package.json").write_text(json.dumps({"name": "x", "scripts": scripts}))
    assert rewriting_flag(shlex.split(command), tmp_path) == refused


def test_without_root_the_scripts_are_not_read() -> None:
    assert rewriting_flag(["npm", "test"]) is None
    assert rewriting_flag(["npx", "jest", "-u"]) == "-u"


def test_an_unreadable_package_json_is_no_crash(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text("{not json")
    assert rewriting_flag(["npm", "test", "--", "-u"], tmp_path) is None
