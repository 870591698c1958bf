"""Job focus: a training job — the processes the user named and all their descendants (torchrun's agent, the
ranks, DataLoader workers), found anew each tick so that workers started later join it. For each: CPU, memory,
threads, role, GPU, CPU affinity against the CPUs its threads last ran on, NUMA placement of its memory,
I/O rates and the disks its open files live on. Per-tick reads are /proc stat/status/task files; numa_maps and
open files (costlier) are read on a slow tier."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hwtop.model.snapshot import GpuSnapshot, JobProcess, JobSnapshot, WorkloadState
from hwtop.probes.processes import CLOCK_TICKS, PAGE_SIZE, parse_stat

SLOW_S = 10.0  # numa_maps walks the page tables: not every tick
MAX_PROCESSES = 256
MAX_THREADS = 512
MAX_FDS = 2048
LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate launch")


class JobError(Exception):
    """The job cannot be focused: no such process, no permission, no match. One line, for exit 2."""


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def exit_code_of(stat_text: str) -> int | None:
    """Field 52 of /proc/PID/stat: a zombie's wait status (Linux ≥ 3.5)."""
    rest = stat_text[stat_text.rindex(")") + 2:].split()
    if len(rest) < 50:
        return None
    status = int(rest[49])
    return (status >> 8) & 0xFF if status & 0x7F == 0 else 128 + (status & 0x7F)


def parse_numa_maps(text: str) -> dict[int, int]:
    """Pages per node summed over every mapping: the N<node>=<pages> tokens of /proc/PID/numa_maps."""
    pages: dict[int, int] = {}
    for match in re.finditer(r"\bN(\d+)=(\d+)", text):
        node = int(match.group(1))
        pages[node] = pages.get(node, 0) + int(match.group(2))
    return pages


