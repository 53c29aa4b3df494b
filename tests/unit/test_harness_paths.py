"""The harness's cheap path questions answer as the plain ones do: `os.path.realpath` and
`Path.is_relative_to`, asked of every module a run loaded."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from three_ledger.plugin import harness

SEGMENTS = st.sampled_from(["a", "b", "..", ".", "", "tmp", "x.py"])
ROOTS = st.sampled_from(["/tmp/a", "/", "/tmp/a/b", "/tmp"])


@given(st.lists(SEGMENTS, min_size=1, max_size=6), st.booleans(), ROOTS)
def test_a_file_is_under_root_as_path_says(parts: list[str], absolute: bool, root: str) -> None:
    file = ("/" if absolute else "") + "/".join(parts)
    expected = harness._under(Path(file), Path(root))
    assert harness._file_under(file, root, Path(root)) is expected


def test_a_module_path_resolves_as_realpath_does(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "mod.py").write_text("")
    (tmp_path / "linked").symlink_to(real)
    (real / "alias.py").symlink_to(tmp_path / "elsewhere.py")
    files = [
        real / "mod.py",
        tmp_path / "linked" / "mod.py",
        tmp_path / "linked" / "alias.py",
        real / "missing.py",
        tmp_path / "linked" / ".." / "real" / "mod.py",
    ]
    harness._real_folder.cache_clear()
    for file in files:
        assert harness._realpath(str(file)) == os.path.realpath(file), file
