"""The rules that speak of a job's ranks read the one verdict (advice/rank_window.py): a still stack is evidence,
and progress outweighs it. Measured on the landed main (issue 53): a GPU job whose ranks wait most of each step got
a CRITICAL loop-stuck on every rank while each rank's NCCL counts kept advancing with the others'."""

from __future__ import annotations

from msgspec.structs import replace

from hwtop.model.job import RankFigures, RankStacks, Stillness
from tests.advice.test_job_rules import job, proc
from tests.advice_timeline import Timeline, ids, run

PIDS = (4100, 4101, 4102, 4103)
WAIT = Stillness(14.0, 140, "train.py:88 train_step", "train.py:88 train_step", "other")


def gpu_job(launched: int):
    """Four ranks whose main threads wait on one line (as for their GPUs' work), NCCL's counts at `launched`."""
    processes = [replace(proc(pid, f"rank {r}", cpu=1.0), gpus=((r, 1 << 30),)) for r, pid in enumerate(PIDS)]
    stacks = tuple(RankStacks(pid, r, 140, 14.0, (("other", 0.97), ("compute", 0.03)), main_running=0.01,
                              still=WAIT, updated_at=1000.0) for r, pid in enumerate(PIDS))
    ranks = tuple(RankFigures(r, "node-0", pid=pid, gpu=r, shares=(("other", 0.97), ("compute", 0.03)), samples=140,
                              seen_at=1000.0, collectives=(("AllReduce", launched),), lag=0, nccl_state="RUNNING")
                  for r, pid in enumerate(PIDS))
    return job(*processes, stacks=stacks, ranks=ranks)


def test_ranks_waiting_on_one_line_while_their_nccl_counts_advance_are_not_loop_stuck():
    t = Timeline(cores=8)
    snapshots = [t.tick(2.0, job=gpu_job(6000 + 25 * i)) for i in range(25)]
    findings = run(snapshots)
    assert not any("loop-stuck" in ids(f) for f in findings)
    assert not {"collective-hang", "rank-straggler"} & set().union(*(ids(f) for f in findings))


def test_the_same_ranks_with_counts_that_stopped_are_stuck():
    t = Timeline(cores=8)
    findings = run([t.tick(2.0, job=gpu_job(6000)) for _ in range(25)])
    assert "loop-stuck" in ids(findings[-1])
