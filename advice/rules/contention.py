"""cpu-oversubscribed and job-memory-pressure: a focused job asks the box for more CPU or memory than it has.
Both are measured on the job's own threads and processes (schedstat run-queue waits, major faults, PSS), so
someone else's load on a shared box does not raise them; pressure stall figures are evidence beside them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from hwtop.advice.job_facts import (
    WORKER,
    alive,
    job_demand,
    job_mean,
    mains,
    rank_count,
    recent_jobs,
    running_job,
    timed_jobs,
    who,
)
from hwtop.advice.job_memory import growth_lines, growth_of, memory_fixes
from hwtop.advice.registry import rule
from hwtop.advice.text import gib
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot

SPAN_S = 10.0
GROWTH_SPAN_S = 30.0


@rule("cpu-oversubscribed", hold_s=5, clear_s=10, order=190, watches="the job's runnable threads against its cores",
      reads=("oversubscription_ratio", "runqueue_wait_share", "stack_min_samples"))
def cpu_oversubscribed(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None or not job.usable_cores:
        return
    demand = _demand(window)
    if demand is None:
        return
    want, share = demand
    cores = job.usable_cores
    if want < t["oversubscription_ratio"] * cores or share < t["runqueue_wait_share"]:
        return
    ranks = mains(job)
    workers = [p for p in alive(job) if p.role == WORKER]
    evidence = _demand_lines(window, t, want, share, cores) + [_threads_line(p) for p in ranks[:8]]
    if workers:
        evidence.append(f"{len(workers)} DataLoader workers want "
                        f"{sum(p.cpu_demand or 0 for p in workers):.1f} CPUs more")
    cpu_psi = job_mean(window, lambda j: j.pressure.cpu_some if j.pressure else None)
    if cpu_psi is not None and job.pressure is not None:
        evidence.append(f"CPU pressure ({job.pressure.source}): some task waited for a CPU {cpu_psi:.0f}% of the "
                        "time")
    yield cpu_oversubscribed.finding("warning", f"More runnable threads than cores ({want:.1f} for {cores})",
                                     tuple(evidence), _threads_fixes(cores, rank_count(job), bool(workers)),
                                     scope="job", pids=tuple(p.pid for p in ranks))


def _demand(window: Window) -> tuple[float, float] | None:
    """(the CPUs the job's threads want, running or queued, and the share of that they wait in the run queue),
    means over the recent past; None before any is measured."""
    demands = [d for d in (job_demand(j) for j in recent_jobs(window, SPAN_S)) if d is not None]
    if not demands:
        return None
    want = sum(d for d, _ in demands) / len(demands)
    queued = sum(w for _, w in demands) / len(demands)
    return want, queued / want if want else 0.0


def _demand_lines(window: Window, t: Thresholds, want: float, share: float, cores: int) -> list[str]:
    switches = job_mean(window, lambda j: sum(p.switches_per_s or 0.0 for p in alive(j)))
    return [f"the job's threads want {want:.1f} CPUs (running or queued, mean over {SPAN_S:.0f} s) and may "
            f"use {cores} (limit {t['oversubscription_ratio']:g}x)",
            f"they wait in the run queue {100 * share:.0f}% of that time (limit "
            f"{100 * t['runqueue_wait_share']:.0f}%)" + (f"; {switches:.0f} context switches/s" if switches else "")]


def _threads_line(p: JobProcess) -> str:
    return (f"{who(p, p.pid)}: {p.threads or '?'} threads, {p.runnable_threads or 0} runnable now, "
            f"wants {p.cpu_demand or 0:.1f} CPUs, OMP_NUM_THREADS="
            f"{p.omp_num_threads if p.omp_num_threads is not None else 'unset'}")


def _threads_fixes(cores: int, count: int, workers: bool) -> tuple[str, ...]:
    per_rank = max(1, cores // count)
    fixes = (f"OMP_NUM_THREADS={per_rank} for each rank ({cores} usable cores / {count} rank(s)), or "
             f"torch.set_num_threads({per_rank}) at the top of the script; do not set it to os.cpu_count() per rank.",
             "torchrun sets OMP_NUM_THREADS=1 when it is unset: a torch.set_num_threads() call in the script "
             "overrides that.")
    if workers:
        fixes += ("Count the DataLoader workers too: ranks x threads + workers should stay near the usable "
                  "cores; fewer workers if they are CPU-bound.",)
    return fixes


class _Memory(msgspec.Struct, frozen=True):
    """What the job's memory looks like over the recent past: stalls (PSI some, %), major faults of its processes
    and the box's swap-ins (a second), the box's available RAM (%) and its cgroup's use of its limit (a share)."""

    stalls: float | None
    faults: float | None
    swap_in: float | None
    available: float | None
    group_share: float | None

    def short(self, t: Thresholds) -> bool:
        """Stalls on memory that the job's own faults, swap-ins, its cgroup or the box's RAM account for; or the
        job faulting back pages the box reads from swap."""
        pressured = self.stalls is not None and self.stalls >= t["memory_psi_some_percent"]
        faulting = self.faults is not None and self.faults >= t["major_faults_per_s"]
        attributed = faulting or (self.swap_in or 0.0) >= 1.0 or \
            (self.group_share is not None and self.group_share >= t["cgroup_memory_full_share"]) or \
            (self.available is not None and self.available < t["memory_available_percent"])
        return (pressured and attributed) or (faulting and (self.swap_in or 0) >= 1.0)


def _memory_of(window: Window, job: JobSnapshot) -> _Memory:
    memory = window.latest.memory
    group = job.cgroup_memory
    return _Memory(
        job_mean(window, lambda j: j.pressure.memory_some if j.pressure else None),
        job_mean(window, lambda j: sum(p.major_faults_per_s or 0.0 for p in alive(j))),
        job_mean(window, lambda j: j.swap_in_pages_per_s),
        100.0 * memory.available_bytes / memory.total_bytes if memory and memory.total_bytes else None,
        group.used_bytes / group.limit_bytes if group is not None and group.limit_bytes else None)


@rule("job-memory-pressure", hold_s=5, clear_s=15, order=210, watches="memory stalls, major faults and what grows",
      reads=("cgroup_memory_full_share", "major_faults_per_s", "memory_available_percent", "memory_growth_bytes_per_s",
             "memory_psi_some_percent"))
def job_memory_pressure(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    measured = _memory_of(window, job)
    if not measured.short(t):
        return
    evidence = _memory_lines(window, t, job, measured)
    timed = timed_jobs(window, GROWTH_SPAN_S)
    growing = [g for g in growth_of(timed) if g[2] >= t["memory_growth_bytes_per_s"]]
    evidence += growth_lines(growing[:4], job)
    fixes = memory_fixes(growing, job.cgroup_memory)
    yield job_memory_pressure.finding("warning", "The job is short of memory", tuple(evidence), tuple(fixes),
                                      scope="job", pids=tuple(g[0] for g in growing[:4]))


def _memory_lines(window: Window, t: Thresholds, job: JobSnapshot, measured: _Memory) -> list[str]:
    """Each figure measured, with its limit; the cgroup's and the box's memory; the job's own."""
    evidence = []
    if measured.stalls is not None:
        evidence.append(f"memory pressure ({job.pressure.source if job.pressure else 'system'}): some task stalled "
                        f"on memory {measured.stalls:.0f}% of the last {SPAN_S:.0f} s (limit "
                        f"{t['memory_psi_some_percent']:.0f}%)")
    if measured.faults is not None:
        evidence.append(f"the job's processes fault {measured.faults:.0f} pages/s back in from disk or swap (limit "
                        f"{t['major_faults_per_s']:.0f})")
    if measured.swap_in:
        evidence.append(f"the box reads {measured.swap_in:.0f} pages/s back from swap")
    group = job.cgroup_memory
    if group is not None and group.limit_bytes:
        evidence.append(f"its memory cgroup {group.path} uses {gib(group.used_bytes)} of its {gib(group.limit_bytes)} "
                        f"limit ({100 * (measured.group_share or 0):.0f}%)")
    memory = window.latest.memory
    if memory is not None and measured.available is not None:
        evidence.append(f"the box has {gib(memory.available_bytes)} of {gib(memory.total_bytes)} available "
                        f"({measured.available:.0f}%)")
    evidence.append(f"the job's memory (PSS) {gib(job.pss_bytes if job.pss_bytes is not None else job.rss_bytes)}")
    return evidence
