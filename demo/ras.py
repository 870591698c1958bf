"""The demo's job as NCCL's RAS would describe it: a two-node job, this node's ranks and those of a second node
(10.0.0.2), answering every QUERY_S of story time. Each answer is written in NCCL's JSON layout (ras.rst) and
read back through hwtop's own parser, tracker and join, so the job view, the rank table and the rules see what
they would see on a cluster: in `straggler` the slow rank behind in most answers, in `nccl-hang` the stuck rank
one AllReduce behind while nothing moves, the other node's ranks in the table. The counts are the job's steps
(the telemetry's, demo/story.py StepCounter) times the AllReduces a step launches."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import msgspec.structs

from hwtop.demo.story import RANK_PID, RAS_ADDR, JobState, StepCounter, Story, node_address
from hwtop.model.job import JobSnapshot
from hwtop.model.ras import NcclView
from hwtop.probes.nccl_ras import versions
from hwtop.probes.nccl_ras.join import Here, join_ranks, named
from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.track import Tracker

QUERY_S = 10.0  # hwtop's default interval
THIS_NODE, OTHER_NODE = node_address(0), node_address(1)
OTHER_PID = 52000  # another node's rank r is pid 52000 + r - (this node's ranks) there
# A step's AllReduces: DDP's gradient buckets, launched as the backward pass fills them (bucket_cap_mb=25, the
# first bucket 1 MiB), then the step's loss averaged over the ranks for the log (train.py's dist.all_reduce, where
# a rank waits for the others)
DDP_FIRST_BUCKET, DDP_BUCKET = 1 << 20, 25 << 20
OPS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
RAS_STORIES = ("straggler", "nccl-hang")
POLICY = versions.policy((2, 30, 7), True, False).words


def allreduces_per_step(state: JobState) -> int:
    """DDP's buckets for the model's gradients, and the loss's AllReduce (ResNet-50's 97 MiB: 5 buckets, 6 in all)."""
    return 2 + math.ceil(max(0.0, state.gradient_bytes - DDP_FIRST_BUCKET) / DDP_BUCKET)


def launched(state: JobState, steps: int) -> int:
    """The AllReduces the ranks that wait have launched after `steps` whole steps: in a hang, all of the next
    step's (they wait in its last), which the stuck rank never reached."""
    return allreduces_per_step(state) * (steps + (1 if state.stuck_rank is not None else 0))


def answer(state: JobState, query: int, local: tuple[int, ...], steps: int) -> str:
    """One STATUS answer in NCCL's JSON layout for the `query`th query (every QUERY_S seconds), `steps` steps in."""
    world = len(local) * state.nodes
    base = launched(state, steps)
    ranks = []
    for rank in range(world):
        here = rank < len(local)
        count = base
        if state.stuck_rank is not None and rank == state.stuck_rank:
            count -= 1  # never launched the all-reduce the others wait in
        elif state.straggler_rank is not None and rank == state.straggler_rank and query % 5 != 4:
            count -= 1  # the one they wait for: behind when asked, but for now and then
        elif state.stuck_rank is None and rank == (query * 7 + 3) % world and rank != state.straggler_rank:
            count -= 1  # a balanced job: whoever is caught one behind changes from answer to answer
        device = local[rank] if here else rank % len(local)
        ranks.append({"rank": rank, "host": node_address(rank // len(local)),
                      "pid": RANK_PID + local[rank] if here else OTHER_PID + rank - len(local),
                      "cuda_dev": device, "nvml_dev": device,
                      "status": {"init_state": 0, "async_error": 0, "finalize_called": False, "destroy_flag": False,
                                 "abort_flag": False},
                      "collective_counts": {op: count if op == "AllReduce" else 1 for op in OPS}})
    return json.dumps({"nccl_version": "2.30.7", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
                       "timestamp": "", "communicators_count": 1,
                       "communicators": [{"hash": "0x27a079b828ff1a75", "secondary_hash": "0x1:0x2", "size": world,
                                          "ranks_count": world, "missing_ranks_count": 0, "ranks": ranks,
                                          "missing_ranks": []}],
                       "ras": {"collection_time_sec": 0.004, "timeouts_count": 0}}, indent=2)


class DemoRas:
    """Joins the demo's RAS view into the focused job each tick; a new answer every QUERY_S of story time."""

    def __init__(self, story: Story, local: tuple[int, ...], wall: Callable[[], float]) -> None:
        self.story, self.local, self.wall = story, local, wall
        self.tracker = Tracker()
        self.view: NcclView | None = None
        self.asked = 0
        self.steps = StepCounter(story, local)  # NCCL counts what the job's telemetry counts
        self._named: tuple[NcclView | None, NcclView | None] = (None, None)  # (an answer's view, it named)

    def attach(self, job: JobSnapshot, t: float) -> JobSnapshot:
        due = int(t // QUERY_S)
        while self.asked < due:  # each answer as it would have come, in order
            self.asked += 1
            state = self.story.state(self.asked * QUERY_S, self.local)
            self.steps.advance(self.asked * QUERY_S)
            text = answer(state, self.asked, self.local, self.steps.most)
            at = self.wall() - (t - self.asked * QUERY_S)
            comms = self.tracker.update(parse_json(text), at)
            self.view = NcclView(RAS_ADDR, "demo: NCCL_RAS_ADDR of the ranks", comms, self.asked, at,
                                 "json", "2.30.7", reply_bytes=len(text), policy=POLICY,
                                 version_source="libnccl.so.2.30.7 of the ranks", main_key=self.tracker.main,
                                 polled=True)
        if self.view is None:
            return job
        here = Here(frozenset({THIS_NODE}), {p.pid: p.pid for p in job.processes if p.alive})
        if self._named[0] is not self.view:  # this node by its hostname, once an answer
            self._named = (self.view, named(self.view, here.addresses, job.ranks[0].host if job.ranks else ""))
        return msgspec.structs.replace(job, nccl=self._named[1], ranks=join_ranks(job.ranks, self.view, here))
