"""Deterministic snapshots for UI tests: a synthetic host plus GPUs read by the real NVML probe from the fake."""

from __future__ import annotations

from functools import cache

from msgspec.structs import replace

from hwtop.advice.thresholds import Thresholds
from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.profiles import GIB
from hwtop.model.history import History
from hwtop.model.snapshot import (
    CoreLoad,
    CpuSnapshot,
    DiskSnapshot,
    GpuSystem,
    HostInfo,
    MemorySnapshot,
    NicSnapshot,
    NumaNode,
    NumaSnapshot,
    ProcessInfo,
    Snapshot,
    Topology,
)
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.slow import BackgroundCalls

T0 = 1_796_200_000.0  # a fixed wall-clock time, so screenshots do not change with the day


def host_snapshot(cores: int = 2, nodes: int = 1, time: float = T0, busy_core: int | None = 1) -> Snapshot:
    per_node = cores // nodes
    # the nodes add up to the machine's memory below: 256 GiB, 200 GiB of it available (so 56 GiB used)
    numa = NumaSnapshot(tuple(
        NumaNode(n, tuple(range(n * per_node, (n + 1) * per_node)), 256 * GIB // nodes, 160 * GIB // nodes,
                 tuple(10 if m == n else 21 for m in range(nodes)), memory_available_bytes=200 * GIB // nodes,
                 memory_used_bytes=56 * GIB // nodes)
        for n in range(nodes)), "sysfs")
    loads = []
    for i in range(cores):
        percent = 97.0 if i == busy_core else 3.0 + (i * 7) % 20
        loads.append(CoreLoad(i, i // per_node, percent, user=percent * 0.8, system=percent * 0.15,
                              iowait=percent * 0.05, irq=0.0, steal=0.0, mhz=2445.0))
    cpu = CpuSnapshot(tuple(loads), round(sum(c.percent for c in loads) / cores, 2), (1.5, 1.2, 0.9), cores,
                      cores // 2 or 1, "AMD EPYC 7742 64-Core Processor", 512 * 1024, 256 * 1024**2)
    memory = MemorySnapshot(256 * GIB, 200 * GIB, 56 * GIB, 8 * GIB, 1 * GIB)
    disks = (DiskSnapshot("nvme0n1", "nvme", 1.2e9, 3.5e7, 9200.0, 310.0, 41.0),
             DiskSnapshot("sda", "hdd", 0.0, 1.0e5, 0.0, 2.0, 0.5))
    processes = (
        ProcessInfo(41000, 40990, "alice", "python", "python train.py --epochs 90", "R", 99.3, 6 * GIB, 23, (0, 1)),
        ProcessInfo(41010, 41000, "alice", "pt_data_worker", "python train.py --epochs 90", "S", 35.0, GIB, 1, None),
        ProcessInfo(812, 1, "root", "sshd", "sshd: alice [priv]", "S", 0.3, 9 * 1024**2, 1, None),
    )
    return Snapshot(T0 if time is None else time, 1.0, HostInfo("trainbox", "6.8.0-45-generic", 93784.0), cpu,
                    memory, numa, disks, processes, (), GpuSystem(False, "no NVIDIA driver / NVML not found "
                    "(libnvidia-ml.so.1): running CPU-only", source="none"))


class ScriptedSource:
    """A snapshot source for the App: the history is warmed with all but the last snapshot, and every
    sample returns the last one (pushed once), so what the screen shows does not depend on timing."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots = snapshots
        self.history = History()
        for snapshot in snapshots[:-1]:
            self.history.push(snapshot)
        self.samples = 0
        self.closed = False

    def sample(self) -> Snapshot:
        if self.samples == 0:
            self.history.push(self.snapshots[-1])
        self.samples += 1
        return self.snapshots[-1]

    def close(self) -> None:
        self.closed = True


class SequenceSource:
    """Each sample is the next snapshot (the last one repeats), pushed into the history as the sampler does: the
    app lives through them one tick at a time."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots, self.index, self.history = snapshots, 0, History()

    def sample(self) -> Snapshot:
        snapshot = self.snapshots[min(self.index, len(self.snapshots) - 1)]
        self.index += 1
        self.history.push(snapshot)
        return snapshot

    def close(self) -> None:
        pass


def demo_snapshots(profile: str, count: int = 12, cores: int = 2, nodes: int = 1) -> list[Snapshot]:
    """`count` ticks of a demo machine, GPUs read through the real probe from the fake at a manual clock (played
    once per process: the snapshots are frozen, the list is the caller's own)."""
    return list(_demo_snapshots(profile, count, cores, nodes))


@cache
def _demo_snapshots(profile: str, count: int, cores: int, nodes: int) -> tuple[Snapshot, ...]:
    now = [30.0]
    fake = FakeNvmlLibrary(profile, seed=7, clock=lambda: now[0])
    probe = NvmlProbe(fake.pynvml, source=f"demo:{profile}", clock=lambda: now[0],
                      background=BackgroundCalls(inline=True))  # deterministic: slow calls at once
    out = []
    base = host_snapshot(cores, nodes)
    for tick in range(count):
        system, gpus = probe.read(base.processes)
        out.append(Snapshot(T0 + tick, 1.0, base.host, base.cpu, base.memory, base.numa, base.disks,
                            base.processes, gpus, system))
        now[0] += 1.0
    return tuple(out)


def with_demo_topology(snapshots: list[Snapshot], profile: str) -> list[Snapshot]:
    """The same snapshots carrying the demo profile's topology, read by the real code from its sysfs tree, and its
    network ports (as its simulated host has them 30 s in), placed against that topology."""
    topology, numa, nics = _demo_topology(profile)
    return [replace(s, topology=topology, numa=numa, nics=nics) for s in snapshots]


@cache
def _demo_topology(profile: str) -> tuple[Topology, NumaSnapshot, tuple[NicSnapshot, ...]]:
    from hwtop.demo.host import SimulatedHost
    from hwtop.demo.profiles import get_profile
    from hwtop.demo.story import STEADY
    from hwtop.demo.topology import read_demo_topology
    from hwtop.probes.network import place_nics

    probe = NvmlProbe(FakeNvmlLibrary(profile).pynvml)
    topology, numa = read_demo_topology(profile, probe)
    probe.close()
    nics = place_nics(SimulatedHost(get_profile(profile), STEADY, lambda: 30.0).nics(), topology)
    return topology, numa, nics


class StillContext:
    """A screen's context (tui/frame_view.ScreenContext) outside the app: no history, nothing watched, 1 s."""

    history = History()
    watching: tuple[str, ...] = ()
    thresholds = Thresholds()

    def status(self):  # noqa: ANN201 - a tui.frame_view.Status
        from hwtop.tui.frame_view import Status

        return Status(1.0)
