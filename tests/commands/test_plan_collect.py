"""Two real `plan` runs in the fast layers: expected skips found at collection, and the
tests outside every property. They measure the collecting side of the plugin where it
runs; `tests/e2e/test_plan.py` holds the rest of plan's real runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import RunCli, path_without_unshare, unshare_refusing, write_json
from helpers.suites import (
    PYTEST,
    SUITE,
    TEST_FILE,
    by_id,
    edit_properties,
    make_suite,
    plan,
    plan_json,
    prop,
    properties_pin,
)

pytestmark = pytest.mark.pytest_child


def test_skips_known_at_collection_are_offered_as_expected_skips(
    run_cli: RunCli, tmp_path: Path
) -> None:
    draft = f"{TEST_FILE}::TestDraft"
    repo = make_suite(tmp_path, properties_pin([prop("suite.draft", draft)]))
    result = plan(run_cli, repo)
    assert "suite.draft: 4 tests (1 skip at collection: it would score skip)" in result.out
    entry = {"test": draft, "reason": "Format checker 'idn-hostname' not found."}
    assert f"  {json.dumps(entry)}  (1 test)\n" in result.out
    assert "skips that no expected skip accepts (each makes its property `skip`)" in result.out
    # `TestDraft::test_...` is a pytest id: its `::` are boundaries, nothing to warn about.
    assert "title holds '::'" not in result.out
    assert plan_json(run_cli, repo)["unlisted_skips"] == [{**entry, "count": 1}]

    edit_properties(repo, properties_pin([prop("suite.draft", draft)], expected_skips=[entry]))
    document = plan_json(run_cli, repo)
    draft_entry = by_id(document)["suite.draft"]
    assert (draft_entry["expected_skips_left_out"], draft_entry["unaccepted_skips"]) == (1, 0)
    # The entry names the class: its other three tests could skip as they run (idna's
    # trial: 485 vectors did), and the run would count fewer than the figures proposed.
    assert draft_entry["expected_skips_unseen"] == 3
    assert (
        "; 3 tests counted here an expected skip names did not skip at collection: each that "
        "skips as it runs is left out of the run's count and hash" in plan(run_cli, repo).out
    )
    assert document["unlisted_skips"] == []
    assert document["expected_skips"] == [{"selector": draft, "matched": 4, "did_you_mean": []}]


def test_a_test_marked_xfail_is_named_as_one_the_property_cannot_pass_with(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """An expected failure scores `fail` (SPEC 4.2): a property that counts one cannot pass,
    and plan says so before any run, where a drafted pin once rejected every change."""
    source = SUITE + (
        "\n\n@pytest.mark.xfail(reason='a known bug')\ndef test_known_bug():\n    assert False\n"
    )
    repo = make_suite(tmp_path, properties_pin([prop("suite.bugs", TEST_FILE)]), source)
    result = plan(run_cli, repo)
    assert "1 marked xfail: it would score fail, since an expected failure counts as fail" in (
        result.out
    )
    assert f"  marked xfail: {TEST_FILE}::test_known_bug\n" in result.out
    assert by_id(plan_json(run_cli, repo))["suite.bugs"]["expected_failures"] == 1
    edit_properties(repo, properties_pin([prop("suite.bugs", f"{TEST_FILE}::test_total")]))
    assert by_id(plan_json(run_cli, repo))["suite.bugs"]["expected_failures"] == 0


def test_tests_outside_every_property_and_flake_entry_are_counted(
    run_cli: RunCli, tmp_path: Path
) -> None:
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    document = plan_json(run_cli, repo)
    assert document["outside"] == 9
    # The suite imports nothing of its own tree and builds no package: no product to propose.
    assert document["proposed_product_paths"] == []
    flakes = {
        "pin_id": "flakepin-suite",
        "flakes": [
            {
                "test_id": "suite.outside",
                "test": f"{TEST_FILE}::test_outside_one",
                "accepted_revision": "HEAD",
                "review_by": "2999-12-31",
            }
        ],
    }
    flake_pin = write_json(repo / "pins/flakes.json", flakes)
    document = plan_json(run_cli, repo, "--flake-pin", flake_pin)
    assert document["outside"] == 8
    assert f"{TEST_FILE}::test_outside_one" not in document["outside_examples"]


def test_a_pin_that_declares_product_paths_is_not_offered_a_proposal(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """The proposal is a draft for a pin without `product_paths`: once the pin declares
    them, plan says what it declares (idna's trial read the proposal again after adopting)."""
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")])
    repo = make_suite(tmp_path, pin)
    assert "product_paths: nothing to propose" in plan(run_cli, repo).out
    edit_properties(repo, {**pin, "product_paths": ["suite/**"]})
    said = plan(run_cli, repo).out
    assert 'product_paths: the pin declares ["suite/**"]\n' in said
    assert "product_paths proposed" not in said
    assert "oracle_paths: add" not in said


def test_a_test_helper_inside_the_product_is_named_for_oracle_paths(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """markdown ships `markdown/test_tools.py`, which its tests assert through: under
    `product_paths` alone a weakened copy beside a broken product was `review`."""
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")])
    repo = make_suite(tmp_path, {**pin, "product_paths": ["suite/**"]})
    (repo / "suite").mkdir(exist_ok=True)
    (repo / "suite/test_tools.py").write_text("def same(a, b):\n    assert a == b\n")
    said = plan(run_cli, repo).out
    assert 'oracle_paths: add ["suite/test_tools.py"]: named like tests inside the pin' in said
    assert plan_json(run_cli, repo)["proposed_oracle_paths"] == ["suite/test_tools.py"]
    edit_properties(
        repo,
        {**pin, "product_paths": ["suite/**"], "oracle_paths": ["tests", "suite/test_tools.py"]},
    )
    assert "oracle_paths: add" not in plan(run_cli, repo).out
    # Pygments' `pygments/lexers/testing.py` is a lexer: a module named `testing` is the
    # product's as often as not, and in oracle_paths a broken one went unscored.
    (repo / "suite/testing.py").write_text("def lex(text):\n    return text.split()\n")
    assert plan_json(run_cli, repo)["proposed_oracle_paths"] == []


def test_a_helper_the_tests_import_from_a_test_folder_is_named_for_oracle_paths(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """pycodestyle's trial: `testing/support.py`, which its tests import, was in no
    proposal, and an edit to it alone was scored as the product's, then rejected at row 5."""
    pin = properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")])
    repo = make_suite(
        tmp_path,
        {**pin, "oracle_paths": ["tests"]},
        source=SUITE + "\nfrom testing.support import same  # noqa: E402\n",
        ini="[pytest]\npythonpath = .\n",
    )
    (repo / "testing").mkdir()
    (repo / "testing/support.py").write_text("def same(a, b):\n    assert a == b\n")
    said = plan(run_cli, repo).out
    assert 'oracle_paths: add ["testing/support.py"]: imported by the collection from a test' in (
        said
    )
    assert plan_json(run_cli, repo)["proposed_oracle_paths"] == ["testing/support.py"]
    edit_properties(repo, {**pin, "oracle_paths": ["tests", "testing"]})
    assert "oracle_paths: add" not in plan(run_cli, repo).out


@pytest.fixture
def parse_suite(tmp_path: Path) -> Path:
    """The suite with one property, `suite.parse`."""
    return make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))


@pytest.fixture
def bin_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for programs put first on PATH, outside the suite's repository."""
    return tmp_path_factory.mktemp("bin")


@pytest.mark.usefixtures("needs_network_namespace")
def test_where_unshare_refuses_the_network_namespace_plan_collects_under_the_socket_guard(
    run_cli: RunCli, parse_suite: Path, bin_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real refusal: the probe finds no namespace, and the ban goes to pytest's socket guard.
    unshare_refusing(bin_folder, monkeypatch, "--net")
    assert plan_json(run_cli, parse_suite)["outside"] == 9


def test_without_unshare_plan_collects_under_the_socket_guard(
    run_cli: RunCli, parse_suite: Path, bin_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path_without_unshare(bin_folder, monkeypatch)
    assert plan_json(run_cli, parse_suite)["outside"] == 9


def test_a_command_that_rewrites_its_oracles_is_refused_as_properties_refuses_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """Pygments' trial: `plan` collected with `--update-goldens`, which `properties` then
    refused; adopting.md says plan checks what properties checks."""
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    result = plan(run_cli, repo, command=f"{PYTEST} --update-goldens")
    assert result.code == 2
    assert "--command carries '--update-goldens', which rewrites the oracles" in result.err
