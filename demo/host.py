"""The host side of a demo machine: its CPUs, memory, NUMA nodes, disks and processes, simulated from a profile
and a story, so that `--demo` shows nothing of the machine hwtop runs on (no real pid, user, command line, disk).

Every figure is a function of the profile, the seed and the scenario time `elapsed()` (whole seconds pick the
jitter), never of wall time: two hosts with the same seed and clock give the same snapshots.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass

from hwtop.demo.profiles import DemoHost, DemoProfile
from hwtop.demo.story import LAUNCHER_PID, RANK_PID, RDZV_PORT, JobState, Story
from hwtop.model.owner import Owner
from hwtop.model.snapshot import (
    CoreLoad,
    CpuSnapshot,
    DiskKind,
    DiskSnapshot,
    HostInfo,
    MemorySnapshot,
    NicSnapshot,
    NumaNode,
    NumaSnapshot,
    ProcessInfo,
)

GIB = 1024**3
MIB = 1024**2
WORKER_PID = 42000  # rank r's DataLoader worker w is pid 42000 + 64 r + w
FILLER_PID = 60000
JOB_USER = "trainer"
MIRROR = "md0"  # the OS's RAID 1 over the first two NVMe drives; md1 is the data's RAID 0 over the rest


def demo_arrays(names: list[str]) -> dict[str, str]:
    """Each member disk of the demo's md arrays, and its array (a DGX's layout: profiles.py's _dgx_disks)."""
    nvme = [n for n in names if n.startswith("nvme")]
    out = {n: MIRROR for n in nvme[:2]} if MIRROR in names else {}
    return out | ({n: "md1" for n in nvme[2:]} if "md1" in names else {})


def disk_rates(disks: tuple[tuple[str, DiskKind], ...], arrays: dict[str, str], dataset_rate: float,
               rng: random.Random) -> dict[str, tuple[float, float]]:
    """(read, write) bytes/s of each disk: the dataset from md1 (or the data disks where there is none), a little
    from the network share, the OS's writes to md0 (or the first disk); an array's members carry its share of its
    reads and writes (RAID 0), or their share of its reads and every write (RAID 1): the kernel counts both."""
    names = [name for name, _ in disks]
    data = [n for n in names if n.startswith("nvme")][2:] or names[:1]  # the data disks where there is no md1
    rates: dict[str, tuple[float, float]] = {}
    for name, kind in disks:
        if name in arrays:
            continue
        if name == "md1" or (name in data and "md1" not in names):
            read = dataset_rate * (1.0 if name == "md1" or len(data) == 1 else 1.0 / len(data))
        else:
            read = dataset_rate * 0.05 if kind == "network" else rng.uniform(0, 40e3)
        write = rng.uniform(20e3, 400e3) if name in (names[0], "md0") else rng.uniform(0, 8e3)
        rates[name] = (read * rng.uniform(0.9, 1.1), write)
    for member, array in arrays.items():
        read, write = rates[array]
        count = sum(1 for a in arrays.values() if a == array)
        rates[member] = (read / count, write if array == MIRROR else write / count)
    return rates


def _disk(name: str, kind: DiskKind, read: float, write: float, held_by: str | None) -> DiskSnapshot:
    busy = min(100.0, 100.0 * read / 3.0e9) if kind != "network" else None
    return DiskSnapshot(name, kind, round(read, 1), round(write, 1), round(read / (128 * 1024) if read else 0.0, 1),
                        round(write / 16384, 1), None if busy is None else round(busy, 1), held_by=held_by)


SAMPLE_BYTES = 112 * 1024  # one training sample read from the dataset (a JPEG of ImageNet, about)
DATASETS = {"resnet50": "/raid/imagenet", "gpt-1.3b": "/raid/openwebtext"}  # where each model's data lies
SOCKET_LINE_SHARE = 0.96  # the most of a port's line rate NCCL's sockets keep busy

_FALLBACK_HOST = DemoHost("Demo CPU", 8, 16, 16 * MIB, 64 * GIB, 8 * GIB, (("nvme0n1", "nvme"),))


@dataclass(frozen=True, slots=True)
class _Daemon:
    pid: int
    name: str
    user: str
    cmdline: str
    cpu: float
    rss: int
    threads: int


