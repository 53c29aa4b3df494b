"""Which commit a change is compared with: `--base`, else the CI event's own base.

One resolver for every command that takes `--base`, in this order:

- `--base REV`, then `$THREE_LEDGER_BASE`;
- GitHub `pull_request` (and `pull_request_target`): `pull_request.base.sha`, read from
  `$GITHUB_EVENT_PATH`; `merge_group`: `merge_group.base_sha`; `push` to the default
  branch: `before`, refused when all zeros; `push` to any other ref: the default branch
  (`repository.default_branch`) as `refs/remotes/origin/<name>`, never the author's own
  earlier push; a payload without a base: `refs/remotes/origin/$GITHUB_BASE_REF`;
- GitLab merge requests and merge trains: `$CI_MERGE_REQUEST_DIFF_BASE_SHA`, then
  `$CI_MERGE_REQUEST_TARGET_BRANCH_SHA`.

Which commit the chosen revision names, by its full name, and whether HEAD descends from
it, is `git.resolve_choice`'s question; its answer is a `BaseResolution`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from three_ledger.errors import Refused
from three_ledger.frozen import frozen
from three_ledger.vocabulary import BaseHow

GITHUB = "github"
GITLAB = "gitlab"
# Where each GitHub event keeps its base commit in the payload (`push`: `_push_base`).
_GITHUB_PAYLOAD_FIELDS = {
    "pull_request": ("pull_request", "base", "sha"),
    "pull_request_target": ("pull_request", "base", "sha"),
    "pull_request_review": ("pull_request", "base", "sha"),
    "pull_request_review_comment": ("pull_request", "base", "sha"),
    "merge_group": ("merge_group", "base_sha"),
}
_DEFAULT_BRANCH = ("repository", "default_branch")
# What git's check-ref-format refuses in a branch name, and the revision syntax (`~`, `^`,
# `:`, `@{`) a name must not smuggle into `refs/remotes/origin/<name>`.
_NOT_IN_A_BRANCH_NAME = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)")
_GITLAB_VARIABLES = ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_MERGE_REQUEST_TARGET_BRANCH_SHA")
_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024


@frozen
class BaseChoice:
    """A revision to resolve, where it came from, and which CI can fetch it when it is missing."""

    revision: str
    source: str
    platform: str | None = None
    # The branch when `revision` is its remote-tracking ref, `refs/remotes/origin/<branch>`
    # (GITHUB_BASE_REF, or a push event's default branch): how to fetch it when it is missing.
    github_ref: str | None = None


@frozen
class BaseResolution:
    """The base revision asked for, the commit used, and how the one led to the other.

    `given` is the revision as chosen (`--base`, `$THREE_LEDGER_BASE` or the CI event's), `used`
    the full commit id the oracles are compared with: `given`'s commit when HEAD descends from
    it (`ancestor`), else HEAD's merge-base with it (`merge-base`).
    """

    given: str
    used: str
    how: BaseHow


def choose_base(explicit: str | None, env: Mapping[str, str]) -> BaseChoice | None:
    """The base named by the command line, the environment or the CI event; None if nothing does.

    A CI event that names an unusable base (a new branch's all-zero `before`, an unreadable
    payload) is refused: guessing another base would score the change against the wrong commit.
    """
    for given, source in (
        (explicit, "--base"),
        (env.get("THREE_LEDGER_BASE"), "THREE_LEDGER_BASE"),
    ):
        if _text(given):
            return BaseChoice(_text(given), source)
    return _github_base(env) or _gitlab_base(env)


def ci_revision(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """`--base` when given, else the environment's or the CI event's base revision, or None."""
    choice = choose_base(explicit, env)
    return choice.revision if choice is not None else None


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _github_base(env: Mapping[str, str]) -> BaseChoice | None:
    event = _text(env.get("GITHUB_EVENT_NAME"))
    event_path = _text(env.get("GITHUB_EVENT_PATH"))
    if event == "push":
        if not event_path:
            raise Refused(
                "no base revision: the push event's payload is not named (GITHUB_EVENT_PATH "
                "is unset), so the push cannot be compared with the default branch; pass --base REV"
            )
        return _push_base(Path(event_path), env)
    fields = _GITHUB_PAYLOAD_FIELDS.get(event)
    if fields is not None and event_path:
        choice = _from_payload(Path(event_path), fields)
        if choice is not None:
            return choice
    ref = _text(env.get("GITHUB_BASE_REF"))
    if ref:
        return _remote_branch(ref, "GITHUB_BASE_REF", "GITHUB_BASE_REF")
    if fields is not None:
        raise Refused(
            f"no base revision: the {event} event gives no {'.'.join(fields)} "
            f"(GITHUB_EVENT_PATH {env.get('GITHUB_EVENT_PATH', '(unset)')!r}) and GITHUB_BASE_REF "
            "is empty; pass --base REV"
        )
    return None


def _from_payload(path: Path, fields: tuple[str, ...]) -> BaseChoice | None:
    revision = _text(_field(_payload(path), fields))
    if not revision:
        return None
    return BaseChoice(revision, f"{'.'.join(fields)} in GITHUB_EVENT_PATH", GITHUB)


def _remote_branch(branch: str, source: str, where: str) -> BaseChoice:
    """BRANCH's remote-tracking ref, by its full name: no tag or local branch can stand in."""
    if not is_branch_name(branch):
        raise Refused(f"{where}: {branch!r} is not a branch name; pass --base REV")
    return BaseChoice(f"refs/remotes/origin/{branch}", source, GITHUB, github_ref=branch)


def is_branch_name(name: str) -> bool:
    """Whether NAME is a branch name git would accept, with no revision syntax in it."""
    return (
        bool(name)
        and _NOT_IN_A_BRANCH_NAME.search(name) is None
        and not name.startswith(("-", "/", "."))
        and not name.endswith(("/", "."))
        and name != "@"
    )


def _push_base(path: Path, env: Mapping[str, str]) -> BaseChoice:
    """A push to the default branch: `before`. A push to any other ref: the default branch.

    The author of a branch controls its every push, so `before` on their branch is their own
    earlier commit; on the default branch it is what was merged before this push.
    """
    payload = _payload(path)
    default = _text(_field(payload, _DEFAULT_BRANCH))
    if not default:
        raise Refused(
            f"no base revision: the push event in {path} gives no repository.default_branch, "
            "so the push cannot be compared with the default branch; pass --base REV"
        )
    pushed = _pushed_ref(payload, env, path)
    if pushed != f"refs/heads/{default}":
        where = f"repository.default_branch in GITHUB_EVENT_PATH (a push to {pushed})"
        return _remote_branch(
            default, where, f"GITHUB_EVENT_PATH {path}: repository.default_branch"
        )
    before = _text(_field(payload, ("before",)))
    if not before or set(before) == {"0"}:
        raise Refused(
            f"no base revision: the push event's before in {path} is "
            f"{'all zeros' if before else 'empty'} (a push that creates the default branch "
            f"{default} has no earlier commit to compare with); pass --base REV"
        )
    return BaseChoice(before, f"before in GITHUB_EVENT_PATH (a push to {pushed})", GITHUB)


def _pushed_ref(payload: Any, env: Mapping[str, str], path: Path) -> str:
    """The ref a push event pushed: GITHUB_REF, which the payload's `ref` must not contradict."""
    from_env, from_payload = _text(env.get("GITHUB_REF")), _text(_field(payload, ("ref",)))
    if from_env and from_payload and from_env != from_payload:
        raise Refused(
            f"the push event's ref {from_payload!r} in {path} is not GITHUB_REF {from_env!r}: "
            "the payload is not this run's; pass --base REV"
        )
    if not (from_env or from_payload):
        raise Refused(
            f"no base revision: neither GITHUB_REF nor the push event's ref in {path} says "
            "which ref was pushed; pass --base REV"
        )
    return from_env or from_payload


def _payload(path: Path) -> Any:
    try:
        with path.open("rb") as stream:
            data = stream.read(_MAX_PAYLOAD_BYTES + 1)
    except OSError as exc:
        raise Refused(f"GITHUB_EVENT_PATH {path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise Refused(f"GITHUB_EVENT_PATH {path}: not a JSON event payload") from exc


def _field(document: Any, fields: tuple[str, ...]) -> object:
    for name in fields:
        if not isinstance(document, dict):
            return None
        document = document.get(name)
    return document


def _gitlab_base(env: Mapping[str, str]) -> BaseChoice | None:
    for variable in _GITLAB_VARIABLES:
        value = _text(env.get(variable))
        if value:
            return BaseChoice(value, variable, GITLAB)
    return None


def missing_base_advice(choice: BaseChoice, shallow: bool) -> str:
    """How to bring a base commit that git does not have into the clone ("" when unknown).

    In a shallow clone the fetch takes `--unshallow`: the commit alone would arrive cut off
    from HEAD's history, and HEAD's merge-base with it could not be found.
    """
    unshallow = "--unshallow " if shallow else ""
    if choice.github_ref is not None:
        ref = choice.github_ref
        refspec = f"+refs/heads/{ref}:refs/remotes/origin/{ref}"
        return (
            f"fetch it first: git fetch {unshallow}origin {refspec} (or check out with "
            "fetch-depth: 0)"
        )
    if not (shallow or choice.platform):
        return ""
    what = "the commit and the history before it" if shallow else "the commit"
    fetch = f"fetch {what}: git fetch {unshallow}--no-tags origin {choice.revision}"
    return _advice(choice.platform, shallow, fetch)


def missing_history_advice(choice: BaseChoice, shallow: bool) -> str:
    """How to bring in the history joining HEAD and the base ("" when the clone is whole:
    then the two histories never meet)."""
    if not shallow:
        return ""
    return _advice(
        choice.platform, shallow, "fetch the history it lacks: git fetch --unshallow origin"
    )


def _advice(platform: str | None, shallow: bool, fetch: str) -> str:
    """FETCH, after the CI's own setting for a whole history where there is one."""
    setting = {
        GITHUB: "check out with `fetch-depth: 0` (actions/checkout)",
        GITLAB: "set `GIT_DEPTH: 0` in the job's variables",
    }.get(platform or "")
    clone = "this clone is shallow: " if shallow else ""
    return f"{clone}{setting}, or {fetch}" if setting else f"{clone}{fetch}"
