"""Ledgers on disk under contention and under a failing filesystem: a reader only ever sees a
whole ledger (the old one or a new one), and a failed write leaves no partial file.

Root ignores mode bits, so a read-only folder and a full disk are real mounts made inside
`unshare --user --map-root-user --mount` (a read-only bind mount, a tiny tmpfs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import fixture_pin, make_tree
from three_ledger import jsonio
from three_ledger.ledgers import FixtureLedger, read_ledger

FILE_COUNT = 2_000


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A root whose fixture ledger is about 300 KB, and its pin."""
    files = {f"fixtures/f{index:05d}.json": b"%d" % index for index in range(FILE_COUNT)}
    make_tree(tmp_path, files)
    return tmp_path, fixture_pin(tmp_path, list(files))


def digest_argv(root: Path, pin: Path, out: Path) -> list[str]:
    return [sys.executable, "-P", "-m", "three_ledger", "digest", "--pin", str(pin),
            "--root", str(root), "--out", str(out)]  # fmt: skip


class Watcher:
    """A thread that reads a path over and over and keeps whatever was not one whole ledger."""

    def __init__(self, path: Path, whole: int) -> None:
        self.path = path
        self.whole = whole
        self.reads = 0
        self.torn: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.reads += 1
            try:
                document = json.loads(self.path.read_bytes())
            except (OSError, ValueError) as exc:  # vanished, empty, cut short
                self.torn.append(f"{type(exc).__name__}: {exc}")
                continue
            if len(document.get("files", ())) != self.whole:
                self.torn.append(f"{len(document.get('files', ()))} files")


def test_two_digest_runs_racing_for_one_out_leave_one_whole_ledger(tree: tuple[Path, Path]) -> None:
    root, pin = tree
    out = root / "ledgers" / "fixture.json"
    first = subprocess.run(digest_argv(root, pin, out), capture_output=True, text=True, check=True)
    with Watcher(out, FILE_COUNT) as watcher:
        for _ in range(5):
            racers = [
                subprocess.Popen(digest_argv(root, pin, out), stdout=subprocess.PIPE, text=True)
                for _ in range(2)
            ]
            outputs = [racer.communicate(timeout=60)[0] for racer in racers]
            assert [racer.returncode for racer in racers] == [0, 0]
            assert outputs == [first.stdout, first.stdout]
    assert watcher.torn == [], f"{len(watcher.torn)} of {watcher.reads} reads saw a partial file"
    assert watcher.reads > 10
    ledger = read_ledger(out, FixtureLedger)
    assert ledger.record.digest == first.stdout.strip()
    assert [path.name for path in out.parent.iterdir()] == ["fixture.json"]  # no temporary left


def test_atomic_writes_from_two_threads_are_never_seen_half_done(tmp_path: Path) -> None:
    """The one write helper every ledger goes through, hammered with 4 MB documents."""
    out = tmp_path / "ledger.json"
    documents = [
        jsonio.dumps({"files": [f"{writer}-{index:07d}" for index in range(300_000)]})
        for writer in ("a", "b")
    ]
    jsonio.write_atomic(out, documents[0])

    def write_many(text: str) -> None:
        for _ in range(15):
            jsonio.write_atomic(out, text)

    with Watcher(out, 300_000) as watcher:
        writers = [threading.Thread(target=write_many, args=(text,)) for text in documents]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
    assert watcher.torn == [], f"{len(watcher.torn)} of {watcher.reads} reads saw a partial file"
    assert out.read_text() in documents
    assert [path.name for path in tmp_path.iterdir()] == ["ledger.json"]


# --- a filesystem that refuses the write --------------------------------------------------------


def in_mount_namespace(script: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a shell script as namespace root, in private user and mount namespaces."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"user and mount namespaces are unavailable: {probe.stderr.decode().strip()}")
    return subprocess.run(
        ["unshare", "-Urm", "sh", "-c", script, "sh", *map(str, args)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def ledgers(tmp_path: Path) -> Path:
    folder = tmp_path / "ledgers"
    folder.mkdir()
    return folder


READ_ONLY_DIGEST = """
mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99
shift
"$@"
echo "exit=$?"
"""


def test_read_only_ledger_folder_is_a_clear_refusal_and_leaves_nothing(
    tree: tuple[Path, Path], ledgers: Path
) -> None:
    root, pin = tree
    out = ledgers / "fixture.json"
    done = in_mount_namespace(READ_ONLY_DIGEST, ledgers, *digest_argv(root, pin, out))
    assert "exit=2" in done.stdout, done.stderr
    assert done.stderr.splitlines() == [
        f"three-ledger: refused: {out}: cannot write: Read-only file system"
    ]
    assert list(ledgers.iterdir()) == []


def test_read_only_folder_holding_a_stale_ledger_says_it_could_not_remove_it(
    tree: tuple[Path, Path], ledgers: Path
) -> None:
    root, pin = tree
    out = ledgers / "fixture.json"
    out.write_text("stale\n")
    done = in_mount_namespace(READ_ONLY_DIGEST, ledgers, *digest_argv(root, pin, out))
    assert "exit=2" in done.stdout, done.stderr
    assert done.stderr.splitlines() == [
        f"three-ledger: refused: {out}: cannot write: Read-only file system",
        f"three-ledger: could not remove the stale file at {out}: Read-only file system",
    ]
    assert out.read_text() == "stale\n"  # CI still stops: the exit is 2


FULL_DISK_DIGEST = """
mount -t tmpfs -o size=16k tmpfs "$1" || exit 99
folder=$1
shift
"$@"
echo "exit=$?"
ls -A "$folder"
"""


def test_full_disk_is_a_clear_refusal_and_leaves_no_partial_file(
    tree: tuple[Path, Path], ledgers: Path
) -> None:
    root, pin = tree
    out = ledgers / "fixture.json"
    done = in_mount_namespace(FULL_DISK_DIGEST, ledgers, *digest_argv(root, pin, out))
    assert done.stdout.splitlines() == ["exit=2"], done.stderr  # and `ls -A` listed nothing
    assert done.stderr.splitlines() == [
        f"three-ledger: refused: {out}: cannot write: No space left on device"
    ]
