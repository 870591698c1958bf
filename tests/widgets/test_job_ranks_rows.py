"""The rank table builds a rank's row again only when what the row draws changes (issue 46: a 256-rank job's
table was most of the job view's cost a tick): equal figures give the same row, a changed share or the straggler
mark a new one, and a rank's cumulative seconds (not drawn) none."""

from __future__ import annotations

from msgspec.structs import replace

from hwtop.demo.profiles import GIB
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.widgets.job_ranks import rank_table


def job(ranks: tuple[RankFigures, ...]) -> JobSnapshot:
    return JobSnapshot("pid 500", (500,), "running", (), 150.0, GIB, ranks=ranks)


RANKS = tuple(RankFigures(r, f"node-{r // 8}", pid=600 + r, shares=(("compute", 0.8), ("collective", 0.2)),
                          samples=100, site="train.py:10 step", phase_seconds=(("compute", 8.0),))
              for r in range(16))


def test_a_tick_that_draws_the_same_rows_builds_none():
    first = rank_table(job(RANKS), 120)
    later = rank_table(job(tuple(replace(r, phase_seconds=(("compute", 9.0),)) for r in RANKS)), 120)
    assert all(a is b for a, b in zip(first[2:], later[2:], strict=True))


def test_a_changed_share_or_mark_builds_that_row_alone_and_draws_it():
    before = rank_table(job(RANKS), 120)
    moved = list(RANKS)
    moved[3] = replace(RANKS[3], shares=(("collective", 0.7), ("compute", 0.3)))
    after = rank_table(job(tuple(moved)), 120, {5: "straggler"})
    rows = list(zip(before[2:], after[2:], strict=True))
    assert [i for i, (a, b) in enumerate(rows) if a is not b] == [3, 5]
    assert "70%" in after[5].plain and after[7].plain.startswith("◀")
    assert rank_table(job(RANKS), 80)[2] is not before[2]  # another width: rows of their own
