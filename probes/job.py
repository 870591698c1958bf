"""Job focus: a training job — the processes the user named and all their descendants (the launcher, the ranks,
DataLoader workers), found anew each tick so that workers started later join it. For each live process: CPU,
PSS, threads and how they are scheduled, role, GPU, CPU affinity against the CPUs its threads last ran on, NUMA
placement, I/O, major faults and the disks its open files live on. For the job: workers born and exited in the
last minute, pressure stalls, its memory cgroup, and (with sample_stacks) where each rank's time goes.

Work per tick grows with the live processes only: a process that ended is forgotten (a rank keeps a row with
its exit code; a DataLoader worker only counts in "N exited in the last minute"). The costlier files
(smaps_rollup, numa_maps, fd) are read on their own schedules, a bounded number per tick."""

from __future__ import annotations

import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import msgspec.structs

from hwtop.model.job import JobProcess, JobSnapshot, Pressure, RankFigures, RankStacks, WorkerBirths, WorkerStacks
from hwtop.model.snapshot import GpuSnapshot
from hwtop.model.workload import WorkloadState
from hwtop.probes import owners, proctree
from hwtop.probes.cgroup import Cgroups, cgroups_of, cpu_quota_cores, memory_of
from hwtop.probes.processes import CLOCK_TICKS, PAGE_SIZE
from hwtop.probes.procfiles import open_file_devices, parse_numa_maps, parse_pss, read_bytes
from hwtop.probes.psi import PressureProbe
from hwtop.probes.sysfs import parse_uptime
from hwtop.probes.threads import ThreadProbe

MAX_PROCESSES = 256
MAX_GONE_ROWS = 32  # ended ranks/launchers kept as rows (with exit codes); workers are only counted
NUMA_EVERY_S = 10.0  # numa_maps walks the page tables: ranks only, not every tick
PSS_EVERY_S = 2.0  # smaps_rollup too: often enough to draw a line through a growing job's memory
PSS_PER_TICK = 8
FDS_PER_TICK = 16
DEVICE_MEMORY_S = 120.0  # a disk a short-lived worker read from stays listed this long
MINUTE_S = 60.0
PATTERN_RESCAN_S = 5.0
WORKER = "DataLoader worker"
KEPT_WHEN_GONE = ("launcher",)  # and ranks and roots


class JobError(Exception):
    """The job cannot be focused: no such process, no permission, no match. One line, for exit 2."""


class StackSource(Protocol):
    """What the job probe needs of a stack sampler (probes/stack_sampler.py, or a test's script)."""

    def want(self, targets: dict[int, int | None], on_gpu: frozenset[int] = frozenset(),
             workers: dict[int, int | None] | None = None) -> None: ...

    def results(self) -> tuple[tuple[RankStacks, ...], str | None]: ...

    def worker_results(self) -> tuple[WorkerStacks, ...]: ...

    def finish(self) -> None: ...

    def close(self) -> None: ...


def exit_code_of(stat_text: str) -> int | None:
    """Field 52 of /proc/PID/stat: a zombie's wait status (Linux ≥ 3.5)."""
    rest = stat_text[stat_text.rindex(")") + 2:].split()
    if len(rest) < 50:
        return None
    status = int(rest[49])
    return (status >> 8) & 0xFF if status & 0x7F == 0 else 128 + (status & 0x7F)


@dataclass(frozen=True, slots=True)
class _Stat:
    pid: int
    ppid: int
    name: str
    state: str
    ticks: int
    threads: int
    start: int
    rss_pages: int
    major_faults: int
    text: str


def parse_job_stat(text: str) -> _Stat:
    close = text.rindex(")")
    rest = text[close + 2:].split()
    return _Stat(int(text[:text.index("(")]), int(rest[1]), text[text.index("(") + 1:close], rest[0],
                 int(rest[11]) + int(rest[12]), int(rest[17]), int(rest[19]), int(rest[21]), int(rest[9]), text)


@dataclass(slots=True)
class _Static:
    argv: tuple[str, ...]
    environ: dict[str, str] | None
    python: bool
    launcher: str | None

    @property
    def cmdline(self) -> str | None:
        return " ".join(self.argv) or None


