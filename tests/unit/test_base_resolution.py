"""The base resolver: each CI event's payload, blank fields, new branches, shallow clones."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import RunCli, git
from three_ledger import git as git_module
from three_ledger.base_resolution import GITHUB, GITLAB, BaseChoice, BaseResolution, choose_base
from three_ledger.errors import Refused
from three_ledger.vocabulary import BaseHow

SHA_A = "a" * 40
SHA_B = "b" * 40
ZEROS = "0" * 40


def github(tmp_path: Path, event: str, payload: Any, **extra: str) -> dict[str, str]:
    """A GitHub runner's environment for EVENT, its payload written to GITHUB_EVENT_PATH."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(path), **extra}  # fmt: skip


PULL_REQUEST = {"pull_request": {"number": 7, "base": {"sha": SHA_A, "ref": "main"}}}
MERGE_GROUP = {"merge_group": {"base_sha": SHA_A, "head_sha": SHA_B, "base_ref": "refs/heads/main"}}
REPOSITORY = {"default_branch": "main"}
PUSH = {"before": SHA_A, "after": SHA_B, "ref": "refs/heads/main", "repository": REPOSITORY}


@pytest.mark.parametrize(
    ("event", "payload", "source"),
    [
        ("pull_request", PULL_REQUEST, "pull_request.base.sha in GITHUB_EVENT_PATH"),
        ("pull_request_target", PULL_REQUEST, "pull_request.base.sha in GITHUB_EVENT_PATH"),
        ("merge_group", MERGE_GROUP, "merge_group.base_sha in GITHUB_EVENT_PATH"),
        ("push", PUSH, "before in GITHUB_EVENT_PATH (a push to refs/heads/main)"),
    ],
)
def test_each_github_event_gives_its_payload_base(
    tmp_path: Path, event: str, payload: Any, source: str
) -> None:
    env = github(tmp_path, event, payload, GITHUB_BASE_REF="other")
    assert choose_base(None, env) == BaseChoice(SHA_A, source, GITHUB)


def test_merge_group_no_longer_needs_github_base_ref(tmp_path: Path) -> None:
    # In a merge queue GITHUB_BASE_REF is empty: the payload alone names the base.
    env = github(tmp_path, "merge_group", MERGE_GROUP, GITHUB_BASE_REF="")
    choice = choose_base(None, env)
    assert choice is not None
    assert choice.revision == SHA_A


def test_explicit_base_and_three_ledger_base_come_first(tmp_path: Path) -> None:
    env = github(tmp_path, "pull_request", PULL_REQUEST, THREE_LEDGER_BASE="env-base")
    assert choose_base("cli-base", env) == BaseChoice("cli-base", "--base")
    assert choose_base("  ", env) == BaseChoice("env-base", "THREE_LEDGER_BASE")


def test_all_zero_before_of_a_push_creating_the_default_branch_is_refused(
    tmp_path: Path,
) -> None:
    env = github(tmp_path, "push", {**PUSH, "before": ZEROS})
    with pytest.raises(Refused, match=r"all zeros \(a push that creates the default branch main"):
        choose_base(None, env)


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("pull_request", {"pull_request": {"base": {"sha": "  "}}}),
        ("pull_request", {"pull_request": {"base": {}}}),
        ("merge_group", {"merge_group": {"base_sha": ""}}),
        ("merge_group", {"merge_group": None}),
    ],
)
def test_a_blank_payload_field_falls_back_to_github_base_ref(
    tmp_path: Path, event: str, payload: Any
) -> None:
    env = github(tmp_path, event, payload, GITHUB_BASE_REF="main")
    choice = choose_base(None, env)
    expected = BaseChoice("refs/remotes/origin/main", "GITHUB_BASE_REF", GITHUB, github_ref="main")
    assert choice == expected


def test_a_blank_payload_field_without_github_base_ref_is_refused(tmp_path: Path) -> None:
    env = github(tmp_path, "merge_group", {"merge_group": {"base_sha": " "}}, GITHUB_BASE_REF="")
    with pytest.raises(Refused, match=r"merge_group event gives no merge_group\.base_sha.*--base"):
        choose_base(None, env)


