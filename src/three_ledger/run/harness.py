"""The measured harness as the gate reads it from the plugin, and records it in the ledger.

`plugin/harness.py` writes the measurement; this module reads it strictly into the ledger's
`Harness` record, which names for each file under ROOT why it counts as an oracle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from three_ledger.errors import InfraFailure
from three_ledger.ledgers import Harness, decode


def read_harness(path: Path) -> Harness:
    """The plugin's measurement; InfraFailure when it is missing or malformed."""
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
        harness: Harness = decode(Harness, document)
    except FileNotFoundError:
        raise InfraFailure(
            "the plugin reported no harness measurement: the run cannot be told apart from "
            "one steered by a config, plugin or module the pins do not describe"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise InfraFailure(f"the plugin's harness measurement is unreadable: {error}") from None
    return harness
