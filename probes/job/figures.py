"""One process's figures each tick: CPU, I/O, faults, threads, affinity; PSS, NUMA, open files on schedules."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from hwtop.model.job import JobProcess
from hwtop.probes.job.records import ExitCodes, _Stat, _Static, _Tracked, exit_code_of
from hwtop.probes.job.resources import DatasetDisks
from hwtop.probes.job.state import WORKER
from hwtop.probes.processes import CLOCK_TICKS, PAGE_SIZE
from hwtop.probes.procfiles import open_file_devices, parse_numa_maps, parse_pss, read_bytes

NUMA_EVERY_S = 10.0  # numa_maps walks the page tables: ranks only, not every tick
PSS_EVERY_S = 2.0  # smaps_rollup too: often enough to draw a line through a growing job's memory
PSS_PER_TICK = 8
FDS_PER_TICK = 16


@dataclass(slots=True)
class ReadBudget:
    """How many of the costlier files are still to be read this tick."""

    pss: int = PSS_PER_TICK
    fds: int = FDS_PER_TICK


class Place(msgspec.Struct, frozen=True, gc=False):
    """Where a process stands in the job this tick, as the tree and the GPUs say."""

    depth: int
    role: str
    rank: int | None
    main: bool  # a rank or a root: its NUMA placement is read, its open files kept when it has none
    gpus: tuple[tuple[int, int | None], ...]  # (GPU index, memory it holds there)


class ProcessFigures:
    """A JobProcess per live process; the costlier files within a per-tick budget. Writes the exit codes of
    zombies it sees and the disks that open files live on; keeps when the last tick was."""

    __slots__ = ("_previous_tick", "disks", "exit_codes", "root")

    def __init__(self, root: str, exit_codes: ExitCodes, disks: DatasetDisks) -> None:
        self.root = root
        self.exit_codes = exit_codes
        self.disks = disks
        self._previous_tick: float | None = None

    def read(self, stat: _Stat, static: _Static, tracked: _Tracked, place: Place, base: str, mono: float,
             uptime: float | None, budget: ReadBudget) -> JobProcess:
        alive = stat.state != "Z"
        cpu = self._cpu(stat, tracked, mono, uptime)
        faults = None
        if tracked.faults is not None and mono > tracked.faults[0]:
            faults = round(max(0, stat.major_faults - tracked.faults[1]) / (mono - tracked.faults[0]), 1)
        tracked.faults = (mono, stat.major_faults)
        threads = tracked.threads.read(base, mono) if alive else None
        reads, writes = _io(tracked, base, mono)
        if mono - tracked.affinity_at >= NUMA_EVERY_S or tracked.affinity is None:
            tracked.affinity_at = mono
            tracked.affinity = _affinity(base)
        if alive:
            self._slow_reads(tracked, base, mono, place.role, place.main, budget)
        else:
            code = exit_code_of(stat.text)
            if code is not None:
                self.exit_codes.seen(stat.pid, code)
        environ = static.environ or {}
        return JobProcess(
            pid=stat.pid, ppid=stat.ppid, name=stat.name, cmdline=static.cmdline, role=place.role, rank=place.rank,
            depth=place.depth, state=stat.state, cpu_percent=cpu, rss_bytes=stat.rss_pages * PAGE_SIZE,
            threads=stat.threads, cpu_affinity=tracked.affinity, thread_cpus=threads.cpus if threads else (),
            numa_pages=tracked.numa, read_bytes_per_s=reads, write_bytes_per_s=writes, gpus=place.gpus,
            cuda_visible_devices=environ.get("CUDA_VISIBLE_DEVICES"), local_rank=_int(environ.get("LOCAL_RANK")),
            dataset_devices=tracked.devices, exit_code=self.exit_codes.get(stat.pid), pss_bytes=tracked.pss,
            major_faults_per_s=faults,
            runnable_threads=threads.runnable if threads else None,
            blocked_threads=threads.blocked if threads else None,
            cpu_demand=threads.cpu_demand if threads else None,
            run_wait_share=threads.wait_share if threads else None,
            switches_per_s=threads.switches_per_s if threads else None,
            hot_thread_percent=threads.hot_percent if threads else None,
            hot_thread_name=threads.hot_name if threads else None,
            omp_num_threads=environ.get("OMP_NUM_THREADS"), nccl_env=nccl_variables(environ),
            world_size=_int(environ.get("WORLD_SIZE")), local_world_size=_int(environ.get("LOCAL_WORLD_SIZE")))

    def ticked(self, mono: float) -> None:
        """Every process of this tick has been read: a process first seen next tick was born since `mono`."""
        self._previous_tick = mono

    def _cpu(self, stat: _Stat, tracked: _Tracked, mono: float, uptime: float | None) -> float | None:
        cpu = None
        if tracked.cpu is not None and mono > tracked.cpu[0] and stat.ticks >= tracked.cpu[1]:
            cpu = round(100.0 * (stat.ticks - tracked.cpu[1]) / CLOCK_TICKS / (mono - tracked.cpu[0]), 1)
        elif tracked.cpu is None and uptime is not None and self._previous_tick is not None:
            age = uptime - stat.start / CLOCK_TICKS  # born since the last tick: its CPU over its life so far
            if 0.05 < age <= mono - self._previous_tick + 0.05:
                cpu = round(min(100.0 * stat.threads, 100.0 * stat.ticks / CLOCK_TICKS / age), 1)
        tracked.cpu = (mono, stat.ticks)
        return cpu

    def _slow_reads(self, tracked: _Tracked, base: str, mono: float, role: str, main: bool,
                    budget: ReadBudget) -> None:
        """PSS, NUMA placement and open files, each on its schedule and within this tick's budget."""
        if mono - tracked.pss_at >= PSS_EVERY_S and budget.pss > 0:
            budget.pss -= 1
            tracked.pss_at = mono
            try:
                tracked.pss = parse_pss(read_bytes(f"{base}/smaps_rollup").decode("ascii", "replace"))
            except OSError:
                tracked.pss = None
        if main and mono - tracked.numa_at >= NUMA_EVERY_S:
            tracked.numa_at = mono
            try:
                tracked.numa = tuple(sorted(parse_numa_maps(read_bytes(f"{base}/numa_maps").decode(
                    "utf-8", "replace")).items()))
            except OSError:
                tracked.numa = None
        # Workers open a dataset file for a moment: look every tick while the budget lasts; ranks, now and then.
        every = 0.0 if role in (WORKER, "worker of a rank") else NUMA_EVERY_S
        if mono - tracked.fds_at >= every and budget.fds > 0:
            budget.fds -= 1
            tracked.fds_at = mono
            devices = open_file_devices(base, self.root)
            if devices is not None:
                if devices or main:
                    tracked.devices = tuple(sorted(devices.items(), key=lambda kv: -kv[1]))
                self.disks.seen(devices, mono)


