"""Issue 20's two costs, measured on real user-style jobs (tests/jobs/):

1. The stack sampler's overhead on a job: tests/jobs/balanced.py trains while hwtop's StackSampler samples its
   main thread at the default rate, in alternating phases with and without it (so the box's own drift falls on
   both); the job's steps/s in each phase, and the difference.
2. hwtop's own CPU while a job churns DataLoader workers: the real monitor (`hwtop --pid P`, on the job's
   screen, in a tmux pane) focused on tests/jobs/worker_churn.py for --minutes; its CPU (with its py-spy
   children) per interval must stay flat while the workers it has seen grows.

    python -m benchmarks.stack_overhead [--rounds 3] [--phase-seconds 20] [--minutes 10] [--skip-overhead]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "tests" / "jobs"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RATE = re.compile(r"([\d.]+) steps/s")


class Job:
    """A user-style job whose 'N steps/s' lines (every 2 s) are collected with the time they arrived."""

    def __init__(self, script: str, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.process = subprocess.Popen([sys.executable, str(JOBS / script), *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True, env=env)
        self.rates: list[tuple[float, float]] = []
        self.started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.started.set()
            match = RATE.search(line)
            if match and " step 1 " not in line:
                self.rates.append((time.monotonic(), float(match.group(1))))

    def between(self, start: float, end: float) -> list[float]:
        return [rate for when, rate in self.rates if start < when <= end]

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(30)


def overhead(rounds: int, phase_s: float) -> None:
    from hwtop.probes.stack_sampler import CHUNK_S, RATE_HZ, StackSampler

    job = Job("balanced.py", "--time-limit", str(rounds * 2 * phase_s + 60))
    try:
        job.started.wait(180)
        time.sleep(4.0)  # past the first epoch's warm-up
        phases: list[tuple[str, float]] = []
        samples = 0
        sampled_s = spy_cpu_s = 0.0
        for _ in range(rounds):
            for sampling in (False, True):
                sampler = StackSampler() if sampling else None
                children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                while time.monotonic() - start < phase_s:
                    if sampler is not None:
                        sampler.want({job.process.pid: None})
                    time.sleep(0.5)
                if sampler is not None:
                    stacks, _ = sampler.results()
                    samples += stacks[0].samples if stacks else 0
                    sampler.close()
                    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # py-spy, reaped by close()
                    spy_cpu_s += (children.ru_utime - children_before.ru_utime) + \
                        (children.ru_stime - children_before.ru_stime)
                    sampled_s += time.monotonic() - start
                rates = job.between(start + 2.5, time.monotonic())  # a 2 s rate that began inside the phase
                phases.append(("with" if sampling else "without", sum(rates) / len(rates) if rates else 0.0))
    finally:
        job.stop()
    without = [rate for name, rate in phases if name == "without"]
    with_ = [rate for name, rate in phases if name == "with"]
    print(f"## 1. Stack sampler overhead: tests/jobs/balanced.py, py-spy record {RATE_HZ:g} Hz in {CHUNK_S:g} s "
          f"chunks, {rounds} rounds of {phase_s:g} s without / with")
    print("| phase | steps/s |")
    print("|---|---|")
    for name, rate in phases:
        print(f"| {name} sampler | {rate:.2f} |")
    a, b = sum(without) / len(without), sum(with_) / len(with_)
    print(f"\nmean without {a:.2f} steps/s, with {b:.2f} steps/s: overhead {100 * (a - b) / a:+.1f}% "
          f"({samples} stack samples taken in the with-phases)")
    print(f"py-spy itself used {spy_cpu_s:.2f} CPU-s over {sampled_s:.0f} s of sampling: "
          f"{100 * spy_cpu_s / sampled_s:.2f}% of one core, {100 * spy_cpu_s / sampled_s / (os.cpu_count() or 1):.2f}% "
          f"of this box's {os.cpu_count()} cores (the most the job can lose to it; --nonblocking never pauses it)")


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        rest = handle.read().rsplit(")", 1)[1].split()
    return sum(int(value) for value in rest[11:15])  # its own and its reaped children's (py-spy)


def _monitor_pid(pane_pid: int) -> int:
    """The pane runs a shell that runs hwtop; hwtop is the deepest descendant that is Python."""
    for _ in range(50):
        try:
            children = Path(f"/proc/{pane_pid}/task/{pane_pid}/children").read_text().split()
        except OSError:
            children = []
        if not children:
            return pane_pid
        pane_pid = int(children[0])
    return pane_pid


def own_cpu(minutes: float, every_s: float) -> None:
    job = Job("worker_churn.py", "--time-limit", str(minutes * 60 + 120))
    session = f"churn-{uuid.uuid4().hex[:8]}"
    rows = []
    try:
        job.started.wait(180)
        command = f"{sys.executable} -m hwtop --pid {job.process.pid}"
        env = f"PYTHONPATH={ROOT}"
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", f"env {env} {command}"],
                       check=True)
        time.sleep(3.0)
        pane = int(subprocess.run(["tmux", "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True,
                                  text=True).stdout.strip())
        monitor = _monitor_pid(pane)
        start = time.monotonic()
        ticks, at = _cpu_ticks(monitor), start
        end = start + minutes * 60
        while time.monotonic() < end:
            time.sleep(max(0.0, min(at + every_s, end) - time.monotonic()))
            now, now_ticks = time.monotonic(), _cpu_ticks(monitor)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                    text=True).stdout
            seen = re.search(r"\((\d+) seen\)", screen)
            exited = re.search(r"(\d+) exited in the last minute", screen)
            rows.append((now - start, 100.0 * (now_ticks - ticks) / CLOCK_TICKS / (now - at),
                         seen.group(1) if seen else "?", exited.group(1) if exited else "?",
                         sum(1 for line in screen.splitlines() if re.match(r"\W*\d{2,8} +\S", line))))
            ticks, at = now_ticks, now
    finally:
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], capture_output=True)
        time.sleep(2)
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        job.stop()
    print(f"\n## 2. hwtop's own CPU on a worker-churning job: `hwtop --pid P` (job screen, 1 s refresh, stack "
          f"sampling on) on tests/jobs/worker_churn.py for {minutes:g} min")
    print("| t (s) | hwtop CPU % (with py-spy) | processes seen | workers exited in the last minute | table rows |")
    print("|---|---|---|---|---|")
    for t, cpu, seen, exited, table in rows:
        print(f"| {t:.0f} | {cpu:.1f} | {seen} | {exited} | {table} |")
    if len(rows) >= 2:
        first = sum(r[1] for r in rows[: max(1, len(rows) // 3)]) / max(1, len(rows) // 3)
        last = sum(r[1] for r in rows[-max(1, len(rows) // 3):]) / max(1, len(rows) // 3)
        print(f"\nfirst third {first:.1f}% → last third {last:.1f}% of one core")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase-seconds", type=float, default=20.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between CPU readings (part 2)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-own-cpu", action="store_true")
    args = parser.parse_args()
    print(f"# hwtop stack sampler and churn benchmark — {time.strftime('%Y-%m-%d %H:%M')} — {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at start")
    print(f"# rerun: python -m benchmarks.stack_overhead --rounds {args.rounds} --phase-seconds "
          f"{args.phase_seconds:g} --minutes {args.minutes:g}")
    if not args.skip_overhead:
        overhead(args.rounds, args.phase_seconds)
    if not args.skip_own_cpu:
        own_cpu(args.minutes, args.every)


if __name__ == "__main__":
    main()
