"""Every YAML recipe a user may copy, through the linters for its kind.

Blocks: each fenced `yaml` block of README.md and docs/*.md, and the CI files themselves
(action.yml, each document of templates/*.yml, .github/workflows/* if any). A block's kind is
read from its content, never from where it sits:

- a GitHub workflow (`on` and `jobs`): actionlint (with shellcheck on every `run:`, and the
  Action's inputs and outputs checked against action.yml), zizmor offline, and
  check-jsonschema's vendored `github-workflows` schema;
- a GitHub Action (`runs`): zizmor offline and the vendored `github-actions` schema;
- GitLab CI (`include`, `stages`, `workflow`, `default`, `spec`, or a job with a `script`):
  the vendored `gitlab-ci` schema;
- a pre-commit configuration (`repos`): `pre-commit validate-config`.

A block that is not a whole file says so in the Markdown, on the line before its fence:
`<!-- yaml-fragment: why it is not a whole file -->`. It is then left out, and listed. A block
neither classified nor marked fails the test: nothing is skipped in silence. A linter that is
not installed skips with its name; `make test-e2e` installs each (the `test` extra).

The recipes also keep the rules of docs/ci.md: every job has a timeout, every action is
pinned by commit with its version on the `uses:` line, and nothing installs the project or
its build (`pip install -e`, `pip install .`) or three-ledger by a bare name.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import git

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ACTION = ROOT / "action.yml"
MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CI_FILES = [
    ACTION,
    *sorted((ROOT / "templates").glob("*.y*ml")),
    *sorted((ROOT / ".github" / "workflows").glob("*.y*ml")),
]
FENCE = re.compile(
    r"^(?P<indent> *)```(?:yaml|yml)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)
FRAGMENT = re.compile(r"<!--\s*yaml-fragment:\s*(?P<reason>.*?)\s*-->\s*$")
# The Action as the docs name it; the linters see it as the local action `./`.
OUR_ACTION = re.compile(r"uses: your-org/three-ledger@[0-9a-f]{40}[^\n]*")
GITLAB_KEYS = {"include", "stages", "workflow", "default", "spec", "variables"}


@dataclass(frozen=True)
class Block:
    where: str  # FILE:LINE
    text: str
    # Why it is not a whole file, when its Markdown says so.
    fragment: str | None = None


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def markdown_blocks(path: Path) -> list[Block]:
    source = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        before = [text for text in source[: match.start()].splitlines() if text.strip()]
        marker = FRAGMENT.search(before[-1]) if before else None
        indent = len(match.group("indent"))
        body = "".join(text[indent:] for text in match.group("body").splitlines(keepends=True))
        reason = marker.group("reason") if marker is not None else None
        blocks.append(Block(f"{shown(path)}:{line}", body, reason))
    return blocks


def file_blocks(path: Path) -> list[Block]:
    """A file, one block per YAML document (a GitLab component is a header and the jobs)."""
    documents = path.read_text(encoding="utf-8").split("\n---\n")
    return [Block(f"{shown(path)}#{index}", text) for index, text in enumerate(documents)]


def kind(text: str) -> str | None:
    try:
        loaded: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(loaded, dict):
        return None
    # YAML 1.1 reads the key `on` as the boolean true.
    if "jobs" in loaded and ("on" in loaded or True in loaded):
        return "github-workflow"
    if "runs" in loaded:
        return "github-action"
    if "repos" in loaded:
        return "pre-commit-config"
    jobs = [value for value in loaded.values() if isinstance(value, dict)]
    if GITLAB_KEYS & set(loaded) or any("script" in job for job in jobs):
        return "gitlab-ci"
    return None


def all_blocks() -> list[Block]:
    found = [block for path in MARKDOWN for block in markdown_blocks(path)]
    return found + [block for path in CI_FILES for block in file_blocks(path)]


BLOCKS = all_blocks()
LINTED = [(block, kind(block.text)) for block in BLOCKS if block.fragment is None]


def tool(name: str, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    if not (BIN / name).exists():
        pytest.skip(f"{name} is not installed (the test extra installs it)")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [str(BIN / name), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


# --- every block is linted or marked --------------------------------------------------------


def test_every_block_is_linted_or_marked_as_a_fragment() -> None:
    unknown = [block.where for block, found in LINTED if found is None]
    assert not unknown, (
        f"YAML blocks of no known kind: {unknown}; make each a whole file, or mark it with "
        "<!-- yaml-fragment: REASON --> on the line before its fence"
    )
    assert all(block.fragment for block in BLOCKS if block.fragment is not None), "empty reason"
    # The docs do hold recipes of every kind: a change that hid them from this test fails it.
    kinds = {found for _, found in LINTED}
    assert kinds == {"github-workflow", "github-action", "gitlab-ci", "pre-commit-config"}
    assert sum(found == "github-workflow" for _, found in LINTED) >= 3


def test_a_fragment_is_marked_on_the_line_before_its_fence(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Add after the gate step:\n\n<!-- yaml-fragment: steps of the workflow above -->\n"
        "```yaml\n- run: echo hi\n```\n\nAnd unmarked:\n\n```yaml\n- run: echo hi\n```\n\n"
        "  ```yaml\n  name: x\n  on: push\n  jobs: {}\n  ```\n",
        encoding="utf-8",
    )
    marked, unmarked, indented = markdown_blocks(page)
    assert marked.fragment == "steps of the workflow above"
    assert (unmarked.fragment, kind(unmarked.text)) == (None, None)
    assert kind(indented.text) == "github-workflow"


# --- the linters, one test per block --------------------------------------------------------


def by_kind(wanted: str) -> list[Block]:
    return [block for block, found in LINTED if found == wanted]


def workflow_repository(tmp_path: Path, text: str) -> Path:
    """A repository holding the Action at its root and TEXT as a workflow using it as `./`."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    git(repo, "init", "-q")
    shutil.copy(ACTION, repo / "action.yml")
    workflow = repo / ".github" / "workflows" / "recipe.yml"
    workflow.write_text(OUR_ACTION.sub("uses: ./", text), encoding="utf-8")
    return repo


