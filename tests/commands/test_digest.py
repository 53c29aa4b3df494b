"""`digest`: the closed-world tree check, the seed-compatible hash, and every refusal."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from helpers import CliResult, RunCli, fixture_pin, git, make_tree, seed_digest, write_json
from three_ledger.digest import CHUNK_BYTES, THREADED_MIN_BYTES, _read_small, hash_files
from three_ledger.errors import Refused
from three_ledger.ledgers import FileEntry


def run_digest(run_cli: RunCli, root: Path, pin: Path, *extra: str) -> tuple[int, str, str]:
    result = run_cli("digest", "--pin", pin, "--root", root, "--out", root / "out/l.json", *extra)
    return result.code, result.out, result.err


GENERATED_TREES = [
    {"fixtures/a.json": b"{}", "fixtures/B.json": b"[1]"},
    {
        "fixtures/Zebra.json": b"z",
        "fixtures/apple.json": b"a",
        "fixtures/\u00e9clair.json": b"\xc3\xa9",
        "fixtures/\u00df/deep/er.bin": bytes(range(256)) * 40,
        "fixtures/empty.txt": b"",
        "fixtures/\u65e5\u672c/\u8a9e.json": "日本".encode(),
    },
    {f"fixtures/n{i % 7}/f{i:03d}.dat": os.urandom(i * 97) for i in range(60)},
]


@pytest.mark.parametrize("files", GENERATED_TREES)
def test_digest_equals_the_seed_algorithm(
    run_cli: RunCli, tmp_path: Path, files: dict[str, bytes]
) -> None:
    make_tree(tmp_path, files)
    pin = fixture_pin(tmp_path, list(files))
    code, out, _ = run_digest(run_cli, tmp_path, pin)
    assert code == 0
    expected = seed_digest(tmp_path, list(files))
    assert out == expected + "\n"
    ledger = json.loads((tmp_path / "out/l.json").read_text())
    assert ledger["digest"] == expected
    assert [entry["path"] for entry in ledger["files"]] == sorted(files)
    for entry in ledger["files"]:
        data = files[entry["path"]]
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_code_point_order_is_not_locale_order(run_cli: RunCli, tmp_path: Path) -> None:
    files = {"fixtures/b.json": b"1", "fixtures/\u00e1.json": b"2", "fixtures/A.json": b"3"}
    make_tree(tmp_path, files)
    code, _, _ = run_digest(run_cli, tmp_path, fixture_pin(tmp_path, list(files)))
    assert code == 0
    ledger = json.loads((tmp_path / "out/l.json").read_text())
    # Code points: 'A' (65) < 'b' (98) < 'á' (225); a locale collation puts 'á' before 'b'.
    assert [e["path"] for e in ledger["files"]] == [
        "fixtures/A.json",
        "fixtures/b.json",
        "fixtures/\u00e1.json",
    ]


def test_ledger_keys_in_spec_order(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    run_digest(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"]))
    text = (tmp_path / "out/l.json").read_text()
    assert list(json.loads(text)) == [
        "kind",
        "ledger_id",
        "pin_id",
        "digest",
        "algorithm",
        "fixtures_dir",
        "files",
        "tool",
        "recorded_at",
    ]
    assert text.endswith("}\n")
    assert '\n  "kind": "fixture",' in text


def assert_refused(run_cli: RunCli, root: Path, pin: Path, *fragments: str) -> str:
    code, out, err = run_digest(run_cli, root, pin)
    assert code == 2, err
    assert out == ""
    assert not (root / "out/l.json").exists()
    first = err.splitlines()[0]
    assert first.startswith("three-ledger: refused: ")
    for fragment in fragments:
        assert fragment in err
    return err


def test_seed_check_1_missing_pinned_file(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/b.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/b.json"])
    err = assert_refused(run_cli, tmp_path, pin, "fixtures/a.json: pinned file is missing")
    assert str(pin) in err.splitlines()[0]


def test_seed_check_2_unpinned_file(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/b.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/b.json: unpinned file")


def test_every_unpinned_file_is_listed_on_its_own_line(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"", "fixtures/x": b"", "fixtures/d/y": b""})
    err = assert_refused(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"]))
    assert "(and 1 more)" in err.splitlines()[0]
    assert "  fixtures/x: unpinned file" in err.splitlines()
    assert "  fixtures/d/y: unpinned file" in err.splitlines()


def test_pinned_symlink_is_refused_even_when_it_points_inside(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"fixtures/real.json": b"{}"})
    (tmp_path / "fixtures/a.json").symlink_to("real.json")
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/real.json"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/a.json: is a symbolic link")


def test_symlinked_folder_along_a_pinned_path(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"elsewhere/a.json": b"{}", "fixtures/keep": b""})
    (tmp_path / "fixtures/sub").symlink_to(tmp_path / "elsewhere")
    pin = fixture_pin(tmp_path, ["fixtures/sub/a.json", "fixtures/keep"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/sub/a.json: sub/ is a symbolic link")


def test_unpinned_symlink_pointing_outside_root(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    (tmp_path / "fixtures/escape").symlink_to("/etc")
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/escape: unpinned symbolic link")


def test_fifo_in_fixtures_is_refused_without_hanging(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    os.mkfifo(tmp_path / "fixtures/pipe")
    assert_refused(
        run_cli,
        tmp_path,
        fixture_pin(tmp_path, ["fixtures/a.json"]),
        "fixtures/pipe: unpinned FIFO",
    )


def test_pinned_fifo_is_refused_without_hanging(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    os.mkfifo(tmp_path / "fixtures/pipe")
    pin = fixture_pin(tmp_path, ["fixtures/pipe"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/pipe: is not a regular file (FIFO)")


def test_socket_file_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    short = Path(os.environ.get("TMPDIR", "/tmp"))
    sock_path = tmp_path / "fixtures/s"
    if len(str(sock_path)) > 100:  # AF_UNIX paths are limited to about 108 bytes
        pytest.skip(f"temporary path too long for a socket under {short}")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        pin = fixture_pin(tmp_path, ["fixtures/a.json"])
        assert_refused(run_cli, tmp_path, pin, "fixtures/s: unpinned socket")


def test_non_utf8_name_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    with open(os.path.join(os.fsencode(tmp_path / "fixtures"), b"bad\xff.json"), "wb"):
        pass
    err = assert_refused(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"]))
    assert "name is not valid UTF-8" in err
    assert "bad\\xff.json" in err


def test_directory_pinned_as_file(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/d/inner.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/d", "fixtures/d/inner.json"])
    assert_refused(run_cli, tmp_path, pin, "fixtures/d: is a folder, not a file")


def test_missing_fixtures_dir(run_cli: RunCli, tmp_path: Path) -> None:
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    assert_refused(run_cli, tmp_path, pin, "fixtures: fixtures folder is missing")


def test_fixtures_dir_option_is_the_closed_world(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"data/in/a.json": b"1", "data/in/b.json": b"2", "fixtures/x": b""})
    pin = fixture_pin(tmp_path, ["data/in/a.json"], fixtures_dir="data/in")
    assert_refused(run_cli, tmp_path, pin, "data/in/b.json: unpinned file")


def test_reviewed_digest_matches(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    reviewed = seed_digest(tmp_path, ["fixtures/a.json"])
    code, out, _ = run_digest(
        run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"], digest=reviewed)
    )
    assert (code, out) == (0, reviewed + "\n")


def test_reviewed_digest_mismatch_without_base(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json"], digest="0" * 64)
    assert_refused(run_cli, tmp_path, pin, "differs from the reviewed digest", "--base")


def committed_with_digest(root: Path, files: dict[str, bytes]) -> Path:
    """FILES committed in a new repository at ROOT, and a pin of them with their digest."""
    make_tree(root, files)
    pin = fixture_pin(root, list(files), digest=seed_digest(root, list(files)))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return pin


def test_fixtures_a_checkout_converted_to_crlf_are_said_to_differ_in_line_endings(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """chardet's trial: with `core.autocrlf=true` every fixture "moved", and nothing said
    why."""
    files = {"fixtures/a.txt": b"one\ntwo\n", "fixtures/b.txt": b"three\n"}
    pin = committed_with_digest(tmp_path, files)
    (tmp_path / "fixtures/a.txt").write_bytes(b"one\r\ntwo\r\n")
    code, _, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD")
    assert code == 2
    assert (
        "fixtures/a.txt differs from its blob at HEAD in its line endings alone: the checkout "
        "converts them"
    ) in err
    # A real edit is no line-ending note.
    (tmp_path / "fixtures/a.txt").write_bytes(b"one\nthree\n")
    code, _, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD")
    assert code == 2
    assert "line endings" not in err


def test_reviewed_digest_mismatch_names_moved_files_against_base(
    run_cli: RunCli, tmp_path: Path
) -> None:
    files = {"fixtures/a.json": b"{}", "fixtures/b.json": b"[]", "fixtures/c.json": b"1"}
    pin = committed_with_digest(tmp_path, files)
    (tmp_path / "fixtures/b.json").write_bytes(b"[0]")
    code, _, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD")
    assert code == 2
    assert "1 pinned file(s) differ from HEAD" in err.splitlines()[0]
    assert "  moved since HEAD: fixtures/b.json" in err.splitlines()
    assert "a.json" not in err
    assert "c.json" not in err


def committed(root: Path, files: dict[str, bytes], *, digest: str | None = None) -> Path:
    """FILES and their pin (with DIGEST, if given), committed as the base; the pin's path."""
    make_tree(root, files)
    pin = fixture_pin(root, list(files), **({"digest": digest} if digest else {}))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return pin


