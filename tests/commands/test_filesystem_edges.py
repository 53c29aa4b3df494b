"""Hostile and unusual fixture trees: the digest refuses them in one clear line, never hangs,
never follows a link out of ROOT, and never leaves a ledger behind (SPEC 4.1 steps 2-4).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import RunCli, fixture_pin, make_tree, many_files, seed_digest


def refused(run_cli: RunCli, root: Path, pin: Path) -> list[str]:
    """Run `digest` over a stale ledger at --out; check the refusal; return its stderr lines.

    The last line, the note that the stale ledger was removed, is checked and left out.
    """
    out = root / "ledgers" / "fixture.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text('{"kind": "fixture"}\n')
    result = run_cli("digest", "--pin", pin, "--root", root, "--out", out)
    assert result.code == 2, result.err
    assert result.out == ""  # no digest is printed for a refused tree
    assert result.first_error_line.startswith("three-ledger: refused: ")
    assert not out.exists()
    *lines, note = result.err.splitlines()
    assert note == f"three-ledger: removed the stale file at {out}: it does not describe this run"
    return lines


def digest_in_child(
    root: Path, pin: Path, timeout_s: float = 30
) -> subprocess.CompletedProcess[str]:
    """`digest` in its own process, so that a hang fails the test instead of stalling it."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", str(pin),
         "--root", str(root), "--out", str(root / "ledgers/fixture.json")],
        capture_output=True, text=True, timeout=timeout_s, check=False,
    )  # fmt: skip


# --- links ----------------------------------------------------------------------------------------


def test_pinned_fixture_swapped_for_a_link_outside_root_is_refused_though_bytes_match(
    run_cli: RunCli, tmp_path: Path
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    make_tree(root, {"fixtures/a.json": b'{"total": 1}'})
    reviewed = seed_digest(root, ["fixtures/a.json"])
    pin = fixture_pin(root, ["fixtures/a.json"], digest=reviewed)
    make_tree(outside, {"a.json": b'{"total": 1}'})  # the very same bytes, elsewhere
    (root / "fixtures/a.json").unlink()
    (root / "fixtures/a.json").symlink_to(outside / "a.json")
    lines = refused(run_cli, root, pin)
    assert "fixtures/a.json: is a symbolic link" in lines[0]


def test_link_to_a_folder_outside_root_and_a_link_loop_are_not_followed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    make_tree(root, {"fixtures/a.json": b"{}"})
    make_tree(outside, {"secret/one.json": b"1", "secret/two.json": b"2"})
    (root / "fixtures/ext").symlink_to(outside / "secret")
    (root / "fixtures/loop").symlink_to(".")
    (root / "fixtures/dangling").symlink_to(tmp_path / "nowhere")
    lines = refused(run_cli, root, fixture_pin(root, ["fixtures/a.json"]))
    assert sorted(line.strip() for line in lines[1:4]) == [
        "fixtures/dangling: unpinned symbolic link",
        "fixtures/ext: unpinned symbolic link",
        "fixtures/loop: unpinned symbolic link",
    ]
    assert not any("one.json" in line or "loop/" in line for line in lines)


def test_pinned_path_through_a_linked_folder_inside_root_is_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"fixtures/real/a.json": b"{}"})
    (tmp_path / "fixtures/alias").symlink_to("real")
    pin = fixture_pin(tmp_path, ["fixtures/alias/a.json", "fixtures/real/a.json"])
    lines = refused(run_cli, tmp_path, pin)
    assert "fixtures/alias/a.json: alias/ is a symbolic link" in lines[0]


def test_fixtures_folder_that_is_itself_a_link_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(tmp_path, {"elsewhere/a.json": b"{}"})
    root.mkdir()
    (root / "fixtures").symlink_to(tmp_path / "elsewhere")
    lines = refused(run_cli, root, fixture_pin(root, ["fixtures/a.json"]))
    assert "fixtures: fixtures folder is missing or not a plain folder" in lines[0]


# --- special files --------------------------------------------------------------------------------


