"""`three-ledger digest`: write the fixture ledger for one fixture pin (SPEC 4.1)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path

from three_ledger.digest import live_digest, refuse_unreviewed
from three_ledger.exit_codes import ExitCode
from three_ledger.isolation import refuse_code_from_root
from three_ledger.ledgers import (
    FixtureLedger,
    fresh_recorded_at,
    new_ledger_id,
    write_fixture_ledger,
)
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable
from three_ledger.pins import load_fixture_pin


def digest(*, pin_path: Path, root: Path, out: Path, base: str | None) -> int:
    refuse_unwritable([Output("--out", out)], pins=[pin_path])
    with nothing_left_on_failure(out), _cyclic_collector_paused():
        written = _digest_and_write(pin_path, root, out, base)
    print(written)
    return ExitCode.OK


def _digest_and_write(pin_path: Path, root: Path, out: Path, base: str | None) -> str:
    """Check the tree, hash it and write its ledger; return the digest.

    The pin, entries and ledger (100,000 of each, for a large pin) are freed on return,
    so the collector, once resumed, does not go over them.
    """
    refuse_code_from_root(root)
    pin = load_fixture_pin(pin_path)
    live = live_digest(root, pin)
    refuse_unreviewed(root, pin, live, base)
    ledger = FixtureLedger(
        ledger_id=new_ledger_id(),
        pin_id=pin.pin_id,
        digest=live.digest,
        **pin.ledger_folders(),
        files=(),  # written from the columns of `live`, with no object per file
        recorded_at=fresh_recorded_at(),
    )
    write_fixture_ledger(out, ledger, live.rows())
    return live.digest


@contextlib.contextmanager
def _cyclic_collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector, which frees nothing here.

    A pin of 100,000 files makes several hundred thousand objects (paths, entries,
    records), none in a reference cycle; the collector's passes over them cost about
    5% of the run. Everything made while it is paused counts as new, so it resumes
    only once those objects are freed: resuming earlier would go over them all once.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
