"""The run order: read from the plugin's records, kept in the ledger or in a file beside it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from helpers.records import property_ledger
from three_ledger import run_order
from three_ledger.errors import Refused
from three_ledger.ledgers import OrderFile, PropertyLedger, RunOrder, Seed, read_ledger
from three_ledger.results import read_results_records


def _results(path: Path, lines: list[dict[str, object]], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines) + tail)
    return path


def _line(test_id: str, worker: str | None = None) -> dict[str, object]:
    line: dict[str, object] = {"id": test_id, "property_ids": [], "outcome": "pass"}
    if worker is not None:
        line["worker"] = worker
    return line


def _lines(path: Path) -> list[dict[str, object]]:
    """The objects of the results file's lines, from the reading its results come from."""
    return read_results_records(path)[1]


def test_each_worker_keeps_the_order_of_its_lines_without_the_sentinels(tmp_path: Path) -> None:
    lines = [_line("t::a", "gw1"), _line("t::sentinel", "gw0"), _line("t::b", "gw0")]
    lines += [_line("t::c", "gw1"), _line("t::a", "gw1")]
    results = _results(tmp_path / "r.jsonl", lines, tail=b'{"id": "t::cut')
    (tmp_path / "o.json").write_text('[{"plugin": "randomly", "seed": 9}]')
    order = run_order.recorded(_lines(results), tmp_path / "o.json", ["t::a", "t::b", "t::c"])
    assert order.workers == {"gw0": ("t::b",), "gw1": ("t::a", "t::c", "t::a")}
    assert order.tests == 4
    assert order.seeds == {"gw0": Seed("randomly", 9), "gw1": Seed("randomly", 9)}


def test_lines_without_a_worker_are_the_main_process_and_no_seed_is_none(tmp_path: Path) -> None:
    results = _results(tmp_path / "r.jsonl", [_line("t::a"), _line("t::b")])
    (tmp_path / "o.json").write_text('[{"plugin": "randomly", "seed": "not a number"}]')
    order = run_order.recorded(_lines(results), tmp_path / "o.json", ["t::a", "t::b"])
    assert order.workers == {"main": ("t::a", "t::b")}
    assert order.seeds == {}
    assert run_order.recorded(_lines(results), tmp_path / "absent.json", []).tests == 0


_CUT = b'{"id": "t::c", "property_ids": []'
_WHOLE = json.dumps(_line("t::c", "gw0")).encode()


@pytest.mark.parametrize(("tail", "ran"), [(_CUT, False), (_WHOLE, True)])
def test_an_unfinished_last_line_is_in_the_order_as_it_is_in_the_results(
    tmp_path: Path, tail: bytes, ran: bool
) -> None:
    """A killed run's last line, without its newline: a record counts in the results and in the
    order alike, since both come from one reading of the file; anything else in neither."""
    path = _results(tmp_path / "r.jsonl", [_line("t::a", "gw0"), _line("t::b", "gw0")], tail)
    results, lines = read_results_records(path)
    ids = [result.id for result in results]
    order = run_order.recorded(lines, tmp_path / "absent.json", ids)
    assert ids == (["t::a", "t::b", "t::c"] if ran else ["t::a", "t::b"])
    assert order.workers == {"gw0": tuple(ids)}


def _with_order(count: int) -> PropertyLedger:
    ids = tuple(f"tests/test_x.py::test_{number}" for number in range(count))
    order = RunOrder(tests=count, seeds={}, workers={"main": ids})
    return dataclasses.replace(property_ledger(), run_order=order)


def test_a_short_order_stays_in_the_ledger_and_removes_a_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    run_order.beside(out).write_text("stale")
    written = run_order.write_with_order(out, _with_order(run_order.IN_LEDGER_LIMIT))
    assert not run_order.beside(out).exists()
    record = read_ledger(out, PropertyLedger).record
    assert record == written
    assert record.run_order is not None
    assert record.run_order.file is None
    assert run_order.workers(out, record.run_order) == record.run_order.workers


def test_a_long_order_goes_beside_the_ledger_bound_by_its_sha256(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    ledger = _with_order(run_order.IN_LEDGER_LIMIT + 1)
    written = run_order.write_with_order(out, ledger)
    record = read_ledger(out, PropertyLedger).record
    assert record == written
    assert record.run_order is not None
    assert record.run_order.workers is None
    assert record.run_order.file is not None
    assert record.run_order.file.path == "p.json.run-order.json"
    side = json.loads(run_order.beside(out).read_text())
    assert side["kind"] == "run_order"
    assert side["ledger_id"] == record.ledger_id
    assert ledger.run_order is not None
    assert run_order.workers(out, record.run_order) == ledger.run_order.workers
    # Edited, or the file of another run: refused by its sha256.
    run_order.beside(out).write_text(run_order.beside(out).read_text().replace("_7", "_8"))
    with pytest.raises(Refused, match=r"\$\.run_order\.file: .* sha256 differs"):
        run_order.workers(out, record.run_order)
    run_order.beside(out).unlink()
    with pytest.raises(Refused, match="cannot read"):
        run_order.workers(out, record.run_order)


@pytest.mark.parametrize(
    "ids", [["a"], ["a", ""], ["a", 2], "ab"], ids=["too-few", "empty", "number", "string"]
)
def test_a_file_that_does_not_hold_the_ledgers_count_of_ids_is_refused(
    tmp_path: Path, ids: object
) -> None:
    out = tmp_path / "p.json"
    text = json.dumps({"kind": "run_order", "ledger_id": "x", "workers": {"main": ids}})
    run_order.beside(out).write_text(text)
    sha = hashlib.sha256(text.encode()).hexdigest()
    order = RunOrder(
        tests=2, seeds={}, workers=None, file=OrderFile(run_order.beside(out).name, sha)
    )
    with pytest.raises(Refused, match="not 2 node ids listed per worker"):
        run_order.workers(out, order)


def test_combined_keeps_each_shards_order_under_its_index() -> None:
    first = RunOrder(tests=1, seeds={"main": Seed("randomly", 3)}, workers={"main": ("a",)})
    second = RunOrder(tests=2, seeds={}, workers={"gw0": ("b",), "gw1": ("c",)})
    merged = run_order.combined([
        (0, first, first.workers or {}),
        (1, second, second.workers or {}),
    ])  # fmt: skip
    assert merged.workers == {"0/main": ("a",), "1/gw0": ("b",), "1/gw1": ("c",)}
    assert merged.seeds == {"0/main": Seed("randomly", 3)}
    assert merged.tests == 3
