"""collective-hang fed by a focused job's per-rank figures (the same judgement the fleet applies across hosts):
the rank that never reached the collective is named, with its host, when the others wait in it; a straggler,
whose peers still compute between all-reduces, is not a hang."""

from __future__ import annotations

from hwtop.model.job import JobSnapshot, RankFigures
from tests.advice_timeline import Timeline, find, ids, run


def figures(number: int, collective: float, other: str = "compute") -> RankFigures:
    return RankFigures(number, "trainbox", pid=500 + number, shares=(("collective", collective),
                                                                      (other, 1 - collective)), samples=300,
                       seen_at=1000.0, site="train.py:52 wait_for_next_shard" if other == "other" else None)


def job(*ranks: RankFigures) -> JobSnapshot:
    return JobSnapshot("job /train.py/", (400,), "running", (), 10.0, 1 << 30, ranks=ranks)


def test_the_rank_elsewhere_while_the_others_wait_all_the_time_is_named_as_nccl_names_a_rank_of_this_host():
    t = Timeline()
    hung = job(figures(0, 1.0), figures(1, 0.0, "other"), figures(2, 0.99))
    found = run([t.tick(job=hung) for _ in range(3)])[-1]
    finding = find(found, "collective-hang")
    assert finding.severity == "critical" and finding.pids == (501,)
    assert finding.title == "Rank 1 never reached the collective the others wait in"  # as _nccl_finding's title
    assert "(pid 501 on trainbox)" in finding.evidence[0]
    assert "train.py:52 wait_for_next_shard" in finding.evidence[0]


def test_a_straggler_is_not_a_hang():
    t = Timeline()
    slow = job(figures(0, 0.91), figures(1, 0.01, "other"))
    assert all("collective-hang" not in ids(f) for f in run([t.tick(job=slow) for _ in range(5)]))
