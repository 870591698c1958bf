"""The demo machine's training job's telemetry: a WorkloadState per tick, from the story's JobState, so the
telemetry rules (gpu-starved, amp-available, cuda-oom) react to the story as they would to the embedded job's own.
The job itself (its processes, ranks and their stack figures) is demo/ranks.py's, as the job probe reads a real one."""

from __future__ import annotations

import math
from collections.abc import Callable

from hwtop.demo.host import host_of, rank_rss
from hwtop.demo.nvml.world import memory_ramp
from hwtop.demo.profiles import DemoProfile
from hwtop.demo.story import (
    OOM_REQUEST,
    RANK_PID,
    JobState,
    StepCounter,
    Story,
    device_capacity,
    rank_held,
)
from hwtop.model.workload import JobConfig, OomEvent, RankState, WorkloadState
from hwtop.workload.monitor import STALL_S

RING = 30  # points kept for the rank sparklines
ALLOCATED = 0.82  # of what a rank's caching allocator reserves, the share its tensors use


def _gib(size: float) -> str:
    return f"{size / 1024**3:.2f} GiB"


def oom_message(profile: DemoProfile, job: JobState, rank: int) -> str:
    """What PyTorch (2.1 on) raises, with the figures of the rank as the story leaves it: what it holds, what its
    tensors use of that, and what its device has left."""
    held = rank_held(profile, job, rank)
    capacity = device_capacity(profile)
    return (f"CUDA out of memory. Tried to allocate {_gib(OOM_REQUEST)}. GPU {rank} has a total capacity of "
            f"{_gib(capacity)} of which {_gib(capacity - held)} is free. Including non-PyTorch memory, this process "
            f"has {_gib(held)} memory in use. Of the allocated memory {_gib(held * ALLOCATED)} is allocated by "
            f"PyTorch, and {_gib(held * (1 - ALLOCATED))} is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
            "fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


class DemoJob:
    """Stands where `Sampler.workload` holds a WorkloadMonitor: `state()` once per tick, `stop()` at the end.
    Steps are integrated from the story's step time over the scenario clock; `wall()` is the Sampler's clock,
    which stamps events (an OOM) in the snapshots' time."""

    def __init__(self, story: Story, profile: DemoProfile, elapsed: Callable[[], float],
                 wall: Callable[[], float]) -> None:
        self.story = story
        self.profile = profile
        ranks = tuple(profile.busy_gpus)
        self.ranks = ranks
        self.elapsed = elapsed
        self.wall = wall
        self._steps = StepCounter(story, ranks)
        self._stopped_at: float | None = None  # scenario time the story's steps stopped
        self._times: list[float] = []

    @property
    def _t(self) -> float:
        return self._steps.t

    def _advance(self, t: float) -> JobState:
        self._steps.advance(t)
        return self.story.state(t, self.ranks)

    def state(self) -> WorkloadState:
        t = max(0.0, self.elapsed())
        job = self._advance(t)
        self._times = (self._times + [job.step_s])[-RING:]
        world = len(self.ranks)
        ranks = tuple(self._rank(i, rank, job) for i, rank in enumerate(self.ranks) if rank not in job.dead_ranks
                      and job.status != "crashed")
        config = JobConfig(device="cuda", backend="nccl", model=job.model, amp=job.amp, num_workers=job.num_workers,
                           pin_memory=True, world_size=world * job.nodes, batch_size=job.batch_size,
                           transform_cost_ms=job.cpu_ms_per_sample)
        last_oom = None
        if job.oom_at is not None and job.dead_ranks:
            rank = job.dead_ranks[0]  # it ran the job's batch, as every rank did: no smaller batch was tried
            last_oom = OomEvent(rank=rank, batch_size=job.batch_size, largest_fit=None,
                                message=oom_message(self.profile, job, rank), time=self.wall() - (t - job.oom_at))
        pids = () if job.status == "crashed" else tuple(RANK_PID + r for r in self.ranks if r not in job.dead_ranks)
        return WorkloadState(
            kind=self.story.name, status=self._status(job, t), exit_code=1 if job.status == "crashed" else None,
            ranks=ranks, last_event=job.phase, pids=pids, config=config,
            oom_count=1 if last_oom else 0, last_oom=last_oom)

    def _status(self, job: JobState, t: float) -> str:
        """The job's status as the embedded job's monitor says it: "stalled" only STALL_S after its steps stopped
        (workload/monitor.py), so the rules see the stop when they would on a real job, not the instant it began."""
        if job.status != "stalled":
            self._stopped_at = None
            return job.status
        if self._stopped_at is None or self._stopped_at > t:
            self._stopped_at = t
        return "stalled" if t - self._stopped_at >= STALL_S else "running"

    def _rank(self, i: int, rank: int, job: JobState) -> RankState:
        step = self._steps.of(rank)
        held = int(rank_held(self.profile, job, rank) * memory_ramp(self._t))
        stalled = job.status == "stalled"
        step_time = None if stalled else job.step_s
        return RankState(
            rank=rank, pid=RANK_PID + rank, step=step, step_time_s=step_time,
            samples_per_s=None if step_time is None else round(job.samples_per_s, 1),
            data_wait_fraction=job.data_wait, loss=round(6.9 * math.exp(-step / 4000.0) + 0.9, 4),
            amp=job.amp, scale=65536.0 if job.amp == "fp16" else None, batch_size=job.batch_size,
            rss_bytes=rank_rss(host_of(self.profile), len(self.ranks), rank),
            cuda_allocated_bytes=int(held * ALLOCATED), cuda_reserved_bytes=held, cuda_peak_bytes=held,
            step_times=tuple(self._times),
            throughput=tuple(round(job.batch_size / s, 1) for s in self._times))

    @property
    def root(self) -> int | None:
        """None: the story's job has no process of this host; the demo sampler focuses it as DemoRanks."""
        return None

    def stop(self) -> None:
        """Nothing runs: the job is a story."""
