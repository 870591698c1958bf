"""cpu-oversubscribed and job-memory-pressure: a focused job asks the box for more CPU or memory than it has.
Both are measured on the job's own threads and processes (schedstat run-queue waits, major faults, PSS), so
someone else's load on a shared box does not raise them; pressure stall figures are evidence beside them."""

from __future__ import annotations

from collections.abc import Iterator

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

SPAN_S = 10.0
GROWTH_SPAN_S = 30.0


@rule("cpu-oversubscribed", hold_s=5, clear_s=10, order=190, watches="the job's runnable threads against its cores",
      reads=("oversubscription_ratio", "runqueue_wait_share", "stack_min_samples"))
def cpu_oversubscribed(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None or not job.usable_cores:
        return
    demands = [d for d in (job_demand(j) for j in recent_jobs(window, SPAN_S)) if d is not None]
    if not demands:
        return
    want = sum(d for d, _ in demands) / len(demands)
    queued = sum(w for _, w in demands) / len(demands)
    share = queued / want if want else 0.0
    cores = job.usable_cores
    if want < t["oversubscription_ratio"] * cores or share < t["runqueue_wait_share"]:
        return
    switches = job_mean(window, lambda j: sum(p.switches_per_s or 0.0 for p in alive(j)))
    ranks = mains(job)
    count = rank_count(job)
    workers = [p for p in alive(job) if p.role == WORKER]
    per_rank = max(1, cores // count)
    evidence = [f"the job's threads want {want:.1f} CPUs (running or queued, mean over {SPAN_S:.0f} s) and may "
                f"use {cores} (limit {t['oversubscription_ratio']:g}x)",
                f"they wait in the run queue {100 * share:.0f}% of that time (limit "
                f"{100 * t['runqueue_wait_share']:.0f}%)" + (f"; {switches:.0f} context switches/s" if switches
                                                             else "")]
    for p in ranks[:8]:
        evidence.append(f"{who(p, p.pid)}: {p.threads or '?'} threads, {p.runnable_threads or 0} runnable now, "
                        f"wants {p.cpu_demand or 0:.1f} CPUs, OMP_NUM_THREADS="
                        f"{p.omp_num_threads if p.omp_num_threads is not None else 'unset'}")
    if workers:
        evidence.append(f"{len(workers)} DataLoader workers want "
                        f"{sum(p.cpu_demand or 0 for p in workers):.1f} CPUs more")
    pressure = job.pressure
    cpu_psi = job_mean(window, lambda j: j.pressure.cpu_some if j.pressure else None)
    if cpu_psi is not None and pressure is not None:
        evidence.append(f"CPU pressure ({pressure.source}): some task waited for a CPU {cpu_psi:.0f}% of the time")
    fixes = [f"OMP_NUM_THREADS={per_rank} for each rank ({cores} usable cores / {count} rank(s)), or "
             f"torch.set_num_threads({per_rank}) at the top of the script; do not set it to os.cpu_count() per rank.",
             "torchrun sets OMP_NUM_THREADS=1 when it is unset: a torch.set_num_threads() call in the script "
             "overrides that."]
    if workers:
        fixes.append("Count the DataLoader workers too: ranks x threads + workers should stay near the usable "
                     "cores; fewer workers if they are CPU-bound.")
    yield cpu_oversubscribed.finding("warning", f"More runnable threads than cores ({want:.1f} for {cores})",
                                     tuple(evidence), tuple(fixes), scope="job", pids=tuple(p.pid for p in ranks))


@rule("job-memory-pressure", hold_s=5, clear_s=15, order=210, watches="memory stalls, major faults and what grows",
      reads=("cgroup_memory_full_share", "major_faults_per_s", "memory_available_percent", "memory_growth_bytes_per_s",
             "memory_psi_some_percent"))
def job_memory_pressure(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    stalls = job_mean(window, lambda j: j.pressure.memory_some if j.pressure else None)
    faults = job_mean(window, lambda j: sum(p.major_faults_per_s or 0.0 for p in alive(j)))
    swap_in = job_mean(window, lambda j: j.swap_in_pages_per_s)
    memory = window.latest.memory
    available = 100.0 * memory.available_bytes / memory.total_bytes if memory and memory.total_bytes else None
    group = job.cgroup_memory
    group_share = group.used_bytes / group.limit_bytes if group is not None and group.limit_bytes else None
    pressured = stalls is not None and stalls >= t["memory_psi_some_percent"]
    faulting = faults is not None and faults >= t["major_faults_per_s"]
    attributed = faulting or (swap_in or 0.0) >= 1.0 or \
        (group_share is not None and group_share >= t["cgroup_memory_full_share"]) or \
        (available is not None and available < t["memory_available_percent"])
    if not ((pressured and attributed) or (faulting and (swap_in or 0) >= 1.0)):
        return
    evidence = []
    if stalls is not None:
        evidence.append(f"memory pressure ({job.pressure.source if job.pressure else 'system'}): some task stalled "
                        f"on memory {stalls:.0f}% of the last {SPAN_S:.0f} s (limit "
                        f"{t['memory_psi_some_percent']:.0f}%)")
    if faults is not None:
        evidence.append(f"the job's processes fault {faults:.0f} pages/s back in from disk or swap (limit "
                        f"{t['major_faults_per_s']:.0f})")
    if swap_in:
        evidence.append(f"the box reads {swap_in:.0f} pages/s back from swap")
    if group is not None and group.limit_bytes:
        evidence.append(f"its memory cgroup {group.path} uses {gib(group.used_bytes)} of its {gib(group.limit_bytes)} "
                        f"limit ({100 * (group_share or 0):.0f}%)")
    if memory is not None and available is not None:
        evidence.append(f"the box has {gib(memory.available_bytes)} of {gib(memory.total_bytes)} available "
                        f"({available:.0f}%)")
    evidence.append(f"the job's memory (PSS) {gib(job.pss_bytes if job.pss_bytes is not None else job.rss_bytes)}")
    timed = timed_jobs(window, GROWTH_SPAN_S)
    growing = [g for g in growth_of(timed) if g[2] >= t["memory_growth_bytes_per_s"]]
    evidence += growth_lines(growing[:4], job)
    fixes = memory_fixes(growing, group)
    yield job_memory_pressure.finding("warning", "The job is short of memory", tuple(evidence), tuple(fixes),
                                      scope="job", pids=tuple(g[0] for g in growing[:4]))
