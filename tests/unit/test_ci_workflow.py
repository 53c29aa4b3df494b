"""The CI workflow `init` drafts: its templates, and the pinned source it installs the gate from."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from three_ledger.ci_workflow import (
    CI,
    PLACEHOLDER_PACKAGE,
    Values,
    installed_source,
    is_pinned_source,
    pinned_source_of,
    render,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
VALUES = Values(
    package=f"git+https://git.example.org/tools/three-ledger@{COMMIT}",
    requirements="requirements/test.txt",
    command="python -m pytest -q -k 'not slow and $HOME'",
    root="sub",
    pins_dir="sub/pins",
)


@pytest.mark.parametrize(
    ("spec", "pinned"),
    [
        (f"git+https://github.com/o/three-ledger@{COMMIT}", True),
        (f"git+https://github.com/o/three-ledger@{COMMIT}{COMMIT[:24]}", True),  # SHA-256
        ("https://example.org/d/three_ledger-0.1.0-py3-none-any.whl", True),
        (f"https://example.org/three_ledger-0.1.0-py3-none-any.whl#sha256={'a' * 64}", True),
        ("three-ledger", False),
        ("three-ledger==0.1.0", False),
        ("git+https://github.com/o/three-ledger@main", False),
        ("git+https://github.com/o/three-ledger@v0.1.0", False),
        (f"git+http://github.com/o/three-ledger@{COMMIT}", False),
        ("http://example.org/three_ledger-0.1.0-py3-none-any.whl", False),
        ("/home/me/three-ledger", False),
        (PLACEHOLDER_PACKAGE, False),
        (f"git+https://github.com/o/three-ledger@{COMMIT} --index-url x", False),
    ],
)
def test_only_a_commit_or_a_wheel_url_is_a_pinned_source(spec: str, pinned: bool) -> None:
    assert is_pinned_source(spec) is pinned


@pytest.mark.parametrize(
    ("direct_url", "source"),
    [
        (
            {"url": "https://github.com/o/tl", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
            f"git+https://github.com/o/tl@{COMMIT}",
        ),
        (
            {"url": "https://e.org/three_ledger-1-py3-none-any.whl", "archive_info": {}},
            "https://e.org/three_ledger-1-py3-none-any.whl",
        ),
        ({"url": "file:///home/me/three-ledger", "dir_info": {"editable": True}}, None),
        ({"url": "https://github.com/o/tl", "vcs_info": {"vcs": "hg", "commit_id": COMMIT}}, None),
        (None, None),
        ({"url": 7}, None),
    ],
)
def test_the_source_pip_recorded_counts_when_it_is_pinned(
    direct_url: Any, source: str | None
) -> None:
    assert pinned_source_of(direct_url) == source


def test_this_editable_install_has_no_pinned_source() -> None:
    # The test environment installs the checkout in place (`pip install -e`): a file URL.
    assert installed_source() is None


def test_the_github_workflow_takes_every_value_through_the_environment() -> None:
    workflow = yaml.safe_load(render(CI.GITHUB, VALUES))
    steps = workflow["jobs"]["gate"]["steps"]
    env = {key: value for step in steps for key, value in step.get("env", {}).items()}
    assert env == {
        "TL_PACKAGE": VALUES.package,
        "TL_REQUIREMENTS": VALUES.requirements,
        "TL_COMMAND": VALUES.command,
        "TL_ROOT": "sub",
        "TL_PINS_DIR": "sub/pins",
    }
    names = [step.get("name", step.get("uses", "")) for step in steps]
    install, namespaces = (
        names.index("Install three-ledger"),
        names.index("Allow namespaces for the network ban and the sandbox"),
    )
    dependencies, gate = (
        names.index("Install the tests' dependencies"),
        names.index("three-ledger gate"),
    )
    assert install < namespaces < dependencies < gate
    assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in steps[namespaces]["run"]
    assert all("${{" not in step.get("run", "") for step in steps)
    assert all("@" in step["uses"] for step in steps if "uses" in step)
    assert workflow["jobs"]["gate"]["timeout-minutes"] > 0


def test_the_gitlab_job_doubles_each_dollar_so_gitlab_keeps_it() -> None:
    text = render(CI.GITLAB, VALUES)
    job = yaml.safe_load(text)["three-ledger"]
    assert job["variables"]["TL_COMMAND"] == VALUES.command.replace("$", "$$")
    assert job["variables"]["TL_PACKAGE"] == VALUES.package
    assert job["allow_failure"] is False
    assert "local: .gitlab/three-ledger.yml" in text
    script = job["script"][0]
    assert (
        script.index("pip install --quiet")
        < script.index("sysctl -w")
        < script.index("--only-binary :all:")
        < script.index('three-ledger" gate')
    )