def test_an_unreadable_payload_is_refused_naming_the_file(tmp_path: Path) -> None:
    env = github(tmp_path, "pull_request", {})
    Path(env["GITHUB_EVENT_PATH"]).write_text("{not json", encoding="utf-8")
    with pytest.raises(Refused, match=r"GITHUB_EVENT_PATH .*event\.json: not a JSON event payload"):
        choose_base(None, env)
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "absent.json")
    with pytest.raises(Refused, match=r"absent\.json: cannot read"):
        choose_base(None, env)


def test_other_github_events_have_no_base(tmp_path: Path) -> None:
    assert choose_base(None, github(tmp_path, "workflow_dispatch", {"inputs": {}})) is None


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"CI_MERGE_REQUEST_DIFF_BASE_SHA": SHA_A, "CI_MERGE_REQUEST_TARGET_BRANCH_SHA": SHA_B},
         BaseChoice(SHA_A, "CI_MERGE_REQUEST_DIFF_BASE_SHA", GITLAB)),
        ({"CI_MERGE_REQUEST_DIFF_BASE_SHA": "", "CI_MERGE_REQUEST_TARGET_BRANCH_SHA": SHA_B},
         BaseChoice(SHA_B, "CI_MERGE_REQUEST_TARGET_BRANCH_SHA", GITLAB)),
        ({"CI_MERGE_REQUEST_TARGET_BRANCH_SHA": " "}, None),
    ],
)  # fmt: skip
def test_gitlab_merge_requests_and_trains(
    variables: dict[str, str], expected: BaseChoice | None
) -> None:
    env = {"GITLAB_CI": "true", "CI_MERGE_REQUEST_EVENT_TYPE": "merge_train", **variables}
    assert choose_base(None, env) == expected


