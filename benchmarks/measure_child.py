"""Run one command; write its wall and CPU time, exit status and peak RSS as JSON to REPORT.

    python -S benchmarks/measure_child.py REPORT COMMAND [ARG ...]

A child's peak RSS starts at its parent's RSS (the address space it was spawned from), so
the measuring parent is this small process, which runs exactly one child, rather than the
benchmark driver, whose memory grows as it reads ledgers.
"""

import json
import os
import resource
import sys
import time


def main(report: str, argv: list[str]) -> int:
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    exit_code = os.waitstatus_to_exitcode(status)
    measured = {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_kib": usage.ru_maxrss,
        "exit": exit_code,
    }
    with open(report, "w", encoding="utf-8") as stream:
        json.dump(measured, stream)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