@dataclass(slots=True)
class _Tracked:
    """What hwtop keeps of one live process between ticks (keyed by pid and start time)."""

    static: _Static
    threads: ThreadProbe = field(default_factory=ThreadProbe)
    cpu: tuple[float, int] | None = None
    io: tuple[float, int, int] | None = None
    faults: tuple[float, int] | None = None
    affinity: tuple[int, ...] | None = None
    affinity_at: float = -1e9
    numa: tuple[tuple[int, int], ...] | None = None
    numa_at: float = -1e9
    pss: int | None = None
    pss_at: float = -1e9
    devices: tuple[tuple[str, int], ...] = ()
    fds_at: float = -1e9


@dataclass(slots=True)
class JobProbe:
    roots: tuple[int, ...] = ()
    pattern: str | None = None
    root: str = "/"
    clock: Callable[[], float] = time.monotonic
    label: str = ""
    sample_stacks: bool = False
    stacks: StackSource | None = None
    exclude: frozenset[int] | None = None  # hwtop and its ancestors; computed when not given
    host: str = ""  # the name the job's ranks carry (RankFigures.host); this host's name when not given
    _tracked: dict[tuple[int, int], _Tracked] = field(default_factory=dict)
    _last: dict[int, JobProcess] = field(default_factory=dict)
    _seen: int = 0
    _members: dict[int, int] = field(default_factory=dict)  # pid → start ticks of every live member
    _exit_codes: dict[int, int] = field(default_factory=dict)
    _ended_at: float | None = None
    _regex: re.Pattern[str] | None = None
    _matched: tuple[int, ...] = ()
    _matched_at: float = -1e9
    _ticks: int = 0
    _births: deque[tuple[float, int]] = field(default_factory=deque)  # (when, parent)
    _exits: deque[float] = field(default_factory=deque)
    _alive_per_parent: deque[tuple[float, dict[int, int]]] = field(default_factory=deque)
    _parent_since: dict[int, float] = field(default_factory=dict)
    _devices: dict[str, tuple[int, float]] = field(default_factory=dict)  # disk → (files, last seen)
    _pressure: PressureProbe | None = None
    _cgroups: Cgroups | None = None
    _previous_tick: float | None = None
    _cmdlines: dict[tuple[int, int], str] = field(default_factory=dict)
    _pswpin: tuple[float, int] | None = None
    _env_launchers: set[int] = field(default_factory=set)
    _python: set[int] = field(default_factory=set)
    note: str | None = None  # how the named pid led to the job (a rank → its launcher)
    _owners: owners.OwnerFocus | None = None  # --job slurm:ID / pod:NAME; the title's Slurm job or pod
    proc: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.proc = os.path.join(self.root, "proc")
        if self.exclude is None:
            self.exclude = proctree.own_lineage(self.proc) if self.root == "/" else frozenset()
        self._owners = owners.OwnerFocus(self.proc, self.pattern)
        if self._owners.target is not None:
            self.label = self.label or owners.describe_target(self._owners.target)
        elif self.pattern is not None:
            number, pattern = proctree.parse_target(self.pattern)
            if number is not None:
                self.roots, self.pattern = (*self.roots, number), None
            else:
                try:
                    self._regex = re.compile(pattern or "")
                except re.error as error:
                    raise JobError(f"--job {self.pattern!r} is not a regular expression: {error}") from None
        self._pressure = PressureProbe(self.root, self.clock)
        if not self.host:
            self.host = os.uname().nodename
        if not self.label:
            self.label = f"pid {', '.join(map(str, self.roots))}" if self.roots else f"job /{self.pattern}/"

    # ----- choosing the job -----

    def check(self, strict: bool = False) -> None:
        """At start: every named pid exists and can be read, and is not hwtop or its shell; a pattern matches
        something. `strict` (doctor): the job runs Python and its /proc files can be read. Raises JobError."""
        stats = self._stats()
        for pid in self.roots:
            base = f"{self.proc}/{pid}"
            if pid in (self.exclude or ()):
                raise JobError(f"pid {pid} is hwtop itself or one of its parents (its shell): name the job's pid")
            if not os.path.isdir(base):
                raise JobError(f"no process with pid {pid}")
            try:
                read_bytes(f"{base}/stat")
            except PermissionError:
                raise JobError(f"cannot read {base}/stat: permission denied") from None
            except (FileNotFoundError, ProcessLookupError):
                raise JobError(f"no process with pid {pid}") from None
        if self._searching and not self._find_matches(stats):
            if self._owners is not None and self._owners.target is not None:
                raise JobError(f"no process of {owners.describe_target(self._owners.target)} on this host (hwtop "
                               "itself and its shell never count)")
            raise JobError(f"no process matches --job {self.pattern!r} (hwtop itself and its shell never do)")
        self._climb(stats)
        if strict:
            for pid in self.roots:
                self._check_readable(pid)
            if not any(self._runs_python(pid, stats) for pid in self._current_roots(stats)):
                pid = self.roots[0] if self.roots else self._matched[0]
                name = stats[pid].name if pid in stats else "?"
                raise JobError(f"pid {pid} ({name}) is not a Python process and starts none: nothing to diagnose")

    def _check_readable(self, pid: int) -> None:
        base = f"{self.proc}/{pid}"
        try:
            read_bytes(f"{base}/io")
        except PermissionError:
            try:
                owner = os.stat(base).st_uid
            except OSError:
                owner = -1
            raise JobError(f"no permission to inspect pid {pid} (its /proc files belong to uid {owner}): run hwtop "
                           "as the job's user or as root") from None
        except FileNotFoundError:
            if not os.path.isdir(base):
                raise JobError(f"no process with pid {pid}") from None

    def _runs_python(self, pid: int, stats: dict[int, _Stat]) -> bool:
        children: dict[int, list[int]] = {}
        for s in stats.values():
            children.setdefault(s.ppid, []).append(s.pid)
        todo, seen = [pid], 0
        while todo and seen < MAX_PROCESSES:
            current = todo.pop()
            seen += 1
            if current in stats and self._static_of(stats[current]).python:
                return True
            todo += children.get(current, [])
        return False

    def _stats(self) -> dict[int, _Stat]:
        out = {}
        try:
            names = os.listdir(self.proc)
        except OSError:
            return out
        for name in names:
            if name.isdigit():
                stat = self._stat(int(name))
                if stat is not None:
                    out[stat.pid] = stat
        return out

    def _stat(self, pid: int) -> _Stat | None:
        try:
            return parse_job_stat(read_bytes(f"{self.proc}/{pid}/stat").decode("utf-8", "replace"))
        except (OSError, ValueError, IndexError):
            return None

    def _static_of(self, stat: _Stat) -> _Static:
        key = (stat.pid, stat.start)
        tracked = self._tracked.get(key)
        if tracked is not None:
            return tracked.static
        base = f"{self.proc}/{stat.pid}"
        try:
            argv = proctree.argv_of(read_bytes(f"{base}/cmdline", limit=1 << 16))
        except OSError:
            argv = ()
        try:
            environ: dict[str, str] | None = proctree.parse_environ(read_bytes(f"{base}/environ", limit=1 << 20))
        except OSError:
            environ = None  # another user's process: environ needs ptrace rights
        try:
            exe: str | None = os.readlink(f"{base}/exe")
        except OSError:
            exe = None
        static = _Static(argv, environ, proctree.is_python(argv, exe, stat.name),
                         proctree.launcher_kind(argv, stat.name))
        if stat.state != "Z" and argv:  # a zombie's files are empty: read again if it is ever seen alive
            self._tracked[key] = _Tracked(static)
        return static

    def _find_matches(self, stats: dict[int, _Stat]) -> list[int]:
        """The topmost processes whose command line matches: never hwtop, its ancestors or its children. Only
        command lines are read (kept per process between scans), not every process's environment."""
        exclude = self.exclude or frozenset()
        own = os.getpid()
        found = []
        cmdlines: dict[tuple[int, int], str] = {}
        for pid, stat in stats.items():
            if pid in exclude or stat.ppid == own or stat.state == "Z":
                continue
            key = (pid, stat.start)
            if self._owners is not None and self._owners.target is not None:
                if self._owners.matches(pid, stat.start):
                    found.append(pid)
                continue
            assert self._regex is not None
            text = self._cmdlines.get(key)
            if text is None:
                try:
                    text = " ".join(proctree.argv_of(read_bytes(f"{self.proc}/{pid}/cmdline", limit=1 << 16)))
                except OSError:
                    text = ""
            cmdlines[key] = text
            if self._regex.search(text or stat.name):
                found.append(pid)
        self._cmdlines = cmdlines
        if self._owners is not None:
            self._owners.forget({pid: stat.start for pid, stat in stats.items()})
        matched = set(found)
        tops = []
        for pid in found:
            ancestor, hops = stats[pid].ppid, 0
            while ancestor in stats and ancestor not in matched and ancestor > 1 and hops < 64:
                ancestor, hops = stats[ancestor].ppid, hops + 1
            if ancestor not in matched:
                tops.append(pid)
        self._matched = tuple(sorted(tops))
        return tops

    def _climb(self, stats: dict[int, _Stat]) -> None:
        """A named rank stands for its whole job: while its parent is a launcher, focus on the parent."""
        climbed = []
        for pid in self.roots:
            top = pid
            while top in stats and stats[top].ppid in stats and stats[top].ppid not in (self.exclude or ()):
                parent = stats[stats[top].ppid]
                if self._static_of(parent).launcher is None:
                    break
                top = parent.pid
            climbed.append(top)
            if top != pid:
                launcher = self._static_of(stats[top]).launcher
                self.note = f"pid {pid} was started by {launcher} (pid {top}): showing the whole job"
        if climbed and tuple(climbed) != self.roots:
            self.roots = tuple(dict.fromkeys(climbed))
            self.label = f"pid {', '.join(map(str, self.roots))}"

    def _current_roots(self, stats: dict[int, _Stat]) -> list[int]:
        roots = [pid for pid in self.roots if pid in stats]
        if self._searching:
            roots += [pid for pid in self._matched if pid in stats and pid not in roots]
        return roots

    # ----- each tick -----

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

    @property
    def _searching(self) -> bool:  # a pattern or an owner (--job slurm:ID) chooses the roots
        return self._regex is not None or (self._owners is not None and self._owners.target is not None)

    def _title(self, roots: list[int]) -> str:
        members = self._members
        order = [(pid, members[pid]) for pid in dict.fromkeys([*roots, *members]) if pid in members]
        return self._owners.title(self.label, order) if self._owners is not None else self.label

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

    def _swap_in(self, mono: float) -> float | None:
        try:
            text = read_bytes(f"{self.proc}/vmstat").decode("ascii", "replace")
            total = int(next(line.split()[1] for line in text.splitlines() if line.startswith("pswpin ")))
        except (OSError, StopIteration, ValueError, IndexError):
            return None
        before, self._pswpin = self._pswpin, (mono, total)
        if before is None or mono <= before[0]:
            return None
        return round(max(0, total - before[1]) / (mono - before[0]), 1)

    def _uptime(self) -> float | None:
        try:
            return parse_uptime(read_bytes(f"{self.proc}/uptime"))
        except OSError:
            return None

    def _walk(self) -> tuple[dict[int, _Stat], list[tuple[int, int]]]:
        """The job's processes, depth-first from its roots, so the table reads as a tree. Members stay members
        when their parent dies (orphaned workers are re-parented to init): still the job."""
        stats: dict[int, _Stat] = {}
        for pid in {*self.roots, *self._matched, *self._members}:
            stat = self._stat(pid)
            if stat is not None and (pid not in self._members or self._members[pid] == stat.start):
                stats[pid] = stat
        roots = [pid for pid in (*self.roots, *self._matched) if pid in stats]
        in_job = set(roots) | set(stats)
        tops = [pid for pid in in_job if pid in roots or stats[pid].ppid not in in_job]
        stack = [(pid, 0) for pid in sorted(set(tops), reverse=True)]
        order: list[tuple[int, int]] = []
        visited: set[int] = set()
        scanned: dict[int, _Stat] | None = None
        while stack and len(order) < MAX_PROCESSES:
            pid, depth = stack.pop()
            if pid in visited or pid in (self.exclude or ()):
                continue
            visited.add(pid)
            order.append((pid, depth))
            kids = proctree.children_of(self.proc, pid)
            if kids is None:  # no children files: one scan of /proc this tick
                if scanned is None:
                    scanned = self._stats()
                kids = [s.pid for s in scanned.values() if s.ppid == pid]
            for child in sorted(kids, reverse=True):
                if child not in stats:
                    stat = (scanned or {}).get(child) or self._stat(child)
                    if stat is None:
                        continue
                    stats[child] = stat
                stack.append((child, depth + 1))
        return stats, order

    def _process(self, stat: _Stat, depth: int, mono: float, uptime: float | None, stats: dict[int, _Stat],
                 gpu_of: dict[int, list[tuple[int, int | None]]], workload_rank: dict[int, int],
                 budget: dict[str, int], is_root: bool) -> JobProcess:
        key = (stat.pid, stat.start)
        base = f"{self.proc}/{stat.pid}"
        static = self._static_of(stat)
        tracked = self._tracked.get(key) or _Tracked(static)
        if stat.state != "Z":
            self._tracked[key] = tracked
        cpu = None
        if tracked.cpu is not None and mono > tracked.cpu[0] and stat.ticks >= tracked.cpu[1]:
            cpu = round(100.0 * (stat.ticks - tracked.cpu[1]) / CLOCK_TICKS / (mono - tracked.cpu[0]), 1)
        elif tracked.cpu is None and uptime is not None and self._previous_tick is not None:
            age = uptime - stat.start / CLOCK_TICKS  # born since the last tick: its CPU over its life so far
            if 0.05 < age <= mono - self._previous_tick + 0.05:
                cpu = round(min(100.0 * stat.threads, 100.0 * stat.ticks / CLOCK_TICKS / age), 1)
        tracked.cpu = (mono, stat.ticks)
        faults = None
        if tracked.faults is not None and mono > tracked.faults[0]:
            faults = round(max(0, stat.major_faults - tracked.faults[1]) / (mono - tracked.faults[0]), 1)
        tracked.faults = (mono, stat.major_faults)
        threads = tracked.threads.read(base, mono) if stat.state != "Z" else None
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
        environ = static.environ or {}
        parent = stats.get(stat.ppid)
        role, rank = self._role(stat, static, parent, stats, workload_rank)
        if mono - tracked.affinity_at >= NUMA_EVERY_S or tracked.affinity is None:
            tracked.affinity_at = mono
            tracked.affinity = self._affinity(base)
        if stat.state != "Z":
            self._slow_reads(tracked, base, mono, role, rank is not None or is_root or depth == 0, budget)
        if stat.state == "Z":
            code = exit_code_of(stat.text)
            if code is not None:
                self._exit_codes[stat.pid] = code
        return JobProcess(
            pid=stat.pid, ppid=stat.ppid, name=stat.name, cmdline=static.cmdline, role=role, rank=rank,
            depth=depth, state=stat.state, cpu_percent=cpu, rss_bytes=stat.rss_pages * PAGE_SIZE,
            threads=stat.threads, cpu_affinity=tracked.affinity, thread_cpus=threads.cpus if threads else (),
            numa_pages=tracked.numa, read_bytes_per_s=reads, write_bytes_per_s=writes,
            gpus=tuple(gpu_of.get(stat.pid, ())), cuda_visible_devices=environ.get("CUDA_VISIBLE_DEVICES"),
            local_rank=_int(environ.get("LOCAL_RANK")), dataset_devices=tracked.devices,
            exit_code=self._exit_codes.get(stat.pid), pss_bytes=tracked.pss, major_faults_per_s=faults,
            runnable_threads=threads.runnable if threads else None,
            blocked_threads=threads.blocked if threads else None,
            cpu_demand=threads.cpu_demand if threads else None,
            run_wait_share=threads.wait_share if threads else None,
            switches_per_s=threads.switches_per_s if threads else None,
            hot_thread_percent=threads.hot_percent if threads else None,
            hot_thread_name=threads.hot_name if threads else None,
            omp_num_threads=environ.get("OMP_NUM_THREADS"), nccl_env=nccl_variables(environ),
            world_size=_int(environ.get("WORLD_SIZE")), local_world_size=_int(environ.get("LOCAL_WORLD_SIZE")))

    def _affinity(self, base: str) -> tuple[int, ...] | None:
        from hwtop.probes.sysfs import parse_cpulist

        try:
            for line in read_bytes(f"{base}/status").decode("utf-8", "replace").splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    return tuple(parse_cpulist(line.split(":", 1)[1].strip()))
        except (OSError, ValueError):
            pass
        return None

    def _slow_reads(self, tracked: _Tracked, base: str, mono: float, role: str, main: bool,
                    budget: dict[str, int]) -> None:
        """PSS, NUMA placement and open files, each on its schedule and within this tick's budget."""
        if mono - tracked.pss_at >= PSS_EVERY_S and budget["pss"] > 0:
            budget["pss"] -= 1
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
        if mono - tracked.fds_at >= every and budget["fds"] > 0:
            budget["fds"] -= 1
            tracked.fds_at = mono
            devices = open_file_devices(base, self.root)
            if devices is not None:
                if devices or main:
                    tracked.devices = tuple(sorted(devices.items(), key=lambda kv: -kv[1]))
                for device, files in devices.items():
                    self._devices[device] = (files, mono)

    def _role(self, stat: _Stat, static: _Static, parent: _Stat | None, stats: dict[int, _Stat],
              workload_rank: dict[int, int]) -> tuple[str, int | None]:
        """(role, rank). Children inherit their rank's environment, so RANK alone does not make a rank: the
        topmost process carrying it does, or a Python child of a launcher; DataLoader workers name themselves
        pt_data_worker; a launcher is known by its executable or module."""
        argv = static.cmdline or ""
        if "resource_tracker" in argv or "multiprocessing.forkserver" in argv or "semaphore_tracker" in argv:
            return "helper", None
        if stat.name == "pt_data_worker":
            return WORKER, None
        rank = proctree.rank_of(static.environ)
        if rank is None:
            rank = workload_rank.get(stat.pid)
        parent_static = self._static_of(parent) if parent is not None else None
        parent_rank = None
        if parent is not None and parent_static is not None:
            parent_rank = proctree.rank_of(parent_static.environ)
            if parent_rank is None:
                parent_rank = workload_rank.get(parent.pid)
        if static.launcher is not None:
            return "launcher", None
        if rank is not None and (parent_rank != rank or stat.pid in workload_rank):
            return f"rank {rank}", rank
        if parent_rank is not None:
            return "worker of a rank", None
        if parent_static is not None and parent_static.launcher is not None and static.python:
            return "rank ?", None  # a launcher's Python child whose environment cannot be read
        if stat.pid in self._env_launchers:
            return "launcher", None
        return "process", None

    def _launchers_by_children(self, stats: dict[int, _Stat]) -> set[int]:
        """Processes whose children carry a rank they do not (a launcher hwtop does not know by name)."""
        out = set()
        for child in stats.values():
            parent = stats.get(child.ppid)
            if parent is None:
                continue
            rank = proctree.rank_of(self._static_of(child).environ)
            if rank is not None and proctree.rank_of(self._static_of(parent).environ) is None:
                out.add(parent.pid)
        return out

    def _count_workers(self, processes: list[JobProcess], mono: float) -> None:
        """Births of DataLoader workers per parent (after the first tick: those already running were not
        born while watched), and how many each parent runs at once."""
        if self._ticks > 1:  # a worker names itself a moment after it starts: born when first seen as one
            for p in processes:
                before = self._last.get(p.pid)
                if p.role == WORKER and p.ppid is not None and (before is None or before.role != WORKER):
                    self._births.append((mono, p.ppid))
        alive: dict[int, int] = {}
        for p in processes:
            if p.role == WORKER and p.state != "Z" and p.ppid is not None:
                alive[p.ppid] = alive.get(p.ppid, 0) + 1
        for p in processes:
            if p.role != WORKER and p.state != "Z":
                self._parent_since.setdefault(p.pid, mono)
        self._alive_per_parent.append((mono, alive))
        for ring in (self._births, self._alive_per_parent):
            while ring and ring[0][0] < mono - MINUTE_S:
                ring.popleft()
        while self._exits and self._exits[0] < mono - MINUTE_S:
            self._exits.popleft()
        live = {p.pid for p in processes}
        self._parent_since = {pid: t for pid, t in self._parent_since.items() if pid in live}

    def _worker_births(self, mono: float) -> tuple[WorkerBirths, ...]:
        born: dict[int, int] = {}
        for _, parent in self._births:
            born[parent] = born.get(parent, 0) + 1
        out = []
        for parent, count in sorted(born.items()):
            peak = max((alive.get(parent, 0) for _, alive in self._alive_per_parent), default=0)
            span = min(MINUTE_S, mono - self._parent_since.get(parent, mono))
            out.append(WorkerBirths(parent, count, round(span, 1), peak))
        return tuple(out)

    def _usable_cores(self, alive: list[JobProcess], roots: list[int]) -> int | None:
        allowed: set[int] = set()
        for p in alive:
            allowed.update(p.cpu_affinity or ())
        if not allowed:
            return None
        cores = len(allowed)
        if self._cgroups is None and roots:
            self._cgroups = cgroups_of(roots[0], self.root)
        quota = cpu_quota_cores(self._cgroups) if self._cgroups is not None else None
        if quota is not None:
            cores = min(cores, max(1, int(quota + 0.5)))
        return cores

    def _read_pressure(self, roots: list[int]) -> Pressure | None:
        if self._cgroups is None and roots:
            self._cgroups = cgroups_of(roots[0], self.root)
        assert self._pressure is not None
        return self._pressure.read(self._cgroups.unified if self._cgroups is not None else None)

    def _dataset_devices(self, mono: float) -> tuple[tuple[str, int], ...]:
        self._devices = {d: v for d, v in self._devices.items() if mono - v[1] < DEVICE_MEMORY_S}
        return tuple(sorted(((d, files) for d, (files, _) in self._devices.items()), key=lambda kv: -kv[1]))

    def _stacks(self, alive: list[JobProcess]) -> tuple[tuple[RankStacks, ...], str | None]:
        if not self.sample_stacks and self.stacks is None:
            return (), None
        if self.stacks is None:
            from hwtop.probes.stack_sampler import StackSampler

            self.stacks = StackSampler()
        mains = main_processes(alive, self._python)
        workers: dict[int, int | None] = {p.pid: p.ppid for p in alive if p.role == WORKER and p.ppid in mains}
        self.stacks.want(mains, frozenset(p.pid for p in alive if p.gpus), workers)
        return self.stacks.results()

    def _ranks(self, ordered: list[JobProcess], stacks: tuple[RankStacks, ...],
               workload: WorkloadState | None) -> tuple[RankFigures, ...]:
        """One RankFigures per rank of the job on this host (rank order), from its process and its samples."""
        steps = {r.pid: r.step for r in workload.ranks if r.pid} if workload else {}
        out: dict[int, RankFigures] = {}
        for p in ordered:
            if p.rank is None or not p.role.startswith("rank") or (p.rank in out and not p.alive):
                continue
            out[p.rank] = RankFigures(rank=p.rank, host=self.host, pid=p.pid, local_rank=p.local_rank,
                                      gpu=p.gpus[0][0] if p.gpus else None, steps=steps.get(p.pid))
        return with_stacks(tuple(out[rank] for rank in sorted(out)), stacks)

    def _message(self, status: str, ordered: list[JobProcess], processes: list[JobProcess]) -> str | None:
        if status == "ended":
            codes = [f"pid {p.pid}: {p.exit_code}" for p in ordered if p.exit_code is not None]
            return "the job ended" + (f"; exit codes {', '.join(codes)}" if codes else
                                      "; exit codes are known only for processes hwtop started or saw as zombies")
        if any(p.numa_pages is None and p.alive and p.rank is not None for p in processes):
            return "some of the job's /proc files are not readable by this user (numa_maps, io, environ)"
        return self.note

    def _forget(self, stats: dict[int, _Stat]) -> None:
        alive = {(s.pid, s.start) for s in stats.values() if s.state != "Z"}
        for key in [k for k in self._tracked if k not in alive]:
            del self._tracked[key]
        live = {s.pid for s in stats.values()}
        self._exit_codes = {pid: code for pid, code in self._exit_codes.items()
                            if pid in live or pid in self._last}


