"""Peak memory of the gate on large inputs, as `/usr/bin/time -v` reports it (issue 7).

Two measurements, each against a quiet baseline of the same command:

- `digest` over one pinned file of 1 GiB (streamed, so flat);
- `properties` whose command prints 200 MiB to the console (captured to the log in chunks).

`/usr/bin/time -v` reports the largest resident set of the gate and of every child it
waited for, so the flooding child is also measured on its own: when the gate's figure
is close to the baseline, the gate kept nothing. Data is generated under --work-dir
(default /tmp/three-ledger-memcheck) and removed afterwards unless --keep is given.

    .venv/bin/python benchmarks/memory_check.py
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MIB = 1024 * 1024
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "orders"
GATE = [sys.executable, "-P", "-m", "three_ledger"]
TIME = "/usr/bin/time"
FLOOD = """
import os, sys
out = sys.stdout.buffer
block = os.urandom(1 << 20)
for _ in range(int(sys.argv[1])):
    out.write(block)
with open(os.environ.get("THREE_LEDGER_RESULTS", os.devnull), "w") as results:
    results.write('{"id": "properties/test_orders.py::test_id_stable", "property_ids": [], '
                  '"outcome": "pass"}\\n')
"""


def peak_kib(argv: list[str], cwd: Path) -> tuple[int, int]:
    """Run `argv` under `/usr/bin/time -v`; return its exit code and maximum resident set (KiB)."""
    done = subprocess.run(
        [TIME, "-v", *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, check=False,
    )  # fmt: skip
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    if match is None:
        sys.exit(f"no peak in /usr/bin/time output:\n{done.stderr[-2000:]}")
    return done.returncode, int(match.group(1))


def write_random_file(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    block = os.urandom(MIB)
    with path.open("wb") as stream:
        for index in range(size // MIB):
            stream.write(block[index % 251 :] + block[: index % 251])


def digest_case(work: Path, gib: int) -> list[tuple[str, int, int]]:
    cases = [("1 small file (baseline)", "quiet", 0), (f"one {gib} GiB file", "big", gib * 1024)]
    rows = []
    for label, name, mib in cases:
        root = work / name
        write_random_file(root / "fixtures/data.bin", mib * MIB)
        pin = root / "pins/fixtures.json"
        pin.parent.mkdir()
        pin.write_text('{"pin_id": "mem", "algorithm": "sha256", "files": ["fixtures/data.bin"]}')
        argv = [*GATE, "digest", "--pin", str(pin), "--out", str(work / f"{name}.json")]
        rows.append((f"digest, {label}", *peak_kib(argv, root)))
    return rows


def properties_case(work: Path, mib: int) -> list[tuple[str, int, int]]:
    repo = work / "orders"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "m", "GIT_AUTHOR_EMAIL": "m@example.invalid",
           "GIT_COMMITTER_NAME": "m", "GIT_COMMITTER_EMAIL": "m@example.invalid"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    flood = work / "flood.py"
    flood.write_text(FLOOD)
    digest = subprocess.run(
        [*GATE, "digest", "--pin", "pins/fixtures.json", "--out", str(work / "f.json")],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip

    def gate(blocks: int) -> tuple[int, int]:
        return peak_kib(
            [*GATE, "properties", "--pin", "pins/fixtures.json", "--expect-digest", digest,
             "--properties", "pins/properties.json", "--base", "HEAD",
             "--command", f"{sys.executable} {flood} {blocks}", "--out", str(work / "p.json")],
            repo,
        )  # fmt: skip

    rows = [("properties, command prints nothing (baseline)", *gate(0))]
    rows.append((f"properties, command prints {mib} MiB", *gate(mib)))
    log_size = (work / "p.json.log").stat().st_size
    alone = peak_kib([sys.executable, str(flood), str(mib)], repo)
    rows.append((f"  the flooding child alone ({mib} MiB)", *alone))
    rows.append((f"  log size {log_size} bytes (expected {mib * MIB})", 0, 0))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/three-ledger-memcheck"))
    parser.add_argument("--gib", type=int, default=1, help="size of the pinned file (GiB)")
    parser.add_argument("--mib", type=int, default=200, help="output of the command (MiB)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    args = parser.parse_args()
    if not os.access(TIME, os.X_OK):
        sys.exit(f"{TIME} is missing (Debian: apt-get install time)")
    if args.work_dir.exists():
        sys.exit(f"{args.work_dir} exists; remove it or pass another --work-dir")
    args.work_dir.mkdir(parents=True)
    try:
        rows = digest_case(args.work_dir, args.gib) + properties_case(args.work_dir, args.mib)
    finally:
        if not args.keep:
            shutil.rmtree(args.work_dir)
    for label, code, peak in rows:
        print(f"{label:55} exit {code:3}  peak {peak / 1024:7.1f} MiB" if peak else label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
