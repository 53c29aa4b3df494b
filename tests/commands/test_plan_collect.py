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
    assert document["unlisted_skips"] == []
    assert document["expected_skips"] == [{"selector": draft, "matched": 4, "did_you_mean": []}]


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


@pytest.mark.usefixtures("needs_network_namespace")
def test_where_unshare_refuses_the_network_namespace_plan_collects_under_the_socket_guard(
    run_cli: RunCli,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first collection takes the namespace for granted; `unshare` refuses it for real,
    # nothing runs, and the probe's reason sends the ban to pytest's socket guard.
    unshare_refusing(tmp_path_factory.mktemp("bin"), monkeypatch, "--net")
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    assert plan_json(run_cli, repo)["outside"] == 9


@pytest.mark.usefixtures("needs_network_namespace")
def test_a_namespace_the_probe_finds_but_the_collection_cannot_make_is_exit_4(
    run_cli: RunCli,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Refused only where the trampoline would start the command: the probe finds the
    # namespace, so going on without it would be a guess.
    unshare_refusing(tmp_path_factory.mktemp("bin"), monkeypatch, "--ready-fd")
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    result = plan(run_cli, repo)
    assert result.code == 4
    assert result.err.splitlines()[-1].startswith(
        "three-ledger: infrastructure failure: collection failed: the network namespace could "
        "not be made; the command did not run"
    )
    assert "unshare failed: Operation not permitted" in result.out  # the log's last lines


def test_without_unshare_plan_collects_under_the_socket_guard(
    run_cli: RunCli,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path_without_unshare(tmp_path_factory.mktemp("bin"), monkeypatch)
    repo = make_suite(tmp_path, properties_pin([prop("suite.parse", f"{TEST_FILE}::test_parse")]))
    assert plan_json(run_cli, repo)["outside"] == 9
