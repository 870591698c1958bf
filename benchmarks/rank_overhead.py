"""Issue 34: what sampling a DDP job's ranks costs them. tests/jobs/ddp_straggler.py (gloo on CPU, torchrun
--nproc-per-node 2, balanced) trains while hwtop's StackSampler samples both ranks as the job probe does (py-spy
record at 10 Hz in 3 s then 10 s chunks, `--nonblocking`, plus two schedstat reads of each rank's main thread a
chunk, for the collective wait). Reported: py-spy's own CPU (its reaped children, rusage) and the sampler
thread's (its schedstat), per rank, in % of one core: all the CPU the job can lose to it, as --nonblocking never
pauses a rank. The job's steps/s in alternating phases without / with sampling are printed too, but on a shared
box they swing more than the cost itself.

    python -m benchmarks.rank_overhead [--rounds 3] [--phase-seconds 20]
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "jobs" / "ddp_straggler.py"
RATE = re.compile(r"([\d.]+) steps/s")


class DdpJob:
    def __init__(self, seconds: float) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.process = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                                         str(JOB), "--time-limit", str(seconds)], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True, env=env)
        self.rates: list[tuple[float, float]] = []
        self.started = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            match = RATE.search(line)
            if match:
                self.started.set()
                if not line.startswith("step 1 "):
                    self.rates.append((time.monotonic(), float(match.group(1))))

    def ranks(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
                environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"ddp_straggler" in cmdline and b"torch.distributed.run" not in cmdline:
                rank = next((int(item[5:]) for item in environ if item.startswith(b"RANK=")), None)
                if rank is not None:
                    out[int(name)] = rank
        return out

    def stop(self) -> None:
        for pid in [self.process.pid, *self.ranks()]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(30)


def _thread_cpu_s(native_id: int | None) -> float:
    if native_id is None:
        return 0.0
    try:
        return int(Path(f"/proc/self/task/{native_id}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def main() -> None:
    from hwtop.probes.stack_sampler import CHUNK_S, RATE_HZ, StackSampler

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase-seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(f"# rank sampling cost — {time.strftime('%Y-%m-%d %H:%M')} — {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at start")
    print(f"# rerun: python -m benchmarks.rank_overhead --rounds {args.rounds} --phase-seconds {args.phase_seconds:g}")
    job = DdpJob(args.rounds * 2 * args.phase_seconds + 60)
    phases: list[tuple[str, float]] = []
    spy_s = thread_s = sampled_s = 0.0
    samples = 0
    try:
        job.started.wait(180)
        time.sleep(3.0)
        ranks = job.ranks()
        for _ in range(args.rounds):
            for sampling in (False, True):
                sampler = StackSampler() if sampling else None
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                thread_before = 0.0
                while time.monotonic() - start < args.phase_seconds:
                    if sampler is not None:
                        sampler.want(ranks)
                    time.sleep(0.5)
                if sampler is not None:
                    native = sampler._thread.native_id if sampler._thread else None  # noqa: SLF001
                    thread_s += _thread_cpu_s(native) - thread_before
                    stacks, _ = sampler.results()
                    samples += sum(s.samples for s in stacks)
                    sampler.close()
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # py-spy, reaped by close()
                    spy_s += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                    sampled_s += time.monotonic() - start
                rates = [rate for when, rate in job.rates if start + 2.5 < when <= time.monotonic()]
                phases.append(("with" if sampling else "without", sum(rates) / len(rates) if rates else 0.0))
    finally:
        job.stop()
    count = max(1, len(ranks))
    print(f"## tests/jobs/ddp_straggler.py, {count} ranks, py-spy record {RATE_HZ:g} Hz in {CHUNK_S:g} s chunks, "
          f"{args.rounds} rounds of {args.phase_seconds:g} s without / with")
    print("| phase | steps/s |")
    print("|---|---|")
    for name, rate in phases:
        print(f"| {name} sampler | {rate:.2f} |")
    print(f"\n{samples} stack samples over {sampled_s:.0f} s; py-spy used {spy_s:.2f} CPU-s, the sampler thread "
          f"{thread_s:.2f} CPU-s: {100 * (spy_s + thread_s) / sampled_s / count:.2f}% of one core per rank "
          "(limit 2%)")


if __name__ == "__main__":
    main()
