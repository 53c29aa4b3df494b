"""Which of the job's variables the test child gets: the allow-list and the credential patterns.

The child starts from a closed environment, never the job's whole one: the names on the
allow-list (what an honest suite needs to find its tools, its locale and its Python), plus the
names the properties pin lists under `env` and those `--keep-env` adds for one run. A name that
looks like a credential never passes through a family of the allow-list (`NODE_AUTH_TOKEN` is
no `NODE_*` setting to keep) and is refused by `--keep-env`: it reaches the tests only through
the pin, which people review. What the gate sets for the child comes on top
(`run/child.py`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from three_ledger.errors import Refused

# Exact names the child keeps. HOME is kept as a name only: its value is a private, empty
# folder made for the run, never the job's home.
ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "TZ",
        "TERM",
        "CI",
        "VIRTUAL_ENV",
        # Where temporary files go: some runners and containers have no writable /tmp.
        "TMPDIR",
        # pytest's own configuration as the job gives it; the gate adds to each, and the
        # measured harness records what pytest read.
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    }
)
# Families the child keeps. `NODE_*` in every run, not only under --junit-xml: a pytest suite
# that drives node needs it as much, and one rule keeps plan, properties and vet alike.
# `COVERAGE_*` and `COV_CORE_*` are the measurement tools' own (coverage.py's subprocess
# measurement, pytest-cov's): a suite run under coverage keeps measuring its children.
ALLOWED_PREFIXES = ("LC_", "PYTHON", "NODE_", "COVERAGE_", "COV_CORE_")
# Read by an interactive Python only, and able to run any file: never the job's.
NEVER_ALLOWED = frozenset({"PYTHONSTARTUP"})
# Names that look like credentials, matched case-insensitively (as fnmatch patterns).
CREDENTIAL_PATTERNS = (
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*_KEY",
    "*JWT*",
    "ACTIONS_*",
    "CI_JOB_*",
    "AWS_*",
)
# The gate's own variables: it sets for the child exactly those the child needs.
GATE_PREFIX = "THREE_LEDGER_"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_variable_name(name: str) -> bool:
    """Whether NAME is a name a POSIX environment can hold for a shell and a program alike."""
    return _NAME.fullmatch(name) is not None


def credential_pattern(name: str) -> str | None:
    """The first credential pattern NAME matches (ignoring case), or None."""
    upper = name.upper()
    return next((p for p in CREDENTIAL_PATTERNS if fnmatch.fnmatchcase(upper, p)), None)


def on_allow_list(name: str) -> bool:
    """Whether the child keeps NAME without being asked: allowed, and no credential."""
    if name in NEVER_ALLOWED or credential_pattern(name) is not None:
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def reserved(name: str) -> str | None:
    """Why NAME cannot be asked for (pin `env`, --keep-env), or None when it can."""
    if name == "HOME":
        return "HOME is always a private, empty folder made for the run"
    if name.startswith(GATE_PREFIX):
        return f"{GATE_PREFIX}* variables are the gate's own: it sets those the child needs"
    return None


def refuse_keep_env(names: Iterable[str]) -> None:
    """Refuse (exit 2) a --keep-env name that looks like a credential or is the gate's own."""
    for name in names:
        pattern = credential_pattern(name)
        if pattern is not None:
            raise Refused(
                f"--keep-env {name}: the name matches the credential pattern {pattern}; a "
                "credential reaches the tests only through the properties pin's env, which "
                "people review"
            )
        why = reserved(name)
        if why is not None:
            raise Refused(f"--keep-env {name}: {why}")


def close(inherited: Mapping[str, str], keep: Iterable[str], home: str) -> dict[str, str]:
    """INHERITED reduced to the allow-list and the names KEEP asks for, with HOME at HOME."""
    asked = {name for name in keep if reserved(name) is None}
    closed = {
        name: value for name, value in inherited.items() if on_allow_list(name) or name in asked
    }
    closed["HOME"] = home
    return closed


def kept_beyond(inherited: Mapping[str, str], keep: Iterable[str]) -> tuple[str, ...]:
    """The names KEEP let through that the allow-list alone would not have, sorted."""
    return tuple(
        sorted({n for n in keep if n in inherited and not on_allow_list(n) and not reserved(n)})
    )