def parse_environ(data: bytes, keys: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name.decode("utf-8", "replace") in keys:
            out[name.decode()] = value.decode("utf-8", "replace")
    return out


ENV_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES")


@dataclass(slots=True)
class _Static:
    cmdline: str | None
    environ: dict[str, str] | None


@dataclass(slots=True)
class _Slow:
    at: float = -1e9
    numa: tuple[tuple[int, int], ...] | None = None
    devices: tuple[tuple[str, int], ...] = ()


@dataclass(slots=True)
class _Stat:
    pid: int
    ppid: int
    name: str
    state: str
    ticks: int
    threads: int
    start: int
    rss_pages: int
    text: str


@dataclass(slots=True)
class JobProbe:
    roots: tuple[int, ...] = ()
    pattern: str | None = None
    root: str = "/"
    clock: Callable[[], float] = time.monotonic
    label: str = ""
    _cpu: dict[tuple[int, int], tuple[float, int]] = field(default_factory=dict)
    _io: dict[tuple[int, int], tuple[float, int, int]] = field(default_factory=dict)
    _static: dict[tuple[int, int], _Static] = field(default_factory=dict)
    _slow: dict[tuple[int, int], _Slow] = field(default_factory=dict)
    _last: dict[int, JobProcess] = field(default_factory=dict)
    _seen: set[int] = field(default_factory=set)
    _members: dict[int, int] = field(default_factory=dict)  # pid → start ticks of every process once in the job
    _exit_codes: dict[int, int] = field(default_factory=dict)
    _ended_at: float | None = None
    _regex: re.Pattern[str] | None = None
    proc: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.proc = os.path.join(self.root, "proc")
        if self.pattern is not None:
            try:
                self._regex = re.compile(self.pattern)
            except re.error as error:
                raise JobError(f"--job {self.pattern!r} is not a regular expression: {error}") from None
        if not self.label:
            self.label = f"pid {', '.join(map(str, self.roots))}" if self.roots else f"job /{self.pattern}/"

    # ----- choosing the job -----

    def check(self) -> None:
        """At start: every named pid exists and can be read; a pattern matches something. Raises JobError."""
        for pid in self.roots:
            base = f"{self.proc}/{pid}"
            if not os.path.isdir(base):
                raise JobError(f"no process with pid {pid}")
            try:
                _read(f"{base}/stat")
            except PermissionError:
                raise JobError(f"cannot read {base}/stat: permission denied") from None
            except FileNotFoundError:
                raise JobError(f"no process with pid {pid}") from None
        if self._regex is not None and not self._matches(self._stats()):
            raise JobError(f"no process matches --job {self.pattern!r}")

    def _stats(self) -> dict[int, _Stat]:
        out = {}
        for name in os.listdir(self.proc):
            if not name.isdigit():
                continue
            try:
                text = _read(f"{self.proc}/{name}/stat").decode("utf-8", "replace")
                s = parse_stat(text)
            except (OSError, ValueError, IndexError):
                continue
            out[s.pid] = _Stat(s.pid, s.ppid, s.name, s.state, s.cpu_ticks, s.threads, s.start_ticks,
                               s.rss_pages, text)
        return out

    def _static_of(self, stat: _Stat) -> _Static:
        key = (stat.pid, stat.start)
        cached = self._static.get(key)
        if cached is None:
            base = f"{self.proc}/{stat.pid}"
            try:
                cmdline = _read(f"{base}/cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip() or None
            except OSError:
                cmdline = None
            try:
                environ: dict[str, str] | None = parse_environ(_read(f"{base}/environ"), ENV_KEYS)
            except OSError:
                environ = None  # another user's process: environ needs ptrace rights
            cached = self._static[key] = _Static(cmdline, environ)
        return cached

    def _matches(self, stats: dict[int, _Stat]) -> list[int]:
        assert self._regex is not None
        own = os.getpid()
        return [pid for pid, s in stats.items()
                if pid != own and self._regex.search(self._static_of(s).cmdline or s.name)]

    # ----- each tick -----

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot:
        wall = time.time() if now is None else now
        mono = self.clock()
        stats = self._stats()
        roots = [pid for pid in self.roots if pid in stats]
        if self._regex is not None:
            roots += [pid for pid in self._matches(stats) if pid not in roots]
        children: dict[int, list[int]] = {}
        for s in stats.values():
            children.setdefault(s.ppid, []).append(s.pid)
        order: list[tuple[int, int]] = []  # (pid, depth), depth-first so the table reads as a tree
        # Members stay members when their parent dies (orphaned workers are re-parented to init): still the job.
        kept = [pid for pid, start in self._members.items() if pid in stats and stats[pid].start == start]
        in_job = set(roots) | set(kept)
        tops = [pid for pid in in_job if stats[pid].ppid not in in_job or pid in roots]
        stack = [(pid, 0) for pid in sorted(set(tops), reverse=True)]
        visited: set[int] = set()
        while stack and len(order) < MAX_PROCESSES:
            pid, depth = stack.pop()
            if pid in visited:
                continue
            visited.add(pid)
            order.append((pid, depth))
            stack += [(child, depth + 1) for child in sorted(children.get(pid, ()), reverse=True)]
        gpu_of: dict[int, list[tuple[int, int | None]]] = {}
        for gpu in gpus:
            for proc in gpu.processes:
                gpu_of.setdefault(proc.pid, []).append((gpu.index, proc.used_memory_bytes))
        workload_rank = {r.pid: r.rank for r in workload.ranks if r.pid} if workload else {}
        processes = []
        for pid, depth in order:
            stat = stats[pid]
            processes.append(self._process(stat, depth, mono, stats, gpu_of, workload_rank, children))
        self._seen.update(p.pid for p in processes)
        self._members.update({p.pid: stats[p.pid].start for p in processes})
        alive = [p for p in processes if p.state != "Z"]
        current = {p.pid: p for p in processes}
        for pid, last in self._last.items():  # gone since the last tick: kept, marked ended
            if pid not in current:
                code = self._exit_codes.get(pid)
                current[pid] = JobProcess(**{**_fields(last), "alive": False, "state": "gone", "cpu_percent": None,
                                             "exit_code": code})
        if workload is not None and workload.exit_code is not None:
            for pid in workload.pids:
                if pid in current and not current[pid].alive and current[pid].exit_code is None:
                    current[pid] = JobProcess(**{**_fields(current[pid]), "exit_code": workload.exit_code})
        ordered = [current[p.pid] for p in processes] + [p for pid, p in current.items() if pid not in
                                                         {q.pid for q in processes}]
        self._last = {p.pid: p for p in ordered}
        self._forget(stats)
        status = "running" if alive else "ended"
        if status == "ended" and self._ended_at is None:
            self._ended_at = wall
        elif status == "running":
            self._ended_at = None
        message = None
        if status == "ended":
            codes = [f"pid {p.pid}: {p.exit_code}" for p in ordered if p.exit_code is not None]
            message = "the job ended" + (f"; exit codes {', '.join(codes)}" if codes else
                                         "; exit codes are known only for processes hwtop started or saw as zombies")
        elif any(p.numa_pages is None and p.alive for p in processes):
            message = "some of the job's /proc files are not readable by this user (numa_maps, io, environ)"
        gpu_memory: dict[int, int] = {}
        for p in processes:
            for index, used in p.gpus:
                gpu_memory[index] = gpu_memory.get(index, 0) + (used or 0)
        cpu = [p.cpu_percent for p in processes if p.cpu_percent is not None]
        return JobSnapshot(self.label, tuple(roots) or self.roots, status, tuple(ordered),
                           round(sum(cpu), 1) if cpu else None, sum(p.rss_bytes or 0 for p in processes if p.alive),
                           tuple(sorted(gpu_memory.items())), self._ended_at, message, len(self._seen))

    def _process(self, stat: _Stat, depth: int, mono: float, stats: dict[int, _Stat],
                 gpu_of: dict[int, list[tuple[int, int | None]]], workload_rank: dict[int, int],
                 children: dict[int, list[int]]) -> JobProcess:
        key = (stat.pid, stat.start)
        base = f"{self.proc}/{stat.pid}"
        static = self._static_of(stat)
        before = self._cpu.get(key)
        self._cpu[key] = (mono, stat.ticks)
        cpu = None
        if before is not None and mono > before[0] and stat.ticks >= before[1]:
            cpu = round(100.0 * (stat.ticks - before[1]) / CLOCK_TICKS / (mono - before[0]), 1)
        affinity = None
        try:
            for line in _read(f"{base}/status").decode("utf-8", "replace").splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    from hwtop.probes.sysfs import parse_cpulist

                    affinity = tuple(parse_cpulist(line.split(":", 1)[1].strip()))
        except OSError:
            pass
        thread_cpus: set[int] = set()
        try:
            for tid in os.listdir(f"{base}/task")[:MAX_THREADS]:
                try:
                    processor = parse_stat(_read(f"{base}/task/{tid}/stat").decode("utf-8", "replace")).processor
                except (OSError, ValueError, IndexError):
                    continue
                if processor is not None:
                    thread_cpus.add(processor)
        except OSError:
            pass
        reads = writes = None
        try:
            io = dict(line.split(": ", 1) for line in _read(f"{base}/io").decode().splitlines() if ": " in line)
            read_bytes, write_bytes = int(io["read_bytes"]), int(io["write_bytes"])
            previous = self._io.get(key)
            self._io[key] = (mono, read_bytes, write_bytes)
            if previous is not None and mono > previous[0]:
                reads = max(0.0, (read_bytes - previous[1]) / (mono - previous[0]))
                writes = max(0.0, (write_bytes - previous[2]) / (mono - previous[0]))
        except (OSError, KeyError, ValueError):
            pass
        slow = self._slow.setdefault(key, _Slow())
        if mono - slow.at >= SLOW_S:
            slow.at = mono
            try:
                slow.numa = tuple(sorted(parse_numa_maps(_read(f"{base}/numa_maps").decode("utf-8", "replace"))
                                         .items()))
            except OSError:
                slow.numa = None
            slow.devices = self._open_file_devices(base)
        if stat.state == "Z":
            code = exit_code_of(stat.text)
            if code is not None:
                self._exit_codes[stat.pid] = code
        environ = static.environ or {}
        rank = _int(environ.get("RANK"))
        if rank is None:
            rank = workload_rank.get(stat.pid)
        parent = stats.get(stat.ppid)
        role, rank = self._role(stat, static, rank, parent, stats, workload_rank, children.get(stat.pid, []))
        return JobProcess(
            pid=stat.pid, ppid=stat.ppid, name=stat.name, cmdline=static.cmdline, role=role, rank=rank,
            depth=depth, state=stat.state, cpu_percent=cpu, rss_bytes=stat.rss_pages * PAGE_SIZE,
            threads=stat.threads, cpu_affinity=affinity, thread_cpus=tuple(sorted(thread_cpus)),
            numa_pages=slow.numa, read_bytes_per_s=reads, write_bytes_per_s=writes,
            gpus=tuple(gpu_of.get(stat.pid, ())), cuda_visible_devices=environ.get("CUDA_VISIBLE_DEVICES"),
            local_rank=_int(environ.get("LOCAL_RANK")), dataset_devices=slow.devices,
            exit_code=self._exit_codes.get(stat.pid))

    def _role(self, stat: _Stat, static: _Static, rank: int | None, parent: _Stat | None,
              stats: dict[int, _Stat], workload_rank: dict[int, int], children: list[int]) -> tuple[str, int | None]:
        """(role, rank). Children inherit their rank's environment, so RANK alone does not make a rank: the
        topmost process carrying it does; DataLoader workers name themselves pt_data_worker."""
        cmdline = static.cmdline or ""
        if "resource_tracker" in cmdline or "multiprocessing.forkserver" in cmdline:
            return "helper", None
        if stat.name == "pt_data_worker":
            return "DataLoader worker", None
        parent_rank = None
        if parent is not None:
            parent_env = self._static_of(parent).environ or {}
            parent_rank = _int(parent_env.get("RANK"))
            if parent_rank is None:
                parent_rank = workload_rank.get(parent.pid)
        if rank is not None and (parent_rank != rank or stat.pid in workload_rank):
            return f"rank {rank}", rank
        if parent_rank is not None:
            return "worker of a rank", None
        child_ranks = [c for c in children if _int((self._static_of(stats[c]).environ or {}).get("RANK")) is not None
                       or c in workload_rank]
        if any(name in cmdline for name in LAUNCHERS) or child_ranks:
            return "launcher", None
        return "process", None

    def _open_file_devices(self, base: str) -> tuple[tuple[str, int], ...]:
        """Disks holding the regular files the process has open (its dataset, checkpoints)."""
        from hwtop.probes.disks import device_for_path

        counts: dict[str, int] = {}
        try:
            fds = os.listdir(f"{base}/fd")[:MAX_FDS]
        except OSError:
            return ()
        for fd in fds:
            try:
                target = os.readlink(f"{base}/fd/{fd}")
            except OSError:
                continue
            if not target.startswith("/") or target.startswith(("/proc", "/sys", "/dev")) or \
                    target.endswith(" (deleted)"):
                continue
            try:
                if not os.path.isfile(target):
                    continue
            except OSError:
                continue
            device = device_for_path(target, self.root) or "unknown"
            counts[device] = counts.get(device, 0) + 1
        return tuple(sorted(counts.items(), key=lambda kv: -kv[1]))

    def _forget(self, stats: dict[int, _Stat]) -> None:
        alive = {(s.pid, s.start) for s in stats.values()}
        self._members = {pid: start for pid, start in self._members.items() if (pid, start) in alive}
        for cache in (self._cpu, self._io, self._static, self._slow):
            for key in [k for k in cache if k not in alive]:
                del cache[key]


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _fields(process: JobProcess) -> dict[str, object]:
    import dataclasses

    return {f.name: getattr(process, f.name) for f in dataclasses.fields(process)}