_SYSTEM = (
    _Daemon(1, "systemd", "root", "/sbin/init", 0.1, 13 * MIB, 1),
    _Daemon(512, "systemd-journal", "root", "/lib/systemd/systemd-journald", 0.2, 90 * MIB, 1),
    _Daemon(540, "systemd-udevd", "root", "/lib/systemd/systemd-udevd", 0.0, 8 * MIB, 1),
    _Daemon(1288, "sshd", "root", "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups", 0.0, 9 * MIB, 1),
    _Daemon(1301, "cron", "root", "/usr/sbin/cron -f -P", 0.0, 3 * MIB, 1),
    _Daemon(1402, "nvidia-persiste", "nvidia-persistenced", "/usr/bin/nvidia-persistenced --user "
            "nvidia-persistenced", 0.0, 2 * MIB, 1),
    _Daemon(1490, "containerd", "root", "/usr/bin/containerd", 0.3, 52 * MIB, 18),
    _Daemon(1510, "dockerd", "root", "/usr/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock",
            0.2, 96 * MIB, 24),
    _Daemon(1601, "node_exporter", "prometheus", "/usr/bin/node_exporter --collector.systemd", 0.4, 24 * MIB, 8),
    _Daemon(40950, "bash", JOB_USER, "-bash", 0.0, 5 * MIB, 1),
)
_DATA_CENTRE = (
    _Daemon(1433, "nv-fabricmanage", "root", "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/"
            "fabricmanager.cfg", 0.1, 30 * MIB, 6),
    _Daemon(1460, "nv-hostengine", "root", "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm", 0.6,
            60 * MIB, 12),
)
_DESKTOP = (
    _Daemon(3120, "Xorg", "root", "/usr/lib/xorg/Xorg vt2 -displayfd 3 -auth /run/user/1000/gdm/Xauthority",
            1.2, 110 * MIB, 4),
    _Daemon(3300, "gnome-shell", JOB_USER, "/usr/bin/gnome-shell", 2.5, 420 * MIB, 22),
)
_FILLER_NAMES = ("python3", "bash", "sleep", "tail", "rsync", "tmux: server", "jupyter-lab", "code-server")


def torchrun_command(job: JobState, per_node: int, hostname: str, script: str) -> str:
    """The launcher's command line as torchrun's users write it: one node alone (--standalone), or this node's
    share of a job of `job.nodes` nodes meeting at a c10d rendezvous on this node (it runs rank 0: GROUP_RANK 0,
    so its ranks' RANK is their LOCAL_RANK). torchrun gives each rank its LOCAL_RANK, RANK and WORLD_SIZE in
    the environment, not as arguments (use_env: no --local-rank on the ranks' command lines)."""
    torchrun = "/usr/bin/python3 /usr/local/bin/torchrun"
    if job.nodes <= 1:
        return f"{torchrun} --standalone --nproc_per_node {per_node} {script}"
    return (f"{torchrun} --nnodes {job.nodes} --nproc_per_node {per_node} --rdzv_backend c10d --rdzv_endpoint "
            f"{hostname}:{RDZV_PORT} --rdzv_id {job.model}-{job.nodes}n {script}")


def _busiest(process: ProcessInfo) -> tuple[float, int]:
    """The process table's order (busiest first, then largest), as the real probe returns its top."""
    return process.cpu_percent or 0.0, process.rss_bytes or 0


def host_of(profile: DemoProfile) -> DemoHost:
    return profile.host or _FALLBACK_HOST


