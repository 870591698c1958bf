"""Timelines of snapshots for the advice tests: GPUs read through the real NVML probe from the fake at a manual
clock (so a forced throttle, a retrained link or an ECC error travels the real decoding path), the host as
each test describes it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from msgspec.structs import replace

from hwtop.advice.engine import AdviceEngine
from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.profiles import GIB
from hwtop.model.finding import Finding
from hwtop.model.frame import Frame
from hwtop.model.snapshot import CoreLoad, GpuProcess, GpuSnapshot, ProcessInfo, Snapshot
from hwtop.model.workload import JobConfig, OomEvent, RankState, WorkloadState
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.slow import BackgroundCalls
from tests.factories import T0, host_snapshot


class Timeline:
    def __init__(self, profile: str | None = None, cores: int = 16, nodes: int = 1, topology: bool = False) -> None:
        self.clock = [30.0]
        self.time = T0
        self.fake = FakeNvmlLibrary(profile, seed=7, clock=lambda: self.clock[0]) if profile else None
        self.probe = (NvmlProbe(self.fake.pynvml, source=f"demo:{profile}", clock=lambda: self.clock[0],
                                background=BackgroundCalls(inline=True)) if self.fake else None)
        self.base = host_snapshot(cores, nodes, busy_core=None)
        self.topology = self.numa = None
        if topology and profile:
            from hwtop.demo.topology import read_demo_topology

            self.topology, self.numa = read_demo_topology(profile, NvmlProbe(FakeNvmlLibrary(profile).pynvml))

    def tick(self, seconds: float = 1.0, *, cores: dict[int, float] | float | None = None, iowait: float | None = None,
             processes: tuple[ProcessInfo, ...] | None = None, workload: WorkloadState | None = None,
             gpu: Callable[[GpuSnapshot], GpuSnapshot] | None = None, gpus: tuple[GpuSnapshot, ...] | None = None,
             **fields: Any) -> Snapshot:
        """One snapshot `seconds` after the last. `cores`: a load for every core, or {core: load} over 5%;
        `gpu` edits each probed GPU (for values the fake cannot be told, such as memory used)."""
        self.time += seconds
        self.clock[0] += seconds
        base = self.base
        cpu = base.cpu
        if cores is not None or iowait is not None:
            loads = []
            for c in base.cpu.cores:
                load = cores if isinstance(cores, int | float) else (cores or {}).get(c.index, 5.0)
                loads.append(CoreLoad(c.index, c.numa_node, load, user=load, system=0.0, iowait=iowait or 0.0,
                                      irq=0.0, steal=0.0, mhz=c.mhz))
            cpu = replace(base.cpu, cores=tuple(loads))
        procs = base.processes if processes is None else processes
        system, probed = (base.gpu_system, ()) if self.probe is None else self.probe.read(procs)
        if gpu is not None:
            probed = tuple(gpu(g) for g in probed)
        snapshot = replace(
            base, time=self.time, cpu=cpu, processes=procs, gpus=probed if gpus is None else gpus,
            gpu_system=system, workload=workload, topology=self.topology, numa=self.numa or base.numa)
        return replace(snapshot, **fields) if fields else snapshot


def rank(index: int, *, wait: float | None = 0.1, amp: str = "off", step: int = 100, pid: int | None = None,
         scales: tuple[float, ...] = (), allocated: int | None = None, reserved: int | None = None) -> RankState:
    return RankState(index, pid or 50000 + index, step, 0.2, 80.0, wait, 1.2, amp, scales[-1] if scales else None,
                     16, 2 * GIB, cuda_allocated_bytes=allocated, cuda_reserved_bytes=reserved, scales=scales)


def workload(*ranks: RankState, status: str = "running", pids: Iterable[int] | None = None,
             oom: OomEvent | None = None, **config: Any) -> WorkloadState:
    settings = {"device": "cpu", "model": "convnet", "amp": "off", "num_workers": 0, "pin_memory": False,
                "cudnn_benchmark": False, "world_size": len(ranks), "transform_cost_ms": 8.0}
    settings.update(config)
    return WorkloadState("test", status, None, ranks, None, pids=tuple(pids or (r.pid for r in ranks)),
                         config=JobConfig(**settings), oom_count=1 if oom else 0, last_oom=oom)


def gpu_process(pid: int, memory: int = 10 * GIB) -> GpuProcess:
    return GpuProcess(pid, "compute", memory)


def plain_gpu(index: int, util: float, pids: tuple[int, ...] = (), name: str = "NVIDIA A100-SXM4-80GB",
              **fields: Any) -> GpuSnapshot:
    """A GPU for rules that compare several (links, models, balance): fields the fake has no knob for."""
    return GpuSnapshot(index, name, f"GPU-{index}", f"00000000:{index + 7:02x}:00.0", memory_total_bytes=80 * GIB,
                       memory_used_bytes=20 * GIB, util_percent=util, compute_capability=(8, 0),
                       processes=tuple(gpu_process(p) for p in pids), **fields)


def process(pid: int, ppid: int = 1, cpu: float = 5.0, affinity: tuple[int, ...] | None = None,
            name: str = "python") -> ProcessInfo:
    return ProcessInfo(pid, ppid, "alice", name, f"{name} train.py", "R", cpu, 2 * GIB, 8, affinity)


def run(snapshots: Iterable[Snapshot], engine: AdviceEngine | None = None) -> list[tuple[Finding, ...]]:
    """The engine's findings after each snapshot."""
    engine = engine or AdviceEngine()
    out = [engine.update(s) for s in snapshots]
    assert not engine.rule_errors, engine.rule_errors
    return out


def ids(findings: Iterable[Finding]) -> set[str]:
    return {f.id for f in findings}


def find(findings: Iterable[Finding], rule_id: str) -> Finding:
    matches = [f for f in findings if f.id == rule_id]
    assert matches, f"{rule_id} not among {[f.id for f in findings]}"
    return matches[0]


def play_story(story: str, seconds: float, profile: str = "dgx-a100", step: float = 2.0) -> list[Frame]:
    """A demo story's frames every `step` seconds of a fake clock (a whole machine: fake NVML, simulated host),
    advised by a real Session: what the app, doctor and the exporter would be given."""
    from hwtop.demo.machine import demo_sampler
    from hwtop.session.session import Session

    clock = [0.0]
    sampler = demo_sampler(profile, story, seed=7, clock=lambda: clock[0], wall=lambda: T0 + clock[0])
    session = Session(sampler)
    frames = []
    try:
        while clock[0] <= seconds:
            frames.append(session.tick())
            clock[0] += step
    finally:
        session.close()
    return frames
