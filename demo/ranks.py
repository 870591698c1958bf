"""The demo machine's job as a focused job (`--pid` on a real box): its launcher and ranks, and each rank's
figures as the stack sampler would give them (shares of its time per phase, collective waits included,
cumulative phase seconds, its busy site), from the story's JobState. For the stories that are about the ranks
(`straggler`): the job view's rank table and the rank-straggler rule read these as they read a real job's."""

from __future__ import annotations

from collections.abc import Callable

from hwtop.demo.story import LAUNCHER_PID, RANK_PID, JobState, Story
from hwtop.model.job import JobProcess, JobSnapshot, RankFigures, RankStacks
from hwtop.model.snapshot import GpuSnapshot
from hwtop.model.workload import WorkloadState

RATE_HZ = 10.0  # the stack sampler's rate: samples = seconds watched x rate, up to its window
WINDOW_S = 30.0
BLEND_S = 10.0  # a change shows in the shares over one sampler chunk
BUSY_SITE = "train.py:188 forward"
GIB = 1024**3


def _shares(state: JobState, rank: int) -> dict[str, float]:
    """Where a rank's main thread is: a balanced step computes most of the time and waits briefly in NCCL."""
    jitter = 0.01 * (rank % 3)
    if state.straggler_rank is not None and rank == state.straggler_rank:
        wait = 0.03 + jitter
    else:
        wait = state.collective_wait + jitter
    data, other = 0.05, 0.03
    return {"collective": wait, "compute": 1.0 - wait - data - other, "data": data, "other": other}


class DemoRanks:
    """Stands where `Sampler.job` holds a JobProbe: `read()` once per tick, `close()` at the end."""

    def __init__(self, story: Story, ranks: tuple[int, ...], elapsed: Callable[[], float],
                 wall: Callable[[], float], host: str, job_ranks: int = 0) -> None:
        self.story, self.ranks, self.elapsed, self.wall, self.host = story, ranks, elapsed, wall, host
        # A job larger than this host (job_ranks): ranks len(ranks) on are other nodes', seen as the fleet sees them
        self.remote = tuple(range(len(ranks), job_ranks)) if ranks else ()
        self._t = 0.0
        self._seconds = {rank: {} for rank in (*ranks, *self.remote)}  # rank -> phase -> cumulative seconds
        self._changed_at = 0.0
        self._before: JobState = story.at(0.0)
        self._last: JobState = self._before
        self._memo_t: float | None = None
        self._memo: dict[tuple[int, bool, bool], dict[str, float]] = {}

    def _blended(self, t: float, rank: int) -> dict[str, float]:
        """A rank's shares at t (shared with the ranks that play the same part: read, never changed)."""
        if t != self._memo_t:  # the story is asked once a read, not once a rank (256 of them at scale)
            state = self.story.at(t)
            if state.straggler_rank != self._last.straggler_rank:  # the story changed: shown gradually
                self._before, self._changed_at = self._last, t
            self._last, self._memo_t, self._memo = state, t, {}
        state = self._last
        key = (rank % 3, rank == state.straggler_rank, rank == self._before.straggler_rank)  # what _shares reads
        found = self._memo.get(key)
        if found is None:
            new = _shares(state, rank)
            share = min(1.0, (t - self._changed_at) / BLEND_S) if self._changed_at else 1.0
            old = _shares(self._before, rank)
            found = self._memo[key] = {phase: round(share * new[phase] + (1 - share) * old[phase], 3)
                                       for phase in new}
        return found

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot:
        t = max(0.0, self.elapsed())
        dt, self._t = max(0.0, t - self._t), t
        state = self.story.at(t)
        seen_at = now if now is not None else self.wall()
        steps = {r.pid: r.step for r in workload.ranks} if workload is not None else {}
        memory = {p.pid: p.used_memory_bytes for g in gpus for p in g.processes}
        processes = [JobProcess(LAUNCHER_PID, 1, "torchrun", "torchrun --standalone --nproc-per-node 8 train.py",
                                "launcher", None, 0, "S", 0.3, GIB // 4, 6, None)]
        figures, stacks = [], []
        for rank in self.ranks:
            pid = RANK_PID + rank
            shares = self._blended(t, rank)
            seconds = self._seconds[rank]
            for phase, value in shares.items():
                seconds[phase] = seconds.get(phase, 0.0) + dt * value
            samples = int(min(t, WINDOW_S) * RATE_HZ)
            ordered = tuple(sorted(shares.items(), key=lambda kv: -kv[1]))
            waiting = shares["collective"] >= 0.3
            processes.append(JobProcess(pid, LAUNCHER_PID, "python", "python train.py --arch resnet50", f"rank {rank}",
                                        rank, 1, "S" if waiting else "R", round(100.0 * (1 - shares["collective"])),
                                        14 * GIB, 24, None, gpus=((rank, memory.get(pid)),), local_rank=rank))
            figures.append(RankFigures(rank, self.host, pid=pid, local_rank=rank, gpu=rank,
                                       phase_seconds=tuple((k, round(v, 1)) for k, v in seconds.items()),
                                       shares=ordered if samples else (), steps=steps.get(pid), site=BUSY_SITE,
                                       samples=samples, seen_at=seen_at))
            stacks.append(RankStacks(pid, rank, samples, min(t, WINDOW_S), ordered if samples else (),
                                     busy_site=BUSY_SITE))
        per_node = len(self.ranks)
        for rank in self.remote:
            shares = self._blended(t, rank)
            seconds = self._seconds[rank]
            for phase, value in shares.items():
                seconds[phase] = seconds.get(phase, 0.0) + dt * value
            samples = int(min(t, WINDOW_S) * RATE_HZ)
            figures.append(RankFigures(rank, f"{self.host}-{rank // per_node:02d}", local_rank=rank % per_node,
                                       gpu=rank % per_node, phase_seconds=tuple((k, round(v, 1)) for k, v in
                                                                                seconds.items()),
                                       shares=tuple(sorted(shares.items(), key=lambda kv: -kv[1])) if samples else (),
                                       site=BUSY_SITE, samples=samples, seen_at=seen_at))
        return JobSnapshot(f"pid {LAUNCHER_PID}", (LAUNCHER_PID,), "running", tuple(processes),
                           sum(p.cpu_percent or 0.0 for p in processes), sum(p.rss_bytes or 0 for p in processes),
                           gpu_memory=tuple((r, memory.get(RANK_PID + r) or 0) for r in self.ranks),
                           pids_seen=len(processes), stacks=tuple(stacks), ranks=tuple(figures),
                           message=f"demo: {state.phase}")

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return None

    def close(self) -> None:
        """Nothing runs: the ranks are a story."""
