"""The workload panel: the embedded job's state, per-rank step time and throughput with history, its two waits
named apart (for data, in collectives), memory, and the last event (or why it crashed). The steps, times and
data waits are the job's telemetry; the wait in collectives is the job model's (each rank's stack samples, as for
any focused job), matched by pid. A rank whose figures differ from its neighbours' (the straggler, the hung rank,
one at another step) has a line of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len
from rich.text import Text

from hwtop.widgets import palette
from hwtop.widgets.format import NA, human_bytes, sparkline
from hwtop.widgets.panel import TextPanel, Want
from hwtop.widgets.safe_text import data

if TYPE_CHECKING:
    from hwtop.model.workload import RankState, WorkloadState

# A rank line's fields, left to right, each in a column as wide as its widest value and at least MIN_WIDTHS.
FIELDS = ("step", "time", "rate", "data", "coll", "loss", "amp", "mem")
MIN_WIDTHS = {"step": 5, "time": 7, "rate": 8, "data": 4, "coll": 4, "loss": 6, "amp": 4, "mem": 6}
# What gives way, in this order, while the rank lines are wider than the pane: the long units (` samples/s` becomes
# `/s`, ` ms` `ms`, `data wait` `data`), the sparklines (history: the figure beside each stays), then whole fields,
# the least telling first: the precision (the job's, in its configuration), the loss, the step count, the memory,
# the throughput, the data wait. The step time and the wait in collectives stay: the one figure that tells a
# straggler or a hung rank from the others. A figure is drawn whole or not at all, never cut.
GIVE_WAY = ("units", "sparks", "amp", "loss", "step", "mem", "rate", "data")
HOT_WAIT = 0.5  # a wait over this share of each step is drawn in the warning colour
SPARK_LEAST, SPARK_MOST = 4, 20  # cells of each sparkline: narrower than SPARK_LEAST, none is drawn
STATUS_STYLE = {"running": palette.OK_STRONG, "starting": palette.WARN, "stalled": palette.WARN_STRONG,
                "finished": palette.INFO, "crashed": palette.CRIT_STRONG, "stopped": palette.DIM}


class WorkloadPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.state: WorkloadState | None = None
        self.room: int | None = None  # lines the row budget allows; None: all
        self.gpu_memory: dict[int, int] = {}
        self.collective: dict[int, float] = {}
        self.border_title = "Workload"

    def show(self, state: WorkloadState | None, room: int | None = None, stoppable: bool = True,
             gpu_memory: Mapping[int, int] | None = None, collective: Mapping[int, float] | None = None) -> None:
        """`stoppable`: x stops the job here (a live session's own job, not a recording's or a demo's story).
        `gpu_memory`: each pid's device memory as NVML lists it, the process table's GPU MEM: a rank's `mem`.
        `collective`: each rank pid's share of its time in collectives, from the job's rank figures: `coll`."""
        self.state, self.room = state, room
        self.gpu_memory = dict(gpu_memory or {})
        self.collective = dict(collective or {})
        self.display = state is not None
        if state is not None:
            self.set_title(data(f"Workload · {state.kind}" + (" · x stop" if stoppable else "")))
        if not self.same_as_shown((state, room, tuple(sorted(self.gpu_memory.items())),
                                   tuple(sorted(self.collective.items())))):
            self.changed()

    @staticmethod
    def want(state: WorkloadState | None, width: int, gpu_memory: Mapping[int, int] | None = None,
             collective: Mapping[int, float] | None = None) -> Want:
        """Every line, the ranks whose lines read alike folded into one (`x8`); at the least the status line and
        one rank's."""
        count = len(workload_lines(state, width, gpu_memory, collective).lines)
        return Want(count, count, min(count, 2))

    def lines(self, width: int) -> list[Text]:
        drawn = workload_lines(self.state, width, self.gpu_memory, self.collective)
        lines, room = drawn.lines, self.room
        if room is None or len(lines) <= room:
            return lines
        head, ranks, tail = lines[:drawn.ranks_at], lines[drawn.ranks_at:drawn.ranks_end], lines[drawn.ranks_end:]
        keep = room - len(head) - len(tail) - 1  # one line says how many ranks are not shown
        sizes = drawn.group_sizes
        # The lines kept are the smallest groups first (a rank that reads unlike the others: the straggler, the
        # hung rank), shown in rank order.
        kept = sorted(sorted(range(len(ranks)), key=lambda i: (sizes[i], i))[:max(1, keep)])
        hidden = sum(sizes) - sum(sizes[i] for i in kept)
        if keep == 0 and ranks:  # room for one rank's line: the status line says how many more there are
            return [_counting(head[0], hidden, width), *head[1:], ranks[kept[0]], *tail]
        if keep <= 0:
            return (head + tail)[: max(1, room)]
        return head + [ranks[i] for i in kept] + [Text(f"+{hidden} more rank(s)", style=palette.DIM)] + tail


def _counting(status: Text, hidden: int, width: int) -> Text:
    """The status line with `+N more rank(s)` at its end, its last event cut to make room."""
    mark = f"  +{hidden} more rank(s)"
    line = status.copy()
    line.truncate(max(1, width - len(mark)), overflow="ellipsis")
    line.append(mark, style=palette.DIM)
    return line


class Drawn(NamedTuple):
    lines: list[Text]
    ranks_at: int  # the first rank line
    ranks_end: int  # past the last
    group_sizes: list[int]  # ranks on each rank line


_last: list[tuple[object, int, dict[int, int], dict[int, float], Drawn]] = []  # the state last drawn: want() and
# lines() share it


def workload_lines(state: WorkloadState | None, width: int, gpu_memory: Mapping[int, int] | None = None,
                   collective: Mapping[int, float] | None = None) -> Drawn:
    """The pane's lines for this state at this width (the last answer kept, the state by identity: the budget
    asks first, then the pane draws the same state)."""
    memory, waits = dict(gpu_memory or {}), dict(collective or {})
    if _last and _last[0][0] is state and _last[0][1] == width and _last[0][2] == memory and _last[0][3] == waits:
        return _last[0][4]
    drawn = _workload_lines(state, width, memory, waits)
    _last[:] = [(state, width, memory, waits, drawn)]
    return drawn


def _workload_lines(state: WorkloadState | None, width: int, gpu_memory: Mapping[int, int],
                    collective: Mapping[int, float]) -> Drawn:
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
    lines, group_sizes = _rank_lines(state.ranks, width, gpu_memory, collective)
    out += lines
    ranks_end = len(out)
    for tail in state.stderr_tail:
        out.append(data(tail[:width], palette.CRIT))  # the job's own stderr
    if state.garbage_lines:
        out.append(Text(f"{state.garbage_lines} unreadable telemetry line(s) skipped", style=palette.WARN))
    return Drawn(out, ranks_at, ranks_end, group_sizes)


def _label(members: list[tuple[int, int]]) -> str:
    """`rank 3`, or `rank 0-7 x8` for ranks whose lines read alike."""
    if len(members) == 1:
        return f"rank {members[0][1]}"
    return f"rank {members[0][1]}-{members[-1][1]} x{len(members)}"


def _cells(rank: RankState, gpu_memory: Mapping[int, int], collective: Mapping[int, float]) -> dict[str, str]:
    """A rank's figures as its line writes them, each field's value without its label or unit. Before the first
    step completes (step 0) there is no step time or throughput to show. Its memory is what NVML lists for its
    pid (the process table's GPU MEM) where it is listed, else what PyTorch reserved, else its RSS (a CPU job)."""
    stepped = bool(rank.step)
    listed = gpu_memory.get(rank.pid) if rank.pid is not None else None
    memory = next((m for m in (listed, rank.cuda_reserved_bytes, rank.cuda_allocated_bytes, rank.rss_bytes)
                   if m is not None), None)
    step_time = rank.step_time_s if stepped else None
    samples = rank.samples_per_s if stepped else None
    return {"step": NA if rank.step is None else str(rank.step),
            "time": NA if step_time is None else f"{step_time * 1000:.1f}",
            "rate": NA if samples is None else f"{samples:.1f}",
            "data": _percent(rank.data_wait_fraction),
            "coll": _percent(collective.get(rank.pid) if rank.pid is not None else None),
            "loss": NA if rank.loss is None else f"{rank.loss:.3f}",
            "amp": rank.amp or "",
            "mem": human_bytes(memory)}


def _percent(share: float | None) -> str:
    return NA if share is None else f"{100 * share:.0f}%"


class _Form(NamedTuple):
    """How the rank lines are drawn at a width: which fields, long or short units, sparklines how wide."""

    fields: tuple[str, ...]
    long_units: bool
    spark: int


def _form(label_width: int, widths: dict[str, int], width: int, sparks: bool = True) -> _Form:
    """The richest form whose lines fit `width`, giving way in GIVE_WAY's order (`sparks` False: none drawn)."""
    fields = tuple(name for name in FIELDS if widths[name])  # a column no rank has (no precision reported): none
    long_units, give_way = True, iter(GIVE_WAY)
    while True:
        bare = label_width + 1 + sum(widths[name] + _decoration(name, long_units) for name in fields) \
            + len(fields) - 1
        spark = min(SPARK_MOST, (width - bare - 2) // 2) if sparks and {"time", "rate"} <= set(fields) else 0
        if spark >= SPARK_LEAST or (not sparks and bare <= width):
            return _Form(fields, long_units, spark if sparks else 0)
        step = next(give_way, None)
        if step is None:
            return _Form(fields, long_units, 0)  # only the step time left, and still too wide: cut at the end
        if step == "units":
            long_units = False
        elif step == "sparks":
            sparks = False
        else:
            fields = tuple(name for name in fields if name != step)


def _decoration(name: str, long_units: bool) -> int:
    """Cells a field takes besides its value: its label or its unit."""
    if name in _UNITS:
        return cell_len(_UNITS[name][0 if long_units else 1])
    return len(_label_of(name, long_units))


def _label_of(name: str, long_units: bool) -> str:
    label = _LABELS.get(name, "")
    return label if long_units or name not in _SHORT_LABELS else _SHORT_LABELS[name]


_LABELS = {"step": "step ", "data": "data wait ", "coll": "coll wait ", "loss": "loss ", "mem": "mem "}
_SHORT_LABELS = {"data": "data ", "coll": "coll "}  # given way with the long units
_UNITS = {"time": (" ms", "ms"), "rate": (" samples/s", "/s")}


def _rank_lines(ranks: tuple[RankState, ...], width: int, gpu_memory: Mapping[int, int],
                collective: Mapping[int, float]) -> tuple[list[Text], list[int]]:
    """One line per run of ranks whose lines read alike (`rank 0-7 x8`), in columns as wide as their widest value
    (a value that is N/A keeps its column's place), in the richest form that fits `width`; and how many ranks
    each line stands for. Whether two lines read alike depends on the sparklines drawn, whose width depends on
    the labels': the two are settled together, or the lines go without sparklines."""
    cells = [_cells(rank, gpu_memory, collective) for rank in ranks]
    widths = {name: max((cell_len(c[name]) for c in cells), default=0) for name in FIELDS}
    if all(c["coll"] == NA for c in cells):  # telemetry that does not report collective waits: no column
        widths["coll"] = 0
    widths = {name: max(wide, MIN_WIDTHS.get(name, 0)) if wide else 0 for name, wide in widths.items()}
    spark = 0
    for _ in range(3):
        groups = _groups(ranks, cells, spark)
        label_width = max(len(_label(members)) for members in groups) if groups else 0
        form = _form(label_width, widths, width)
        if form.spark == spark:
            break
        spark = form.spark
    else:
        groups = _groups(ranks, cells, 0)
        label_width = max(len(_label(members)) for members in groups) if groups else 0
        form = _form(label_width, widths, width, sparks=False)
    lines = [_rank_line(_label(members), label_width, ranks[members[0][0]], cells[members[0][0]], widths, form,
                        width, collective) for members in groups]
    return lines, [len(members) for members in groups]


def _groups(ranks: tuple[RankState, ...], cells: list[dict[str, str]], spark: int) -> list[list[tuple[int, int]]]:
    """Runs of ranks (index, rank number) whose lines read alike: the same figures, the same sparklines."""
    groups: list[list[tuple[int, int]]] = []
    last: object = None
    for index, rank in enumerate(ranks):
        key = (cells[index], _sparks(rank, spark))
        if groups and key == last:
            groups[-1].append((index, rank.rank))
        else:
            groups.append([(index, rank.rank)])
        last = key
    return groups


def _sparks(rank: RankState, spark: int) -> tuple[str, str]:
    if not spark:
        return "", ""
    return (sparkline(rank.step_times, spark, high=max(rank.step_times or (1.0,))).plain,
            sparkline(rank.throughput, spark, high=max(rank.throughput or (1.0,))).plain)


def _rank_line(label: str, label_width: int, rank: RankState, figures: dict[str, str], widths: dict[str, int],
               form: _Form, width: int, collective: Mapping[int, float]) -> Text:
    line = Text(f"{label:<{label_width}}", style="bold")
    for name in form.fields:
        line.append(" ")
        value = figures[name]
        if name in _UNITS:
            unit = _UNITS[name][0 if form.long_units else 1]
            # N/A takes no unit (`N/Ams` reads as a figure): it keeps the column's place
            line.append(value.rjust(widths[name]) + unit if value != NA else value.rjust(widths[name] + len(unit)))
            if form.spark:
                series = rank.step_times if name == "time" else rank.throughput
                line.append(" ")
                line.append_text(sparkline(series, form.spark, high=max(series or (1.0,))))
        elif name == "amp":
            line.append(value.ljust(widths[name]))
        else:
            coll = collective.get(rank.pid) if name == "coll" and rank.pid is not None else None
            share = rank.data_wait_fraction if name == "data" else coll
            line.append(_label_of(name, form.long_units) + value.rjust(widths[name]),
                        style=palette.CRIT_STRONG if share is not None and share > HOT_WAIT else "")
    line.truncate(max(1, width), overflow="ellipsis")  # only where the step time alone does not fit
    return line
