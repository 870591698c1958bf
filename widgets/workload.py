"""The workload panel: the embedded job's state, per-rank step time and throughput with history, data-wait
fraction, memory, and the last event (or why it crashed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text

from hwtop.widgets import palette
from hwtop.widgets.format import NA, human_bytes, sparkline
from hwtop.widgets.panel import TextPanel, Want
from hwtop.widgets.safe_text import data

if TYPE_CHECKING:
    from hwtop.model.workload import RankState, WorkloadState

NARROW = 96  # columns of content: below, "samples/s" is "/s" and the step time's unit sits close
STATUS_STYLE = {"running": palette.OK_STRONG, "starting": palette.WARN, "stalled": palette.WARN_STRONG,
                "finished": palette.INFO, "crashed": palette.CRIT_STRONG, "stopped": palette.DIM}


class WorkloadPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.state: WorkloadState | None = None
        self.room: int | None = None  # lines the row budget allows; None: all
        self.border_title = "Workload"

    def show(self, state: WorkloadState | None, room: int | None = None, stoppable: bool = True) -> None:
        """`stoppable`: x stops the job here (a live session's own job, not a recording's or a demo's story)."""
        self.state, self.room = state, room
        self.display = state is not None
        if state is not None:
            self.set_title(data(f"Workload · {state.scenario}" + (" · x stop" if stoppable else "")))
        if not self.same_as_shown((state, room)):
            self.changed()

    @staticmethod
    def want(state: WorkloadState | None, width: int) -> Want:
        """Every line, the ranks whose lines read alike folded into one (`x8`); at the least the status line and
        one rank's."""
        count = len(workload_lines(state, width).lines)
        return Want(count, count, min(count, 2))

    def lines(self, width: int) -> list[Text]:
        drawn = workload_lines(self.state, width)
        lines, room = drawn.lines, self.room
        if room is None or len(lines) <= room:
            return lines
        head, ranks, tail = lines[:drawn.ranks_at], lines[drawn.ranks_at:drawn.ranks_end], lines[drawn.ranks_end:]
        keep = room - len(head) - len(tail) - 1  # one line says how many ranks are not shown
        if keep <= 0:
            return (head + tail)[: max(1, room)]
        hidden = sum(drawn.group_sizes[keep:])
        return head + ranks[:keep] + [Text(f"+{hidden} more rank(s)", style=palette.DIM)] + tail


class Drawn(NamedTuple):
    lines: list[Text]
    ranks_at: int  # the first rank line
    ranks_end: int  # past the last
    group_sizes: list[int]  # ranks on each rank line


_last: list[tuple[object, int, Drawn]] = []  # the one state last drawn: want() and lines() share it each tick


def workload_lines(state: WorkloadState | None, width: int) -> Drawn:
    """The pane's lines for this state at this width (the last answer kept, by identity: the budget asks first,
    then the pane draws the same state)."""
    if _last and _last[0][0] is state and _last[0][1] == width:
        return _last[0][2]
    drawn = _workload_lines(state, width)
    _last[:] = [(state, width, drawn)]
    return drawn


def _workload_lines(state: WorkloadState | None, width: int) -> Drawn:
    if state is None:
        return Drawn([Text("no workload (w starts one)", style=palette.DIM)], 1, 1, [])
    head = Text(state.status.upper(), style=STATUS_STYLE.get(state.status, ""))
    if state.exit_code is not None:
        head.append(f" exit {state.exit_code}")
    if state.last_event:
        head.append_text(data(f"  last: {state.last_event}"[: max(0, width - head.cell_len)], palette.DIM))
    out = [head]
    summary = state.summary
    if summary is not None and summary.speedup is not None:
        saving = summary.memory_saving_fraction
        out.append(data(f"AMP: {summary.speedup:.2f}x throughput, "
                        f"{'N/A' if saving is None else f'{100 * saving:.1f}%'} less "
                        f"{summary.memory_metric or 'memory'}", palette.OK))
    ranks_at = len(out)
    spark = max(0, min(20, (width - 86) // 2))
    narrow = width < NARROW
    groups: list[tuple[list[int], Text]] = []  # ranks whose lines read alike, in rank order
    for rank in state.ranks:
        body = _rank_body(rank, spark, narrow)
        if groups and _same(groups[-1][1], body):
            groups[-1][0].append(rank.rank)
        else:
            groups.append(([rank.rank], body))
    labels = [_label(ranks) for ranks, _ in groups]
    label_width = max((len(label) for label in labels), default=0)
    for label, (_, body) in zip(labels, groups, strict=True):
        line = Text(f"{label:<{label_width}} ", style="bold")
        line.append_text(body)
        line.truncate(max(1, width), overflow="ellipsis")  # one row per rank, never wrapped
        out.append(line)
    ranks_end = len(out)
    for tail in state.stderr_tail:
        out.append(data(tail[:width], palette.CRIT))  # the job's own stderr
    if state.garbage_lines:
        out.append(Text(f"{state.garbage_lines} unreadable telemetry line(s) skipped", style=palette.WARN))
    return Drawn(out, ranks_at, ranks_end, [len(ranks) for ranks, _ in groups])


def _label(ranks: list[int]) -> str:
    """`rank 3`, or `rank 0-7 x8` for ranks whose lines read alike."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return f"rank {ranks[0]}-{ranks[-1]} x{len(ranks)}"


def _rank_body(rank: RankState, spark: int, narrow: bool = False) -> Text:
    """A rank's line after its label, in fixed columns: a value that is N/A takes its column's width. Before the
    first step completes (step 0) there is no step time or throughput to show."""
    stepped = bool(rank.step)
    wait = rank.data_wait_fraction
    memory = rank.cuda_allocated_bytes if rank.cuda_allocated_bytes is not None else rank.rss_bytes
    line = Text(f"step {rank.step if rank.step is not None else NA:>5} ")
    step_time = rank.step_time_s if stepped else None
    line.append(f"{NA if step_time is None else f'{step_time * 1000:7.1f}':>7}{'ms' if narrow else ' ms'} ")
    if spark:
        line.append_text(sparkline(rank.step_times, spark, high=max(rank.step_times or (1.0,))))
    samples = rank.samples_per_s if stepped else None
    line.append(f"{NA if samples is None else f'{samples:8.1f}':>8}{'/s' if narrow else ' samples/s '}")
    if spark:
        line.append_text(sparkline(rank.throughput, spark, high=max(rank.throughput or (1.0,))))
    line.append(f" wait {NA if wait is None else f'{100 * wait:3.0f}%':>4}",
                style=palette.CRIT_STRONG if wait is not None and wait > 0.5 else "")
    line.append(f" loss {NA if rank.loss is None else f'{rank.loss:.3f}':>6} {rank.amp or '':<4}")
    line.append(f" mem {human_bytes(memory):>6}")
    return line


def _same(a: Text, b: Text) -> bool:
    return a.plain == b.plain and a.spans == b.spans
