"""The workload pane's rank lines fit the pane at every width from 80 columns up: fields give way whole, in the
declared order (GIVE_WAY), and a figure on the line is never cut."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.model.workload import RankState, WorkloadState
from hwtop.widgets.format import NA, human_bytes
from hwtop.widgets.workload import GIVE_WAY, workload_lines

WIDTH = 76  # a full-width panel's content at 80 columns


def rank(index: int, step: int | None = 129, step_time: float | None = 0.31, samples: float | None = 825.8,
         wait: float | None = 0.0, loss: float | None = 7.581, amp: str | None = "bf16",
         memory: int | None = 50 << 30, history: tuple[float, ...] = (0.31,) * 10) -> RankState:
    return RankState(index, 41000 + index, step, step_time, samples, wait, loss, amp, None, 256, 2 << 30,
                     cuda_allocated_bytes=memory, step_times=history,
                     throughput=tuple(256 / t for t in history))


def rank_lines(ranks: tuple[RankState, ...], width: int, status: str = "running") -> list[str]:
    drawn = workload_lines(WorkloadState("steady", status, None, ranks, "training"), width)
    return [line.plain for line in drawn.lines[drawn.ranks_at:drawn.ranks_end]]


def expected(rank: RankState) -> dict[str, str]:
    """Each field's figure as it must read whole, worked out here from the rank's values."""
    stepped = bool(rank.step)
    figures = {"step": NA if rank.step is None else str(rank.step),
               "data": NA if rank.data_wait_fraction is None else f"{100 * rank.data_wait_fraction:.0f}%",
               "coll": NA,  # the job model's figure, none given here
               "loss": NA if rank.loss is None else f"{rank.loss:.3f}",
               "mem": human_bytes(next((m for m in (rank.cuda_reserved_bytes, rank.cuda_allocated_bytes,
                                                    rank.rss_bytes) if m is not None), None))}
    figures["time"] = NA if not stepped or rank.step_time_s is None else f"{rank.step_time_s * 1000:.1f}"
    return figures


def assert_whole(line: str, rank: RankState, width: int) -> None:
    assert len(line) <= width and "…" not in line, line
    figures = expected(rank)
    for label in ("step", "data", "coll", "loss", "mem"):
        found = re.search(rf" {label}(?: wait)? +(\S+)", line)
        assert found is None or found.group(1) == figures[label], (label, line)
    assert re.search(rf" {re.escape(figures['time'])}(?: ?ms| |$)", line), line  # the step time is never dropped
    assert "N/Ams" not in line and "N/A/s" not in line, line  # N/A takes no unit


def test_eight_ranks_alike_at_80_columns_keep_memory_and_give_up_the_precision_first() -> None:
    [line] = rank_lines(tuple(rank(i) for i in range(8)), WIDTH)
    assert line == "rank 0-7 x8 step   129   310.0ms    825.8/s data   0% loss  7.581 mem  50.0G"
    [single] = rank_lines((rank(0),), WIDTH)  # a shorter label leaves room for the precision
    assert single == "rank 0 step   129   310.0ms    825.8/s data   0% loss  7.581 bf16 mem  50.0G"


def test_fields_give_way_in_the_declared_order_as_the_pane_narrows() -> None:
    ranks = tuple(rank(i) for i in range(8))
    gone_at: dict[str, int] = {}
    for width in range(140, 20, -1):
        [line] = rank_lines(ranks, width)
        assert len(line) <= width and "…" not in line, (width, line)
        shown = {"units": " samples/s" in line, "sparks": "▁" in line or "█" in line, "amp": "bf16" in line,
                 "loss": " loss " in line, "step": " step " in line,
                 "mem": " mem " in line, "rate": "/s" in line, "data": " data " in line}
        for name, present in shown.items():
            if not present:
                gone_at.setdefault(name, width)
    assert sorted(gone_at, key=lambda name: -gone_at[name]) == list(GIVE_WAY), gone_at


def test_a_rank_apart_keeps_the_columns_of_the_folded_others_at_80_columns() -> None:
    ranks = tuple(rank(i, step=96 if i == 5 else 97, step_time=None if i == 5 else 0.31,
                       samples=None if i == 5 else 825.8) for i in range(8))
    lines = rank_lines(ranks, WIDTH, status="stalled")
    assert [line.split(" step")[0].strip() for line in lines] == ["rank 0-4 x5", "rank 5", "rank 6-7 x2"]
    for word in (" step", " data", " loss", " mem"):
        assert len({line.index(word) for line in lines}) == 1, (word, lines)
    for line, member in zip(lines, (ranks[0], ranks[5], ranks[6]), strict=True):
        assert_whole(line, member, WIDTH)


ranks_strategy = st.lists(
    st.builds(
        rank,
        index=st.integers(0, 9999),
        step=st.one_of(st.none(), st.integers(0, 10**9)),
        step_time=st.one_of(st.none(), st.floats(0.0, 86_400.0)),
        samples=st.one_of(st.none(), st.floats(0.0, 1e7)),
        wait=st.one_of(st.none(), st.floats(0.0, 1.0)),
        loss=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
        amp=st.one_of(st.none(), st.sampled_from(["bf16", "fp16", "off"]),
                     st.text(alphabet="abfp0123456789-_", max_size=40)),
        memory=st.one_of(st.none(), st.integers(0, 1 << 55)),
        history=st.lists(st.floats(0.001, 100.0), max_size=30).map(tuple),
    ),
    min_size=1, max_size=16)


@given(ranks=ranks_strategy, width=st.integers(WIDTH, 240))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_every_rank_line_fits_and_every_figure_on_it_is_whole(ranks: list[RankState], width: int) -> None:
    ordered = tuple(sorted({r.rank: r for r in ranks}.values(), key=lambda r: r.rank))
    drawn = workload_lines(WorkloadState("steady", "running", None, ordered, "training"), width)
    lines = drawn.lines[drawn.ranks_at:drawn.ranks_end]
    assert sum(drawn.group_sizes) == len(ordered)
    first = 0
    for line, size in zip(lines, drawn.group_sizes, strict=True):
        assert line.cell_len <= width, line.plain
        assert_whole(line.plain.replace("\n", " "), ordered[first], 10**6)
        first += size


def test_at_the_least_the_status_line_counts_the_ranks_beside_the_one_shown() -> None:
    """Two ranks apart, two rows (the budget's least at 80x24): one rank's line, the other counted, not dropped."""
    from hwtop.widgets.workload import WorkloadPanel

    ranks = (rank(0, step_time=0.068, samples=235.2), rank(1, step_time=0.074, samples=216.3))
    panel = WorkloadPanel()
    panel.show(WorkloadState("balanced", "running", None, ranks, "rank 0 started: batch size 16"), rows=2)
    lines = [line.plain for line in panel.lines(WIDTH)]
    assert lines == ["RUNNING  last: rank 0 started: batch size 16  +1 more rank(s)",
                     "rank 0 step   129    68.0ms    235.2/s data   0% loss  7.581 bf16 mem  50.0G"]
    panel.show(WorkloadState("balanced", "running", None, ranks, "x" * 200), rows=2)
    status = panel.lines(WIDTH)[0].plain
    assert len(status) == WIDTH and status.endswith("…  +1 more rank(s)")


def test_the_wait_in_collectives_is_the_job_models_matched_by_pid() -> None:
    """The telemetry has no collective figure: the job's rank figures (stack samples) give it, by pid; a rank the
    job has no samples of reads N/A, and a wait over half of each step is drawn in the warning colour."""
    from hwtop.widgets import palette

    ranks = (rank(0), rank(1), rank(2))
    state = WorkloadState("balanced", "running", None, ranks, "training")
    assert all(" coll" not in line.plain for line in workload_lines(state, 160).lines)  # no samples: no column
    drawn = workload_lines(state, 160, collective={41000: 0.12, 41001: 0.62})
    lines = drawn.lines[drawn.ranks_at:drawn.ranks_end]
    assert [re.search(r"coll wait +(\S+)", line.plain).group(1) for line in lines] == ["12%", "62%", NA]  # type: ignore[union-attr]
    hot = lines[1]
    at = hot.plain.index("coll wait")
    assert any(span.start <= at < span.end and str(span.style) == palette.CRIT_STRONG for span in hot.spans)
