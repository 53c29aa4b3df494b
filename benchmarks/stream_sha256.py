"""The floor of the digest: one SHA-256 stream over the pinned files, and nothing else.

It hashes exactly the bytes of the combined digest (SPEC 4.1: each pinned path, NUL, the
file's bytes, in sorted order) in one stream through one reused buffer, and prints it: no
per-file hash, no tree check, no ledger. `bench_digest.py` checks it prints the same digest
as `three-ledger digest`.

    python benchmarks/stream_sha256.py --pin PIN --root ROOT
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

CHUNK_BYTES = 1024 * 1024


def stream_digest(root: Path, paths: list[str]) -> str:
    combined = hashlib.sha256()
    buffer = memoryview(bytearray(CHUNK_BYTES))
    for path in sorted(paths):
        combined.update(path.encode("utf-8") + b"\0")
        with (root / path).open("rb", buffering=0) as stream:
            while count := stream.readinto(buffer):
                combined.update(buffer[:count])
    return combined.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pin", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    args = parser.parse_args(argv)
    pin = json.loads(args.pin.read_text(encoding="utf-8"))
    print(stream_digest(args.root, pin["files"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
