"""Whether the worker count `doctor` names for tests/jobs/slow_store.py is enough, with what it saw: the flow of
tests/cli/test_doctor_user_jobs.py's slow-store test, printed. Each run: the job with one worker, `doctor --pid`
(its arithmetic and the count it names), then the job with that count and `doctor` again (its findings, the main
thread's shares, the hand-over apart, its CPU share), with the job's own printed steps/s and the load average.

    python -m benchmarks.named_workers --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "slow_store.py"


def watched(workers: int) -> tuple[int, dict[str, Any], list[float]]:
    """(doctor's rc, its JSON report, the job's printed steps/s after its first step)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONWARNINGS"] = "ignore"  # torch warns of more workers than cores
    job = subprocess.Popen([sys.executable, str(JOB), "--num-workers", str(workers), "--time-limit", "120"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                           start_new_session=True)
    lines: list[str] = []
    training = threading.Event()

    def drain() -> None:
        assert job.stdout is not None
        for line in job.stdout:
            lines.append(line)
            training.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        training.wait(120)
        done = subprocess.run([sys.executable, "-m", "hwtop", "doctor", "--pid", str(job.pid), "--json"],
                              capture_output=True, text=True, cwd=ROOT, timeout=200)
    finally:
        os.killpg(job.pid, 9)
        job.wait()
    rates = [float(m.group(1)) for line in lines[1:] for m in [re.search(r"([\d.]+) steps/s", line)] if m]
    return done.returncode, json.loads(done.stdout), rates


def summary(workers: int, rc: int, report: dict[str, Any], rates: list[float]) -> str:
    stacks = (report.get("job") or {}).get("stacks", [])
    shares = "; ".join(f"{s['fractions']} hand-over {s.get('handover')} main thread CPU {s.get('main_cpu')}"
                       for s in stacks)
    ids = [f["id"] for f in report["findings"]]
    rate = f"{statistics.median(rates):.1f}" if rates else "N/A"
    return f"num_workers={workers}: rc {rc}, {ids}, median {rate} steps/s; {shares}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for run in range(1, args.runs + 1):
        print(f"run {run}, load {os.getloadavg()[0]:.2f}", flush=True)
        rc, report, rates = watched(1)
        print("  " + summary(1, rc, report, rates), flush=True)
        starved = next((f for f in report["findings"] if f["id"] == "data-starved"), None)
        if starved is None:
            print("  no data-starved: nothing named", flush=True)
            continue
        print("  seen: " + next(line for line in starved["evidence"] if "own time" in line), flush=True)
        print("  fix:  " + starved["fix"][0], flush=True)
        named = re.match(r"DataLoader\(num_workers=(\d+)\)", starved["fix"][0])
        if named is None:
            continue
        print(f"  load {os.getloadavg()[0]:.2f}", flush=True)
        rc, report, rates = watched(int(named.group(1)))
        print("  " + summary(int(named.group(1)), rc, report, rates), flush=True)


if __name__ == "__main__":
    main()