def write_properties_pin(root: Path) -> Path:
    """One property over the fixture a.json, with the network allowed; the pin's path."""
    path = root / "pins/properties.json"
    write_json(
        path,
        {
            "pin_id": "proppin-test",
            "fixture_pins": ["fixpin-test"],
            "network": "allowed",
            "properties": [{"id": "a", "claim": "a.", "domain": ["a.json"], "test": "test_a"}],
        },
    )
    return path


TWO_FILES = {"fixtures/a.json": b"{}", "fixtures/b.json": b"[]"}


def test_without_a_reviewed_digest_a_file_that_differs_from_the_base_is_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pin = committed(tmp_path, TWO_FILES)
    (tmp_path / "fixtures/b.json").write_bytes(b"[0]")
    code, out, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD")
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (
        f"three-ledger: refused: {pin}: pinned fixture fixtures/b.json differs from HEAD, and "
        "the pin has no reviewed digest: a fixture moved without review"
    )
    assert "a.json" not in err
    assert "`three-ledger digest --pin PIN --out LEDGER` prints it" in err
    assert not (tmp_path / "out/l.json").exists()


def test_without_a_reviewed_digest_every_moved_file_is_named(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pin = committed(tmp_path, TWO_FILES)
    (tmp_path / "fixtures/a.json").write_bytes(b"{ }")
    (tmp_path / "fixtures/b.json").write_bytes(b"[0]")
    git(tmp_path, "commit", "-q", "-am", "both fixtures")
    code, _, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD~1")
    assert code == 2
    assert "pinned fixture fixtures/a.json differs from HEAD~1 (and 1 more)" in err
    assert "  moved since HEAD~1: fixtures/a.json" in err.splitlines()
    assert "  moved since HEAD~1: fixtures/b.json" in err.splitlines()


def test_without_a_reviewed_digest_a_file_new_since_the_base_is_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    committed(tmp_path, {"fixtures/a.json": b"{}"})
    make_tree(tmp_path, {"fixtures/new.json": b"1"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/new.json"])
    code, _, err = run_digest(run_cli, tmp_path, pin, "--base", "HEAD")
    assert code == 2
    assert "pinned fixture fixtures/new.json differs from HEAD, and" in err.splitlines()[0]


def test_without_a_reviewed_digest_a_pinned_file_git_ignores_is_no_move(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """Generated before the gate, say: no change can bring a file git ignores."""
    make_tree(tmp_path, {".gitignore": b"fixtures/generated.json\n"})
    committed(tmp_path, {"fixtures/a.json": b"{}"})
    make_tree(tmp_path, {"fixtures/generated.json": b"[1]"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/generated.json"])
    git(tmp_path, "commit", "-q", "-am", "pin the generated file")
    assert run_digest(run_cli, tmp_path, pin, "--base", "HEAD~1")[0] == 0


def test_without_a_reviewed_digest_an_unchanged_tree_or_no_base_is_accepted(
    run_cli: RunCli, tmp_path: Path
) -> None:
    pin = committed(tmp_path, TWO_FILES)
    expected = seed_digest(tmp_path, list(TWO_FILES)) + "\n"
    assert run_digest(run_cli, tmp_path, pin, "--base", "HEAD")[:2] == (0, expected)
    (tmp_path / "fixtures/b.json").write_bytes(b"[0]")
    moved = seed_digest(tmp_path, list(TWO_FILES)) + "\n"
    # Without a base there is nothing to compare with: the bytes on disk are taken.
    assert run_digest(run_cli, tmp_path, pin)[:2] == (0, moved)


def test_a_reviewed_digest_binds_the_bytes_whatever_the_base_says(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """With a reviewed digest, a tree that matches it is accepted even where it differs from
    the base: the digest, not the base, is what was reviewed."""
    pin = committed(tmp_path, TWO_FILES, digest="0" * 64)
    (tmp_path / "fixtures/b.json").write_bytes(b"[0]")
    reviewed = seed_digest(tmp_path, list(TWO_FILES))
    pin.write_text(pin.read_text().replace("0" * 64, reviewed))
    assert run_digest(run_cli, tmp_path, pin, "--base", "HEAD")[:2] == (0, reviewed + "\n")


@pytest.mark.parametrize("base_from", ["--base", "THREE_LEDGER_BASE"])
def test_properties_refuses_a_moved_fixture_without_a_reviewed_digest_before_running(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_from: str
) -> None:
    root = tmp_path / "project"
    make_tree(root, {"fixtures/a.json": b"{}", "fixtures/b.json": b"[]"})
    properties = write_properties_pin(root)
    pin = committed(root, {"fixtures/a.json": b"{}", "fixtures/b.json": b"[]"})
    (root / "fixtures/b.json").write_bytes(b"[0]")
    # The gate asks git once for every changed path: only pinned fixtures among them moved.
    (root / "product.py").write_text("VALUE = 2\n")
    monkeypatch.setenv("THREE_LEDGER_BASE", "HEAD")
    base = ["--base", "HEAD"] if base_from == "--base" else []
    live = seed_digest(root, ["fixtures/a.json", "fixtures/b.json"])
    result = run_cli(
        "properties", "--pin", pin, "--properties", properties,
        "--expect-digest", live, "--command", "touch ran", "--root", root,
        "--out", tmp_path / "p.json", *base,
    )  # fmt: skip
    assert result.code == 2
    headline = f"{pin}: pinned fixture fixtures/b.json differs from HEAD, and"
    assert headline in result.first_error_line
    assert "(and 1 more)" not in result.first_error_line
    assert "product.py" not in result.err
    assert not (tmp_path / "p.json").exists()
    assert not (root / "ran").exists()


def test_stale_ledger_is_removed_on_refusal(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    assert run_digest(run_cli, tmp_path, pin)[0] == 0
    (tmp_path / "fixtures/extra.json").write_bytes(b"{}")
    code, _, err = run_digest(run_cli, tmp_path, pin)
    assert code == 2
    assert not (tmp_path / "out/l.json").exists()
    assert "removed the stale file at" in err


def test_out_inside_pin_folder_is_refused_and_pin_untouched(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json"])
    before = pin.read_bytes()
    for out in (pin, tmp_path / "pins/ledger.json", tmp_path / "pins/sub/l.json"):
        result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
        assert result.code == 2
        assert "never writes beside a pin" in result.first_error_line
    assert pin.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "pins").iterdir()) == ["fixtures.json"]


def test_unreadable_pin_file(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out/l.json"
    result = run_cli(
        "digest", "--pin", tmp_path / "pins/nope.json", "--root", tmp_path, "--out", out
    )
    assert result.code == 2
    assert "nope.json: cannot read fixture pin" in result.first_error_line


def test_an_nfd_twin_on_disk_is_spelled_out(run_cli: RunCli, tmp_path: Path) -> None:
    nfc, nfd = "fixtures/caf\u00e9.json", "fixtures/cafe\u0301.json"
    make_tree(tmp_path, {nfd: b"{}"})
    err = assert_refused(run_cli, tmp_path, fixture_pin(tmp_path, [nfc]))
    assert f"{nfc}: pinned file is missing" in err
    assert "its name is not in Unicode NFC: 'fixtures/cafe\\u0301.json'" in err


# --- the read paths: small files inline, large ones through the ring ---------------------------

SIZES_AROUND_THE_SPLIT = [0, 1, THREADED_MIN_BYTES - 1, THREADED_MIN_BYTES, THREADED_MIN_BYTES + 1]


def test_files_either_side_of_the_small_file_limit_hash_like_the_seed(tmp_path: Path) -> None:
    files = {f"fixtures/s{size}.bin": os.urandom(size) for size in SIZES_AROUND_THE_SPLIT}
    files["fixtures/big.bin"] = os.urandom(3 * CHUNK_BYTES + 17)
    make_tree(tmp_path, files)
    live = hash_files(tmp_path, sorted(files))
    assert live.digest == seed_digest(tmp_path, list(files))
    assert live.files == tuple(
        FileEntry(path, len(files[path]), hashlib.sha256(files[path]).hexdigest())
        for path in sorted(files)
    )


def test_a_small_read_stops_at_what_fstat_said_or_one_byte_past_it(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    target.write_bytes(b"x" * 100)
    fd = os.open(target, os.O_RDONLY)
    try:
        assert _read_small(fd, 100, "f.bin") == b"x" * 100
        # Grown since its fstat said 40: one byte more than that, and the size check refuses.
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_small(fd, 40, "f.bin") == b"x" * 41
        # Shrunk since its fstat said 500: all there is.
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_small(fd, 500, "f.bin") == b"x" * 100
    finally:
        os.close(fd)


def test_a_pinned_file_swapped_for_a_fifo_after_the_tree_check_is_refused(tmp_path: Path) -> None:
    # hash_files runs after the tree check; called alone, it sees the swap the check missed.
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    os.mkfifo(tmp_path / "fixtures/b.json")
    with pytest.raises(Refused, match=r"fixtures/b\.json: pinned fixture is not a regular file"):
        hash_files(tmp_path, ["fixtures/a.json", "fixtures/b.json"])


def properties_of(run_cli: RunCli, tmp_path: Path, command: str) -> CliResult:
    """`properties` with COMMAND on a one-fixture project under TMP_PATH, its ledger p.json."""
    root = tmp_path / "project"
    make_tree(root, {"fixtures/a.json": b"{}"})
    properties = write_properties_pin(root)
    pin = committed(root, {"fixtures/a.json": b"{}"})
    return run_cli(
        "properties", "--pin", pin, "--properties", properties,
        "--expect-digest", seed_digest(root, ["fixtures/a.json"]), "--command", command,
        "--root", root, "--out", tmp_path / "p.json", "--base", "HEAD",
    )  # fmt: skip


def test_properties_says_how_the_plugin_may_have_been_lost_when_no_results_came(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """The results and the run order are read together: a command that wrote neither is refused
    (exit 4) with the hint, and no ledger is written."""
    result = properties_of(run_cli, tmp_path, "true")
    assert result.code == 4, result.err
    assert "results.jsonl: missing, so no results could be read" in result.first_error_line
    assert "the plugin wrote nothing: is the command pytest" in result.err
    assert not (tmp_path / "p.json").exists()


def test_a_root_pytest_py_that_runs_in_pytests_place_is_named(
    run_cli: RunCli, tmp_path: Path
) -> None:
    """`python -m pytest` imports ROOT's `pytest.py` first (idna's trial): no pytest runs, and
    the refusal says which file took its place, where it asked only whether this is pytest."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project/pytest.py").write_text("print('not pytest')\n")
    result = properties_of(run_cli, tmp_path, f"{sys.executable} -m pytest -q")
    assert result.code == 4, result.err
    assert "ROOT holds pytest.py, which `python -m pytest` runs in place of pytest" in result.err


@pytest.mark.parametrize(("exit_code", "hinted"), [(7, True), (4, False)])
def test_an_exit_no_pytest_gives_with_nothing_from_the_plugin_asks_if_it_is_pytest(
    run_cli: RunCli, tmp_path: Path, exit_code: int, hinted: bool
) -> None:
    """Another runner given without --junit-xml (node failing on its report, exit 7): the exit
    is refused with the question whether the command is pytest. pytest's own exits (a usage
    error, 4) are pytest's, and ask nothing."""
    result = properties_of(run_cli, tmp_path, f"sh -c 'exit {exit_code}'")
    assert result.code == 4, result.err
    assert f"the command exited {exit_code}" in result.first_error_line
    assert ("the plugin wrote nothing: is the command pytest" in result.err) is hinted
    assert not (tmp_path / "p.json").exists()
