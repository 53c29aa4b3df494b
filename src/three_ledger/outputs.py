"""Where a command may write: the checks on every output flag, and no stale file left behind.

Every writing command runs `refuse_unwritable` on all its outputs before it reads anything
(SPEC 3: the tool never writes a pin or beside one), then does its work inside
`nothing_left_on_failure(out)` (SPEC 2: an exit that writes no ledger leaves no file at
`--out`, not even a stale one from an earlier run).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from three_ledger.errors import GateError, Refused
from three_ledger.frozen import frozen


@frozen
class Output:
    """One file a command writes, with the flag that named it (for the message)."""

    flag: str
    path: Path


def refuse_unwritable(
    outputs: Sequence[Output],
    *,
    pins: Iterable[Path] = (),
    pins_dir: Path | None = None,
    inputs: Iterable[Path] = (),
) -> None:
    """Refuse (exit 2) an output that is a pin, beside a pin, an input, or another output.

    The checks run in one order for every command: pins, the pins folder, inputs, and
    last two outputs named alike.
    """
    pin_paths, input_paths = list(pins), list(inputs)
    for output in outputs:
        _refuse_near_pins(output, pin_paths)
        _refuse_in_pins_dir(output, pins_dir)
        _refuse_over_inputs(output, input_paths)
    _refuse_shared(outputs)


def _refuse_near_pins(output: Output, pins: Iterable[Path]) -> None:
    target = output.path.resolve()
    for pin_path in pins:
        pin_file = pin_path.resolve()
        if target == pin_file or target.is_relative_to(pin_file.parent):
            raise Refused(
                f"{output.flag} {output.path} lies in the folder of pin {pin_path}: "
                "three-ledger never writes beside a pin"
            )


def _refuse_in_pins_dir(output: Output, pins_dir: Path | None) -> None:
    if pins_dir is not None and output.path.resolve().is_relative_to(pins_dir.resolve()):
        raise Refused(
            f"{output.flag} {output.path} lies in --pins-dir {pins_dir}: pins are never written"
        )


def _refuse_over_inputs(output: Output, inputs: Iterable[Path]) -> None:
    target = output.path.resolve()
    if any(path.resolve() == target for path in inputs):
        raise Refused(
            f"{output.flag} {output.path} is also an input ledger: it would be overwritten"
        )


def _refuse_shared(outputs: Sequence[Output]) -> None:
    seen: dict[Path, Output] = {}
    for output in outputs:
        earlier = seen.setdefault(output.path.resolve(), output)
        if earlier is not output:
            raise Refused(
                f"{output.flag} {output.path} is also {earlier.flag}: one would overwrite the other"
            )


@contextlib.contextmanager
def nothing_left_on_failure(out: Path) -> Iterator[None]:
    """On any failure, leave no file at `out`: a stale ledger from an earlier run is removed."""
    try:
        yield
    except BaseException as exc:
        note = remove_stale(out)
        if note is not None:
            if isinstance(exc, GateError):
                exc.notes.append(note)
            else:
                print(f"three-ledger: {note}", file=sys.stderr)
        raise


def remove_stale(out: Path) -> str | None:
    """Remove whatever sits at `out`, and say so; None when nothing was there."""
    try:
        out.unlink()
    except FileNotFoundError:
        return None
    except OSError as exc:
        # A read-only filesystem refuses the unlink (EROFS) even when nothing is there.
        if not os.path.lexists(out):
            return None
        return f"could not remove the stale file at {out}: {exc.strerror or exc}"
    return f"removed the stale file at {out}: it does not describe this run"
