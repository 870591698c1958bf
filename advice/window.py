"""The recent past the rules read: the last snapshots (newest last) and small helpers over them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import msgspec

from hwtop.advice.last_answer import KeptAnswers
from hwtop.model.snapshot import GpuSnapshot, ProcessInfo, Snapshot, Topology

if TYPE_CHECKING:
    from hwtop.model.workload import JobConfig


def mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


class Window(msgspec.Struct, frozen=True):
    snapshots: tuple[Snapshot, ...]  # oldest first

    @property
    def latest(self) -> Snapshot:
        return self.snapshots[-1]

    def recent(self, seconds: float) -> tuple[Snapshot, ...]:
        """The snapshots of the last `seconds` (always at least the latest). Looked for from the newest back: the
        snapshots are oldest first (the engine keeps them so), and a rule asks for a few of a window of 120."""
        snapshots = self.snapshots
        cutoff = snapshots[-1].time - seconds
        start = len(snapshots)
        while start and snapshots[start - 1].time >= cutoff:
            start -= 1
        return snapshots[start:] or snapshots[-1:]

    def gpu_mean(self, index: int, read: Callable[[GpuSnapshot], float | None], seconds: float = 5.0) -> float | None:
        return mean(read(g) for s in self.recent(seconds) for g in s.gpus if g.index == index and not g.lost)

    def rank_mean(self, rank: int, read: Callable[..., float | None], seconds: float = 5.0) -> float | None:
        return mean(read(r) for s in self.recent(seconds) if s.workload for r in s.workload.ranks if r.rank == rank)


def empty_job_config() -> JobConfig:
    """The configuration of a job that sent none: every field unknown. Imported on use, by rules that run only
    when a workload exists (its model is loaded by then): a monitor without one never creates these classes."""
    from hwtop.model.workload import JobConfig

    return JobConfig()


def workload_running(snapshot: Snapshot) -> bool:
    return snapshot.workload is not None and snapshot.workload.status in ("running", "stalled")


def workload_starting(snapshot: Snapshot) -> bool:
    """The embedded job runs but no rank has finished a step yet: CUDA's context, the model and the first batch
    are built on one core while the GPU waits, by design (6 s on a real H200), not a bottleneck to fix."""
    return workload_running(snapshot) and snapshot.workload is not None and \
        not any((r.step or 0) > 0 for r in snapshot.workload.ranks)


_GPU_NODES: KeptAnswers[Topology, dict[int, int]] = KeptAnswers(4)
_COMPUTE_PIDS: KeptAnswers[GpuSnapshot, tuple[int, ...]] = KeptAnswers()


def compute_pids(gpu: GpuSnapshot) -> tuple[int, ...]:
    """Its visible compute processes' pids: a dozen rules ask each GPU of a tick, whose process lists are long on a
    big job's box, so the answer is kept for the (immutable) GPU snapshot."""
    return _COMPUTE_PIDS.ask(gpu, _compute_pids)


def _compute_pids(gpu: GpuSnapshot) -> tuple[int, ...]:
    return tuple(p.pid for p in gpu.processes if p.kind == "compute" and p.visible)


def gpus_in_use(snapshot: Snapshot) -> tuple[GpuSnapshot, ...]:
    """GPUs some process computes on: the ones a training job can be waiting on."""
    return tuple(g for g in snapshot.gpus if not g.lost and compute_pids(g))


def children(processes: Iterable[ProcessInfo], pid: int) -> tuple[ProcessInfo, ...]:
    return tuple(p for p in processes if p.ppid == pid)


def gpu_numa_nodes(snapshot: Snapshot) -> dict[int, int]:
    """Each GPU's NUMA node. The topology is the same object tick after tick until it is read again: its map is
    made once."""
    topology = snapshot.topology
    return {} if topology is None else _GPU_NODES.ask(topology, lambda layout: layout.gpu_numa_nodes())


def gpu_numa_node(snapshot: Snapshot, index: int) -> int | None:
    return gpu_numa_nodes(snapshot).get(index)


def node_cpus(snapshot: Snapshot) -> dict[int, tuple[int, ...]]:
    numa = snapshot.numa or (snapshot.topology.numa if snapshot.topology else None)
    return {} if numa is None else {n.index: n.cpus for n in numa.nodes}
