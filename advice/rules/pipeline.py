"""gpu-starved, cpu-single-core and io-bound: the input pipeline cannot keep the training step fed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hwtop.advice.data_wait import churn_cause, job_data_wait, starved_ranks, stuck_worker_of, telemetry_starved
from hwtop.advice.grouping import alike
from hwtop.advice.job_facts import running_job
from hwtop.advice.registry import rule
from hwtop.advice.supply import Supply, supply_lines
from hwtop.advice.text import command, rate
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import (
    Window,
    children,
    compute_pids,
    empty_job_config,
    gpus_in_use,
    mean,
    workload_starting,
)
from hwtop.model.finding import Finding
from hwtop.model.snapshot import CoreLoad, DiskSnapshot, GpuSnapshot, ProcessInfo, Snapshot

if TYPE_CHECKING:
    from hwtop.model.workload import JobConfig, RankState, WorkloadState

SPAN_S = 10.0  # utilisations and disk rates are averaged over this much of the recent past


def waiting_gpus(window: Window, t: Thresholds) -> list[tuple[GpuSnapshot, float]]:
    """GPUs a process computes on whose utilisation stayed under the waiting threshold."""
    out = []
    for gpu in gpus_in_use(window.latest):
        util = window.gpu_mean(gpu.index, lambda g: g.util_percent, SPAN_S)
        if util is not None and util < t["gpu_waiting_util_percent"]:
            out.append((gpu, util))
    return out


def telemetry_supply(window: Window, workload: WorkloadState, waits: dict[int, float]) -> Supply | None:
    """What the workers can do, from the job's own telemetry: a worker's time per batch (batch size x the
    transform's CPU per sample) against the step's own time (its step time less the share it waits)."""
    config = workload.config or empty_job_config()
    workers, cost = config.num_workers, config.transform_cost_ms
    steps = [(r.step_time_s, waits.get(r.rank)) for r in workload.ranks if r.step_time_s]
    batch = config.batch_size or next((r.batch_size for r in workload.ranks if r.batch_size), None)
    if workers is None or not cost or not batch or not steps:
        return None
    step = sum(s for s, _ in steps) / len(steps)
    wait = sum(w or 0.0 for _, w in steps) / len(steps)
    own = step * (1.0 - wait)
    if own <= 0:
        return None
    batch_s = batch * cost / 1000.0
    cores, what = _logical_cores(window.latest)
    text = (f"a batch takes one worker {batch} samples x {cost:g} ms = {batch_s:.2f} s; the step's own time is "
            f"{own:.2f} s ({step:.2f} s a step, {100 * wait:.0f}% of it waiting): {batch_s / own:.1f}x")
    return Supply(workers, batch_s / own, 1.0, cores, config.world_size or len(workload.ranks) or 1, text, what)


def _logical_cores(snapshot: Snapshot) -> tuple[int | None, str | None]:
    """(logical CPUs, what they are where not plain: "256 logical CPUs on 128 cores" on an SMT box)."""
    cpu = snapshot.cpu
    if cpu is None:
        return None, None
    smt = cpu.physical_cores and cpu.physical_cores != cpu.logical_cores
    return cpu.logical_cores, (f"{cpu.logical_cores} logical CPUs on {cpu.physical_cores} cores" if smt else None)


def _worker_fix(snapshot: Snapshot, workers: int | None, world: int, affinity: int | None) -> tuple[str, ...]:
    cpu = snapshot.cpu
    cores = affinity or (cpu.logical_cores if cpu else None)
    # logical CPUs (hardware threads), as the affinity counts them: on an SMT box not the same as cores
    smt = cpu is not None and not affinity and cpu.physical_cores and cpu.physical_cores != cpu.logical_cores
    what = f"{cores} logical CPUs on {cpu.physical_cores} cores" if smt and cpu else f"{cores} logical CPUs"
    fixes = []
    if cores:
        target = max(1, cores // max(1, world) - 1)
        if workers is None or workers < target:
            fixes.append(f"Raise DataLoader num_workers{'' if workers is None else f' from {workers}'} to about "
                         f"{target} ({what} the job may use / {world} rank(s), one left for the main "
                         "process).")
        else:
            fixes.append(f"num_workers={workers} already covers the {what}: make each sample cheaper "
                         "(decode once and cache tensors, smaller images) or move augmentation to the GPU "
                         "(torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI).")
    return tuple(fixes)


def _told_by_stacks(window: Window, t: Thresholds) -> set[int]:
    """The ranks data-starved names from a focused job's stacks (their main threads wait for data): a GPU of theirs
    that waits is its finding, with the job's own figures, not a second one here."""
    job = running_job(window)
    if job is None:
        return set()
    return {s.pid for s in starved_ranks(window, t) if not stuck_worker_of(window, t, job, s.pid)}


STORAGE_FIX = ("Check storage: if iowait is high or the dataset disk is near its class's throughput, see "
               "io-bound.")


@rule("gpu-starved", hold_s=5, clear_s=10, order=20, watches="data wait against GPU utilisation",
      reads=("core_pegged_percent", "data_wait_fraction", "gpu_waiting_util_percent", "loader_headroom",
             "loader_max_workers", "stack_min_samples", "starved_step_speedup", "stuck_cpu_percent",
             "stuck_stack_s", "stuck_switches_per_s", "worker_births_per_min", "worker_generations"))
def gpu_starved(window: Window, t: Thresholds) -> Iterator[Finding]:
    """Two cases. The embedded job's telemetry says its step waits for data: this rule tells it (data-starved,
    which reads the same wait from the ranks' stacks, leaves those ranks to it). No telemetry: a waiting GPU whose
    process's DataLoader workers are all pegged or re-created, unless data-starved already names that process
    from its stacks, which say more (the wait itself, the workers' share, the arithmetic of the fix)."""
    waits = job_data_wait(window)
    workload = window.latest.workload
    if waits and workload is not None:
        found = telemetry_starved(window, t)
        if found is not None:
            yield _telemetry_finding(window, t, workload, waits, found)
        return
    # No telemetry: a waiting GPU whose process's DataLoader workers are all pegged, or re-created each epoch.
    waiting = waiting_gpus(window, t)
    named = _told_by_stacks(window, t) if waiting else set()
    for gpu, util in waiting:
        for pid in compute_pids(gpu):
            if pid in named:
                continue  # data-starved names this rank, from its stacks: one finding for one cause
            found_here = _starved_by_workers(window, t, gpu, util, pid)
            if found_here is not None:
                yield found_here


def _telemetry_finding(window: Window, t: Thresholds, workload: WorkloadState, waits: dict[int, float],
                       found: tuple[float, dict[int, float | None]]) -> Finding:
    """The embedded job's step waits for data, by its own figures: the wait, what the loader is set to, and the
    count of workers that keeps up (the workers' arithmetic where it can be done, else the cores)."""
    mean_wait, utils = found
    config = workload.config or empty_job_config()
    evidence = _wait_lines(t, waits, mean_wait, utils)
    if config.num_workers is not None:
        evidence.append(_loader_line(config, config.num_workers, workload.ranks))
    supply = telemetry_supply(window, workload, waits)
    if supply is not None:  # the same arithmetic as an attached job's (advice/supply.py)
        lines, fixes = supply_lines(supply, t)
        evidence += lines
    else:
        fixes = _count_fixes(window.latest, config.num_workers, config.world_size or len(waits) or 1)
    if config.device == "cuda" and not config.pin_memory:
        fixes.append("pin_memory=True, and .to(device, non_blocking=True), so copies overlap compute.")
    fixes.append(STORAGE_FIX)
    churn_evidence, churn_fix = churn_cause(window, t, set(workload.pids))
    evidence += churn_evidence
    fixes[:0] = churn_fix  # a loader that restarts its workers every epoch: that first
    return gpu_starved.finding("warning", "Training waits on data loading", tuple(evidence), tuple(fixes),
                               scope="job", gpus=tuple(utils), pids=workload.pids, measure=100 * mean_wait)


def _wait_lines(t: Thresholds, waits: dict[int, float], mean_wait: float,
                utils: dict[int, float | None]) -> list[str]:
    """How long the step waits, rank by rank, and how busy the job's GPUs are meanwhile."""
    per_rank = ", ".join(f"{ranks} {shown}" for shown, ranks in alike(
        {r: 100 * v for r, v in sorted(waits.items())}, "rank ").items())
    lines = [f"the training step waits for its next batch {100 * mean_wait:.0f}% of the time ({per_rank}; "
             f"limit {100 * t['data_wait_fraction']:.0f}%)"]
    return lines + [f"{gpus} util {shown} over the last {SPAN_S:.0f} s" for shown, gpus in alike(utils).items()]


def _loader_line(config: JobConfig, workers: int, ranks: tuple[RankState, ...]) -> str:
    """The loader's settings, and what its workers can make against what the ranks train where both are known."""
    line = (f"DataLoader num_workers={workers}, pin_memory={config.pin_memory}, "
            f"{config.transform_cost_ms} ms CPU per sample")
    trained = [r.samples_per_s for r in ranks if r.samples_per_s is not None]
    if workers and config.transform_cost_ms and trained:
        supply = workers * 1000.0 / config.transform_cost_ms
        line += (f": {workers} worker(s) make at most {supply:.0f} samples/s per rank, the ranks train "
                 f"{sum(trained) / len(trained):.0f} samples/s each")
    return line


def _count_fixes(snapshot: Snapshot, workers: int | None, world: int) -> list[str]:
    """Without the workers' arithmetic: a count from the cores, and workers that outlive an epoch once any run."""
    fixes = list(_worker_fix(snapshot, workers, world, None))
    if workers == 0:
        fixes.append("persistent_workers=True once num_workers > 0, so workers survive across epochs.")
    return fixes


def _starved_by_workers(window: Window, t: Thresholds, gpu: GpuSnapshot, util: float, pid: int) -> Finding | None:
    """A waiting GPU's process whose DataLoader workers are all CPU-bound, or re-created each epoch."""
    latest = window.latest
    workers = children(latest.processes, pid)
    busy = [w for w in workers if (w.cpu_percent or 0) >= t["core_pegged_percent"]]
    churn_evidence, churn_fix = churn_cause(window, t, {pid})
    churning = bool(churn_evidence)
    if not churning and (not workers or len(busy) < len(workers)):
        return None
    main = next((p for p in latest.processes if p.pid == pid), None)
    affinity = len(main.cpu_affinity) if main and main.cpu_affinity else None
    lines = [f"GPU{gpu.index} util {util:.0f}% over the last {SPAN_S:.0f} s (limit "
             f"{t['gpu_waiting_util_percent']:.0f}%)"]
    if workers and len(busy) == len(workers):
        lines.append(f"all {len(workers)} worker(s) of pid {pid} are CPU-bound: "
                     + ", ".join(f"{w.pid} {w.cpu_percent:.0f}%" for w in busy[:6]))
    fixes = _worker_fix(latest, len(workers), 1, affinity) + (
        "pin_memory=True and non_blocking copies; persistent_workers=True.",
        "Move augmentation to the GPU or cache preprocessed samples.")
    lines += churn_evidence
    return gpu_starved.finding(
        "warning", f"GPU{gpu.index} starved by its DataLoader workers", tuple(lines),
        tuple(churn_fix) + fixes, scope=f"GPU{gpu.index}", gpus=(gpu.index,),
        pids=(pid,) + tuple(w.pid for w in busy), cause="workers re-created" if churning else "workers CPU-bound",
        measure=100 - util)


@rule("cpu-single-core", hold_s=5, clear_s=10, order=30, watches="per-core load while GPUs wait",
      reads=("core_idle_percent", "core_pegged_percent", "data_wait_fraction", "gpu_waiting_util_percent",
             "idle_core_share", "min_cores_for_single_core", "stack_min_samples", "stuck_cpu_percent",
             "stuck_stack_s", "stuck_switches_per_s"))
def cpu_single_core(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    waiting = waiting_gpus(window, t)
    if latest.cpu is None or not waiting or workload_starting(latest):
        return
    if telemetry_starved(window, t) is not None or _told_by_stacks(window, t):
        return  # the step waits for data: gpu-starved or data-starved says so, the hot core a loader's worker
    loads = _core_loads(window, latest.cpu.cores)
    hot = _one_hot_core(loads, t)
    if hot is None:
        return
    core, idle, others = hot
    evidence = [f"core {core} at {loads[core]:.0f}% while {idle} of {others} other cores are below "
                f"{t['core_idle_percent']:.0f}%"]
    evidence += [f"{gpus} util {shown}" for shown, gpus in alike({g.index: u for g, u in waiting}).items()]
    hot_procs = _hot_processes(latest, waiting, t)
    evidence += [f"pid {p.pid} {command(p.name, p.cmdline, 40)} at {p.cpu_percent:.0f}% CPU" for p in hot_procs[:2]]
    target = hot_procs[0].pid if hot_procs else "PID"
    yield cpu_single_core.finding(
        "warning", "One CPU core is the bottleneck", tuple(evidence),
        ("The main Python process does the work on one core (the GIL keeps it there): move loading and "
         "augmentation into DataLoader(num_workers=N) worker processes.",
         f"See where it spends the time: py-spy top --pid {target}.",
         "Keep per-step Python work small: no .item()/.cpu() syncs or Python-side metrics every step."),
        cores=(core,), gpus=tuple(g.index for g, _ in waiting), pids=tuple(p.pid for p in hot_procs[:2]))


def _core_loads(window: Window, cores: tuple[CoreLoad, ...]) -> dict[int, float]:
    """Each of `cores`' mean load over the last 5 s."""
    recent = window.recent(5.0)
    loads: dict[int, float] = {}
    for core in cores:
        value = mean(c.percent for s in recent if s.cpu for c in s.cpu.cores if c.index == core.index)
        if value is not None:
            loads[core.index] = value
    return loads


def _one_hot_core(loads: dict[int, float], t: Thresholds) -> tuple[int, int, int] | None:
    """(the one pegged core, how many of the others idle, how many others) where exactly one core is pegged and
    most others idle; None otherwise."""
    if len(loads) < t["min_cores_for_single_core"]:
        return None
    hot = [i for i, v in loads.items() if v >= t["core_pegged_percent"]]
    if len(hot) != 1:
        return None
    others = [v for i, v in loads.items() if i != hot[0]]
    idle = sum(1 for v in others if v < t["core_idle_percent"])
    if idle < t["idle_core_share"] * len(others):
        return None
    return hot[0], idle, len(others)


def _hot_processes(latest: Snapshot, waiting: list[tuple[GpuSnapshot, float]], t: Thresholds) -> list[ProcessInfo]:
    """Processes at a pegged core's load, those on the waiting GPUs first, then the busiest."""
    gpu_pids = {pid for g, _ in waiting for pid in compute_pids(g)}
    hot_procs = [p for p in latest.processes if (p.cpu_percent or 0) >= t["core_pegged_percent"]]
    hot_procs.sort(key=lambda p: (p.pid not in gpu_pids, -(p.cpu_percent or 0)))
    return hot_procs


CLASS_THRESHOLD = {"hdd": "hdd_bytes_per_s", "ssd": "ssd_bytes_per_s", "nvme": "nvme_bytes_per_s"}


@rule("io-bound", hold_s=5, clear_s=10, order=70, watches="iowait and disk throughput against its class",
      reads=("data_wait_fraction", "disk_busy_percent", "disk_class_share", "gpu_waiting_util_percent",
             "iowait_percent", "hdd_bytes_per_s", "ssd_bytes_per_s", "nvme_bytes_per_s"))
def io_bound(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    waiting = waiting_gpus(window, t)
    waits = job_data_wait(window)
    input_bound = [r for r, v in waits.items() if v >= t["data_wait_fraction"]]
    if not waiting and not input_bound:
        return
    evidence = _storage_lines(window, t)
    if not evidence:
        return
    evidence += [f"{gpus} util {shown}" for shown, gpus in alike({g.index: u for g, u in waiting}).items()]
    evidence += [f"rank {r} waits for data {100 * waits[r]:.0f}% of each step" for r in input_bound]
    available = latest.memory.available_bytes if latest.memory else None
    yield io_bound.finding(
        "warning", "Storage is holding up training", tuple(evidence),
        ("Faster storage for the dataset: NVMe ~7 GB/s, SATA SSD ~550 MB/s, HDD ~150 MB/s.",
         "Let the page cache hold it: a dataset smaller than the available RAM"
         + (f" ({available / (1 << 30):.0f} GiB here)" if available else "") + " is read from disk once.",
         "Memory-mapped or sharded datasets (numpy.memmap, WebDataset tar shards, LMDB) read sequentially instead "
         "of one small file per sample.",
         "More DataLoader workers keep more reads in flight."),
        gpus=tuple(g.index for g, _ in waiting))


def _storage_lines(window: Window, t: Thresholds) -> list[str]:
    """What says the storage is the limit: the CPUs' iowait, and each disk reading near its class's throughput or
    busy nearly all the time (empty: storage keeps up)."""
    recent = window.recent(SPAN_S)
    lines = []
    iowait = mean(c.iowait for s in recent if s.cpu for c in s.cpu.cores)
    if iowait is not None and iowait >= t["iowait_percent"]:
        lines.append(f"CPUs wait on I/O {iowait:.0f}% of the time (limit {t['iowait_percent']:.0f}%)")
    for disk in window.latest.disks:
        line = _disk_line(disk, recent, t)
        if line is not None:
            lines.append(line)
    return lines


def _disk_line(disk: DiskSnapshot, recent: tuple[Snapshot, ...], t: Thresholds) -> str | None:
    reads = mean(d.read_bytes_per_s for s in recent for d in s.disks if d.name == disk.name)
    busy = mean(d.busy_percent for s in recent for d in s.disks if d.name == disk.name)
    key = CLASS_THRESHOLD.get(disk.kind)
    if key and reads is not None and reads >= t["disk_class_share"] * t[key]:
        return (f"{disk.name} ({disk.kind}) reads {rate(reads)}, {100 * reads / t[key]:.0f}% of its class's "
                f"~{rate(t[key])}")
    if busy is not None and busy >= t["disk_busy_percent"]:
        return f"{disk.name} ({disk.kind}) busy {busy:.0f}% of the time, reading {rate(reads)}"
    return None
