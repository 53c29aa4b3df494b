"""Which mechanism enforces the network policy: namespace, socket guard, or a refusal."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from three_ledger.errors import InfraFailure
from three_ledger.run.network_ban import choose_enforcement, runs_pytest
from three_ledger.vocabulary import Enforcement, Network

PYTEST = ["python3", "-m", "pytest", "-q"]


def probe(reason: str | None) -> Callable[[], str | None]:
    return lambda: reason


def test_allowed_is_none_whatever_the_probe_says() -> None:
    assert choose_enforcement(Network.ALLOWED, ["mocha"], probe("no userns")) is Enforcement.NONE


def test_banned_prefers_the_namespace() -> None:
    assert choose_enforcement(Network.BANNED, ["mocha"], probe(None)) is Enforcement.NETNS


def test_banned_without_a_namespace_falls_back_to_the_socket_guard_for_pytest() -> None:
    chosen = choose_enforcement(Network.BANNED, PYTEST, probe("no userns"))
    assert chosen is Enforcement.SOCKET_GUARD


def test_banned_with_neither_is_an_infrastructure_failure_saying_how_to_fix_it() -> None:
    with pytest.raises(InfraFailure, match=r"\(no userns\).*enable unprivileged user namespaces"):
        choose_enforcement(Network.BANNED, ["npx", "mocha"], probe("no userns"))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["pytest"], True),
        (["/venv/bin/py.test", "-x"], True),
        (["python", "-m", "pytest"], True),
        (["python", "-m", "pip"], False),
        (["npx", "mocha"], False),
        (["sh", "-c", "pytest"], False),
    ],
)
def test_runs_pytest(command: list[str], expected: bool) -> None:
    assert runs_pytest(command) is expected
