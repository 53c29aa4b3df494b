"""The CI workflow `init` drafts, from one template per CI (`templates/init/` in the
repository, `three_ledger/init_templates/` in a wheel), and the pinned source it installs the
gate from.

Values reach the workflow's scripts through variables, never pasted into a script; each is
written as a JSON string, which YAML reads as the same double-quoted scalar.
"""

from __future__ import annotations

import enum
import json
import re
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path

import three_ledger
from three_ledger.errors import InfraFailure
from three_ledger.frozen import frozen

# What the install step takes until a person names the gate's source: the step refuses it.
PLACEHOLDER_PACKAGE = "git+https://github.com/OWNER/three-ledger@COMMIT"
_PINNED_SOURCES = (
    # The gate's repository at a full commit id (SHA-1 or SHA-256).
    re.compile(r"git\+https://[^\s@#]+@(?:[0-9a-f]{40}|[0-9a-f]{64})"),
    # A wheel by https URL, with its hash where the URL carries one.
    re.compile(r"https://\S+\.whl(?:#sha256=[0-9a-f]{64})?"),
)


class CI(enum.StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"


@frozen
class Workflow:
    """Where the workflow goes (relative to the top of the work tree), and its template."""

    path: str
    template: str


WORKFLOWS = {
    CI.GITHUB: Workflow(".github/workflows/three-ledger.yml", "github.yml"),
    CI.GITLAB: Workflow(".gitlab/three-ledger.yml", "gitlab.yml"),
}


@frozen
class Values:
    """What the template leaves open."""

    package: str
    requirements: str
    command: str
    root: str
    pins_dir: str


def is_pinned_source(spec: str) -> bool:
    """Whether SPEC names one build of the gate: a repository at a commit, or a wheel URL."""
    return any(pattern.fullmatch(spec) for pattern in _PINNED_SOURCES)


def installed_source() -> str | None:
    """The pinned source this installation of three-ledger came from, where pip recorded one."""
    try:
        recorded = metadata.distribution("three-ledger").read_text("direct_url.json")
        return pinned_source_of(json.loads(recorded or "null"))
    except (metadata.PackageNotFoundError, ValueError):
        return None


def pinned_source_of(direct_url: object) -> str | None:
    """The pinned source a PEP 610 `direct_url.json` document names: a git repository at a
    commit, or a wheel by https URL; None for anything else (a local folder, say)."""
    if not isinstance(direct_url, dict) or not isinstance(direct_url.get("url"), str):
        return None
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and isinstance(vcs.get("commit_id"), str):
        spec = f"git+{direct_url['url']}@{vcs['commit_id']}"
    else:
        spec = direct_url["url"]
    return spec if is_pinned_source(spec) else None


def render(ci: CI, values: Values) -> str:
    """The workflow for CI with VALUES in place."""
    workflow = WORKFLOWS[ci]
    text = template(workflow.template).read_text(encoding="utf-8")
    fields = {
        "PACKAGE": values.package,
        "REQUIREMENTS": values.requirements,
        "COMMAND": values.command,
        "ROOT": values.root,
        "PINS_DIR": values.pins_dir,
    }
    for name, value in fields.items():
        scalar = json.dumps(value)
        # GitLab expands `$` in variables' values; `$$` is a literal one.
        text = text.replace(f"<<{name}>>", scalar.replace("$", "$$") if ci is CI.GITLAB else scalar)
    text = text.replace("<<SELF>>", workflow.path)
    assert "<<" not in text, f"{workflow.template}: a field is left unfilled"
    return text


def template(name: str) -> Traversable:
    """A template of the installed package, else of the checkout it runs from (an editable
    install copies no data)."""
    shipped = resources.files("three_ledger") / "init_templates" / name
    if shipped.is_file():
        return shipped
    checkout = Path(three_ledger.__file__).resolve().parents[2] / "templates" / "init" / name
    if checkout.is_file():
        return checkout
    raise InfraFailure(
        f"init: the workflow template {name} is not in this installation ({shipped} is "
        "missing): reinstall three-ledger from its repository or from a wheel built there"
    )
