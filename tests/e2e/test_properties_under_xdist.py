"""`properties` over a pytest child that runs its tests in xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import RunCli, git
from helpers.scoring import PYTEST, ledger, score

pytestmark = pytest.mark.pytest_child


def test_xdist_gives_the_same_statuses(run_cli: RunCli, orders_repo: Path) -> None:
    code = orders_repo / "orders.py"
    code.write_text(code.read_text().replace('order["id"])', 'order["id"], reverse=True)'))
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 1
    serial = ledger(orders_repo)["status_by_id"]
    command = f"{PYTEST} -n 2 properties/test_orders.py"
    assert score(run_cli, orders_repo, "--base", "HEAD", command=command).code == 1
    assert ledger(orders_repo)["status_by_id"] == serial
    assert serial["orders.id.stable"] == "fail"


def test_run_order_keeps_each_workers_sequence(run_cli: RunCli, orders_repo: Path) -> None:
    assert score(run_cli, orders_repo, "--base", "HEAD").code == 0
    serial = ledger(orders_repo)["run_order"]
    assert list(serial["workers"]) == ["main"]
    assert serial["seeds"] == {}
    collected = serial["workers"]["main"]
    assert serial["tests"] == len(collected) > 4
    # Collection order in one process; the tripwire's sentinels are not among them.
    assert collected == sorted(collected, key=collected.index)
    assert all(test_id.startswith("properties/test_orders.py::") for test_id in collected)
    assert (
        score(run_cli, orders_repo, "--base", "HEAD", command=f"{PYTEST} -n 2 properties").code == 0
    )
    split = ledger(orders_repo)["run_order"]
    assert sorted(split["workers"]) == ["gw0", "gw1"]
    together = [test_id for ids in split["workers"].values() for test_id in ids]
    assert sorted(together) == sorted(collected)
    assert split["tests"] == len(collected)
    for ids in split["workers"].values():  # each worker ran its share in collection order
        assert ids == sorted(ids, key=collected.index)


def test_a_shuffling_plugins_seed_is_read_from_its_option(
    run_cli: RunCli, orders_repo: Path
) -> None:
    # A stand-in with pytest-randomly's plugin name and option, which shuffles by its seed.
    (orders_repo / "randomly.py").write_text(
        "import random\n"
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--randomly-seed', dest='randomly_seed', type=int, default=4242)\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    random.Random(config.getoption('randomly_seed')).shuffle(items)\n"
    )
    git(orders_repo, "add", "randomly.py")
    git(orders_repo, "commit", "-q", "-m", "a shuffling plugin, reviewed")
    command = f"{PYTEST} -p randomly --randomly-seed=77 properties"
    result = score(run_cli, orders_repo, "--base", "HEAD", command=command)
    assert result.code == 0, result.err
    order = ledger(orders_repo)["run_order"]
    assert order["seeds"] == {"main": {"plugin": "randomly", "seed": 77}}
