"""The demo machine's job as a focused job (`--pid` on a real box): its launcher, ranks and workers, and each
rank's figures as the stack sampler would give them (shares of its time per phase, collective waits included,
cumulative phase seconds, its busy site), from the story's JobState: the job view's rank table and the rank
rules (rank-straggler, collective-hang) read these as they read a real job's."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

import msgspec.structs

from hwtop.demo.host import SimulatedHost
from hwtop.demo.ras import RAS_STORIES, DemoRas
from hwtop.demo.story import LAUNCHER_PID, RANK_PID, JobState, Story
from hwtop.model.job import JobProcess, JobSnapshot, RankFigures, RankStacks
from hwtop.model.snapshot import GpuSnapshot
from hwtop.model.workload import WorkloadState
from hwtop.probes.stack_classify import Frame, Tally
from hwtop.probes.stack_waits import busy_site

RATE_HZ = 10.0  # the stack sampler's rate: samples = seconds watched x rate, up to its window
WINDOW_S = 30.0
TRAIN = "/home/trainer/train.py"
TORCH = "/usr/local/lib/python3.10/dist-packages/torch"
_LOOP = Frame("<module>", TRAIN, 262)
# A rank's main thread in each phase, as py-spy prints it (outermost first): the demo's train.py averages each
# step's loss over the ranks (line 231, a blocking all_reduce: where a rank waits for the others), the model's
# forward is its own (line 188), a batch comes from the DataLoader (line 219), the log is written in Python.
STACKS: dict[str, tuple[Frame, ...]] = {
    "compute": (_LOOP, Frame("train", TRAIN, 224), Frame("_wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1773),
                Frame("_call_impl", f"{TORCH}/nn/modules/module.py", 1784), Frame("forward", TRAIN, 188),
                Frame("forward", f"{TORCH}/nn/modules/conv.py", 554)),
    "collective": (_LOOP, Frame("train", TRAIN, 231), Frame("wrapper", f"{TORCH}/distributed/c10d_logger.py", 81),
                   Frame("all_reduce", f"{TORCH}/distributed/distributed_c10d.py", 2806)),
    "data": (_LOOP, Frame("train", TRAIN, 219), Frame("__next__", f"{TORCH}/utils/data/dataloader.py", 733),
             Frame("_next_data", f"{TORCH}/utils/data/dataloader.py", 1482)),
    "other": (_LOOP, Frame("train", TRAIN, 236), Frame("log_step", TRAIN, 152)),
}
PAGE = 4096
WORKER = "DataLoader worker"  # the role probes/job/tree.py gives a rank's DataLoader worker


def _shares(state: JobState, rank: int) -> dict[str, float]:
    """Where a rank's main thread is: waiting for data the share of the step the story's JobState gives its
    telemetry too (one source for the workload pane and the job view); the rest of the step its GPU works, and of
    that it waits in collectives its collective share, as the rank's CPU in the process table has it
    (JobState.cpu_of_rank: on a CPU while it computes, asleep in the all-reduce), a little elsewhere."""
    data = state.data_wait
    busy = 1.0 - data
    wait = state.collective_of(rank) * busy
    other = min(0.03, max(0.0, busy - wait))
    return {"collective": wait, "compute": max(0.0, busy - wait - other), "data": data, "other": other}


@lru_cache(maxsize=64)
def sampled(shares: tuple[tuple[str, float], ...]) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """(each phase's site, the busy site) of a rank whose samples fall in these shares: its stacks (STACKS) tallied
    as the stack sampler tallies py-spy's, through the same classifier and the same busy_site."""
    tally = Tally()
    for phase, share in shares:
        count = round(1000 * share)
        if count and phase in STACKS:
            tally.add(list(STACKS[phase]), count)
    sites = tuple((phase, counts.most_common(1)[0][0]) for phase, counts in tally.sites.items())
    return sites, busy_site(tally)


class _Spent(NamedTuple):
    seconds: dict[str, float]  # phase -> cumulative seconds
    rounded: tuple[tuple[str, float], ...]  # as RankFigures.phase_seconds shows them


class DemoRanks:
    """Stands where `Sampler.job` holds a JobProbe: `read()` once per tick, `close()` at the end. Its processes are
    the demo host's own rows (the process table's threads, workers, CPU and memory), as a real JobProbe reads the
    same /proc as the process table."""

    def __init__(self, story: Story, host: SimulatedHost, elapsed: Callable[[], float],
                 wall: Callable[[], float], job_ranks: int = 0) -> None:
        self.story, self.host, self.elapsed, self.wall = story, host, elapsed, wall
        self.ranks = tuple(host.profile.busy_gpus)
        self.hostname = host.spec.hostname
        self._t = 0.0
        # what the job probe keeps of a job that ended (probes/job/probe.py): its launcher and ranks as they were
        # last seen, gone, their exit codes unknown (it neither started them nor saw them as zombies)
        self._gone: tuple[JobProcess, ...] = ()
        self._seen = 0
        self._ended_at: float | None = None
        # a story told through NCCL's RAS view of a two-node job (demo/ras.py)
        self.ras = DemoRas(story, self.ranks, wall) if story.name in RAS_STORIES else None
        # A job larger than this host (job_ranks): ranks len(ranks) on are other nodes', seen as the fleet sees them
        self.remote = tuple(range(len(self.ranks), job_ranks)) if self.ranks else ()
        # rank -> its cumulative seconds per phase, one accumulator shared by the ranks whose shares have been the
        # same every tick (of 256 ranks, two or three histories: each is summed once a tick, to the same floats)
        start = _Spent({}, ())
        self._seconds: dict[int, _Spent] = {rank: start for rank in (*self.ranks, *self.remote)}
        per_node = len(self.ranks)  # (rank, its host's label, its local rank there) of the other nodes' ranks
        self._remote = tuple((rank, f"{self.hostname}-{rank // per_node:02d}", rank % per_node) for rank in self.remote)

    def _processes(self, state: JobState, memory: dict[int, int | None]) -> list[JobProcess]:
        """The launcher, its ranks and their DataLoader workers, from the host's table of this tick; a rank's
        environment as torchrun sets it (WORLD_SIZE, LOCAL_WORLD_SIZE) with the story's NCCL_* variables."""
        table = self.host.every_process(fillers=False)  # the idle fillers are no job's
        ranks = {RANK_PID + rank: rank for rank in self.ranks}
        node_of = {cpus: node for node, cpus in enumerate(self.host.nodes)}
        env = tuple(sorted(state.nccl_env))  # every rank's and worker's alike: sorted once, not once a process
        out = []
        for p in table:
            if p.pid == LAUNCHER_PID:
                role, rank, depth = "launcher", None, 0
            elif p.pid in ranks:
                role, rank, depth = f"rank {ranks[p.pid]}", ranks[p.pid], 1
            elif p.ppid in ranks:
                role, rank, depth = WORKER, None, 2
            else:
                continue
            node = node_of.get(p.cpu_affinity) if p.cpu_affinity is not None else None
            pages = None if node is None or p.rss_bytes is None else ((node, p.rss_bytes // PAGE),)
            gpu = ((rank, memory.get(p.pid)),) if rank is not None else ()
            here = len(self.ranks) if depth else None
            out.append(JobProcess(p.pid, p.ppid, p.name, p.cmdline, role, rank, depth, p.state, p.cpu_percent,
                                  p.rss_bytes, p.threads, p.cpu_affinity, numa_pages=pages, gpus=gpu,
                                  local_rank=rank, nccl_env=env if depth else (),
                                  world_size=here and here * state.nodes, local_world_size=here))
        return out

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot:
        t = max(0.0, self.elapsed())
        dt, self._t = max(0.0, t - self._t), t
        state = self.story.state(t, self.ranks)
        seen_at = now if now is not None else self.wall()
        steps = {r.pid: r.step for r in workload.ranks} if workload is not None else {}
        memory = {p.pid: p.used_memory_bytes for g in gpus for p in g.processes}
        processes = self._processes(state, memory)
        if state.status == "crashed":  # torchrun tore the job down: its last view, as the job probe keeps it
            return self._ended(state, seen_at)
        self._gone = tuple(msgspec.structs.replace(p, alive=False, state="gone", cpu_percent=None)
                           for p in processes if p.role == "launcher" or p.role.startswith("rank"))
        self._seen = max(self._seen, len(processes))
        figures, stacks = [], []
        samples = int(min(t, WINDOW_S) * RATE_HZ)
        # A rank's shares follow from its collective wait alone (the data wait is the job's): of 256 ranks, two or
        # three tell apart, so each is made and sorted once a tick
        by_wait: dict[float, tuple[dict[str, float], tuple[tuple[str, float], ...]]] = {}

        def shares_of(rank: int) -> tuple[dict[str, float], tuple[tuple[str, float], ...]]:
            wait = state.collective_of(rank)
            known = by_wait.get(wait)
            if known is None:
                shares = _shares(state, rank)
                known = by_wait[wait] = (shares, tuple(sorted(shares.items(), key=lambda kv: -kv[1])))
            return known

        moved: dict[tuple[int, float], tuple[_Spent, _Spent]] = {}  # (id of the old accumulator, wait) -> old, new

        def spent(rank: int) -> tuple[tuple[str, float], ...]:
            """The rank's phase seconds after this tick, rounded as shown."""
            old = self._seconds[rank]
            wait = state.collective_of(rank)
            known = moved.get((id(old), wait))
            if known is None:
                seconds = dict(old.seconds)
                for phase, value in shares_of(rank)[0].items():
                    seconds[phase] = seconds.get(phase, 0.0) + dt * value
                known = moved[id(old), wait] = (old, _Spent(seconds, tuple((k, round(v, 1)) for k, v in
                                                                            seconds.items())))
            self._seconds[rank] = known[1]
            return known[1].rounded

        def ordered(rank: int) -> tuple[tuple[str, float], ...]:
            return shares_of(rank)[1] if samples else ()

        for rank in self.ranks:
            pid = RANK_PID + rank
            sites, busy = sampled(ordered(rank))
            figures.append(RankFigures(rank, self.hostname, pid=pid, local_rank=rank, gpu=rank,
                                       phase_seconds=spent(rank), shares=ordered(rank), steps=steps.get(pid),
                                       site=busy, samples=samples, seen_at=seen_at))
            stacks.append(RankStacks(pid, rank, samples, min(t, WINDOW_S), ordered(rank), sites, busy_site=busy))
        figures += [RankFigures(rank, host, local_rank=local, gpu=local, phase_seconds=spent(rank),
                                shares=ordered(rank), site=sampled(ordered(rank))[1], samples=samples,
                                seen_at=seen_at) for rank, host, local in self._remote]
        job = JobSnapshot(f"pid {LAUNCHER_PID}", (LAUNCHER_PID,), "running", tuple(processes),
                           sum(p.cpu_percent or 0.0 for p in processes), sum(p.rss_bytes or 0 for p in processes),
                           gpu_memory=tuple((r, memory.get(RANK_PID + r) or 0) for r in self.ranks),
                           pids_seen=len(processes), stacks=tuple(stacks), ranks=tuple(figures),
                           message=f"demo: {state.phase}")
        return self.ras.attach(job, t) if self.ras is not None else job

    def _ended(self, state: JobState, seen_at: float) -> JobSnapshot:
        """The job's last view: its launcher and ranks gone, since the tick it ended."""
        if self._ended_at is None:
            self._ended_at = seen_at
        return JobSnapshot(f"pid {LAUNCHER_PID}", (LAUNCHER_PID,), "ended", self._gone, None, 0,
                           ended_at=self._ended_at, message=f"demo: {state.phase}", pids_seen=self._seen)

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return None

    def close(self) -> None:
        """Nothing runs: the ranks are a story."""
