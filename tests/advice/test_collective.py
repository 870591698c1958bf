"""collective-hang with per-rank figures: the rank that never reached the collective is named (rank, pid, host,
where it is) in the shared judgement's words when every other rank waits in it; with a rank unreadable, or two
ranks away, none is guessed."""

from __future__ import annotations

from hwtop.demo.profiles import GIB
from hwtop.model.job import JobSnapshot, RankFigures
from tests.advice_timeline import Timeline, find, plain_gpu, rank, run, workload


def figures(index: int, collective: float, samples: int = 200, site: str | None = None) -> RankFigures:
    return RankFigures(index, "node-a", pid=50000 + index, shares=(("collective", collective),
                                                                   ("other", 1.0 - collective)),
                       samples=samples, site=site)


def hung(t: Timeline, ranks: tuple[RankFigures, ...]):
    """Three ranks on GPUs 0-2 spinning at a fifth of their power, with the job's per-rank figures."""
    gpus = tuple(plain_gpu(i, 100.0, pids=(50000 + i,), power_w=80.0, power_limit_w=400.0) for i in range(3))
    job = JobSnapshot("pid 49999", (49999,), "running", (), 300.0, 3 * GIB, ranks=ranks)
    return t.tick(2.0, gpus=gpus, workload=workload(rank(0), rank(1), rank(2)), job=job)


def test_the_rank_that_never_reached_the_collective_is_named_from_the_per_rank_figures():
    t = Timeline()
    ranks = (figures(0, 0.98), figures(1, 0.99), figures(2, 0.0, site="train.py:88 load_shard"))
    finding = find(run([hung(t, ranks) for _ in range(14)])[-1], "collective-hang")
    assert finding.evidence[1:] == (  # the rank's verdict in its words (advice/ranks.py), then its signals
        "rank 2 (pid 50002 on node-a) never reached the collective the others wait in; it is at train.py:88 "
        "load_shard",
        "rank 2 (pid 50002, host node-a): 0% in collectives, 100% other at train.py:88 load_shard",
        "the other 2 ranks wait in a collective 98%-99% of the time: no rank makes progress")


def test_an_unreadable_rank_or_two_ranks_away_name_none():
    for ranks in ((figures(0, 0.98), figures(1, 0.99), figures(2, 0.0, samples=0)),
                  (figures(0, 0.98), figures(1, 0.05), figures(2, 0.0))):
        t = Timeline()
        finding = find(run([hung(t, ranks) for _ in range(14)])[-1], "collective-hang")
        assert not any(line.startswith("rank ") or "the other" in line for line in finding.evidence)
        assert finding.evidence[0].startswith("GPU0-2 100% busy")
