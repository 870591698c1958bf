"""JobProbe: one JobSnapshot per tick, from readers that each keep their own state. The job's processes are found by
its focus and tree and read by its figures, which share one ProcessTable (as a GPU's readers share its handle);
its rows keep the ended ranks; its parts (workers, resources, ranks, their Flight Recorders, and whatever plugs in
next: parts.py) read the rest from what the tick found."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from hwtop.model.job import JobProcess, JobSnapshot, JobStatus, RankStacks
from hwtop.model.snapshot import GpuSnapshot
from hwtop.model.workload import WorkloadState
from hwtop.probes.job.figures import Place, ProcessFigures, ReadBudget
from hwtop.probes.job.flight import JobFlight
from hwtop.probes.job.focus import JobFocus
from hwtop.probes.job.parts import JobPart, JobParts, JobTick
from hwtop.probes.job.ranks import JobRanks
from hwtop.probes.job.records import ExitCodes, _Stat
from hwtop.probes.job.resources import DatasetDisks, JobResources
from hwtop.probes.job.rows import JobRows, ended_message
from hwtop.probes.job.state import StackSource
from hwtop.probes.job.table import ProcessTable
from hwtop.probes.job.tree import ProcessTree
from hwtop.probes.job.workers import WorkerCounts


class JobProbe:
    """A focused job, read each tick. `parts` are the readers of the job's other parts, in order: a new one is
    one more entry there (parts.py says what it is handed)."""

    __slots__ = ("_figures", "_rows", "_table", "_ticks", "_tree", "clock", "focus", "parts", "ranks")

    def __init__(self, roots: tuple[int, ...] = (), pattern: str | None = None, root: str = "/",
                 clock: Callable[[], float] = time.monotonic, label: str = "", sample_stacks: bool = False,
                 stacks: StackSource | None = None, exclude: frozenset[int] | None = None, host: str = "") -> None:
        """`roots` or `pattern` (a pid, a command-line pattern, slurm:ID, pod:NAME) name the job; `exclude`: hwtop
        and its ancestors, found when not given; `host`: the name its ranks carry, this host's when not given;
        `stacks`: the stack source (a py-spy sampler, made on first need when `sample_stacks`)."""
        self.clock = clock
        self._table = ProcessTable(os.path.join(root, "proc"))
        self.focus = JobFocus(self._table, roots, pattern, label, exclude, root)
        self._tree = ProcessTree(self._table, self.focus)
        exit_codes, disks = ExitCodes(), DatasetDisks()
        self._figures = ProcessFigures(root, exit_codes, disks)
        self._rows = JobRows(exit_codes)
        self.ranks = JobRanks(host or os.uname().nodename, sample_stacks, stacks)
        self.parts: tuple[JobPart, ...] = (
            WorkerCounts(),
            JobResources(root, self._table.proc, clock, disks),
            self.ranks,  # the ranks are joined to what readers before it filled (stacks)
            JobFlight(self._table.proc),  # after the ranks: sets each one's Flight Recorder
        )
        self._ticks = 0

    @property
    def roots(self) -> tuple[int, ...]:
        return self.focus.roots

    @property
    def note(self) -> str | None:
        """How the named pid led to the job (a rank → its launcher)."""
        return self.focus.note

    @property
    def label(self) -> str:
        return self.focus.label

    @property
    def host(self) -> str:
        return self.ranks.host

    def check(self, strict: bool = False) -> None:
        """At start: the job can be focused (raises JobError, one line); `strict` (doctor): and diagnosed."""
        self.focus.check(strict)

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot:
        wall = time.time() if now is None else now
        mono = self.clock()
        self._ticks += 1
        uptime = self._table.uptime()
        self.focus.rescan(mono)
        stats, order = self._tree.walk()
        roots = self.focus.present(stats)
        processes, python, environ = self._processes(stats, order, roots, mono, uptime, gpus, workload)
        self._tree.remember(processes, stats)
        last = self._rows.last
        rows = self._rows.read(processes, workload)
        self._table.forget(stats)
        self._rows.exit_codes.forget({s.pid for s in stats.values()}, self._rows.last)
        alive = [p for p in processes if p.state != "Z"]
        tick = JobTick(self._ticks, mono, wall, processes, alive, rows, last, roots, python, workload, environ)
        parts = JobParts()
        for part in self.parts:
            part.read(tick, parts)
        return self._snapshot(tick, self._rows.status(alive, wall), parts)

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """Where each rank's time went, with the samples of the chunks still running; sampling ends. For a report
        made at the end of a watch (doctor), which would otherwise miss up to a chunk's worth of samples."""
        return self.ranks.finish()

    def close(self) -> None:
        for part in self.parts:
            part.close()

    def _processes(self, stats: dict[int, _Stat], order: list[tuple[int, int]], roots: list[int], mono: float,
                   uptime: float | None, gpus: tuple[GpuSnapshot, ...],
                   workload: WorkloadState | None) -> tuple[list[JobProcess], set[int], dict[int, dict[str, str]]]:
        """A JobProcess for each of the job's processes, in tree order; the pids of those that run Python; the live
        ones' environments (the table's, read once per process)."""
        gpu_of: dict[int, list[tuple[int, int | None]]] = {}
        for gpu in gpus:
            for proc in gpu.processes:
                gpu_of.setdefault(proc.pid, []).append((gpu.index, proc.used_memory_bytes))
        workload_rank = {r.pid: r.rank for r in workload.ranks if r.pid} if workload else {}
        table, tree, figures, budget = self._table, self._tree, self._figures, ReadBudget()
        processes, python, environ = [], set(), {}
        for pid, depth in order:
            stat = stats[pid]
            static = table.static_of(stat)
            role, rank = tree.role(stat, static, stats, workload_rank)
            place = Place(depth, role, rank, rank is not None or pid in roots or depth == 0,
                          tuple(gpu_of.get(pid, ())))
            processes.append(figures.read(stat, static, table.tracked(stat, static), place, f"{table.proc}/{pid}",
                                          mono, uptime, budget))
            if static.python:
                python.add(pid)
            if static.environ is not None and stat.state != "Z":
                environ[pid] = static.environ
        figures.ticked(mono)
        return processes, python, environ

    def _snapshot(self, tick: JobTick, status: JobStatus, parts: JobParts) -> JobSnapshot:
        alive = tick.alive
        gpu_memory: dict[int, int] = {}
        for p in tick.processes:
            for index, used in p.gpus:
                gpu_memory[index] = gpu_memory.get(index, 0) + (used or 0)
        cpu = [p.cpu_percent for p in alive if p.cpu_percent is not None]
        return JobSnapshot(
            self.focus.title(tick.roots, self._tree.members), tuple(tick.roots) or self.focus.roots, status,
            tuple(tick.rows), round(sum(cpu), 1) if cpu else None, sum(p.rss_bytes or 0 for p in alive),
            tuple(sorted(gpu_memory.items())), self._rows.ended_at, self._message(status, tick), self._tree.seen,
            pss_bytes=sum((p.pss_bytes if p.pss_bytes is not None else p.rss_bytes or 0) for p in alive)
            if any(p.pss_bytes is not None for p in alive) else None,
            workers_started_last_minute=parts.workers_started_last_minute,
            workers_exited_last_minute=parts.workers_exited_last_minute, worker_births=parts.worker_births,
            usable_cores=parts.usable_cores, pressure=parts.pressure, cgroup_memory=parts.cgroup_memory,
            stacks=parts.stacks, stack_message=parts.stack_message, worker_stacks=parts.worker_stacks,
            dataset_devices=parts.dataset_devices, swap_in_pages_per_s=parts.swap_in_pages_per_s, ranks=parts.ranks)

    def _message(self, status: str, tick: JobTick) -> str | None:
        if status == "ended":
            return ended_message(tick.rows)
        if any(p.numa_pages is None and p.alive and p.rank is not None for p in tick.processes):
            return "some of the job's /proc files are not readable by this user (numa_maps, io, environ)"
        return self.focus.note
