"""One process-probe read over a synthetic /proc of N processes: the steady state of a big, mostly sleeping
box (every CPU tick count stands still), and the worst case where every process used CPU since the last read.

    python -m benchmarks.process_scale [--count 5000] [--reads 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from benchmarks.tick import synthetic_proc
from hwtop.probes.processes import ProcessProbe


def busy_everyone(root: str, count: int, step: int) -> None:
    """Rewrite each stat with its utime moved on, as if every process had run since the last read."""
    for pid in range(1000, 1000 + count):
        path = os.path.join(root, "proc", str(pid), "stat")
        with open(path) as handle:
            fields = handle.read().split(" ")
        fields[13] = str(step * 3 + pid % 7)  # field 14, utime
        with open(path, "w") as handle:
            handle.write(" ".join(fields))


def median_read_ms(probe: ProcessProbe, reads: int, between=None) -> float:
    probe.read()
    probe.read()
    samples = []
    for step in range(reads):
        if between is not None:
            between(step)
        start = time.perf_counter()
        probe.read()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--reads", type=int, default=20)
    args = parser.parse_args()
    print(f"# process probe at scale — {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}; median of {args.reads} reads")
    print(f"# rerun: python -m benchmarks.process_scale --count {args.count} --reads {args.reads}\n")
    print("| /proc | processes | ms per read |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as root:
        synthetic_proc(root, args.count)
        idle = median_read_ms(ProcessProbe(root), args.reads)
        print(f"| synthetic, all sleeping (steady state) | {args.count} | {idle:.1f} |")
        busy = median_read_ms(ProcessProbe(root), max(3, args.reads // 4),
                              lambda step: busy_everyone(root, args.count, step + 2))
        print(f"| synthetic, every process busy (worst case) | {args.count} | {busy:.1f} |")
    live = ProcessProbe()
    print(f"| this machine's /proc | {len(live.pids())} | {median_read_ms(live, args.reads):.2f} |")


if __name__ == "__main__":
    main()
