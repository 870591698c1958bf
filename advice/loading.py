"""What one rank's loading does, measured from outside: how long a batch takes one worker against the step's own
time (its main thread's samples and CPU), how much of a core a worker uses while it makes one (on a CPU or queued
for one: a worker queued on a busy box computes, it does not wait), where the loading spends its time, and how the
cores the job may use are used (by the job, by the box's other programs, free). advice/supply.py turns it into a
fix; the loader rules (data-starved, single-core-loading) build it here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from hwtop.advice.job_facts import job_mean, mains, process_mean, rank_count, workers_of
from hwtop.advice.supply import CoreUse, Supply
from hwtop.advice.text import percent
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, mean

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot, RankStacks

SPAN_S = 10.0
MAX_RATIO = 64.0  # a step that waits all the time: the ratio says "far more", not a figure to trust
OFF_CPU = ("collective", "gpu-wait")  # a main thread's own waits besides data: neither on a CPU nor queued


def core_use(window: Window, job: JobSnapshot, seconds: float = SPAN_S) -> CoreUse | None:
    """How the cores the job may use were used over the recent past: the box's load on the CPUs of its affinity
    (every core where unknown), the job's own CPU, and the rest: others'. None before the box's cores are read."""
    usable = job.usable_cores
    if not usable:
        return None
    ranks = mains(job)
    allowed = set(ranks[0].cpu_affinity or ()) if ranks else set()
    if len(allowed) < usable:
        allowed = set()  # an affinity narrower than the cores it may use is not read right: every core
    recent = [s.cpu for s in window.recent(seconds) if s.cpu is not None]
    busy = mean(sum((c.percent or 0.0) for c in cpu.cores if not allowed or c.index in allowed) / 100.0
                for cpu in recent)
    own = job_mean(window, lambda j: j.cpu_percent, seconds)
    if busy is None or own is None or not recent:
        return None
    cpus = len(allowed) if allowed else len(recent[-1].cores)
    job_cores = own / 100.0
    return CoreUse(usable, cpus, round(job_cores, 2), round(max(0.0, busy - job_cores), 2))


def measured_supply(window: Window, t: Thresholds, job: JobSnapshot, s: RankStacks) -> Supply:
    """What one rank's loading can do, from its main thread's samples (the share it waits for data) and CPU time
    (the step's own work: a CPU rank's, read whole from schedstat where ~10 samples of a starved loop would say it
    to +-30%), its workers' samples (the share they make batches) and their CPU."""
    workers = workers_of(job, s.pid)
    gpu = any(p.gpus for p in job.processes)
    if not workers:
        return _main_loading(window, job, s, gpu)
    return _workers_loading(window, t, job, s, workers, gpu)


def _main_loading(window: Window, job: JobSnapshot, s: RankStacks, gpu: bool) -> Supply:
    """num_workers=0: the main thread loads between steps. How much of a core its loading uses is what is left of
    its running share once the rest of the step (taken as on a CPU throughout) is set aside: a thread that sleeps
    on a read while loading is on a CPU for the step alone."""
    wait = s.data_wait
    own = max(1.0 - wait, 1.0 / max(1, s.samples))
    ratio = min(MAX_RATIO, wait / own)
    if s.main_running is None or wait <= 0:
        loading, how = 1.0, "taken as a whole core (its running share is not known)"
    else:
        off = sum(s.fraction(name) for name in OFF_CPU)
        loading = max(0.0, min(1.0, (s.main_running - max(0.0, 1.0 - wait - off)) / wait))
        how = (f"on a CPU or queued for one {100 * s.main_running:.0f}% of the time, so its loading "
               f"{100 * loading:.0f}% of the time it loads")
    text = (f"the main thread loads its own batches (num_workers=0) in {100 * wait:.0f}% of its samples and does "
            f"the rest of the step in {100 * own:.0f}%: a batch takes {ratio:.1f}x the step's own time; it is {how}")
    use = _with_step(window, job, s, core_use(window, job), wait * loading, 0.0)
    return Supply(0, ratio, loading, job.usable_cores, rank_count(job), text, use=use,
                  python_share=s.data_python, site=s.site("data"), gpu=gpu, wait=wait)


