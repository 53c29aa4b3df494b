"""The straightforward digest that issue 6 measures against: same algorithm, written plainly.

It walks with `Path.rglob` and `is_file`, reads every file whole with `read_bytes`, and
writes the same `files` entries as `three-ledger digest`. It does no pin validation beyond
what the algorithm needs: it is the yardstick, not the gate.

    python benchmarks/baseline_digest.py --pin PIN --root ROOT --out LEDGER
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def closed_world_problems(root: Path, fixtures_dir: str, pinned: set[str]) -> list[str]:
    found = {
        path.relative_to(root).as_posix()
        for path in (root / fixtures_dir).rglob("*")
        if path.is_file()
    }
    missing = [f"{path}: pinned file is missing" for path in sorted(pinned - found)]
    return missing + [f"{path}: unpinned file" for path in sorted(found - pinned)]


def digest_files(root: Path, paths: list[str]) -> tuple[str, list[dict[str, object]]]:
    combined = hashlib.sha256()
    entries: list[dict[str, object]] = []
    for path in sorted(paths):
        data = (root / path).read_bytes()
        combined.update(path.encode("utf-8") + b"\0")
        combined.update(data)
        entries.append(
            {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    return combined.hexdigest(), entries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="baseline fixture digest")
    parser.add_argument("--pin", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    pin = json.loads(args.pin.read_text(encoding="utf-8"))
    fixtures_dir = pin.get("fixtures_dir", "fixtures")
    problems = closed_world_problems(args.root, fixtures_dir, set(pin["files"]))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    digest, entries = digest_files(args.root, pin["files"])
    ledger = {"pin_id": pin["pin_id"], "digest": digest, "files": entries}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(ledger, indent=2) + "\n", encoding="utf-8")
    print(digest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
