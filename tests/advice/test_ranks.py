"""The judgement over a job's ranks (advice/ranks.py): one pure function that names the straggler or the rank a
hang waits for, from RankFigures alone, whether they come from one node's probe or from many hosts through
Prometheus."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.ranks import Look, judge, judge_ranks, missing_figure, worst_first
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import RankFigures

T = Thresholds()


def rank(number: int, host: str, collective: float, other: str = "compute", samples: int = 300,
         seen_at: float | None = 1000.0, site: str | None = None) -> RankFigures:
    return RankFigures(number, host, pid=100 + number, shares=(("collective", collective), (other, 1 - collective)),
                       samples=samples, seen_at=seen_at, site=site)


def test_the_rank_that_hardly_waits_while_the_others_do_is_the_straggler():
    ranks = [rank(0, "node-0", 0.62), rank(1, "node-0", 0.58), rank(2, "node-1", 0.04, "other", site="train.py:41 "
             "augment"), rank(3, "node-1", 0.60)]
    verdict = judge_ranks(ranks, T)
    assert verdict is not None and verdict.kind == "straggler"
    assert verdict.rank is not None and (verdict.rank.rank, verdict.rank.host) == (2, "node-1")
    assert "train.py:41 augment" in verdict.evidence[0] and "4% in collectives" in verdict.evidence[0]
    assert "58%-62%" in verdict.evidence[1]
    now = Look(ranks)
    assert [r.rank for r in worst_first(now, None, judge(now, None, T))][:1] == [2]


def test_a_balanced_job_has_no_straggler():
    assert judge_ranks([rank(0, "a", 0.18), rank(1, "a", 0.12), rank(2, "b", 0.22), rank(3, "b", 0.15)], T) is None
    assert judge_ranks([rank(0, "a", 0.35), rank(1, "b", 0.43)], T) is None  # measured on a loaded 2-core box


def test_a_rank_held_back_still_computes_between_all_reduces_a_straggler_not_a_hang():
    verdict = judge_ranks([rank(0, "a", 0.91), rank(1, "b", 0.01, "other")], T)  # measured: 91% against 1%
    assert verdict is not None and verdict.kind == "straggler" and verdict.named == "rank 1 on b (pid 101)"


def test_no_rank_is_named_while_another_is_still_unread():
    ranks = [rank(0, "a", 0.9), rank(1, "b", 0.0), rank(2, "b", 0.9, samples=3)]
    assert judge_ranks(ranks, T) is None
    assert missing_figure(ranks, T) == \
        "rank 2 (pid 102, host b): too few stack samples (3 of the 20 a share needs), so none is named"


def test_when_the_others_wait_all_the_time_the_odd_rank_never_reached_the_collective():
    verdict = judge_ranks([rank(0, "node-0", 0.99), rank(1, "node-1", 0.0, "other"), rank(2, "node-1", 1.0)], T)
    assert verdict is not None and verdict.kind == "hang" and verdict.rank is not None
    assert (verdict.rank.rank, verdict.rank.host) == (1, "node-1") and "no rank makes progress" in verdict.evidence[1]


def test_a_rank_whose_figures_stopped_while_the_others_wait_is_the_hang():
    verdict = judge_ranks([rank(0, "node-0", 0.95, seen_at=1100.0), rank(1, "node-1", 0.1, seen_at=1040.0)], T)
    assert verdict is not None and verdict.kind == "hang" and verdict.rank is not None
    assert verdict.rank.host == "node-1" and "no new figures for 60 s" in verdict.evidence[0]


def test_all_ranks_waiting_names_an_unwatched_rank():
    verdict = judge_ranks([rank(0, "a", 0.985), rank(1, "b", 1.0)], T)
    assert verdict is not None and verdict.kind == "hang" and verdict.rank is None
    assert verdict.named == "a rank no exporter watches"


def test_too_few_samples_say_nothing_and_say_why():
    ranks = [rank(0, "a", 0.9, samples=5), rank(1, "b", 0.0, samples=5)]
    assert judge_ranks(ranks, T) is None
    assert "too few stack samples" in (missing_figure(ranks, T) or "")
    assert "no rank figures" in (missing_figure([], T) or "")
    assert missing_figure([rank(0, "a", 0.5), rank(1, "a", 0.5)], T) is None


shares = st.floats(0.0, 1.0)


@given(st.lists(st.tuples(shares, st.integers(0, 400), st.sampled_from(["a", "b", "c"])), max_size=12))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_figures_give_a_verdict_or_none_and_name_only_a_rank_given(items):
    ranks = [rank(i, host, share, samples=samples) for i, (share, samples, host) in enumerate(items)]
    verdict = judge_ranks(ranks, T)
    if verdict is not None and verdict.rank is not None:
        assert verdict.rank in ranks and verdict.rank not in verdict.waiting
    now = Look(ranks)
    verdicts = judge(now, None, T)
    assert [(v.rank, v.host) for v in verdicts.ranks] == sorted((r.rank, r.host) for r in ranks)
    assert sorted(r.rank for r in worst_first(now, None, verdicts)) == sorted(r.rank for r in ranks)
    if verdict is not None and verdict.rank is not None:  # the stack-only judgement and the verdict name one rank
        assert {(v.rank, v.host) for v in verdicts.blamed} == {(verdict.rank.rank, verdict.rank.host)}


def test_the_verdict_remembered_for_a_snapshot_s_ranks_follows_the_thresholds_and_the_ranks():
    """Two rules judge each tick's ranks (the same tuple): the verdict is remembered for that tuple, never for
    other thresholds, nor for another tuple that reads differently."""
    ranks = (rank(0, "node-0", 0.62), rank(1, "node-0", 0.58), rank(2, "node-1", 0.04), rank(3, "node-1", 0.60))
    first = judge_ranks(ranks, T)
    assert first is not None and first.kind == "straggler"
    assert judge_ranks(ranks, T) is first
    assert judge_ranks(ranks, Thresholds({"straggler_peer_wait_share": 0.95})) is None  # the same tuple, stricter
    balanced = (*ranks[:2], rank(2, "node-1", 0.55), ranks[3])
    assert judge_ranks(balanced, T) is None
    assert judge_ranks(ranks, T) == first
