"""Issue 54: the truth behind memory-growing, measured apart from hwtop. A user's script in tests/jobs/ runs for
`--seconds`; every `--every` seconds psutil reads each of its processes' USS and PSS (memory_full_info), and the
script prints the job's PSS over time, each process's growth, and the least-squares rate of the whole job over
the whole run and over its second half (a leak holds its rate; start-up settling does not).

    python -m benchmarks.advice_memory list_dataset.py --seconds 90
    python -m benchmarks.advice_memory list_dataset.py --numpy --seconds 90
    python -m benchmarks.advice_memory keep_losses.py --seconds 60
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

JOBS = Path(__file__).resolve().parent.parent / "tests" / "jobs"
MIB = 1 << 20


def slope(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("script")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--every", type=float, default=2.0)
    args, rest = parser.parse_known_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    job = subprocess.Popen([sys.executable, str(JOBS / args.script), *rest, "--time-limit", str(args.seconds + 30)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    started = time.monotonic()
    totals: list[tuple[float, float]] = []
    first: dict[int, tuple[str, float, float]] = {}
    last: dict[int, tuple[float, float]] = {}
    try:
        while time.monotonic() - started < args.seconds and job.poll() is None:
            now = time.monotonic() - started
            pss_sum = 0.0
            for process in tree(job.pid):
                try:
                    info = process.memory_full_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                pss_sum += info.pss
                role = "main" if process.pid == job.pid else "worker"
                first.setdefault(process.pid, (role, info.uss, now))
                last[process.pid] = (info.uss, now)
            totals.append((now, pss_sum))
            print(f"{now:6.1f} s  job PSS {pss_sum / MIB:8.1f} MiB", flush=True)
            time.sleep(max(0.0, args.every - (time.monotonic() - started - now)))
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(30)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for pid, (role, uss, when) in first.items():
        end_uss, end_when = last[pid]
        print(f"{role} pid {pid}: USS {uss / MIB:.0f} -> {end_uss / MIB:.0f} MiB over {end_when - when:.0f} s")
    half = [p for p in totals if p[0] >= totals[-1][0] / 2]
    print(f"job PSS rate: whole run {slope(totals) / MIB:.2f} MiB/s, second half {slope(half) / MIB:.2f} MiB/s")
    print(f"command: python -m benchmarks.advice_memory {args.script} {' '.join(rest)} --seconds {args.seconds:g}")


if __name__ == "__main__":
    main()
