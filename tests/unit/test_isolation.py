"""The gate's refusal to run code from the tree it judges, on the gate's own sys.path and
sys.modules, against a real git work tree in tmp_path."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from helpers import git, make_tree
from three_ledger.errors import Refused
from three_ledger.isolation import refuse_code_from_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A work tree with a tracked package under src/ and an ignored .venv beside it."""
    repo = tmp_path / "repo"
    make_tree(repo, {"src/vendored/__init__.py": b"", "README": b"r\n", ".gitignore": b".venv/\n"})
    (repo / ".venv/lib/site-packages").mkdir(parents=True)
    (repo / ".venv/lib/site-packages/helper.py").write_text("")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def imported_from(monkeypatch: pytest.MonkeyPatch, name: str, file: Path) -> None:
    module = types.ModuleType(name)
    module.__file__ = str(file)
    monkeypatch.setitem(sys.modules, name, module)


def test_a_gate_that_imports_nothing_from_root_passes(root: Path) -> None:
    # The control for the refusals below: the same tree, nothing of it on the path.
    refuse_code_from_root(root)  # no Refused


def test_root_itself_on_the_path_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(root))
    with pytest.raises(Refused, match=r"ROOT .* is on three-ledger's own sys.path") as caught:
        refuse_code_from_root(root)
    assert "python -P -m three_ledger" in caught.value.message


def test_a_tracked_folder_on_the_path_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(root / "src"))
    with pytest.raises(Refused, match="holds files git tracks under ROOT"):
        refuse_code_from_root(root)


def test_a_tracked_folder_from_pythonpath_is_refused_with_the_way_to_keep_it_for_the_tests(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A src layout the job tests through PYTHONPATH: the gate's own Python must ignore it
    # (-I), the test run keeps it.
    monkeypatch.setenv("PYTHONPATH", f"{root / 'src'}")
    monkeypatch.syspath_prepend(str(root / "src"))
    with pytest.raises(Refused, match="holds files git tracks under ROOT") as caught:
        refuse_code_from_root(root)
    assert "it comes from PYTHONPATH: run the gate as `python -I -m three_ledger`" in (
        caught.value.message
    )
    monkeypatch.setenv("PYTHONPATH", "")
    with pytest.raises(Refused) as elsewhere:
        refuse_code_from_root(root)
    assert "PYTHONPATH" not in elsewhere.value.message


def test_an_ignored_virtual_environment_on_the_path_passes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = root / ".venv/lib/site-packages"
    monkeypatch.syspath_prepend(str(site))
    imported_from(monkeypatch, "helper_from_the_venv", site / "helper.py")
    refuse_code_from_root(root)  # no Refused


def test_a_module_imported_from_a_tracked_file_is_refused(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported_from(monkeypatch, "vendored", root / "src/vendored/__init__.py")
    with pytest.raises(Refused, match=r"imported vendored from .*, a file git tracks under ROOT"):
        refuse_code_from_root(root)


def test_outside_a_git_work_tree_nothing_counts_as_tracked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    make_tree(plain, {"lib/mod.py": b""})
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.syspath_prepend(str(plain / "lib"))
    imported_from(monkeypatch, "mod_outside_git", plain / "lib/mod.py")
    refuse_code_from_root(plain)  # no Refused


def test_modules_are_found_under_root_through_a_symlinked_folder(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module whose path leads into ROOT through a link is ROOT's, as `Path.resolve` says:
    the folder cache must not let a link's own name stand for where it leads."""
    (root.parent / "elsewhere").symlink_to(root / "src")
    imported_from(monkeypatch, "vendored", root.parent / "elsewhere" / "vendored" / "__init__.py")
    with pytest.raises(Refused, match="imported vendored from"):
        refuse_code_from_root(root)


def test_the_modules_found_are_those_path_resolve_finds(root: Path) -> None:
    from three_ledger.isolation import _modules_under

    top = Path(sys.prefix).resolve()
    files = {name: getattr(module, "__file__", None) for name, module in sys.modules.items()}
    resolved = {name: Path(file).resolve() for name, file in files.items() if file}
    expected = {name: path for name, path in resolved.items() if path.is_relative_to(top)}
    assert expected  # this interpreter's own modules lie under its prefix
    assert _modules_under(top) == expected


def test_an_entry_from_an_editable_install_names_its_pth_file(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlparse's trial: ROOT on the path through `_editable_impl_sqlparse.pth` in the gate's
    own environment, where the console script and `-P`, which the refusal advised, keep it."""
    site_folder = tmp_path / "site-packages"
    site_folder.mkdir()
    pth = site_folder / "_editable_impl_project.pth"
    pth.write_text(f"import os\n# a comment\n{root}\n")
    monkeypatch.setattr("site.getsitepackages", lambda: [str(site_folder)])
    monkeypatch.setattr("site.getusersitepackages", lambda: str(tmp_path / "no-user-site"))
    monkeypatch.syspath_prepend(str(root))
    with pytest.raises(Refused) as caught:
        refuse_code_from_root(root)
    assert f"it comes from {pth}, a .pth file of three-ledger's own environment" in (
        caught.value.message
    )
    assert "python -P -m three_ledger" not in caught.value.message
