"""JobProbe: one JobSnapshot per tick, composed from the parts (focus, tree, figures, workers, resources, ranks)."""

from __future__ import annotations

import time

import msgspec.structs

from hwtop.model.job import JobProcess, JobSnapshot, RankStacks
from hwtop.model.snapshot import GpuSnapshot
from hwtop.model.workload import WorkloadState
from hwtop.probes.cgroup import memory_of
from hwtop.probes.job.figures import FDS_PER_TICK, PSS_PER_TICK, ProcessFigures
from hwtop.probes.job.focus import PATTERN_RESCAN_S
from hwtop.probes.job.ranks import JobRanks
from hwtop.probes.job.resources import JobResources
from hwtop.probes.job.state import WORKER
from hwtop.probes.job.workers import WorkerCounts

MAX_GONE_ROWS = 32  # ended ranks/launchers kept as rows (with exit codes); workers are only counted
KEPT_WHEN_GONE = ("launcher",)  # and ranks and roots


class JobProbe(ProcessFigures, WorkerCounts, JobResources, JobRanks):
    """A focused job, read each tick (its fields: JobState); the parts it reads are its bases."""

    __slots__ = ()

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot:
        wall = time.time() if now is None else now
        mono = self.clock()
        self._ticks += 1
        uptime = self._uptime()
        if self._searching and mono - self._matched_at >= PATTERN_RESCAN_S:
            self._matched_at = mono
            self._find_matches(self._stats())
        stats, order = self._walk()
        self._env_launchers = self._launchers_by_children(stats)
        roots = [pid for pid in (*self.roots, *self._matched) if pid in stats]
        gpu_of: dict[int, list[tuple[int, int | None]]] = {}
        for gpu in gpus:
            for proc in gpu.processes:
                gpu_of.setdefault(proc.pid, []).append((gpu.index, proc.used_memory_bytes))
        workload_rank = {r.pid: r.rank for r in workload.ranks if r.pid} if workload else {}
        budget = {"pss": PSS_PER_TICK, "fds": FDS_PER_TICK}
        processes = []
        for pid, depth in order:
            processes.append(self._process(stats[pid], depth, mono, uptime, stats, gpu_of, workload_rank, budget,
                                           pid in roots))
        self._python = {pid for pid, _ in order if self._static_of(stats[pid]).python}
        new = [p.pid for p in processes if p.pid not in self._members]
        self._seen += len(new)
        self._count_workers(processes, mono)
        self._members = {p.pid: stats[p.pid].start for p in processes}
        alive = [p for p in processes if p.state != "Z"]
        current = {p.pid: p for p in processes}
        for pid, last in self._last.items():  # gone since the last tick
            if pid in current:
                continue
            if last.role == WORKER and last.alive:
                self._exits.append(mono)
            if not (last.role.startswith("rank") or last.role in KEPT_WHEN_GONE or last.depth == 0):
                continue  # a worker or helper that ended: counted, not kept
            current[pid] = last if not last.alive else msgspec.structs.replace(
                last, alive=False, state="gone", cpu_percent=None, exit_code=self._exit_codes.get(pid, last.exit_code))
        if workload is not None and workload.exit_code is not None:
            for pid in workload.pids:
                if pid in current and not current[pid].alive and current[pid].exit_code is None:
                    current[pid] = msgspec.structs.replace(current[pid], exit_code=workload.exit_code)
        live_pids = {p.pid for p in processes}
        gone = [p for pid, p in current.items() if pid not in live_pids][-MAX_GONE_ROWS:]
        ordered = [current[p.pid] for p in processes] + gone
        self._last = {p.pid: p for p in ordered}
        self._previous_tick = mono
        self._forget(stats)
        status = "running" if alive else "ended"
        if status == "ended" and self._ended_at is None:
            self._ended_at = wall
        elif status == "running":
            self._ended_at = None
        message = self._message(status, ordered, processes)
        gpu_memory: dict[int, int] = {}
        for p in processes:
            for index, used in p.gpus:
                gpu_memory[index] = gpu_memory.get(index, 0) + (used or 0)
        cpu = [p.cpu_percent for p in alive if p.cpu_percent is not None]
        stacks, stack_message = self._stacks(alive)
        return JobSnapshot(
            self._title(roots), tuple(roots) or self.roots, status, tuple(ordered),
            round(sum(cpu), 1) if cpu else None, sum(p.rss_bytes or 0 for p in alive),
            tuple(sorted(gpu_memory.items())), self._ended_at, message, self._seen,
            pss_bytes=sum((p.pss_bytes if p.pss_bytes is not None else p.rss_bytes or 0) for p in alive)
            if any(p.pss_bytes is not None for p in alive) else None,
            workers_started_last_minute=sum(1 for _, _ in self._births),
            workers_exited_last_minute=len(self._exits),
            worker_births=self._worker_births(mono),
            usable_cores=self._usable_cores(alive, roots),
            pressure=self._read_pressure(roots),
            cgroup_memory=memory_of(self._cgroups, self.root) if self._cgroups is not None else None,
            stacks=stacks, stack_message=stack_message,
            worker_stacks=self.stacks.worker_results() if self.stacks is not None else (),
            dataset_devices=self._dataset_devices(mono), swap_in_pages_per_s=self._swap_in(mono),
            ranks=self._ranks(ordered, stacks, workload))

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """Where each rank's time went, with the samples of the chunks still running; sampling ends. For a report
        made at the end of a watch (doctor), which would otherwise miss up to a chunk's worth of samples."""
        if self.stacks is None:
            return None
        self.stacks.finish()
        return self.stacks.results()[0]

    def close(self) -> None:
        if self.stacks is not None:
            self.stacks.close()

    def _message(self, status: str, ordered: list[JobProcess], processes: list[JobProcess]) -> str | None:
        if status == "ended":
            codes = [f"pid {p.pid}: {p.exit_code}" for p in ordered if p.exit_code is not None]
            return "the job ended" + (f"; exit codes {', '.join(codes)}" if codes else
                                      "; exit codes are known only for processes hwtop started or saw as zombies")
        if any(p.numa_pages is None and p.alive and p.rank is not None for p in processes):
            return "some of the job's /proc files are not readable by this user (numa_maps, io, environ)"
        return self.note