def with_stacks(ranks: tuple[RankFigures, ...], stacks: tuple[RankStacks, ...]) -> tuple[RankFigures, ...]:
    """The ranks with what their stack samples say (phase seconds, shares, busy site), matched by pid: each tick,
    and once more with the final samples at the end of a doctor's watch."""
    by_pid = {s.pid: s for s in stacks}
    out = []
    for figures in ranks:
        s = by_pid.get(figures.pid) if figures.pid is not None else None
        if s is not None:
            figures = msgspec.structs.replace(figures, phase_seconds=s.phase_seconds, shares=s.fractions,
                                              site=s.busy_site, samples=s.samples, seen_at=s.updated_at)
        out.append(figures)
    return tuple(out)


def main_processes(alive: list[JobProcess], python: set[int]) -> dict[int, int | None]:
    """The processes whose main thread is the training loop: the ranks; without ranks (a plain `python
    train.py`), the topmost Python processes that are not launchers, helpers or workers."""
    ranks = {p.pid: p.rank for p in alive if p.role.startswith("rank") and p.pid in python}
    if ranks:
        return ranks
    members = {p.pid for p in alive}
    parents = {p.pid: p.ppid for p in alive}
    out: dict[int, int | None] = {}
    for p in alive:
        if p.role != "process" or p.pid not in python:
            continue
        ancestor, hops = parents.get(p.pid), 0
        while ancestor in members and ancestor not in out and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor not in out:
            out[p.pid] = None
    return out


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
