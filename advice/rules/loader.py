"""data-starved, worker-churn, single-core-loading and loader-io-bound: a focused job's input pipeline cannot
keep its training step fed. They read what any job shows from outside (its stacks, its process tree, /proc),
so they work on any PyTorch job, with or without a GPU."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hwtop.advice.data_wait import churn_cause, starved_ranks, stuck_worker_of, told_by_telemetry
from hwtop.advice.grouping import alike
from hwtop.advice.job_facts import (
    WORKER,
    alive,
    churn,
    job_mean,
    mains,
    member_scope,
    process_mean,
    rank_count,
    recent_jobs,
    running_job,
    sampled,
    stacks_line,
    who,
    workers_of,
)
from hwtop.advice.registry import rule
from hwtop.advice.supply import Supply, supply_lines
from hwtop.advice.text import percent, rate
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, mean
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobSnapshot, RankStacks

SPAN_S = 10.0


def _workers_target(job: JobSnapshot) -> tuple[int | None, int]:
    """(num_workers to suggest, usable cores) for one rank: the cores the job may use shared by its ranks,
    one left for the rank's own main thread."""
    cores = job.usable_cores
    if not cores:
        return None, 0
    return max(1, cores // rank_count(job) - 1), cores


MAX_RATIO = 64.0  # a step that waits all the time: the ratio says "far more", not a figure to trust


def measured_supply(window: Window, t: Thresholds, job: JobSnapshot, s: RankStacks) -> Supply:
    """What one rank's loading can do, from its main thread's samples (the share it waits for data) and CPU time
    (the step's own work: a CPU rank's, read whole from schedstat where ~10 samples of a starved loop would say it
    to +-30%), its workers' samples (the share they make batches) and their CPU."""
    wait = s.data_wait
    own = max(1.0 - wait, 1.0 / max(1, s.samples))
    workers = workers_of(job, s.pid)
    if not workers:
        ratio = min(MAX_RATIO, wait / own)
        running = s.main_running if s.main_running is not None else 1.0
        text = (f"the main thread loads its own batches (num_workers=0) in {100 * wait:.0f}% of its samples and "
                f"does the rest of the step in {100 * own:.0f}%: a batch takes {ratio:.1f}x the step's own time")
        return Supply(0, ratio, min(1.0, running), job.usable_cores, rank_count(job), text)
    sampled_workers = [w for w in job.worker_stacks if w.parent == s.pid and w.samples >= t["stack_min_samples"]]
    cpu = mean(process_mean(window, w.pid, lambda p: p.cpu_percent, SPAN_S) for w in workers)
    busy = mean(w.busy for w in sampled_workers)
    how = f"in {100 * busy:.0f}% of their stack samples" if busy is not None else "(not sampled: taken as always)"
    if busy is None:
        busy = 1.0
    cores = (cpu or 0.0) / 100.0
    if s.main_cpu is not None and s.main_cpu > 0:
        own, digits = s.main_cpu, 3
        step = (f"is on a CPU {100 * own:.1f}% of the time (the step's own work and each batch's hand-over: its "
                "CPU time from /proc in the quietest of its sampled chunks, not sampled; others' load only adds to "
                "it)")
    else:
        step, digits = f"does the rest of the step in {100 * own:.0f}%", 2
    ratio = min(MAX_RATIO, len(workers) * busy / own)
    bound = f" (at most {MAX_RATIO:g}x: past it the figure only says 'far more')" if ratio == MAX_RATIO else ""
    text = (f"the main thread waits for data {100 * wait:.0f}% of the time and {step}; its {len(workers)} "
            f"DataLoader worker(s) make batches {how}, at {percent(cpu)} of a core each: a batch takes a worker "
            f"{len(workers)} x {busy:.2f} / {own:.{digits}f} = {ratio:.1f}x the step's own time{bound}")
    return Supply(len(workers), ratio, min(1.0, cores / max(busy, 0.05)), job.usable_cores, rank_count(job), text)


def alike_ranks(job: JobSnapshot, starved: list[RankStacks]) -> bool:
    """Ranks of one job load alike (one DataLoader each, the same code): one rank's arithmetic stands for all."""
    return len({len(workers_of(job, s.pid)) for s in starved}) == 1


# A focused job (--pid/--job), GPU or not: its stacks, its process tree, its share of the box.
@rule("data-starved", hold_s=5, clear_s=10, order=160,
      watches="where the job's ranks spend their time (py-spy samples)",
      reads=("core_pegged_percent", "data_wait_fraction", "gpu_waiting_util_percent", "io_psi_some_percent",
             "loader_headroom", "loader_max_workers", "stack_min_samples", "starved_step_speedup",
             "stuck_cpu_percent", "stuck_stack_s", "stuck_switches_per_s", "worker_births_per_min",
             "worker_generations"))
def data_starved(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    starved = starved_ranks(window, t)
    if job is None or not starved:
        return
    starved = [s for s in starved if not stuck_worker_of(window, t, job, s.pid)]  # a hang: worker-stuck says so
    told = told_by_telemetry(window, t)  # the embedded job's own step figures say the same wait: gpu-starved's
    starved = [s for s in starved if s.pid not in told]
    if not starved:
        return
    latest = window.latest
    by_pid = {p.pid: p for p in alive(job)}
    evidence = []
    for s in starved:
        site = s.site("data")
        handover = (f"; receiving batches already made in {100 * s.handover:.0f}% more, not counted" if s.handover
                    else "")
        evidence.append(f"{who(by_pid.get(s.pid), s.pid)}: main thread waiting for data in "
                        f"{100 * s.data_wait:.0f}% of {s.samples} stack samples over {s.window_s:.0f} s "
                        f"(limit {100 * t['data_wait_fraction']:.0f}%)" + (f", at {site}" if site else "") + handover)
        evidence.append(f"  where its time goes: {stacks_line(s)}")
    pids = {s.pid for s in starved}
    waiting: dict[int, float | None] = {}
    for gpu in latest.gpus:
        if set(compute_pids(gpu)) & set(by_pid):
            util = window.gpu_mean(gpu.index, lambda g: g.util_percent, SPAN_S)
            if util is not None and util < t["gpu_waiting_util_percent"]:
                waiting[gpu.index] = util
    waiting_gpus = list(waiting)
    waits = "it waits with the rank" if len(waiting) == 1 else "they wait with their ranks"
    evidence += [f"{gpus} util {shown} over the last {SPAN_S:.0f} s: {waits}" for shown, gpus in alike(waiting).items()]
    fixes: list[str] = []
    churn_evidence, churn_fix = churn_cause(window, t, pids)
    evidence += churn_evidence
    fixes += churn_fix
    single = [s for s in starved if s.data_loader == "single-process" or not workers_of(job, s.pid)]
    if single:
        evidence.append(f"{len(single)} of them load(s) data in the main thread: DataLoader num_workers=0")
    for s in starved[:1] if len(starved) > 1 and alike_ranks(job, starved) else starved:
        lines, supply_fixes = supply_lines(measured_supply(window, t, job, s), t)  # a deeper prefetch only where
        evidence += lines  # the workers keep up: it delays the stall of workers that cannot
        fixes += supply_fixes
    io = job_mean(window, lambda j: j.pressure.io_some if j.pressure else None)
    if io is not None and io >= t["io_psi_some_percent"]:
        evidence.append(f"I/O pressure: some task stalled on storage {io:.0f}% of the time (see loader-io-bound)")
        fixes.append("Storage is slow for this access pattern: see loader-io-bound.")
    if any(p.gpus for p in alive(job)) or waiting_gpus:
        fixes.append("pin_memory=True in DataLoader(...) and .to(device, non_blocking=True), so the copy to the GPU "
                     "overlaps compute.")
    names = ", ".join(who(by_pid.get(s.pid), s.pid) for s in starved)
    title = (f"GPU{','.join(map(str, waiting_gpus))} starved: {names} waits for data" if waiting_gpus else
             f"{names} waits for data")
    yield data_starved.finding("warning", title, tuple(evidence), tuple(dict.fromkeys(fixes)), scope="job",
                               gpus=tuple(waiting_gpus), pids=tuple(sorted(pids)))


# Workers are re-created between epochs, in bursts: a quiet half minute is not yet a fix.
@rule("worker-churn", hold_s=5, clear_s=30, order=170, watches="DataLoader workers born per minute",
      reads=("stack_min_samples", "worker_births_per_min", "worker_generations"))
def worker_churn(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    by_pid = {p.pid: p for p in job.processes}
    stacks = {s.pid: s for s in sampled(job, t)}
    for births, per_minute in churn(job, t):
        parent = by_pid.get(births.parent)
        evidence = [f"{who(parent, births.parent)} started {births.born} DataLoader workers in the last "
                    f"{max(births.span_s, 1):.0f} s: {per_minute:.0f} a minute (limit "
                    f"{t['worker_births_per_min']:.0f}), at most {births.peak_alive} running at once",
                    f"{job.workers_exited_last_minute} workers of the job exited in the last minute"]
        s = stacks.get(births.parent)
        if s is not None:
            evidence.append(f"its main thread was starting or joining workers in {100 * s.fraction('workers'):.0f}% "
                            f"and waiting for data in {100 * s.fraction('data'):.0f}% of {s.samples} stack samples")
        yield worker_churn.finding(
            "warning", "DataLoader workers re-created every epoch",
            tuple(evidence),
            ("DataLoader(..., num_workers=N, persistent_workers=True): the workers (and the copy of the Dataset "
             "each holds) stay alive across epochs instead of being forked again each time.",
             "Create each DataLoader once, outside the epoch loop (the same holds for the validation loader).",
             "Expensive Dataset.__init__ or worker_init_fn work is paid again by every new worker: keep it small."),
            scope=member_scope(parent, births.parent), pids=(births.parent,), cause="workers re-created",
            measure=per_minute)


@rule("single-core-loading", hold_s=5, clear_s=10, order=180, watches="one thread loading data while cores idle",
      reads=("core_pegged_percent", "data_wait_fraction", "loader_headroom", "loader_max_workers",
             "single_core_spare_cores", "stack_min_samples", "starved_step_speedup"))
def single_core_loading(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None or not job.usable_cores or job.usable_cores < 2:
        return
    job_cores = job_mean(window, lambda j: j.cpu_percent, 5.0)
    if job_cores is None:
        return
    job_cores /= 100.0
    spare = job.usable_cores - job_cores
    if spare < t["single_core_spare_cores"]:
        return
    stacks = {s.pid: s for s in sampled(job, t)}
    target, cores = _workers_target(job)
    for main in mains(job):
        if workers_of(job, main.pid):
            continue
        hot = process_mean(window, main.pid, lambda p: p.hot_thread_percent, 5.0)
        if hot is None or hot < t["core_pegged_percent"]:
            continue
        s = stacks.get(main.pid)
        if s is not None and s.fraction("data") < t["data_wait_fraction"]:
            continue  # one busy thread that is not loading data: not a loader problem
        evidence = [f"{who(main, main.pid)}: its thread {main.hot_thread_name or '?'} wants a whole core (running or "
                    f"queued {hot:.0f}% of the time) and it has no DataLoader workers (num_workers=0)",
                    f"the job uses {job_cores:.1f} of the {job.usable_cores} cores it may use: {spare:.1f} idle"]
        if s is not None:
            site = s.site("data")
            evidence.append(f"its main thread loads data itself in {100 * s.fraction('data'):.0f}% of {s.samples} "
                            "stack samples" + (" (_SingleProcessDataLoaderIter)" if s.data_loader == "single-process"
                                               else "") + (f", at {site}" if site else ""))
        else:
            evidence.append("no stack samples: it may be busy with something other than loading")
        cpu = window.latest.cpu
        if cpu is not None:
            evidence.append("cores now: " + ", ".join(f"{c.index} {percent(c.percent)}" for c in cpu.cores[:16]))
        fixes = []
        if s is not None:  # the workers it takes, from the samples: the same arithmetic as data-starved's
            lines, fixes = supply_lines(measured_supply(window, t, job, s), t)
            evidence += lines
        elif target is not None:
            fixes.append(f"DataLoader(num_workers={target}): {cores} usable cores / {rank_count(job)} rank(s), one "
                         "left for the main thread; loading then runs beside the training step.")
        fixes += ["persistent_workers=True with it, so the workers are not re-created each epoch.",
                  "Keep heavy per-sample work (decoding, augmentation) in Dataset.__getitem__, which the workers run, "
                  "not in the training loop."]
        yield single_core_loading.finding(
            "warning", "One core loads all the data", tuple(evidence),
            tuple(dict.fromkeys(fixes)),
            scope=member_scope(main, main.pid), pids=(main.pid,), cause="loading in the main thread",
            measure=hot)


@rule("loader-io-bound", hold_s=5, clear_s=10, order=200, watches="the job's I/O stalls while its ranks wait for data",
      reads=("blocked_worker_share", "core_pegged_percent", "data_wait_fraction", "io_psi_some_percent",
             "major_faults_per_s", "memory_psi_some_percent", "stack_min_samples"))
def loader_io_bound(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    starved = starved_ranks(window, t)
    jobs = recent_jobs(window, SPAN_S)
    worker_ticks = blocked_ticks = 0
    for snapshot in jobs:
        for p in snapshot.processes:
            if p.alive and p.role == WORKER and p.blocked_threads is not None:
                worker_ticks += 1
                blocked_ticks += p.blocked_threads > 0
    blocked = blocked_ticks / worker_ticks if worker_ticks else None
    io = job_mean(window, lambda j: j.pressure.io_some if j.pressure else None)
    reads = job_mean(window, lambda j: sum(p.read_bytes_per_s or 0.0 for p in alive(j)))
    waiting_on_io = (io is not None and io >= t["io_psi_some_percent"]) or \
        (blocked is not None and blocked >= t["blocked_worker_share"])
    if not starved or not waiting_on_io or not reads:
        return
    worker_cpu = mean(process_mean(window, p.pid, lambda q: q.cpu_percent, SPAN_S)
                      for p in alive(job) if p.role == WORKER)
    if worker_cpu is not None and worker_cpu >= t["core_pegged_percent"]:
        return  # CPU-bound workers: data-starved says so
    by_pid = {p.pid: p for p in alive(job)}
    evidence = [f"{who(by_pid.get(s.pid), s.pid)} waits for data in {100 * s.data_wait:.0f}% of "
                f"{s.samples} stack samples" for s in starved]
    if io is not None:
        evidence.append(f"I/O pressure ({job.pressure.source if job.pressure else 'system'}): some task stalled on "
                        f"storage {io:.0f}% of the last {SPAN_S:.0f} s (limit {t['io_psi_some_percent']:.0f}%)")
    if blocked is not None:
        evidence.append(f"DataLoader workers in D state (waiting on storage) in {100 * blocked:.0f}% of "
                        f"{worker_ticks} worker-ticks, using {percent(worker_cpu)} CPU each on average")
    evidence.append(f"the job reads {rate(reads)} from storage (past the page cache)")
    recent = window.recent(SPAN_S)
    for device, files in job.dataset_devices:
        disk_reads = mean(d.read_bytes_per_s for s in recent for d in s.disks if d.name == device)
        busy = mean(d.busy_percent for s in recent for d in s.disks if d.name == device)
        kind = next((d.kind for d in window.latest.disks if d.name == device), "unknown")
        evidence.append(f"dataset disk {device} ({kind}, {files} file(s) seen open): reads {rate(disk_reads)}, busy "
                        f"{percent(busy)}")
    available = window.latest.memory.available_bytes if window.latest.memory else None
    memory_stalls = job_mean(window, lambda j: j.pressure.memory_some if j.pressure else None)
    faults = job_mean(window, lambda j: sum(p.major_faults_per_s or 0.0 for p in alive(j)))
    refaults = (memory_stalls or 0.0) >= t["memory_psi_some_percent"] and (faults or 0.0) >= t["major_faults_per_s"]
    first: tuple[str, ...] = ()
    if refaults:  # the reads are the job's own pages coming back: memory, not storage, is short
        evidence.append(f"much of it is pages faulted back in ({faults:.0f}/s) under memory pressure "
                        f"({memory_stalls:.0f}%): see job-memory-pressure")
        first = ("Relieve the memory pressure first (job-memory-pressure): the dataset's pages are being evicted "
                 "and read again.",)
    yield loader_io_bound.finding(
        "warning", "Data loading waits on storage", tuple(evidence), first + (
        "Pack many small files into a few large shards read sequentially (WebDataset tar shards, one "
         "numpy.memmap array, LMDB): one large read per sample instead of an open and a small read per file.",
         "More DataLoader workers keep more reads in flight; storage serves parallel requests faster than one "
         "at a time.",
         "Let the page cache hold the dataset: one smaller than the free RAM"
         + (f" ({available / (1 << 30):.0f} GiB here)" if available else "") + " is read from disk once.",
         "Faster storage for the dataset: NVMe ~7 GB/s, SATA SSD ~550 MB/s, HDD ~150 MB/s."),
        scope="job", pids=tuple(s.pid for s in starved))
