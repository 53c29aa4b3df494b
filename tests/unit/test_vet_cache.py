"""Tests for three_ledger.vet.cache: where the cache lives, its keys, its entries."""

from __future__ import annotations

import subprocess
from pathlib import Path

from three_ledger.other_ledgers import VetTrial
from three_ledger.vet.cache import Entry, ResultCache, blob_id, blob_ids, result_cache_folder
from three_ledger.vet.mutations import Kind
from three_ledger.vocabulary import Status

PARTS = {"fixture_digest": "sha256:aa", "command": ["pytest"], "blob_ids": {"m.py": "1"}}


def entry() -> Entry:
    trial = VetTrial(
        operator="json.negate_number",
        kind=Kind.WELL_FORMED,
        files_mutated=2,
        status=Status.FAIL,
        command_exit=1,
    )
    return Entry({"p1": (trial,), "p2": ()}, runs=1)


def test_the_folder_is_under_xdg_cache_home_or_the_home_cache() -> None:
    home = Path.home() / ".cache" / "three-ledger" / "vet"
    assert result_cache_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/three-ledger/vet")
    assert result_cache_folder({}) == home
    # The XDG spec: a relative path is invalid, and ignored.
    assert result_cache_folder({"XDG_CACHE_HOME": "relative"}) == home


def test_blob_ids_are_gits(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"print('a')\n")
    git = subprocess.run(
        ["git", "hash-object", str(tmp_path / "a.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert blob_id(b"print('a')\n") == git
    assert blob_ids(tmp_path, ["gone.py", "a.py"]) == {"a.py": git, "gone.py": "missing"}


def test_an_entry_reads_back_under_its_key_alone(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "vet", PARTS)
    key = cache.key({"properties": ["p1", "p2"], "files": ["f/a.json"]})
    assert cache.load(key) is None
    cache.store(key, entry())
    assert cache.load(key) == entry()
    assert [path.name for path in (tmp_path / "vet").iterdir()] == [f"{key}.json"]
    # Another subject, or any other part of the run's key, is another entry.
    assert cache.key({"properties": ["p1"], "files": ["f/a.json"]}) != key
    other = ResultCache(tmp_path / "vet", {**PARTS, "blob_ids": {"m.py": "2"}})
    assert other.key({"properties": ["p1", "p2"], "files": ["f/a.json"]}) != key


def test_an_entry_that_does_not_read_back_whole_is_ignored(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path, PARTS)
    key = cache.key({"s": 1})
    (tmp_path / f"{key}.json").write_text('{"version": 1, "key": "')
    assert cache.load(key) is None
    (tmp_path / f"{key}.json").write_text('{"version": 1, "key": "other", "runs": 1, "trials": {}}')
    assert cache.load(key) is None
    text = f'{{"version": 1, "key": "{key}", "runs": "1", "trials": {{}}}}'
    (tmp_path / f"{key}.json").write_text(text)
    assert cache.load(key) is None
    cache.store(key, entry())  # written again, whole
    assert cache.load(key) == entry()


def test_a_cache_that_cannot_be_written_is_only_not_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    cache = ResultCache(tmp_path / "file" / "vet", PARTS)
    key = cache.key({"s": 1})
    cache.store(key, entry())
    assert cache.load(key) is None
    assert (tmp_path / "file").read_text() == "not a folder"
