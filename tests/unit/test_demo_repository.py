"""Where the demo finds the example project: in the installed wheel, else in the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import EXAMPLE
from three_ledger.demo.repository import example_project, locate_example
from three_ledger.errors import InfraFailure
from three_ledger.exit_codes import ExitCode


def test_the_example_shipped_in_the_package_comes_first(tmp_path: Path) -> None:
    (tmp_path / "site" / "three_ledger" / "example").mkdir(parents=True)
    (tmp_path / "checkout" / "examples" / "orders").mkdir(parents=True)
    found = locate_example(tmp_path / "site" / "three_ledger", tmp_path / "checkout")
    assert found == tmp_path / "site" / "three_ledger" / "example"


def test_an_editable_install_reads_the_example_from_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "src" / "three_ledger").mkdir(parents=True)
    (tmp_path / "examples" / "orders").mkdir(parents=True)
    found = locate_example(tmp_path / "src" / "three_ledger", tmp_path)
    assert found == tmp_path / "examples" / "orders"


def test_this_checkout_is_an_editable_install_of_examples_orders() -> None:
    assert example_project() == EXAMPLE


def test_an_install_without_the_example_is_an_infrastructure_failure(tmp_path: Path) -> None:
    package = tmp_path / "site" / "three_ledger"
    package.mkdir(parents=True)
    with pytest.raises(InfraFailure) as raised:
        locate_example(package, tmp_path / "lib")
    assert raised.value.exit_code == ExitCode.INFRA_FAILURE
    assert f"({package / 'example'} is missing)" in raised.value.message
