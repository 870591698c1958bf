"""The job view's per-rank table: each rank of the job side by side (host, pid, steps, the share of its time
waiting in collectives and in its other phases, what it does when not waiting), the straggler marked. One row a
rank; columns drop from the right to fit 80 cells, and the host and site columns grow on a wide terminal. Below
WIDE, a job whose ranks all run on one host (the header's) gives the HOST column's cells to BUSY AT: a column of
one repeated, cut-off name says nothing."""

from __future__ import annotations

import heapq

from rich.text import Text

from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.widgets import palette
from hwtop.widgets.safe_text import data

# (header, phase, width): the phases of probes/stack_classify.py shown as columns, most telling first.
PHASES: tuple[tuple[str, str, int], ...] = (("WAIT", "collective", 5), ("COMP", "compute", 5), ("DATA", "data", 5),
                                            ("PY", "other", 5), ("H2D", "copy", 5), ("CKPT", "checkpoint", 5),
                                            ("GPU", "gpu-wait", 5))
NARROW_PHASES = 4  # below WIDE cells: WAIT, COMP, DATA, PY
WIDE = 120
SITE_MIN = 14
MARK = "◀ straggler"
MAX_ROWS = 64  # of a job of thousands of ranks (NCCL RAS), the worst; doctor --json lists them all
HEALTHY = ("RUNNING", None)


def worst_key(rank: RankFigures) -> tuple[bool, int, int]:
    """Not running first (dead, unresponsive, aborted, erred, initialising), then the most collectives behind."""
    return (rank.nccl_state in HEALTHY, -(rank.lag or 0), rank.rank)


def shown_ranks(ranks: tuple[RankFigures, ...], limit: int = MAX_ROWS) -> list[RankFigures]:
    """The rows drawn: every rank of a small job in rank order; with NCCL's view, the worst `limit` first."""
    if not any(r.nccl_state is not None for r in ranks):
        return list(ranks)
    return heapq.nsmallest(limit, ranks, key=worst_key)


def nccl_lines(job: JobSnapshot, width: int) -> list[Text]:
    """Where hwtop asks NCCL's RAS and how that goes: one line, and the latest error."""
    view = job.nccl
    if view is None:
        return []
    line = Text("NCCL RAS ", style="bold")
    told = f"{view.queries} answer{'s' if view.queries != 1 else ''}" + (f" ({view.format})" if view.format else "")
    line.append_text(data(f"at {view.address} ({view.source}): {told}", palette.DIM))
    if view.holding:
        line.append_text(data(f" · {view.holding}", palette.WARN))
    out = [line]
    if view.errors:
        out.append(data(f"  {view.errors[-1]}", palette.WARN))
    for text in out:
        text.truncate(max(1, width), overflow="ellipsis")
    return out


def _percent(rank: RankFigures, phase: str) -> str:
    if not rank.samples:
        return "-"
    value = rank.share(phase)
    return f"{100 * value:.0f}%" if value >= 0.005 else "·"


