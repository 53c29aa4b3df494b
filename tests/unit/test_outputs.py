"""Output guards: never a pin or beside one, never an input, and no stale file on failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from three_ledger.errors import Refused
from three_ledger.outputs import Output, nothing_left_on_failure, refuse_unwritable


def pin_file(tmp_path: Path) -> Path:
    pin = tmp_path / "pins" / "fixtures.json"
    pin.parent.mkdir(parents=True)
    pin.write_text("{}\n")
    return pin


def test_an_output_beside_a_pin_is_refused_through_a_symlinked_folder(tmp_path: Path) -> None:
    pin = pin_file(tmp_path)
    (tmp_path / "ledgers").symlink_to(tmp_path / "pins")
    with pytest.raises(Refused, match=r"--out .* lies in the folder of pin .*never writes beside"):
        refuse_unwritable([Output("--out", tmp_path / "ledgers/l.json")], pins=[pin])
    refuse_unwritable([Output("--out", tmp_path / "elsewhere/l.json")], pins=[pin])


def test_the_pin_itself_is_refused_under_its_own_flag(tmp_path: Path) -> None:
    pin = pin_file(tmp_path)
    with pytest.raises(Refused, match=r"^--log "):
        refuse_unwritable([Output("--out", tmp_path / "l.json"), Output("--log", pin)], pins=[pin])


def test_an_output_in_the_pins_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused, match=r"lies in --pins-dir .*pins are never written"):
        refuse_unwritable(
            [Output("--summary-md", tmp_path / "pins/sub/m.md")], pins_dir=tmp_path / "pins"
        )


def test_an_output_over_an_input_ledger_is_refused(tmp_path: Path) -> None:
    ledger = tmp_path / "ledgers" / "fixture.json"
    with pytest.raises(Refused, match="is also an input ledger"):
        refuse_unwritable(
            [Output("--out", tmp_path / "ledgers/../ledgers/fixture.json")], inputs=[ledger]
        )


def test_two_outputs_on_one_path_are_refused(tmp_path: Path) -> None:
    same = tmp_path / "decision.json"
    with pytest.raises(Refused, match=r"--summary-md .* is also --out"):
        refuse_unwritable([Output("--out", same), Output("--summary-md", same)])


def test_pins_are_checked_before_inputs(tmp_path: Path) -> None:
    pin = pin_file(tmp_path)
    with pytest.raises(Refused, match="never writes beside a pin"):
        refuse_unwritable([Output("--out", pin)], pins=[pin], inputs=[pin])


def test_nothing_left_on_failure_removes_stale_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    out.write_text("stale\n")
    with pytest.raises(Refused) as caught, nothing_left_on_failure(out):
        raise Refused("no")
    assert not out.exists()
    assert caught.value.notes == [f"removed the stale file at {out}: it does not describe this run"]


def test_nothing_left_on_failure_keeps_a_successful_write(tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    with nothing_left_on_failure(out):
        out.write_text("whole\n")
    assert out.read_text() == "whole\n"
