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
from hwtop.advice.loading import core_use, measured_supply
from hwtop.advice.registry import rule
from hwtop.advice.supply import CoreUse, supply_lines
from hwtop.advice.text import percent, rate
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, mean
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot, RankStacks

SPAN_S = 10.0


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
    starved = _starved(window, t, job) if job is not None else []
    if job is None or not starved:
        return
    by_pid = {p.pid: p for p in alive(job)}
    evidence = [line for s in starved for line in _wait_lines(s, by_pid.get(s.pid), t)]
    pids = {s.pid for s in starved}
    waiting = _waiting_gpus(window, t, by_pid)
    waits = "it waits with the rank" if len(waiting) == 1 else "they wait with their ranks"
    evidence += [f"{gpus} util {shown} over the last {SPAN_S:.0f} s: {waits}" for shown, gpus in alike(waiting).items()]
    churn_evidence, fixes = churn_cause(window, t, pids)
    evidence += churn_evidence
    evidence += _single_process(job, starved)
    for s in starved[:1] if len(starved) > 1 and alike_ranks(job, starved) else starved:
        lines, supply_fixes = supply_lines(measured_supply(window, t, job, s), t)  # a deeper prefetch only where
        evidence += lines  # the workers keep up: it delays the stall of workers that cannot
        fixes += supply_fixes
    io_evidence, io_fixes = _io_pressure(window, t)
    evidence += io_evidence
    fixes += io_fixes
    if any(p.gpus for p in alive(job)) or waiting:
        fixes.append("pin_memory=True in DataLoader(...) and .to(device, non_blocking=True), so the copy to the GPU "
                     "overlaps compute.")
    names = ", ".join(who(by_pid.get(s.pid), s.pid) for s in starved)
    yield data_starved.finding("warning", _title(names, waiting), tuple(evidence), tuple(dict.fromkeys(fixes)),
                               scope="job", gpus=tuple(waiting), pids=tuple(sorted(pids)))


def _starved(window: Window, t: Thresholds, job: JobSnapshot) -> list[RankStacks]:
    """The ranks waiting for data this rule names: not a hang (worker-stuck says so), not the embedded job's ranks
    whose own step figures say the same wait (gpu-starved's)."""
    told = told_by_telemetry(window, t)
    return [s for s in starved_ranks(window, t) if not stuck_worker_of(window, t, job, s.pid) and s.pid not in told]


def _single_process(job: JobSnapshot, starved: list[RankStacks]) -> list[str]:
    single = [s for s in starved if s.data_loader == "single-process" or not workers_of(job, s.pid)]
    return [f"{len(single)} of them load(s) data in the main thread: DataLoader num_workers=0"] if single else []


def _title(names: str, waiting: dict[int, float | None]) -> str:
    if waiting:
        return f"GPU{','.join(map(str, waiting))} starved: {names} waits for data"
    return f"{names} waits for data"


def _wait_lines(s: RankStacks, process: JobProcess | None, t: Thresholds) -> list[str]:
    site = s.site("data")
    handover = (f"; receiving batches already made in {100 * s.handover:.0f}% more, not counted" if s.handover
                else "")
    return [f"{who(process, s.pid)}: main thread waiting for data in {100 * s.data_wait:.0f}% of {s.samples} stack "
            f"samples over {s.window_s:.0f} s (limit {100 * t['data_wait_fraction']:.0f}%)"
            + (f", at {site}" if site else "") + handover,
            f"  where its time goes: {stacks_line(s)}"]


def _waiting_gpus(window: Window, t: Thresholds, by_pid: dict[int, JobProcess]) -> dict[int, float | None]:
    """The job's GPUs under the waiting utilisation: they wait with their ranks."""
    waiting: dict[int, float | None] = {}
    for gpu in window.latest.gpus:
        if set(compute_pids(gpu)) & set(by_pid):
            util = window.gpu_mean(gpu.index, lambda g: g.util_percent, SPAN_S)
            if util is not None and util < t["gpu_waiting_util_percent"]:
                waiting[gpu.index] = util
    return waiting


def _io_pressure(window: Window, t: Thresholds) -> tuple[list[str], list[str]]:
    io = job_mean(window, lambda j: j.pressure.io_some if j.pressure else None)
    if io is None or io < t["io_psi_some_percent"]:
        return [], []
    return ([f"I/O pressure: some task stalled on storage {io:.0f}% of the time (see loader-io-bound)"],
            ["Storage is slow for this access pattern: see loader-io-bound."])


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
    use = core_use(window, job, 5.0) or _use_without_cores(window, job)
    if use is None or use.free < t["single_core_spare_cores"]:
        return  # no core idle beside it: the job's own threads or the box's other programs use them
    stacks = {s.pid: s for s in sampled(job, t)}
    for main in mains(job):
        if workers_of(job, main.pid):
            continue
        hot = process_mean(window, main.pid, lambda p: p.hot_thread_percent, 5.0)
        if hot is None or hot < t["core_pegged_percent"]:
            continue
        s = stacks.get(main.pid)
        if s is not None and s.fraction("data") < t["data_wait_fraction"]:
            continue  # one busy thread that is not loading data: not a loader problem
        evidence, fixes = _one_core(window, t, job, main, s, use)
        evidence[0] = (f"{who(main, main.pid)}: its thread {main.hot_thread_name or '?'} wants a whole core (running "
                       f"or queued {hot:.0f}% of the time) and it has no DataLoader workers (num_workers=0)")
        yield single_core_loading.finding(
            "warning", "One core loads all the data", tuple(evidence), tuple(dict.fromkeys(fixes)),
            scope=member_scope(main, main.pid), pids=(main.pid,), cause="loading in the main thread", measure=hot)


