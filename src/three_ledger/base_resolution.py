"""Which commit a change is compared with: `--base`, else the CI event's own base.

One resolver for every command that takes `--base`, in this order:

- `--base REV`, then `$THREE_LEDGER_BASE`;
- GitHub `pull_request` (and `pull_request_target`): `pull_request.base.sha`, read from
  `$GITHUB_EVENT_PATH`; `merge_group`: `merge_group.base_sha`; `push`: `before`, refused
  when all zeros (a new branch); a payload without a base: `origin/$GITHUB_BASE_REF`;
- GitLab merge requests and merge trains: `$CI_MERGE_REQUEST_DIFF_BASE_SHA`, then
  `$CI_MERGE_REQUEST_TARGET_BRANCH_SHA`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from three_ledger.errors import Refused

GITHUB = "github"
GITLAB = "gitlab"
# Where each GitHub event keeps its base commit in the payload.
_GITHUB_PAYLOAD_FIELDS = {
    "pull_request": ("pull_request", "base", "sha"),
    "pull_request_target": ("pull_request", "base", "sha"),
    "pull_request_review": ("pull_request", "base", "sha"),
    "pull_request_review_comment": ("pull_request", "base", "sha"),
    "merge_group": ("merge_group", "base_sha"),
    "push": ("before",),
}
_GITLAB_VARIABLES = ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_MERGE_REQUEST_TARGET_BRANCH_SHA")
_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BaseChoice:
    """A revision to resolve, where it came from, and which CI can fetch it when it is missing."""

    revision: str
    source: str
    platform: str | None = None
    # GITHUB_BASE_REF's value when `revision` is `origin/<ref>`.
    github_ref: str | None = None


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
    fields = _GITHUB_PAYLOAD_FIELDS.get(event)
    if fields is not None and _text(env.get("GITHUB_EVENT_PATH")):
        choice = _from_payload(Path(env["GITHUB_EVENT_PATH"].strip()), event, fields)
        if choice is not None:
            return choice
    ref = _text(env.get("GITHUB_BASE_REF"))
    if ref:
        return BaseChoice(f"origin/{ref}", "GITHUB_BASE_REF", GITHUB, github_ref=ref)
    if fields is not None:
        where = ".".join(fields)
        raise Refused(
            f"no base revision: the {event} event gives no {where} "
            f"(GITHUB_EVENT_PATH {env.get('GITHUB_EVENT_PATH', '(unset)')!r}) and GITHUB_BASE_REF "
            "is empty; pass --base REV"
        )
    return None


def _from_payload(path: Path, event: str, fields: tuple[str, ...]) -> BaseChoice | None:
    value = _field(_payload(path), fields)
    where = ".".join(fields)
    if not _text(value):
        return None
    revision = _text(value)
    if event == "push" and set(revision) == {"0"}:
        raise Refused(
            f"no base revision: the push event's {where} in {path} is all zeros (a new branch "
            "has no earlier commit to compare with); pass --base REV, for example the "
            "default branch"
        )
    return BaseChoice(revision, f"{where} in GITHUB_EVENT_PATH", GITHUB)


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
    """How to bring a base commit that git does not have into the clone ("" when unknown)."""
    if choice.github_ref is not None:
        ref = choice.github_ref
        refspec = f"+refs/heads/{ref}:refs/remotes/origin/{ref}"
        return f"fetch it first: git fetch origin {refspec} (or check out with fetch-depth: 0)"
    fetch = f"git fetch --no-tags origin {choice.revision}"
    if choice.platform == GITHUB:
        how = "check out with `fetch-depth: 0` (actions/checkout)"
    elif choice.platform == GITLAB:
        how = "set `GIT_DEPTH: 0` in the job's variables"
    elif shallow:
        how = "fetch more history (git fetch --unshallow)"
    else:
        return ""
    clone = "this clone is shallow: " if shallow else ""
    return f"{clone}{how}, or fetch the commit: {fetch}"