# --- resolving the choice in a real clone ------------------------------------------------------


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A repository with three commits; returns it and its first commit (the base)."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for number in range(3):
        (repo / "file.txt").write_text(f"{number}\n", encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {number}")
    return repo, git(repo, "rev-list", "--max-parents=0", "HEAD")


def shallow_clone(upstream: Path, target: Path) -> Path:
    git(target.parent, "clone", "-q", "--depth", "1", f"file://{upstream}", str(target))
    return target


def test_a_base_missing_from_a_shallow_github_clone_names_fetch_depth(
    tmp_path: Path, upstream: tuple[Path, str]
) -> None:
    repo, base = upstream
    clone = shallow_clone(repo, tmp_path / "clone")
    env = github(tmp_path, "merge_group", {"merge_group": {"base_sha": base}})
    with pytest.raises(Refused) as raised:
        git_module.resolve_base(clone, None, env)
    message = raised.value.message
    assert f"{base!r} does not resolve" in message
    assert "this clone is shallow" in message
    assert "`fetch-depth: 0`" in message
    assert f"git fetch --unshallow --no-tags origin {base}" in message
    # The advice works: after that fetch the same base resolves, HEAD descending from it.
    git(clone, "fetch", "-q", "--unshallow", "--no-tags", "origin", base)
    resolution = git_module.resolve_base(clone, None, env)
    assert (resolution.given, resolution.used, resolution.how) == (base, base, "ancestor")


def test_a_base_fetched_alone_into_a_shallow_clone_has_no_merge_base_to_use(
    tmp_path: Path, upstream: tuple[Path, str]
) -> None:
    """The commit arrives cut off from HEAD's history: whether HEAD descends from it is
    unknown, and so is what changed since; refused, saying how to fetch the history."""
    repo, base = upstream
    clone = shallow_clone(repo, tmp_path / "clone")
    git(clone, "fetch", "-q", "--no-tags", "origin", base)
    env = github(tmp_path, "merge_group", {"merge_group": {"base_sha": base}})
    with pytest.raises(Refused) as raised:
        git_module.resolve_base(clone, None, env)
    message = raised.value.message
    assert f"{base!r} (commit {base[:12]}, from merge_group.base_sha" in message
    assert "shares no history with it" in message
    assert "no merge-base; this clone is shallow: check out with `fetch-depth: 0`" in message
    assert "git fetch --unshallow origin: cannot tell whether oracles moved" in message
    git(clone, "fetch", "-q", "--unshallow", "origin")
    assert git_module.resolve_base(clone, None, env).used == base


def test_a_base_missing_from_a_shallow_gitlab_clone_names_git_depth(
    tmp_path: Path, upstream: tuple[Path, str]
) -> None:
    repo, base = upstream
    clone = shallow_clone(repo, tmp_path / "clone")
    env = {"CI_MERGE_REQUEST_DIFF_BASE_SHA": base}
    with pytest.raises(Refused, match=r"shallow: set `GIT_DEPTH: 0`.*git fetch --unshallow "):
        git_module.resolve_base(clone, None, env)


def set_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_digest_names_moved_files_against_the_event_base(
    tmp_path: Path, orders_repo: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step-by-step users get the resolver too: no --base, the merge queue's base_sha."""
    base = git(orders_repo, "rev-parse", "HEAD")
    set_env(monkeypatch, github(tmp_path, "merge_group", {"merge_group": {"base_sha": base}}))
    moved = orders_repo / "fixtures" / "orders_min.json"
    moved.write_bytes(moved.read_bytes() + b" ")
    result = run_cli("digest", "--pin", orders_repo / "pins/fixtures.json", "--root",
                     orders_repo, "--out", tmp_path / "f.json")  # fmt: skip
    assert result.code == 2
    assert f"1 pinned file(s) differ from {base}" in result.first_error_line
    assert f"moved since {base}: fixtures/orders_min.json" in result.err


def test_merge_with_pins_dir_refuses_a_push_naming_no_default_branch(
    tmp_path: Path, orders_repo: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_env(monkeypatch, github(tmp_path, "push", {"before": ZEROS}))
    result = run_cli("merge", "--fixture-ledger", tmp_path / "f.json", "--property-ledger",
                     tmp_path / "p.json", "--root", orders_repo, "--pins-dir",
                     orders_repo / "pins", "--out", tmp_path / "decision.json")  # fmt: skip
    assert result.code == 2
    assert "gives no repository.default_branch" in result.first_error_line
    assert "pass --base REV" in result.first_error_line
    assert not (tmp_path / "decision.json").exists()


def test_merge_with_pins_dir_and_no_base_anywhere_is_a_usage_error(
    tmp_path: Path, orders_repo: Path, run_cli: RunCli
) -> None:
    result = run_cli("merge", "--fixture-ledger", tmp_path / "f.json", "--property-ledger",
                     tmp_path / "p.json", "--pins-dir", orders_repo / "pins",
                     "--out", tmp_path / "decision.json")  # fmt: skip
    assert result.code == 64
    assert "--pins-dir needs --base REV" in result.first_error_line


def test_flake_observe_reports_a_push_naming_no_default_branch_as_its_refusal(
    tmp_path: Path, orders_repo: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_env(monkeypatch, github(tmp_path, "push", {"before": ZEROS}))
    result = run_cli("flake-observe", "--fixture-ledger", tmp_path / "f.json",
                     "--property-ledger", tmp_path / "p.json", "--flake-pin",
                     orders_repo / "pins/flakes.json", "--test-id", "x",
                     "--out", tmp_path / "flake.json")  # fmt: skip
    assert result.code == 3
    assert "pass --base REV" in result.first_error_line


# --- push events, in a clone of a real origin ----------------------------------------------------


@dataclass(frozen=True)
class Pushed:
    """A clone of a bare `origin` that pushed twice to `feature` after branching from main;
    main has moved on since. As actions/checkout leaves it with `fetch-depth: 0`."""

    clone: Path
    seed: Path
    branch_point: str
    first_push: str
    second_push: str

    def commit(self, repo: Path, message: str) -> str:
        git(repo, "commit", "-q", "--allow-empty", "-m", message)
        return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def pushed(tmp_path: Path) -> Pushed:
    origin, seed, clone = tmp_path / "origin.git", tmp_path / "seed", tmp_path / "clone"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(seed))
    git(seed, "commit", "-q", "--allow-empty", "-m", "reviewed base")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    branch_point = git(seed, "rev-parse", "HEAD")
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "-b", "feature")
    commits = []
    for message in ("push 1: weakens the oracles", "push 2: anything"):
        git(clone, "commit", "-q", "--allow-empty", "-m", message)
        git(clone, "push", "-q", "origin", "feature")
        commits.append(git(clone, "rev-parse", "HEAD"))
    git(seed, "commit", "-q", "--allow-empty", "-m", "main moves on")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(clone, "fetch", "-q", "origin")
    return Pushed(clone, seed, branch_point, *commits)


def push_event(
    tmp_path: Path, ref: str, before: str, changed: dict[str, Any] | None = None
) -> dict[str, str]:
    """A runner's environment for a push of REF: GITHUB_REF and the payload agree."""
    document = {"ref": ref, "before": before, "repository": REPOSITORY, **(changed or {})}
    return github(tmp_path, "push", document, GITHUB_REF=ref)


def test_a_push_to_a_branch_is_compared_with_the_default_branch_not_before(
    tmp_path: Path, pushed: Pushed
) -> None:
    """The attack: `before` is the author's own first push, oracles already weakened."""
    after = {"after": pushed.second_push}
    env = push_event(tmp_path, "refs/heads/feature", pushed.first_push, after)
    source = "repository.default_branch in GITHUB_EVENT_PATH (a push to refs/heads/feature)"
    assert choose_base(None, env) == BaseChoice(
        "refs/remotes/origin/main", source, GITHUB, github_ref="main"
    )
    resolution = git_module.resolve_base(pushed.clone, None, env)
    assert resolution == BaseResolution(
        "refs/remotes/origin/main", pushed.branch_point, BaseHow.MERGE_BASE
    )
    assert resolution.used != pushed.first_push


def test_a_new_branch_push_is_compared_with_the_default_branch(
    tmp_path: Path, pushed: Pushed
) -> None:
    env = push_event(tmp_path, "refs/heads/feature", ZEROS)
    assert git_module.resolve_base(pushed.clone, None, env).used == pushed.branch_point
    # A branch on the tip of the default branch: that tip is an ancestor, used as it is.
    git(pushed.clone, "checkout", "-q", "-B", "feature", "refs/remotes/origin/main")
    tip = pushed.commit(pushed.clone, "based on the tip")
    resolution = git_module.resolve_base(pushed.clone, None, env)
    assert resolution.how is BaseHow.ANCESTOR
    assert resolution.used == git(pushed.clone, "rev-parse", f"{tip}~1")


def test_a_tag_push_is_compared_with_the_default_branch(tmp_path: Path, pushed: Pushed) -> None:
    env = push_event(tmp_path, "refs/tags/v1.0", ZEROS)
    choice = choose_base(None, env)
    assert choice is not None
    assert choice.revision == "refs/remotes/origin/main"


def test_a_push_to_the_default_branch_keeps_before(tmp_path: Path, pushed: Pushed) -> None:
    """What was on the default branch before the push is what the push is compared with."""
    seed = pushed.seed
    before = git(seed, "rev-parse", "HEAD")
    pushed.commit(seed, "merged change")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    env = push_event(tmp_path, "refs/heads/main", before)
    resolution = git_module.resolve_base(seed, None, env)
    assert resolution == BaseResolution(before, before, BaseHow.ANCESTOR)


def test_a_force_push_to_the_default_branch_uses_the_merge_base(
    tmp_path: Path, pushed: Pushed
) -> None:
    seed = pushed.seed
    before = git(seed, "rev-parse", "HEAD")
    git(seed, "reset", "-q", "--hard", pushed.branch_point)
    pushed.commit(seed, "rewritten history")
    git(seed, "push", "-q", "--force", "origin", "HEAD:refs/heads/main")
    env = push_event(tmp_path, "refs/heads/main", before)
    resolution = git_module.resolve_base(seed, None, env)
    assert resolution == BaseResolution(before, pushed.branch_point, BaseHow.MERGE_BASE)


def test_a_default_branch_missing_from_a_shallow_checkout_says_how_to_fetch_it(
    tmp_path: Path, pushed: Pushed
) -> None:
    """actions/checkout's default: one commit of the pushed branch, no other branch."""
    origin = f"file://{tmp_path / 'origin.git'}"
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", origin, str(checkout))
    env = push_event(tmp_path, "refs/heads/feature", pushed.first_push)
    with pytest.raises(Refused) as raised:
        git_module.resolve_base(checkout, None, env)
    message = raised.value.message
    assert message.startswith("base revision 'refs/remotes/origin/main' does not resolve")
    assert "(from repository.default_branch in GITHUB_EVENT_PATH" in message
    fetch = "git fetch --unshallow origin +refs/heads/main:refs/remotes/origin/main"
    assert f"fetch it first: {fetch} (or check out with fetch-depth: 0)" in message
    git(checkout, *fetch.split()[1:], "-q")
    assert git_module.resolve_base(checkout, None, env).used == pushed.branch_point


def test_gate_makes_a_missing_default_branch_row_0(
    tmp_path: Path, pushed: Pushed, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(pushed.clone, "update-ref", "-d", "refs/remotes/origin/main")
    set_env(monkeypatch, push_event(tmp_path, "refs/heads/feature", pushed.first_push))
    out = tmp_path / "ledgers"
    result = run_cli("gate", "--pins-dir", pushed.clone / "pins", "--root", pushed.clone,
                     "--command", "true", "--out-dir", out)  # fmt: skip
    assert result.code == 1
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert (decision["posture"], decision["row"]) == ("reject", 0)
    assert decision["reason"].startswith(
        "gate inputs unusable: base revision 'refs/remotes/origin/main' does not resolve"
    )
    assert "git fetch origin +refs/heads/main:refs/remotes/origin/main" in decision["reason"]


@pytest.mark.parametrize(
    ("payload", "variables", "refusal"),
    [
        # The payload is another run's: it says main was pushed, the runner says feature.
        ({"ref": "refs/heads/main"}, {"GITHUB_REF": "refs/heads/feature"},
         r"ref 'refs/heads/main' in .* is not GITHUB_REF 'refs/heads/feature'"),
        ({"ref": ""}, {"GITHUB_REF": ""}, r"neither GITHUB_REF nor the push event's ref"),
        ({"repository": {"default_branch": "main~1"}}, {},
         r"repository.default_branch: 'main~1' is not a branch name"),
        ({"repository": {"default_branch": "-main"}}, {}, r"'-main' is not a branch name"),
        ({"repository": {"default_branch": "main/../x"}}, {}, r"is not a branch name"),
        ({"repository": {"default_branch": "main@{1}"}}, {}, r"is not a branch name"),
        ({"repository": {"default_branch": 7}}, {}, r"gives no repository.default_branch"),
        ({"repository": None}, {}, r"gives no repository.default_branch"),
        ({"before": "", "ref": "refs/heads/main"}, {"GITHUB_REF": "refs/heads/main"},
         r"before in .* is empty \(a push that creates the default branch main"),
    ],
)  # fmt: skip
def test_a_push_payload_that_cannot_be_trusted_is_refused(
    tmp_path: Path, payload: dict[str, Any], variables: dict[str, str], refusal: str
) -> None:
    env = push_event(tmp_path, "refs/heads/feature", SHA_A, payload)
    env.update(variables)
    with pytest.raises(Refused, match=refusal):
        choose_base(None, env)


def test_github_base_ref_must_be_a_branch_name(tmp_path: Path) -> None:
    env = github(tmp_path, "pull_request", {}, GITHUB_BASE_REF="main~3")
    with pytest.raises(Refused, match=r"GITHUB_BASE_REF: 'main~3' is not a branch name"):
        choose_base(None, env)


def test_a_push_without_its_payload_is_refused() -> None:
    env = {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/feature", "GITHUB_BASE_REF": ""}
    with pytest.raises(Refused, match=r"payload is not named \(GITHUB_EVENT_PATH is unset\)"):
        choose_base(None, env)