def rank_table(job: JobSnapshot, width: int, straggler: int | None = None) -> list[Text]:
    """The table's lines for `width` cells; nothing for a job of fewer than two ranks. `straggler`: the pid the
    rank-straggler finding names, marked ◀ before its rank (and named after its row on a wide terminal)."""
    if len(job.ranks) < 2:
        return []
    ranks = shown_ranks(job.ranks)
    nccl = any(r.nccl_state is not None for r in ranks)
    messages = {s.pid: s.message for s in job.stacks if s.message}
    wide = width >= WIDE
    phases = PHASES if wide else PHASES[:NARROW_PHASES]
    steps = any(r.steps is not None for r in ranks)
    show_host = wide or len({r.host for r in ranks}) > 1
    host_width = max(4, min(24 if wide else 10, max(len(data(r.host).plain) for r in ranks))) if show_host else 0
    fixed = 6 + (host_width + 1 if show_host else 0) + 8 + (6 if steps else 0) + sum(w + 1 for _, _, w in phases) \
        + (19 if nccl else 0)
    site_width = max(SITE_MIN, width - fixed - (len(MARK) + 2 if wide else 0))
    marked = any(straggler is not None and r.pid == straggler for r in ranks)
    title = Text("Ranks", style="bold")
    title.append(" · WAIT: in collectives, waiting for the other ranks (py-spy samples)", style=palette.DIM)
    if marked and not wide:  # the row's mark is a lone ◀ here: say what it means
        title = Text("Ranks", style="bold")
        title.append(" · WAIT: in collectives, waiting for the others", style=palette.DIM)
        title.append(" · ◀ straggler", style=palette.CRIT_STRONG)
    columns = f"{'RANK':>5} " + (f"{'HOST':<{host_width}} " if show_host else "") + f"{'PID':>7} "
    columns += (f"{'STEPS':>5} " if steps else "") + (f"{'NCCL':<12} {'LAG':>5} " if nccl else "")
    columns += "".join(f"{name:>{w}} " for name, _, w in phases)
    if nccl:
        title.append(" · LAG: collectives behind the most advanced rank (NCCL RAS), worst first", style=palette.DIM)
    header = Text(columns + "BUSY AT", style="bold reverse")
    header.append(" " * max(0, width - header.cell_len), style="bold reverse")
    title.truncate(max(1, width), overflow="ellipsis")
    header.truncate(max(1, width), overflow="ellipsis")
    out = [*nccl_lines(job, width), title, header]
    layout = (width, wide, len(phases), steps, show_host, host_width, site_width, nccl)
    for rank in ranks:
        slow = straggler is not None and rank.pid == straggler
        message = messages.get(rank.pid) if rank.pid is not None and not rank.samples else None
        key = (layout, slow, message, rank.rank, rank.host, rank.pid, rank.steps, rank.samples > 0, rank.shares,
               rank.site, rank.nccl_state, rank.lag)
        line = _ROWS.get(key)
        if line is None:
            if len(_ROWS) >= ROW_CACHE:
                _ROWS.clear()
            line = _ROWS[key] = _row(rank, layout, slow, message)
        out.append(line)
    if len(job.ranks) > len(ranks):
        out.append(Text(f"  … and {len(job.ranks) - len(ranks)} more ranks, none worse than those above "
                        "(hwtop doctor --pid PID --json lists them all)", style=palette.DIM))
    return out


# A rank's row is built again only when what it draws changes: a 256-rank job's table was most of the job view's
# cost a tick, for rows whose shares move a few times a minute. Keyed by everything the row draws; bounded.
ROW_CACHE = 4096
_ROWS: dict[tuple[object, ...], Text] = {}


def _row(rank: RankFigures, layout: tuple[int, bool, int, bool, bool, int, int, bool], slow: bool,
         message: str | None) -> Text:
    width, wide, phase_count, steps, show_host, host_width, site_width, nccl = layout
    line = Text(f"{'◀' if slow else ' '}{rank.rank:>4} ", style=palette.CRIT_STRONG if slow else "bold")
    if show_host:
        host = data(rank.host)
        host.truncate(host_width, overflow="ellipsis")
        host.pad_right(host_width - host.cell_len)
        line.append_text(host)
        line.append(" ")
    line.append(f"{'' if rank.pid is None else rank.pid:>7} ")
    if steps:
        line.append(f"{'-' if rank.steps is None else rank.steps:>5} ")
    if nccl:
        bad = rank.nccl_state not in HEALTHY
        line.append(f"{rank.nccl_state or '-':<12} ", style=palette.CRIT_STRONG if bad else "")
        line.append(f"{'' if rank.lag is None else rank.lag:>5} ", style=palette.WARN if rank.lag else "")
    for _, phase, w in PHASES[:phase_count]:
        style = ""
        if phase == "collective" and rank.samples:
            style = palette.WARN if rank.collective_share >= 0.5 else ""
        line.append(f"{_percent(rank, phase):>{w}} ", style=style)
    site = data(rank.site or message or "", palette.DIM if message or not rank.site else "")
    site.truncate(site_width, overflow="ellipsis")
    line.append_text(site)
    if slow and wide:
        line.append(f"  {MARK}", style=palette.CRIT_STRONG)
    line.truncate(max(1, width), overflow="ellipsis")
    return line
