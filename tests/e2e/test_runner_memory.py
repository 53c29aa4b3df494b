"""The runner logs floods of output in full while its own memory stays flat.

Each test runs the runner in a fresh process and compares its peak RSS before and after
one child that prints 54 MB of numbered lines, or one 10 MiB line.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

MEMORY_SCRIPT = textwrap.dedent(
    """
    import os, resource, sys
    from pathlib import Path
    from three_ledger.runner import run_command

    work = Path(sys.argv[1])

    def run(argv, log_name):
        return run_command(argv, cwd=work, env=dict(os.environ), timeout_s=120,
                           log_path=work / log_name)

    run(["true"], "warmup.log")  # thread, selector and Popen machinery loaded before measuring
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(sys.argv[2:], "big.log")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(result.exit_code, after - before, file=sys.stderr)
    """
)

# 5,400,000 numbered 10-byte lines: 54 MB whose order and completeness the hash checks.
LINES_CHILD = (
    "import sys\n"
    "out = sys.stdout.buffer\n"
    "for start in range(0, 5_400_000, 100_000):\n"
    "    out.write(b''.join(b'%09d\\n' % i for i in range(start, start + 100_000)))\n"
)
ONE_LINE_CHILD = "import sys\nfor _ in range(160): sys.stdout.buffer.write(b'x' * 65_536)\n"


def expected_lines_digest() -> str:
    digest = hashlib.sha256()
    for start in range(0, 5_400_000, 100_000):
        digest.update(b"".join(b"%09d\n" % i for i in range(start, start + 100_000)))
    return digest.hexdigest()


def run_measured(tmp_path: Path, child: str) -> int:
    """Run `child` under a fresh runner process; return the runner's RSS growth in KiB."""
    script = tmp_path / "measure.py"
    script.write_text(MEMORY_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), sys.executable, "-c", child],
        stdout=subprocess.DEVNULL,  # the default console: streamed, never kept
        stderr=subprocess.PIPE,
        timeout=120,
        check=True,
    )
    exit_code, growth_kib = done.stderr.decode().split()
    assert exit_code == "0"
    return int(growth_kib)


def test_large_output_is_logged_in_full_with_bounded_memory(tmp_path: Path) -> None:
    growth_kib = run_measured(tmp_path, LINES_CHILD)
    log = tmp_path / "big.log"
    assert log.stat().st_size == 54_000_000
    assert hashlib.sha256(log.read_bytes()).hexdigest() == expected_lines_digest()
    assert growth_kib < 8 * 1024, f"runner grew by {growth_kib} KiB for 54 MB of output"


def test_one_huge_line_is_logged_in_full_with_bounded_memory(tmp_path: Path) -> None:
    growth_kib = run_measured(tmp_path, ONE_LINE_CHILD)
    log = (tmp_path / "big.log").read_bytes()
    assert len(log) == 160 * 65_536
    assert log == b"x" * (160 * 65_536)
    assert growth_kib < 4 * 1024, f"runner grew by {growth_kib} KiB for a 10 MiB line"
