"""Per-thread scheduling of one process, from /proc/PID/task/TID/{stat,schedstat}: how many threads are
runnable or blocked in D state, how much CPU the process asks for (time on a CPU plus time queued for one),
how much of that it spent queued, how often its threads were switched in, and its busiest thread. The run
queue wait is the process's own: a box busy with someone else's work shows here only as the wait it causes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hwtop.probes.processes import CLOCK_TICKS

MAX_THREADS = 512


@dataclass(frozen=True, slots=True)
class ThreadStats:
    threads: int
    runnable: int
    blocked: int
    cpus: tuple[int, ...]  # the CPUs its threads last ran on
    cpu_demand: float | None  # CPUs' worth of (running + waiting to run)
    wait_share: float | None
    switches_per_s: float | None
    hot_percent: float | None  # its busiest thread, running or queued for a CPU, in % of one core
    hot_name: str | None


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096).decode("utf-8", "replace")
    finally:
        os.close(fd)


@dataclass(slots=True)
class ThreadProbe:
    """Keeps each thread's previous counters for one process (pid + start time)."""

    _last: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)  # tid → (t, run, wait, n)

    def read(self, base: str, now: float) -> ThreadStats:
        try:
            tids = os.listdir(f"{base}/task")[:MAX_THREADS]
        except OSError:
            tids = []
        runnable = blocked = 0
        cpus: set[int] = set()
        demand = waits = switches = 0.0
        measured = False
        hot: tuple[float, str] | None = None
        current: dict[int, tuple[float, float, float, float]] = {}
        for name in tids:
            try:
                stat = _read(f"{base}/task/{name}/stat")
            except OSError:
                continue
            close = stat.rfind(")")
            comm = stat[stat.find("(") + 1:close]
            rest = stat[close + 2:].split()
            if len(rest) < 13:
                continue
            state = rest[0]
            runnable += state == "R"
            blocked += state == "D"
            if len(rest) > 36 and rest[36].lstrip("-").isdigit():
                cpus.add(int(rest[36]))
            try:
                run_ns, wait_ns, slices = (float(v) for v in _read(f"{base}/task/{name}/schedstat").split()[:3])
            except (OSError, ValueError):
                run_ns = (int(rest[11]) + int(rest[12])) * 1e9 / CLOCK_TICKS  # no schedstat: ticks, no wait
                wait_ns = slices = 0.0
            tid = int(name)
            current[tid] = (now, run_ns, wait_ns, slices)
            before = self._last.get(tid)
            if before is None or now <= before[0]:
                continue
            seconds = now - before[0]
            ran, waited = max(0.0, run_ns - before[1]), max(0.0, wait_ns - before[2])
            demand += (ran + waited) / 1e9 / seconds
            waits += waited / 1e9 / seconds
            switches += max(0.0, slices - before[3]) / seconds
            measured = True
            percent = min(100.0, 100.0 * (ran + waited) / 1e9 / seconds)  # queued counts: it wanted the core
            if hot is None or percent > hot[0]:
                hot = (percent, comm)
        self._last = current
        return _stats(len(current), runnable, blocked, cpus, (demand, waits, switches) if measured else None, hot)


def _stats(threads: int, runnable: int, blocked: int, cpus: set[int], rates: tuple[float, float, float] | None,
           hot: tuple[float, str] | None) -> ThreadStats:
    """`rates`: (CPUs' worth of demand, of it queued, switches per second) over the threads read twice; None until
    one has been."""
    if rates is None:
        return ThreadStats(threads, runnable, blocked, tuple(sorted(cpus)), None, None, None, None, None)
    demand, waits, switches = rates
    return ThreadStats(threads, runnable, blocked, tuple(sorted(cpus)), round(demand, 3),
                       round(waits / demand, 3) if demand > 0 else 0.0, round(switches, 1),
                       round(hot[0], 1) if hot else None, hot[1] if hot else None)