def _with_step(window: Window, job: JobSnapshot, s: RankStacks, use: CoreUse | None, loading: float,
               loaders: float) -> CoreUse | None:
    """`use` with what the ranks' steps use while they run: the cores the rank's threads want (on a CPU or queued
    for one: on a busy box they are queued much of the time), less its own loading, spread over the share of the
    time it does not wait, for each alike rank; and what its workers use."""
    wants = _cores_wanted(window, s.pid)
    if use is None or wants is None:
        return use
    running = max(0.05, 1.0 - s.data_wait - sum(s.fraction(name) for name in OFF_CPU))
    step = max(0.0, wants - loading) / running * rank_count(job)
    return replace(use, step=round(min(float(use.usable), step), 2), loaders=round(loaders * rank_count(job), 2))


def _cores_wanted(window: Window, pid: int) -> float | None:
    """Cores one process's threads want (on a CPU or queued for one, from schedstat), else its CPU."""
    demand = process_mean(window, pid, lambda p: p.cpu_demand, SPAN_S)
    if demand is not None:
        return demand
    cpu = process_mean(window, pid, lambda p: p.cpu_percent, SPAN_S)
    return None if cpu is None else cpu / 100.0


def _workers_loading(window: Window, t: Thresholds, job: JobSnapshot, s: RankStacks, workers: list[JobProcess],
                     gpu: bool) -> Supply:
    wait = s.data_wait
    own = max(1.0 - wait, 1.0 / max(1, s.samples))
    sampled_workers = [w for w in job.worker_stacks if w.parent == s.pid and w.samples >= t["stack_min_samples"]]
    cpu = mean(process_mean(window, w.pid, lambda p: p.cpu_percent, SPAN_S) for w in workers)
    wants = mean(_cores_wanted(window, w.pid) for w in workers)
    busy = mean(w.busy for w in sampled_workers)
    how = f"in {100 * busy:.0f}% of their stack samples" if busy is not None else "(not sampled: taken as always)"
    busy = 1.0 if busy is None else busy
    if s.main_cpu is not None and s.main_cpu > 0:
        own, digits = s.main_cpu, 3
        step = (f"is on a CPU {100 * own:.1f}% of the time (the step's own work and each batch's hand-over: its "
                "CPU time from /proc in the quietest of its sampled chunks, not sampled; others' load only adds to "
                "it)")
    else:
        step, digits = f"does the rest of the step in {100 * own:.0f}%", 2
    ratio = min(MAX_RATIO, len(workers) * busy / own)
    bound = f" (at most {MAX_RATIO:g}x: past it the figure only says 'far more')" if ratio == MAX_RATIO else ""
    queued = (f" ({percent(100 * wants)} on a CPU or queued for one)" if wants is not None and cpu is not None
              and wants * 100 > cpu + 5 else "")
    text = (f"the main thread waits for data {100 * wait:.0f}% of the time and {step}; its {len(workers)} "
            f"DataLoader worker(s) make batches {how}, at {percent(cpu)} of a core each{queued}: a batch takes a "
            f"worker {len(workers)} x {busy:.2f} / {own:.{digits}f} = {ratio:.1f}x the step's own time{bound}")
    python = mean(w.python for w in sampled_workers)
    site = next((w.site for w in sampled_workers if w.site), None)
    use = _with_step(window, job, s, core_use(window, job), 0.0, len(workers) * (cpu or 0.0) / 100.0)
    return Supply(len(workers), ratio, min(1.0, (wants or 0.0) / max(busy, 0.05)), job.usable_cores,
                  rank_count(job), text, use=use, python_share=python, site=site, gpu=gpu)
