"""Tests for run/junit_oracles.py: what moves the oracles of a run scored from a JUnit report.

Real git repositories; nothing runs. The launch chain (without `product_paths`) and the
declared product (with it) are each shown to catch the change they exist for and to leave an
honest change alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import git, make_tree
from three_ledger.pins import PropertiesPin
from three_ledger.run.junit_oracles import (
    CHANGED_OUTSIDE_PRODUCT,
    MAKEFILE,
    NAMED_BY_COMMAND,
    NAMED_BY_NPMRC,
    NAMED_BY_SCRIPT,
    NPMRC,
    SCRIPT,
    declared_product_changes,
    exempt,
    launch_chain,
    launch_chain_changes,
    make_arguments,
)
from three_ledger.run.measured_oracles import before_run

TEST_SCRIPT = "node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml"
PACKAGE: dict[str, Any] = {
    "name": "lib",
    "scripts": {
        "pretest": "node scripts/prepare.js",
        "test": TEST_SCRIPT,
        "posttest": "true",
        "ci": "npm run unit",
        "unit": "sh scripts/unit.sh",
        "build": "node scripts/build.js",
    },
    "dependencies": {"marked": "15.0.0"},
}
FILES = {
    "lib/total.js": b"module.exports = 1;\n",
    "test/total.test.js": b"// tests\n",
    "scripts/prepare.js": b"// prepare\n",
    "scripts/unit.sh": b"node --test\n",
    "scripts/build.js": b"// build\n",
    "run-tests.sh": b"npm test\n",
    "Makefile": b"include common.mk\n-include local/*.mk\ninclude $(EXTRA)\ntest:\n\tnpm test\n",
    "common.mk": b"sinclude deeper.mk # a comment\n",
    "deeper.mk": b"X = 1\n",
    "local/one.mk": b"Y = 1\n",
    "sub/build.mk": b"include ../common.mk\n",
    ".npmrc": b"node-options=--require ./support/preload.js\n",
    "support/preload.js": b"// preload\n",
    "fixtures/orders.json": b"[]\n",
    "pins/fixtures.json": b"{}\n",
    "reports/README.txt": b"tracked, but not part of any chain\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    make_tree(root, FILES)
    write_package(root, PACKAGE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def write_package(root: Path, document: dict[str, Any]) -> None:
    (root / "package.json").write_text(json.dumps(document, indent=2) + "\n")


def with_scripts(**scripts: str) -> dict[str, Any]:
    return {**PACKAGE, "scripts": {**PACKAGE["scripts"], **scripts}}


def chain(root: Path, command: str) -> dict[str, str]:
    return launch_chain(
        root, command.split(), json.loads((root / "package.json").read_text())
    ).files


# --- the launch chain ----------------------------------------------------------------------------


def test_npm_test_brings_its_scripts_files_and_npmrc(repo: Path) -> None:
    assert chain(repo, "npm test") == {
        ".npmrc": NPMRC,
        "support/preload.js": NAMED_BY_NPMRC,
        "scripts/prepare.js": NAMED_BY_SCRIPT,
    }


def test_a_script_that_runs_another_brings_that_ones_files(repo: Path) -> None:
    found = chain(repo, "npm run ci")
    assert found["scripts/unit.sh"] == NAMED_BY_SCRIPT
    assert "scripts/build.js" not in found  # a script the command does not run


def test_files_the_command_names_count_but_folders_and_programs_do_not(repo: Path) -> None:
    found = chain(repo, "sh run-tests.sh --config=./support/preload.js lib node")
    assert found == {"run-tests.sh": NAMED_BY_COMMAND, "support/preload.js": NAMED_BY_COMMAND}


def test_words_of_a_shell_line_count_without_their_quotes_and_separators(repo: Path) -> None:
    found = chain(repo, "sh -c 'node\\ x; sh run-tests.sh;'")
    assert found == {"run-tests.sh": NAMED_BY_COMMAND}


def test_make_brings_its_makefile_and_every_include_it_can_name(repo: Path) -> None:
    assert chain(repo, "make test") == {
        "Makefile": MAKEFILE,
        "common.mk": "launch chain: included by Makefile",
        "deeper.mk": "launch chain: included by common.mk",
        "local/one.mk": "launch chain: included by Makefile",
    }


def test_make_with_a_folder_and_a_file_reads_that_file_there(repo: Path) -> None:
    # Includes are read from make's folder: there, common.mk's `deeper.mk` names no file.
    assert chain(repo, "make -C sub -f build.mk test") == {
        "sub/build.mk": MAKEFILE,
        "common.mk": "launch chain: included by sub/build.mk",
    }


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["test"], (".", [])),
        (["-f", "a.mk", "-C", "x", "-C", "y"], ("x/y", ["a.mk"])),
        (["--file=a.mk", "--directory=x", "-fb.mk", "-Cz"], ("x/z", ["a.mk", "b.mk"])),
        (["--makefile", "m.mk", "&&", "-f", "not-make.mk"], (".", ["m.mk"])),
        (["test;", "-f", "later.mk"], (".", [])),
    ],
)
def test_make_arguments(words: list[str], expected: tuple[str, list[str]]) -> None:
    assert make_arguments(words) == expected


def test_a_command_without_npm_does_not_bring_npmrc(repo: Path) -> None:
    assert ".npmrc" not in chain(repo, "node --test test/")


# --- what differs from the base ------------------------------------------------------------------


def test_an_honest_product_and_test_change_moves_no_launch_chain(repo: Path) -> None:
    (repo / "lib/total.js").write_text("module.exports = 2;\n")
    (repo / "test/total.test.js").write_text("// more tests\n")
    write_package(repo, {**PACKAGE, "dependencies": {"marked": "15.0.1"}})
    assert launch_chain_changes(repo, "HEAD", ["npm", "test"]) == {}


def test_a_rewritten_test_script_moves_the_oracles(repo: Path) -> None:
    write_package(repo, with_scripts(test="cp -p test/old-pass.xml reports/junit.xml"))
    make_tree(repo, {"test/old-pass.xml": b"<testsuites/>\n"})
    changes = launch_chain_changes(repo, "HEAD", ["npm", "test"])
    # The old report is new and named by the script, and the script itself moved.
    assert changes == {"package.json:scripts.test": SCRIPT, "test/old-pass.xml": NAMED_BY_SCRIPT}


@pytest.mark.parametrize("hook", ["pretest", "posttest"])
def test_a_rewritten_pre_or_post_script_moves_the_oracles(repo: Path, hook: str) -> None:
    write_package(repo, with_scripts(**{hook: "cp old.xml reports/junit.xml"}))
    assert launch_chain_changes(repo, "HEAD", ["npm", "test"]) == {
        f"package.json:scripts.{hook}": SCRIPT
    }


def test_a_script_added_where_none_was_moves_the_oracles(repo: Path) -> None:
    scripts = {k: v for k, v in PACKAGE["scripts"].items() if k != "posttest"}
    write_package(repo, {**PACKAGE, "scripts": scripts})
    git(repo, "commit", "-qam", "no posttest in the base")
    write_package(repo, PACKAGE)
    changes = launch_chain_changes(repo, "HEAD", ["yarn", "test"])
    assert changes == {"package.json:scripts.posttest": SCRIPT}


def test_an_edited_file_of_the_chain_moves_the_oracles(repo: Path) -> None:
    (repo / "scripts/unit.sh").write_text("cp old.xml reports/junit.xml\n")
    (repo / "deeper.mk").write_text("X = 2\n")
    (repo / "support/preload.js").write_text("// now it rewrites the report\n")
    assert launch_chain_changes(repo, "HEAD", ["pnpm", "run", "ci"]) == {
        "scripts/unit.sh": NAMED_BY_SCRIPT,
        "support/preload.js": NAMED_BY_NPMRC,
    }
    assert launch_chain_changes(repo, "HEAD", ["make", "test"]) == {
        "deeper.mk": "launch chain: included by common.mk"
    }


def test_the_report_itself_is_never_part_of_the_chain(repo: Path) -> None:
    make_tree(repo, {"reports/junit.xml": b"<testsuites/>\n"})
    command = ["sh", "-c", f"{TEST_SCRIPT} && cat reports/junit.xml"]
    assert launch_chain_changes(repo, "HEAD", command, ["reports/junit.xml"]) == {}
    assert launch_chain_changes(repo, "HEAD", command) == {"reports/junit.xml": NAMED_BY_COMMAND}


# --- with product_paths: everything but the product ----------------------------------------------


def properties_pin(product_paths: tuple[str, ...]) -> PropertiesPin:
    document = {
        "pin_id": "proppin-js",
        "fixture_pins": ["fixpin-js"],
        "properties": [
            {"id": "a", "claim": "c", "domain": ["orders.json"], "test": "test::a"},
        ],
        "product_paths": list(product_paths),
    }
    return PropertiesPin.from_json(document, Path("pins/properties.json"), "0" * 64)


def test_with_product_paths_every_other_changed_file_is_an_oracle(repo: Path) -> None:
    (repo / "lib/total.js").write_text("module.exports = 2;\n")  # product
    (repo / "fixtures/orders.json").write_text("[1]\n")  # pinned: the digest binds it
    (repo / "pins/fixtures.json").write_text('{"changed": 1}\n')  # a pin: merge row 4
    (repo / "test/total.test.js").write_text("// weakened\n")
    make_tree(
        repo,
        {
            "test/old-pass.xml": b"<testsuites/>\n",
            "out/p.json.log": b"the gate's own log\n",  # the folder of --out: untracked outputs
            "out/helper.js": b"// new, and committed with the change\n",
        },
    )
    git(repo, "add", "out/helper.js")
    (repo / "scripts/build.js").unlink()
    exempted = exempt(
        repo,
        ["fixtures/orders.json"],
        [repo / "pins/fixtures.json", repo / "pins/properties.json"],
        [repo / "out/p.json", repo / "out/p.json.log"],
    )
    changes = declared_product_changes(
        repo, before_run(repo, "HEAD"), properties_pin(("lib/**",)), exempted
    )
    assert changes == {
        "out/helper.js": CHANGED_OUTSIDE_PRODUCT,
        "scripts/build.js": CHANGED_OUTSIDE_PRODUCT,
        "test/old-pass.xml": CHANGED_OUTSIDE_PRODUCT,
        "test/total.test.js": CHANGED_OUTSIDE_PRODUCT,
    }


def test_with_product_paths_a_product_change_alone_moves_nothing(repo: Path) -> None:
    (repo / "lib/total.js").write_text("module.exports = 2;\n")
    exempted = exempt(repo, [], [repo / "pins/fixtures.json"], [])
    pin = properties_pin(("lib/**",))
    assert declared_product_changes(repo, before_run(repo, "HEAD"), pin, exempted) == {}


def test_a_pin_folder_exempts_pins_only_not_scripts_beside_them(repo: Path) -> None:
    make_tree(repo, {"pins/flakes.json": b"{}\n", "pins/run.sh": b"cp old.xml r.xml\n"})
    exempted = exempt(repo, [], [repo / "pins/fixtures.json"], [repo.parent / "out.json"])
    changes = declared_product_changes(
        repo, before_run(repo, "HEAD"), properties_pin(("lib/**",)), exempted
    )
    assert changes == {"pins/run.sh": CHANGED_OUTSIDE_PRODUCT}