def node_cpus(host: DemoHost) -> tuple[tuple[int, ...], ...]:
    """Each NUMA node's logical CPUs, as Linux numbers them: the physical cores first, node by node, then their
    SMT siblings in the same order (node 0 of a 2 x 64-core EPYC is 0-63 and 128-191)."""
    nodes, physical = max(1, host.numa_nodes), host.physical_cores
    smt = max(1, host.logical_cores // max(1, physical))
    per_node = physical // nodes
    return tuple(
        tuple(sibling * physical + core for sibling in range(smt) for core in range(n * per_node, (n + 1) * per_node))
        for n in range(nodes))


def node_sizes(host: DemoHost) -> tuple[int, ...]:
    """Each NUMA node's memory: the RAM split evenly, to the byte (node 0 takes the remainder), so the nodes add up
    to the machine's total wherever they are shown (the memory panel, the topology, `hwtop topo`, JSON)."""
    count = max(1, host.numa_nodes)
    share = host.ram_bytes // count
    return (host.ram_bytes - share * (count - 1),) + (share,) * (count - 1)


def rank_rss(host: DemoHost, ranks: int, rank: int) -> int:
    """A rank's resident memory (its model, pinned buffers and the dataset index): the process table's and the
    job's telemetry's figure."""
    return min(14 * GIB, host.ram_bytes // (4 * max(1, ranks))) + rank * 37 * MIB


def gpu_node(profile: DemoProfile, gpu: int) -> int:
    """The NUMA node a GPU hangs off: GPUs spread over the nodes in bus order (as demo/topology.py lays them)."""
    nodes = max(1, host_of(profile).numa_nodes)
    return min(nodes - 1, gpu * nodes // max(1, profile.gpu_count))


class SimulatedHost:
    """Reads a demo machine's host side (the Sampler's HostReader): see the module docstring."""

    def __init__(self, profile: DemoProfile, story: Story, elapsed: Callable[[], float], seed: int = 0,
                 process_limit: int = 60, extra_processes: int = 0) -> None:
        self.profile = profile
        self.spec = host_of(profile)
        self.story = story
        self.elapsed = elapsed
        self.seed = seed
        self.process_limit = process_limit
        self.extra_processes = extra_processes
        self.nodes = node_cpus(self.spec)
        self._node_of = {cpu: n for n, cpus in enumerate(self.nodes) for cpu in cpus}
        self._table: tuple[tuple[int, JobState], list[ProcessInfo]] | None = None
        self._fillers = [self._filler(index) for index in range(extra_processes)]  # idle: the same every tick
        self._fillers_ordered = sorted(self._fillers, key=_busiest, reverse=True)
        self._fillers_rss = sum(p.rss_bytes or 0 for p in self._fillers)  # all on node 0: they have no affinity
        self._nic_sums: tuple[int, list[tuple[float, float]]] = (0, [])  # a scenario second, the counters then
        self._used: tuple[list[ProcessInfo], tuple[int, ...]] | None = None  # (a table, each node's memory used)

    # ----- helpers -----

    def _now(self) -> tuple[float, JobState]:
        t = max(0.0, self.elapsed())
        return t, self.story.state(t, self._ranks())

    def _rng(self, *key: object) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *key))))

    def _job_running(self, job: JobState) -> bool:
        return job.status != "crashed"

    def _ranks(self) -> tuple[int, ...]:
        return tuple(self.profile.busy_gpus)

    # ----- the HostReader protocol -----

    def host(self) -> HostInfo:
        kernel = "5.15.0-1042-nvidia" if self.profile.gpu.ecc else "6.8.0-45-generic"
        return HostInfo(self.spec.hostname, kernel, 864_000.0 + self.elapsed())

    def node_sizes(self) -> tuple[int, ...]:
        """Each NUMA node's memory: the RAM split evenly, to the byte (node 0 takes the remainder)."""
        return node_sizes(self.spec)

    def _node_used(self) -> tuple[int, ...]:
        """Memory used on each node (total − available, as MemorySnapshot means it): the system's share, and each
        process's RSS on the node its CPUs are on. The machine's figure is their sum, so the two always agree."""
        table = self._all_processes(*self._now())
        if self._used is not None and self._used[0] is table:  # memory and numa ask it of the same table
            return self._used[1]
        sizes = self.node_sizes()
        used = [min(14 * GIB, self.spec.ram_bytes // 8) // len(sizes)] * len(sizes)
        for process in table[:len(table) - len(self._fillers)]:  # the fillers come last, summed once
            node = self._node_of.get(process.cpu_affinity[0], 0) if process.cpu_affinity else 0
            used[node] += process.rss_bytes or 0
        used[0] += self._fillers_rss
        answer = tuple(min(u, size - GIB // len(sizes)) for u, size in zip(used, sizes, strict=True))
        self._used = (table, answer)
        return answer

    def memory(self) -> MemorySnapshot:
        used = sum(self._node_used())
        return MemorySnapshot(self.spec.ram_bytes, self.spec.ram_bytes - used, used, self.spec.swap_bytes, 0)

    def numa(self, memory: MemorySnapshot | None = None) -> NumaSnapshot:  # noqa: ARG002 - its own figures
        count = len(self.nodes)
        remote = 32 if "AMD" in self.spec.cpu_model else 21
        nodes = []
        for n, (cpus, size, used) in enumerate(zip(self.nodes, self.node_sizes(), self._node_used(), strict=True)):
            available = size - used
            cache = min(available // 2, self.spec.ram_bytes // (8 * count))  # the dataset in the page cache
            distances = tuple(10 if m == n else remote for m in range(count))
            nodes.append(NumaNode(n, cpus, size, available - cache, distances, memory_available_bytes=available,
                                  memory_used_bytes=used))
        return NumaSnapshot(tuple(nodes), f"demo:{self.profile.name}")

    def cpu(self, node_of_cpu: dict[int, int] | None = None) -> CpuSnapshot:  # noqa: ARG002 - own nodes
        t, job = self._now()
        second = int(t)
        logical = self.spec.logical_cores
        draw, low, high = self._rng("cpu", second).random, 0.2, 2.5
        load = [low + (high - low) * draw() for _ in range(logical)]  # Random.uniform(low, high)'s own arithmetic
        # every job process's CPU, as the process table shows it, on the least busy cores of its affinity (rank r
        # and its workers on node(gpu r)), as the scheduler spreads them: the two panels read one figure, and the
        # cores add up to what the processes use
        free = {n: [(load[c], c) for c in cpus] for n, cpus in enumerate(self.nodes)}
        for heap in free.values():
            heapq.heapify(heap)
        users = {JOB_USER, *(o.user for o in self.profile.owners)}  # the jobs' users (a shared box has two)
        table = self._all_processes(t, job)
        for process in table[:len(table) - len(self._fillers)]:  # the fillers (last) have no affinity: none here
            if process.user not in users or not process.cpu_affinity or not process.cpu_percent:
                continue
            heap, left = free[self._node_of.get(process.cpu_affinity[0], 0)], process.cpu_percent
            while left > 0.05 and heap and heap[0][0] < 100.0:
                busy, core = heapq.heappop(heap)
                take = min(left, 100.0 - busy)
                load[core], left = busy + take, left - take
                heapq.heappush(heap, (load[core], core))
        cores = tuple(
            CoreLoad(i, self._node_of.get(i, 0), round(p, 1), user=round(p * 0.86, 1), system=round(p * 0.12, 1),
                     iowait=round(p * 0.02, 1), irq=0.0, steal=0.0, mhz=2250.0 if p < 50 else 3350.0)
            for i, p in enumerate(load))
        total = sum(load) / max(1, logical)
        running = sum(load) / 100.0
        averages = (round(running, 2), round(running * 0.97, 2), round(running * 0.9, 2))
        l2 = 512 * 1024 * self.spec.physical_cores
        return CpuSnapshot(cores, round(total, 1), averages, logical, self.spec.physical_cores, self.spec.cpu_model,
                           l2, self.spec.l3_cache_bytes)

    def disks(self) -> tuple[DiskSnapshot, ...]:
        """The arrays' figures first, their members' from them (`disk_rates`)."""
        t, job = self._now()
        dataset_rate = job.samples_per_s * len(self._ranks()) * SAMPLE_BYTES * 0.35  # most come from the page cache
        arrays = demo_arrays([name for name, _ in self.spec.disks])
        rates = disk_rates(self.spec.disks, arrays, dataset_rate, self._rng("disk", int(t)))
        return tuple(_disk(name, kind, *rates[name], arrays.get(name)) for name, kind in self.spec.disks)

    def nics(self) -> tuple[NicSnapshot, ...]:
        """A single-node job (torchrun --standalone) all-reduces over NVLink: the InfiniBand fabric stays near idle
        and the storage Ethernet port carries what the job reads from the network share (the nfs0 disk). A job
        that spans nodes all-reduces over the fabric, each rank's share through the port beside its GPU; one whose
        NCCL fell back to sockets pushes a node's whole share through the Ethernet port (`_nic_rates`). The
        counters are the rates summed second by second (`_nic_totals`), so they only grow and every figure stays a
        function of time."""
        t, _job = self._now()
        second = int(t)
        totals = self._nic_totals(second)
        rates = self._nic_rates(second)
        fraction = t - second
        out = []
        for nic, (rx, tx), (rx_total, tx_total) in zip(self.spec.nics, rates, totals, strict=True):
            rx_total, tx_total = int(rx_total + rx * fraction), int(tx_total + tx * fraction)
            if nic.infiniband:
                out.append(NicSnapshot(nic.name, "infiniband", float(nic.speed_gbps), rx, tx, state="active", port=1,
                                       rx_bytes_total=rx_total, tx_bytes_total=tx_total))
            else:
                out.append(NicSnapshot(nic.name, "ethernet", float(nic.speed_gbps), rx, tx, state="up",
                                       numa_node=max(0, self.spec.numa_nodes - 1), rx_bytes_total=rx_total,
                                       tx_bytes_total=tx_total))
        return tuple(out)

    def _nic_rates(self, second: int) -> list[tuple[float, float]]:
        """(rx, tx) bytes/s of each port over scenario second `second`: the job's all-reduce where it spans nodes
        (JobState.allreduce_bytes_per_s: a node's share, over the InfiniBand ports NCCL uses, one beside each of
        its GPUs, or all through the first Ethernet port where NCCL fell back to sockets or there is no fabric,
        at most SOCKET_LINE_SHARE of its line), the network share's reads, and each port's own small traffic."""
        job = self.story.state(float(second), self._ranks())
        rng = self._rng("nic", second)
        ranks = self._ranks()
        training = self._job_running(job) and job.stuck_rank is None
        samples_per_s = (job.batch_size / job.step_s * len(ranks)) if training else 0.0
        # the network share's part of the dataset's reads (the nfs0 disk of disks()), where the profile has one
        shared = any(kind == "network" for _, kind in self.spec.disks)
        share_read = samples_per_s * SAMPLE_BYTES * 0.35 * 0.05 if shared else 0.0
        node = job.allreduce_bytes_per_s(len(ranks))
        fabric = [n for n in self.spec.nics if n.infiniband][:len(ranks)] if job.transport == "infiniband" else []
        ethernet = [n for n in self.spec.nics if not n.infiniband]
        out = []
        for nic in self.spec.nics:
            if nic.infiniband:
                rx = (node / len(fabric) if nic in fabric else 0.0) * rng.uniform(0.97, 1.03) + rng.uniform(0.0, 4e3)
                tx = (node / len(fabric) if nic in fabric else 0.0) * rng.uniform(0.97, 1.03) + rng.uniform(0.0, 4e3)
            else:
                first = bool(ethernet) and nic is ethernet[0]
                line = nic.speed_gbps * 1e9 / 8
                sockets = min(SOCKET_LINE_SHARE * line, node) if first and not fabric else 0.0
                rx = sockets * rng.uniform(0.98, 1.0) + (share_read if first else 0.0) + rng.uniform(2e3, 60e3)
                tx = sockets * rng.uniform(0.98, 1.0) + (share_read * 0.02 if first else 0.0) + rng.uniform(1e3, 20e3)
            out.append((round(rx, 1), round(tx, 1)))
        return out

    def _nic_totals(self, second: int) -> list[tuple[float, float]]:
        """Each port's counters at the start of scenario second `second`: a per-port start value (a machine that
        has been up a while) plus the sum of the earlier seconds' rates, summed forward from the last second asked
        (from zero again should the clock go back): the same answer whatever the ticks, in constant memory."""
        at, sums = self._nic_sums
        if at > second or not sums:
            at, sums = 0, [(1e12 * (i + 1) % 7e11, 3e11 * (i + 1) % 5e11) for i in range(len(self.spec.nics))]
        while at < second:
            sums = [(a + r, b + s) for (a, b), (r, s) in zip(sums, self._nic_rates(at), strict=True)]
            at += 1
        self._nic_sums = (at, sums)
        return sums

    def processes(self) -> tuple[ProcessInfo, ...]:
        """Every process, the busiest first, as the real probe lists them (its `limit` is on reading details,
        which a simulated process has from the start)."""
        t, job = self._now()
        everything = self._all_processes(t, job)
        moving = everything[: len(everything) - len(self._fillers)]  # the fillers come last and never change
        return tuple(heapq.merge(sorted(moving, key=_busiest, reverse=True), self._fillers_ordered, key=_busiest,
                                 reverse=True))  # as one stable sort of the whole table, without sorting 2,000 idle

    def every_process(self, fillers: bool = True) -> list[ProcessInfo]:
        """Every process of this tick (as `processes`, in its own order): the focused job's view (demo/ranks.py)
        reads its launcher, ranks and workers from here, as a real job probe reads the same /proc as the table.
        Without `fillers`: less the idle processes of other users (`extra_processes`, last in the table)."""
        table = self._all_processes(*self._now())
        return table if fillers else table[:len(table) - len(self._fillers)]

    # ----- the process table -----

    def _filler(self, index: int) -> ProcessInfo:
        """One of `extra_processes` mostly idle user processes (a shared login node, a scale benchmark)."""
        name = _FILLER_NAMES[index % len(_FILLER_NAMES)]
        return ProcessInfo(FILLER_PID + index, 40950, JOB_USER, name, f"{name} /srv/jobs/task-{index:05d}", "S",
                           round(self._rng("filler", index).uniform(0.0, 0.6), 1), (4 + index % 90) * MIB,
                           1 + index % 4, None)

    def _launchers(self, ranks: tuple[int, ...]) -> list[tuple[int, tuple[int, ...], Owner | None, str]]:
        """(launcher pid, its ranks, their owner, their user): one torchrun for the ranks, or one for each owner's
        (a box two Slurm jobs share: demo/variants.py's shared) from LAUNCHER_PID up."""
        if not self.profile.owners:
            return [(LAUNCHER_PID, ranks, None, JOB_USER)]
        out = []
        for index, spec in enumerate(self.profile.owners):
            group = tuple(r for r in ranks if r in spec.gpus)
            if group:
                out.append((LAUNCHER_PID + index, group, spec.owner, spec.user))
        return out

    def _daemons(self) -> tuple[_Daemon, ...]:
        extra = _DATA_CENTRE if self.profile.gpu.ecc else _DESKTOP
        return tuple(sorted(_SYSTEM + extra, key=lambda d: d.pid))

    def _all_processes(self, t: float, job: JobState) -> list[ProcessInfo]:
        """Every process at t (the same list for every reader of one tick, and for the rest of its second: the table
        is made from t's whole second and the job's state alone, and a live clock moves between the probes of one
        tick, where a table kept for the exact instant was made again by each of five readers)."""
        key = (int(t), job)
        if self._table is not None and self._table[0] == key:
            return self._table[1]
        table = self._build_processes(t, job)
        self._table = (key, table)
        return table

    def _build_processes(self, t: float, job: JobState) -> list[ProcessInfo]:
        second = int(t)
        rng = self._rng("proc", second)
        out = [ProcessInfo(d.pid, 0 if d.pid == 1 else 1, d.user, d.name, d.cmdline, "S",
                           round(d.cpu * rng.uniform(0.5, 1.5), 1), d.rss, d.threads, None)
               for d in self._daemons()]
        ranks = self._ranks()
        data = DATASETS.get(job.model, "/raid/data")
        script = (f"train.py --arch {job.model} --data {data} --batch-size {job.batch_size} "
                  f"--workers {job.num_workers}" + ("" if job.amp == "off" else f" --amp {job.amp}"))
        worker_rss = min(2 * GIB, self.spec.ram_bytes // (8 * max(1, len(ranks)) * max(1, job.num_workers)))
        if self._job_running(job) and ranks:
            for launcher, group, owner, user in self._launchers(ranks):
                out.append(ProcessInfo(launcher, 40950, user, "torchrun",
                                       torchrun_command(job, len(group), self.spec.hostname, script), "S",
                                       round(rng.uniform(0.1, 0.4), 1), 410 * MIB, 6, None, owner=owner))
                for rank in group:
                    pid = RANK_PID + rank
                    if rank in job.dead_ranks:
                        continue
                    affinity = self.nodes[gpu_node(self.profile, rank)]
                    out.append(ProcessInfo(pid, launcher, user, "python", f"/usr/bin/python3 -u {script}",
                                           "R" if job.rank_runs(rank) else "S",
                                           round(job.cpu_of_rank(rank) * rng.uniform(0.95, 1.0), 1),
                                           rank_rss(self.spec, len(ranks), rank), 86, affinity, owner=owner))
                    for worker in range(job.num_workers):  # their CPU jitters around what the step consumes
                        out.append(ProcessInfo(WORKER_PID + 64 * rank + worker, pid, user, "pt_data_worker",
                                               f"/usr/bin/python3 -u {script}",
                                               "R" if job.worker_cpu_percent > 50 else "S",
                                               round(min(100.0, job.worker_cpu_percent * rng.uniform(0.97, 1.03)),
                                                     1),
                                               worker_rss + worker * 11 * MIB, 3, affinity, owner=owner))
        out += self._fillers
        return out
