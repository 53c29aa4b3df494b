"""What `plan` proposes as `product_paths`: packages, a src layout, modules the tests import,
and never anything test-like."""

from __future__ import annotations

from pathlib import Path

from three_ledger import product_guess
from three_ledger.product_guess import Proposal, propose


def touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")


def test_a_module_the_tests_import_is_proposed_with_the_test_that_imports_it(
    tmp_path: Path,
) -> None:
    touch(tmp_path, "orders.py", "helpers_test.py", "tests/support.py", "conftest.py")
    (tmp_path / "properties").mkdir()
    test = "properties/test_orders.py"
    (tmp_path / test).write_text(
        "import json\nimport orders\nimport helpers_test\nfrom tests import support\n"
        "import conftest\nfrom properties import test_orders\n"
    )
    assert propose(tmp_path, [test]) == [Proposal("orders.py", f"imported by {test}")]


def test_packages_from_pyproject_and_a_src_layout(tmp_path: Path) -> None:
    touch(tmp_path, "src/pkg/__init__.py", "lib/other/__init__.py", "app/__init__.py")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hatch.build.targets.wheel]\npackages = ["lib/other"]\n'
        '[tool.poetry]\npackages = [{include = "app"}]\n'
    )
    assert propose(tmp_path, []) == [
        Proposal("app/**", "pyproject.toml builds it"),
        Proposal("lib/other/**", "pyproject.toml builds it"),
        Proposal("src/pkg/**", "src layout"),
    ]


def test_setuptools_find_and_a_package_folder_imported_by_the_tests(tmp_path: Path) -> None:
    touch(tmp_path, "lib/core/__init__.py", "tests/test_core.py", "testing/__init__.py")
    touch(tmp_path, "shop/__init__.py")
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.packages.find]\nwhere = ["lib"]\n')
    (tmp_path / "tests/test_core.py").write_text("import testing\nimport shop.cart\n")
    assert propose(tmp_path, ["tests/test_core.py"]) == [
        Proposal("lib/core/**", "pyproject.toml builds it"),
        Proposal("shop/**", "imported by tests/test_core.py"),
    ]


SETUP_PY = """\
from setuptools import setup

setup(
    name="yamlish",
    package_dir={"": "lib"},
    packages=["yamlish"],
)
"""


def test_a_package_dir_in_setup_py_is_where_the_packages_are(tmp_path: Path) -> None:
    """PyYAML's trial: its packages live in `lib/` (`package_dir={'': 'lib'}`), and `plan`
    proposed nothing, so the pin drafted from it ran the tests against an installed copy."""
    touch(tmp_path, "lib/yamlish/__init__.py", "lib/_ext/__init__.py", "lib/single.py")
    touch(tmp_path, "yamlish/_cython.pyx")  # a root folder of that name, not a package
    (tmp_path / "setup.py").write_text(SETUP_PY)
    test = "tests/test_load.py"
    touch(tmp_path, test)
    (tmp_path / test).write_text("import yamlish\nimport single\n")
    assert propose(tmp_path, [test]) == [
        Proposal("lib/_ext/**", "setup.py's package_dir"),
        Proposal("lib/single.py", f"imported by {test}"),
        Proposal("lib/yamlish/**", "setup.py's package_dir"),
    ]


def test_a_package_dir_in_setup_cfg_or_pyproject(tmp_path: Path) -> None:
    touch(tmp_path, "code/one/__init__.py", "python/two/__init__.py")
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    =code\n")
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"" = "python"\n')
    assert propose(tmp_path, []) == [
        Proposal("code/one/**", "setup.cfg's package_dir"),
        Proposal("python/two/**", "pyproject.toml's package-dir"),
    ]


def test_a_package_dir_that_is_not_there_or_leaves_root_proposes_nothing(tmp_path: Path) -> None:
    touch(tmp_path, "up/pkg/__init__.py")
    (tmp_path / "setup.py").write_text(
        'setup(package_dir={"": "missing"})\nsetup(package_dir={"": "../up"})\n'
        'setup(package_dir={"pkg": "up/pkg"})\nsetup(package_dir=dirs)\n'
    )
    assert propose(tmp_path, []) == []


def test_an_unreadable_pyproject_or_test_module_proposes_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("not = [toml")
    (tmp_path / "test_x.py").write_text("def broken(:\n")
    assert propose(tmp_path, ["test_x.py", "missing_test.py"]) == []


def test_test_like_files_inside_the_products_folders_are_named_for_oracle_paths(
    tmp_path: Path,
) -> None:
    touch(tmp_path, "markdown/core.py", "markdown/test_tools.py", "markdown/testing.py")
    touch(tmp_path, "markdown/ext/checks_test.py", "markdown/tests/helpers.py")
    touch(tmp_path, "markdown/__pycache__/test_x.py", "other/test_y.py", "orders.py")
    globs = ["markdown/**", "orders.py", "other/*/**"]
    # `markdown/testing.py` is left out: a module named `testing` is the product's as often
    # as not (Pygments' `pygments/lexers/testing.py` is a lexer).
    assert product_guess.test_like_under(tmp_path, globs) == [
        "markdown/ext/checks_test.py",
        "markdown/test_tools.py",
        "markdown/tests",
    ]