def _io(tracked: _Tracked, base: str, mono: float) -> tuple[float | None, float | None]:
    """Bytes read and written per second since the last tick (/proc/PID/io: another user's process says nothing)."""
    reads = writes = None
    try:
        io = dict(line.split(": ", 1) for line in read_bytes(f"{base}/io").decode().splitlines() if ": " in line)
        read_total, write_total = int(io["read_bytes"]), int(io["write_bytes"])
        if tracked.io is not None and mono > tracked.io[0]:
            reads = max(0.0, (read_total - tracked.io[1]) / (mono - tracked.io[0]))
            writes = max(0.0, (write_total - tracked.io[2]) / (mono - tracked.io[0]))
        tracked.io = (mono, read_total, write_total)
    except (OSError, KeyError, ValueError):
        pass
    return reads, writes


def _affinity(base: str) -> tuple[int, ...] | None:
    from hwtop.probes.sysfs import parse_cpulist

    try:
        for line in read_bytes(f"{base}/status").decode("utf-8", "replace").splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return tuple(parse_cpulist(line.split(":", 1)[1].strip()))
    except (OSError, ValueError):
        pass
    return None


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


NCCL_VARIABLES_MAX = 32  # a rank's environment is hostile text too: a bounded number of NCCL_* pairs


def nccl_variables(environ: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The NCCL_* variables of a rank's environment (NCCL_IB_DISABLE, NCCL_SOCKET_IFNAME, ...), which decide the
    transport NCCL picks: the network rules read them."""
    return tuple(sorted((k, v[:256]) for k, v in environ.items() if k.startswith("NCCL_")))[:NCCL_VARIABLES_MAX]