def _use_without_cores(window: Window, job: JobSnapshot) -> CoreUse | None:
    """The job's use of its cores where the box's per-core load is not known: no one else's counted."""
    own = job_mean(window, lambda j: j.cpu_percent, 5.0)
    usable = job.usable_cores
    return None if own is None or not usable else CoreUse(usable, usable, own / 100.0, 0.0)


def _one_core(window: Window, t: Thresholds, job: JobSnapshot, main: JobProcess, s: RankStacks | None,
              use: CoreUse) -> tuple[list[str], list[str]]:
    """(evidence, fixes) of one main thread loading alone; evidence[0] is its caller's."""
    evidence = ["", use.line()]
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
        evidence += [line for line in lines if line != use.line()]
    else:
        free = max(1, int(use.free / rank_count(job)))
        fixes.append(f"DataLoader(num_workers={free}): the {use.free:.1f} core(s) free beside the job / "
                     f"{rank_count(job)} rank(s); loading then runs beside the training step.")
    fixes += ["persistent_workers=True with it, so the workers are not re-created each epoch.",
              "Keep heavy per-sample work (decoding, augmentation) in Dataset.__getitem__, which the workers run, "
              "not in the training loop."]
    return evidence, fixes


@rule("loader-io-bound", hold_s=5, clear_s=10, order=200, watches="the job's I/O stalls while its ranks wait for data",
      reads=("blocked_worker_share", "core_pegged_percent", "data_wait_fraction", "io_psi_some_percent",
             "major_faults_per_s", "memory_psi_some_percent", "stack_min_samples"))
def loader_io_bound(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    starved = starved_ranks(window, t)
    blocked, worker_ticks = _blocked_share(recent_jobs(window, SPAN_S))
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
    evidence += _stall_lines(job, t, io, blocked, worker_ticks, worker_cpu)
    evidence.append(f"the job reads {rate(reads)} from storage (past the page cache)")
    evidence += _dataset_disks(window, job)
    refault_evidence, first = _refaults(window, t)
    available = window.latest.memory.available_bytes if window.latest.memory else None
    yield loader_io_bound.finding(
        "warning", "Data loading waits on storage", tuple(evidence + refault_evidence), first + (
            "Pack many small files into a few large shards read sequentially (WebDataset tar shards, one "
            "numpy.memmap array, LMDB): one large read per sample instead of an open and a small read per file.",
            "More DataLoader workers keep more reads in flight; storage serves parallel requests faster than one "
            "at a time.",
            "Let the page cache hold the dataset: one smaller than the free RAM"
            + (f" ({available / (1 << 30):.0f} GiB here)" if available else "") + " is read from disk once.",
            "Faster storage for the dataset: NVMe ~7 GB/s, SATA SSD ~550 MB/s, HDD ~150 MB/s."),
        scope="job", pids=tuple(s.pid for s in starved))


def _stall_lines(job: JobSnapshot, t: Thresholds, io: float | None, blocked: float | None, worker_ticks: int,
                 worker_cpu: float | None) -> list[str]:
    lines = []
    if io is not None:
        lines.append(f"I/O pressure ({job.pressure.source if job.pressure else 'system'}): some task stalled on "
                     f"storage {io:.0f}% of the last {SPAN_S:.0f} s (limit {t['io_psi_some_percent']:.0f}%)")
    if blocked is not None:
        lines.append(f"DataLoader workers in D state (waiting on storage) in {100 * blocked:.0f}% of "
                     f"{worker_ticks} worker-ticks, using {percent(worker_cpu)} CPU each on average")
    return lines


def _blocked_share(jobs: list[JobSnapshot]) -> tuple[float | None, int]:
    """(share of worker-ticks with a thread in D state, worker-ticks read) over the recent past."""
    worker_ticks = blocked_ticks = 0
    for snapshot in jobs:
        for p in snapshot.processes:
            if p.alive and p.role == WORKER and p.blocked_threads is not None:
                worker_ticks += 1
                blocked_ticks += p.blocked_threads > 0
    return (blocked_ticks / worker_ticks if worker_ticks else None), worker_ticks


def _dataset_disks(window: Window, job: JobSnapshot) -> list[str]:
    recent = window.recent(SPAN_S)
    lines = []
    for device, files in job.dataset_devices:
        disk_reads = mean(d.read_bytes_per_s for s in recent for d in s.disks if d.name == device)
        busy = mean(d.busy_percent for s in recent for d in s.disks if d.name == device)
        kind = next((d.kind for d in window.latest.disks if d.name == device), "unknown")
        lines.append(f"dataset disk {device} ({kind}, {files} file(s) seen open): reads {rate(disk_reads)}, busy "
                     f"{percent(busy)}")
    return lines


def _refaults(window: Window, t: Thresholds) -> tuple[list[str], tuple[str, ...]]:
    """Reads that are the job's own pages coming back under memory pressure: memory, not storage, is short."""
    memory_stalls = job_mean(window, lambda j: j.pressure.memory_some if j.pressure else None)
    faults = job_mean(window, lambda j: sum(p.major_faults_per_s or 0.0 for p in alive(j)))
    if (memory_stalls or 0.0) < t["memory_psi_some_percent"] or (faults or 0.0) < t["major_faults_per_s"]:
        return [], ()
    return ([f"much of it is pages faulted back in ({faults:.0f}/s) under memory pressure ({memory_stalls:.0f}%): "
             "see job-memory-pressure"],
            ("Relieve the memory pressure first (job-memory-pressure): the dataset's pages are being evicted and "
             "read again.",))
