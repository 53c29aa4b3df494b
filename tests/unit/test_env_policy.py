"""The test child's closed environment: the allow-list, the credential patterns, what is kept."""

from __future__ import annotations

import pytest

from three_ledger import env_policy
from three_ledger.errors import Refused

JOB = {
    "PATH": "/usr/bin",
    "HOME": "/home/runner",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "TZ": "UTC",
    "TERM": "xterm",
    "CI": "true",
    "TMPDIR": "/tmp/runner",
    "VIRTUAL_ENV": "/venv",
    "PYTHONPATH": "src",
    "PYTHONSTARTUP": "/home/runner/evil.py",
    "PYTEST_ADDOPTS": "-q",
    "NODE_OPTIONS": "--max-old-space-size=4096",
    "NODE_AUTH_TOKEN": "npm-secret",
    "COVERAGE_PROCESS_START": "pyproject.toml",
    "COV_CORE_SOURCE": "src",
    "GITHUB_TOKEN": "ghs_secret",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-secret",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example",
    "CI_JOB_TOKEN": "gitlab-secret",
    "AWS_REGION": "eu-west-1",
    "GITHUB_ENV": "/home/runner/work/_temp/_runner_file_commands/set_env",
    "GITHUB_STEP_SUMMARY": "/home/runner/work/_temp/_runner_file_commands/step_summary",
    "THREE_LEDGER_BASE": "refs/remotes/origin/main",
    "THREE_LEDGER_DEBUG": "1",
    "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    "DEPLOY_KEY": "key-secret",
}


def test_the_child_keeps_the_allow_list_and_gets_a_private_home() -> None:
    closed = env_policy.close(JOB, (), "/tmp/private-home")
    assert sorted(closed) == [
        "CI", "COVERAGE_PROCESS_START", "COV_CORE_SOURCE", "HOME", "LANG", "LC_ALL",
        "NODE_OPTIONS", "PATH", "PYTEST_ADDOPTS", "PYTHONPATH", "TERM", "TMPDIR", "TZ",
        "VIRTUAL_ENV",
    ]  # fmt: skip
    assert closed["HOME"] == "/tmp/private-home"
    assert closed["PATH"] == "/usr/bin"


@pytest.mark.parametrize(
    "name",
    ["GITHUB_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "CI_JOB_TOKEN", "NODE_AUTH_TOKEN",
     "PYTHONSTARTUP", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "THREE_LEDGER_BASE",
     "THREE_LEDGER_DEBUG", "SSL_CERT_FILE", "DEPLOY_KEY", "AWS_REGION"],
)  # fmt: skip
def test_what_the_allow_list_does_not_name_is_removed(name: str) -> None:
    assert name not in env_policy.close(JOB, (), "/tmp/home")


def test_a_family_of_the_allow_list_never_lets_a_credential_through() -> None:
    # NODE_AUTH_TOKEN is how actions/setup-node hands npm its publishing token.
    assert env_policy.on_allow_list("NODE_OPTIONS")
    assert not env_policy.on_allow_list("NODE_AUTH_TOKEN")
    assert not env_policy.on_allow_list("PYTHON_KEYRING_PASSWORD")
    assert not env_policy.on_allow_list("PYTHONSTARTUP")


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("GITHUB_TOKEN", "*TOKEN*"),
        ("github_token", "*TOKEN*"),
        ("TOKENIZER_MODE", "*TOKEN*"),
        ("DB_SECRET_PATH", "*SECRET*"),
        ("PGPASSWORD", "*PASSWORD*"),
        ("DEPLOY_KEY", "*_KEY"),
        ("ci_job_jwt_v2", "*JWT*"),
        ("ACTIONS_RUNTIME_URL", "ACTIONS_*"),
        ("CI_JOB_ID", "CI_JOB_*"),
        ("aws_region", "AWS_*"),
    ],
)
def test_credential_patterns_match_ignoring_case(name: str, pattern: str) -> None:
    assert env_policy.credential_pattern(name) == pattern


@pytest.mark.parametrize("name", ["KEYBOARD", "MY_KEY_ID", "SSL_CERT_FILE", "CI", "PATH"])
def test_names_that_only_resemble_a_credential_pattern_do_not_match(name: str) -> None:
    assert env_policy.credential_pattern(name) is None


def test_names_asked_for_are_kept_and_reported_beyond_the_allow_list() -> None:
    keep = ("GITHUB_TOKEN", "SSL_CERT_FILE", "PATH", "NOT_SET_IN_THE_JOB")
    closed = env_policy.close(JOB, keep, "/tmp/home")
    assert closed["GITHUB_TOKEN"] == "ghs_secret"
    assert closed["SSL_CERT_FILE"] == "/etc/ssl/cert.pem"
    assert "NOT_SET_IN_THE_JOB" not in closed
    # PATH is on the allow-list anyway; a name the job does not set was kept from nothing.
    assert env_policy.kept_beyond(JOB, keep) == ("GITHUB_TOKEN", "SSL_CERT_FILE")


def test_home_and_the_gates_own_variables_cannot_be_kept() -> None:
    closed = env_policy.close(JOB, ("HOME", "THREE_LEDGER_BASE"), "/tmp/home")
    assert closed["HOME"] == "/tmp/home"
    assert "THREE_LEDGER_BASE" not in closed
    assert env_policy.kept_beyond(JOB, ("HOME", "THREE_LEDGER_BASE")) == ()
    assert env_policy.reserved("HOME") is not None
    assert env_policy.reserved("THREE_LEDGER_RESULTS") is not None
    assert env_policy.reserved("SSL_CERT_FILE") is None


def test_keep_env_refuses_a_credential_in_one_line_naming_the_name_and_the_pattern() -> None:
    env_policy.refuse_keep_env(["SSL_CERT_FILE", "MY_SETTING"])
    with pytest.raises(Refused) as refused:
        env_policy.refuse_keep_env(["SSL_CERT_FILE", "Github_Token"])
    assert "\n" not in refused.value.message
    assert refused.value.message.startswith("--keep-env Github_Token: ")
    assert "*TOKEN*" in refused.value.message
    assert refused.value.details == []
    with pytest.raises(Refused, match=r"^--keep-env HOME: HOME is always a private"):
        env_policy.refuse_keep_env(["HOME"])
    with pytest.raises(Refused, match=r"^--keep-env THREE_LEDGER_BASE: THREE_LEDGER_\*"):
        env_policy.refuse_keep_env(["THREE_LEDGER_BASE"])


@pytest.mark.parametrize(
    ("name", "valid"),
    [("PATH", True), ("_private", True), ("A1", True), ("1A", False), ("A=B", False),
     ("", False), ("A B", False), ("A\n", False), ("É", False)],
)  # fmt: skip
def test_variable_names(name: str, valid: bool) -> None:
    assert env_policy.is_variable_name(name) is valid
