"""The network ban: which mechanism enforces a properties pin's `network` policy.

Two mechanisms exist, tried in this order: a fresh network namespace around the whole
command (`network_namespace.py`), else the pytest plugin's in-process socket guard
(`plugin/socket_guard.py`). Where neither can act, the run is refused before it starts.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from typing import assert_never

from three_ledger.errors import InfraFailure
from three_ledger.vocabulary import Enforcement, Network


def choose_enforcement(
    network: Network, command: Sequence[str], probe: Callable[[], str | None]
) -> Enforcement:
    """The mechanism for this run; InfraFailure when the ban is pinned and none can act.

    `probe` answers None when a network namespace works here, else the reason why not (it
    waits for the probe that runs in the background).
    """
    match network:
        case Network.ALLOWED:
            return Enforcement.NONE
        case Network.BANNED:
            reason = probe()
            if reason is None:
                return Enforcement.NETNS
            if runs_pytest(command):
                return Enforcement.SOCKET_GUARD
            raise InfraFailure(
                f"the properties pin bans the network, but no network namespace is available "
                f"({reason}) and the command is not pytest, so the socket guard cannot act "
                "either; enable unprivileged user namespaces (e.g. `sysctl "
                "kernel.unprivileged_userns_clone=1`) or run the properties through pytest"
            )
        case _:
            assert_never(network)


def runs_pytest(command: Sequence[str]) -> bool:
    """Whether COMMAND starts pytest, so that the plugin (and its socket guard) loads."""
    program = os.path.basename(command[0])
    if program.startswith(("pytest", "py.test")):
        return True
    return any(
        first == "-m" and second in ("pytest", "py.test")
        for first, second in itertools.pairwise(command)
    )