def test_fifos_pinned_or_not_are_refused_without_hanging(tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/deep/b.json": b"[]"})
    os.mkfifo(tmp_path / "fixtures/deep/pipe")
    os.mkfifo(tmp_path / "fixtures/pinned-pipe")
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/deep/b.json", "fixtures/pinned-pipe"])
    done = digest_in_child(tmp_path, pin)  # no writer ever opens either FIFO
    assert done.returncode == 2, done.stderr
    assert "fixtures/pinned-pipe: is not a regular file (FIFO)" in done.stderr
    assert "  fixtures/deep/pipe: unpinned FIFO" in done.stderr.splitlines()
    assert not (tmp_path / "ledgers/fixture.json").exists()


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: a socket path must fit in about 108 bytes."""
    folder = (
        Path(os.environ.get("TMPDIR", "/tmp")) / f"3l-sock-{os.getpid()}-{threading.get_ident()}"
    )
    folder.mkdir()
    yield folder
    shutil.rmtree(folder)


def test_pinned_socket_is_refused(run_cli: RunCli, short_tmp: Path) -> None:
    make_tree(short_tmp, {"fixtures/a.json": b"{}"})
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(short_tmp / "fixtures/s"))
        lines = refused(
            run_cli, short_tmp, fixture_pin(short_tmp, ["fixtures/a.json", "fixtures/s"])
        )
    assert "fixtures/s: is not a regular file (socket)" in lines[0]


def test_a_pinned_device_node_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    try:  # the same device as /dev/null
        os.mknod(tmp_path / "fixtures/null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/null"]))
    assert lines[0].endswith("fixtures/null: is not a regular file (device)")


# --- names ----------------------------------------------------------------------------------------


def test_names_that_are_not_utf8_are_reported_and_their_folders_not_entered(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}"})
    fixtures = os.fsencode(tmp_path / "fixtures")
    os.mkdir(os.path.join(fixtures, b"dir\xe9"))
    with open(os.path.join(fixtures, b"dir\xe9", b"inner.json"), "wb") as inner:
        inner.write(b"{}")
    with open(os.path.join(fixtures, b"latin1-caf\xe9.json"), "wb"):
        pass
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"]))
    assert "(and 1 more)" in lines[0]
    assert any("latin1-caf\\xe9.json" in line for line in lines)
    assert any("dir\\xe9" in line and "not valid UTF-8" in line for line in lines)
    assert not any("inner.json" in line for line in lines)


NFC_NAME = "fixtures/caf\u00e9.json"
NFD_NAME = unicodedata.normalize("NFD", NFC_NAME)
# The twins print alike, so a name that is not NFC is spelled out in escapes.
SPELLED_NFD = f" (its name is not in Unicode NFC: {NFD_NAME!a})"


def test_an_nfd_path_in_the_pin_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    make_tree(tmp_path, {NFD_NAME: b"{}"})
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, [NFD_NAME]))
    assert lines[0].endswith("is not in Unicode NFC")
    assert "$.files[0]" in lines[0]


def test_an_nfd_twin_on_disk_beside_the_pinned_nfc_name_is_unpinned(
    run_cli: RunCli, tmp_path: Path
) -> None:
    make_tree(tmp_path, {NFC_NAME: b"{}", NFD_NAME: b'{"swapped": true}'})
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, [NFC_NAME]))
    assert lines[0].endswith(f"{NFD_NAME}: unpinned file{SPELLED_NFD}")


def test_a_pinned_nfc_name_stored_as_nfd_on_disk_is_missing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # What a macOS checkout copied to Linux can hold: the reviewed bytes under the other name.
    make_tree(tmp_path, {NFD_NAME: b"{}"})
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, [NFC_NAME]))
    details = {line.strip() for line in lines[1:]}
    assert details == {
        f"{NFC_NAME}: pinned file is missing",
        f"{NFD_NAME}: unpinned file{SPELLED_NFD}",
    }


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("fixtures/Orders.json", "fixtures/orders.json"),
        ("fixtures/stra\u00dfe.json", "fixtures/STRASSE.json"),  # casefold, not lower()
        ("fixtures/A/x.json", "fixtures/a/x.json"),
    ],
)
def test_case_twins_in_the_pin_are_refused(
    run_cli: RunCli, tmp_path: Path, first: str, second: str
) -> None:
    make_tree(tmp_path, {first: b"1", second: b"2"})
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, [first, second]))
    assert lines[0].endswith("differ only in case (one file on a case-insensitive filesystem)")
    assert repr(first) in lines[0]
    assert repr(second) in lines[0]


# --- permissions ----------------------------------------------------------------------------------


def run_without_privileges(root: Path, pin: Path) -> subprocess.CompletedProcess[str]:
    """`digest` in a user namespace with no mapping: root's override of file modes is gone.

    As root, chmod 000 does not stop a read. Inside `unshare --user`, the process keeps its
    uid for file checks but holds no capability over files of the parent namespace, so the
    ordinary permission bits apply, as they would for a CI user.
    """
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--user", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are unavailable: {probe.stderr.decode().strip()}")
    return subprocess.run(
        ["unshare", "--user", sys.executable, "-P", "-m", "three_ledger", "digest",
         "--pin", str(pin), "--root", str(root), "--out", str(root / "ledgers/fixture.json")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_an_unreadable_pinned_file_is_refused(tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/secret.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/secret.json"])
    (tmp_path / "fixtures/secret.json").chmod(0o000)
    done = run_without_privileges(tmp_path, pin)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("three-ledger: refused: ")
    assert "fixtures/secret.json" in line
    assert line.endswith("Permission denied")
    assert not (tmp_path / "ledgers/fixture.json").exists()


def test_an_unreadable_folder_under_the_fixtures_folder_is_refused(tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/a.json": b"{}", "fixtures/locked/b.json": b"{}"})
    pin = fixture_pin(tmp_path, ["fixtures/a.json", "fixtures/locked/b.json"])
    (tmp_path / "fixtures/locked").chmod(0o000)
    try:
        done = run_without_privileges(tmp_path, pin)
    finally:
        (tmp_path / "fixtures/locked").chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert "fixtures/locked" in done.stderr.splitlines()[0]


# --- a file that changes while it is hashed -------------------------------------------------------

REWRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
size = os.fstat(fd).st_size
started = sys.argv[2]
open(started, "w").close()
value = 0
# Same size, new bytes and a new mtime, over and over: the hardest change to notice.
while True:
    value ^= 1
    os.pwrite(fd, bytes([value]) * 4096, (value * 7919 * 4096) % (size - 4096))
"""


def test_a_fixture_rewritten_while_it_is_hashed_is_refused(tmp_path: Path) -> None:
    make_tree(tmp_path, {"fixtures/small.json": b"{}"})
    big = tmp_path / "fixtures/big.bin"
    with big.open("wb") as stream:
        for _ in range(128):
            stream.write(os.urandom(1024 * 1024))
    pin = fixture_pin(tmp_path, ["fixtures/big.bin", "fixtures/small.json"])
    started = tmp_path / "rewriter-started"
    rewriter = subprocess.Popen([sys.executable, "-c", REWRITER, str(big), str(started)])
    try:
        deadline = time.monotonic() + 20
        while not started.exists():
            assert time.monotonic() < deadline, "the rewriter never started"
            time.sleep(0.01)
        done = digest_in_child(tmp_path, pin, timeout_s=60)
    finally:
        rewriter.kill()
        rewriter.wait()
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("three-ledger: refused: fixtures/big.bin: ")
    assert "changed while it was being hashed" in line
    assert not (tmp_path / "ledgers/fixture.json").exists()


# --- empty and huge trees -------------------------------------------------------------------------


def test_an_empty_pin_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    pin = fixture_pin(tmp_path, [])
    lines = refused(run_cli, tmp_path, pin)
    assert lines == [
        f"three-ledger: refused: {tmp_path}/pins/fixtures.json: $.files: [] should be non-empty"
    ]


def test_an_empty_fixtures_folder_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    lines = refused(run_cli, tmp_path, fixture_pin(tmp_path, ["fixtures/a.json"]))
    assert lines[0].endswith("fixtures/a.json: pinned file is missing")


def test_a_tree_of_a_thousand_files(run_cli: RunCli, tmp_path: Path) -> None:
    """The same check at 10,000 and 100,000 files is in tests/e2e/test_large_trees.py."""
    files = many_files(tmp_path, 1_000)
    pin = fixture_pin(tmp_path, files)
    out = tmp_path / "ledgers/fixture.json"
    result = run_cli("digest", "--pin", pin, "--root", tmp_path, "--out", out)
    assert result.code == 0, result.err
    assert result.out == seed_digest(tmp_path, files) + "\n"
    assert [entry["path"] for entry in json.loads(out.read_text())["files"]] == sorted(files)
    (tmp_path / "fixtures/d42/intruder.json").write_bytes(b"{}")
    lines = refused(run_cli, tmp_path, pin)
    intruder = "fixtures/d42/intruder.json: unpinned file"
    assert lines == [f"three-ledger: refused: fixture tree does not match {pin}: {intruder}"]