@pytest.mark.parametrize("block", by_kind("github-workflow"), ids=lambda block: block.where)
def test_a_github_workflow_passes_actionlint(tmp_path: Path, block: Block) -> None:
    repo = workflow_repository(tmp_path, block.text)
    done = tool("actionlint", "-verbose", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'Rule "shellcheck" was disabled' not in done.stderr


@pytest.mark.parametrize(
    "block", by_kind("github-workflow") + by_kind("github-action"), ids=lambda block: block.where
)
def test_a_github_file_passes_zizmor(tmp_path: Path, block: Block) -> None:
    # zizmor tells an action from a workflow by where the file sits.
    if kind(block.text) == "github-action":
        path = tmp_path / "action.yml"
    else:
        path = tmp_path / ".github" / "workflows" / "recipe.yml"
        path.parent.mkdir(parents=True)
    path.write_text(block.text, encoding="utf-8")
    done = tool("zizmor", "--offline", "--no-progress", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


SCHEMAS = {
    "github-workflow": "vendor.github-workflows",
    "github-action": "vendor.github-actions",
    "gitlab-ci": "vendor.gitlab-ci",
}


@pytest.mark.parametrize(
    "block",
    [block for block, found in LINTED if found in SCHEMAS],
    ids=lambda block: f"{block.where} {kind(block.text)}",
)
def test_a_block_matches_the_schema_of_its_kind(tmp_path: Path, block: Block) -> None:
    path = tmp_path / "block.yml"
    path.write_text(block.text, encoding="utf-8")
    schema = SCHEMAS[str(kind(block.text))]
    done = tool("check-jsonschema", "--builtin-schema", schema, path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("block", by_kind("pre-commit-config"), ids=lambda block: block.where)
def test_a_pre_commit_config_is_valid(tmp_path: Path, block: Block) -> None:
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(block.text, encoding="utf-8")
    done = tool("pre-commit", "validate-config", path)
    assert done.returncode == 0, done.stdout + done.stderr


# --- the rules of the recipes -----------------------------------------------------------------

USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<target>\S+)(?P<rest>.*)$", re.M)
PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")
# Installs that build or run the change's code, or fetch three-ledger by a name anyone could
# register on an index.
UNSAFE_INSTALL = re.compile(
    r"pip install[^\n]*?(?:\s-e\s|\s--editable\s|\s\.(?:\[[^\]]*\])?(?:\s|\"|$)|"
    r"\sthree-ledger(?:[=<>!~]|\s|$))",
    re.M,
)


def rule_breaks(text: str) -> list[str]:
    """What TEXT, a workflow or a GitLab file, does against the recipes' rules."""
    loaded = yaml.safe_load(text)
    found = []
    if kind(text) == "github-workflow":
        for name, job in loaded["jobs"].items():
            if "timeout-minutes" not in job:
                found.append(f"job {name} has no timeout-minutes")
    if kind(text) == "gitlab-ci" and "spec" not in loaded:
        default = loaded.get("default", {}).get("timeout")
        jobs = {
            name: job
            for name, job in loaded.items()
            if isinstance(job, dict) and name not in GITLAB_KEYS
        }
        found += [f"job {name} has no timeout" for name, job in jobs.items()
                  if "timeout" not in job and default is None]  # fmt: skip
    for use in USES.finditer(text):
        target, rest = use.group("target"), use.group("rest")
        if target.startswith("./"):
            continue
        if not PINNED.fullmatch(target):
            found.append(f"{target} is not pinned by a full commit id")
        elif not re.fullmatch(r"\s+# v\d+(\.\d+)*\b.*", rest):
            found.append(f"{target} has no version comment on its uses: line")
    found += [
        f"unsafe install: {line.strip()}"
        for line in text.splitlines()
        if UNSAFE_INSTALL.search(line)
    ]
    return found


RECIPES = [
    block
    for block, found in LINTED
    if found in ("github-workflow", "gitlab-ci") and not block.where.startswith("templates/")
]


@pytest.mark.parametrize("block", RECIPES, ids=lambda block: block.where)
def test_a_recipe_keeps_the_rules(block: Block) -> None:
    assert rule_breaks(block.text) == []


def test_the_action_keeps_the_pinning_rule() -> None:
    assert rule_breaks(ACTION.read_text(encoding="utf-8")) == []


OLD_RECIPE = """\
name: old
on: pull_request
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97
      - run: python -m pip install -e ".[test]" three-ledger
      - run: pip install . && pip install three-ledger==0.1.0
"""


def test_the_rules_catch_what_the_old_recipes_did() -> None:
    assert rule_breaks(OLD_RECIPE) == [
        "job gate has no timeout-minutes",
        "actions/checkout@v4 is not pinned by a full commit id",
        (
            "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97 has no version "
            "comment on its uses: line"
        ),
        'unsafe install: - run: python -m pip install -e ".[test]" three-ledger',
        "unsafe install: - run: pip install . && pip install three-ledger==0.1.0",
    ]


def test_the_linters_reject_the_old_recipe(tmp_path: Path) -> None:
    """zizmor, offline, still flags an action pinned by tag and a checkout that keeps its
    credentials: the linters check something."""
    path = tmp_path / ".github" / "workflows" / "old.yml"
    path.parent.mkdir(parents=True)
    path.write_text(OLD_RECIPE, encoding="utf-8")
    done = tool("zizmor", "--offline", "--no-progress", path)
    assert done.returncode != 0
    assert "unpinned-uses" in done.stdout
    assert "artipacked" in done.stdout


def test_a_gitlab_recipe_with_a_wrong_key_fails_its_schema(tmp_path: Path) -> None:
    (recipe,) = [block for block in RECIPES if "stages:" in block.text]
    path = tmp_path / "gitlab.yml"
    path.write_text(recipe.text.replace("when: always", "when: forever", 1), encoding="utf-8")
    done = tool("check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", path)
    assert done.returncode == 1, done.stdout
