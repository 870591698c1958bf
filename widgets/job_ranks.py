"""The job view's per-rank table: each rank of the job side by side (host, pid, steps, the share of its time
waiting in collectives and in its other phases, what it does when not waiting), the straggler marked. One row a
rank; columns drop from the right to fit 80 cells, and the host and site columns grow on a wide terminal. Below
WIDE, a job whose ranks all run on one host (the header's) gives the HOST column's cells to BUSY AT: a column of
one repeated, cut-off name says nothing."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.safe_text import printable
from hwtop.widgets import palette
from hwtop.widgets.safe_text import data

# (header, phase, width): the phases of probes/stack_classify.py shown as columns, most telling first.
PHASES: tuple[tuple[str, str, int], ...] = (("WAIT", "collective", 5), ("COMP", "compute", 5), ("DATA", "data", 5),
                                            ("PY", "other", 5), ("H2D", "copy", 5), ("CKPT", "checkpoint", 5))
NARROW_PHASES = 4  # below WIDE cells: WAIT, COMP, DATA, PY
WIDE = 120
SITE_MIN = 14
MARK = "◀ straggler"


def _percent(rank: RankFigures, phase: str) -> str:
    if not rank.samples:
        return "-"
    value = rank.share(phase)
    return f"{100 * value:.0f}%" if value >= 0.005 else "·"


def rank_table(job: JobSnapshot, width: int, straggler: int | None = None) -> list[Text]:
    """The table's lines for `width` cells; nothing for a job of fewer than two ranks. `straggler`: the pid the
    rank-straggler finding names, marked ◀ before its rank (and named after its row on a wide terminal)."""
    ranks = job.ranks
    if len(ranks) < 2:
        return []
    messages = {s.pid: s.message for s in job.stacks if s.message}
    wide = width >= WIDE
    phases = PHASES if wide else PHASES[:NARROW_PHASES]
    steps = any(r.steps is not None for r in ranks)
    show_host = wide or len({r.host for r in ranks}) > 1
    host_width = max(4, min(24 if wide else 10, max(len(printable(r.host)) for r in ranks))) if show_host else 0
    fixed = 6 + (host_width + 1 if show_host else 0) + 8 + (6 if steps else 0) + sum(w + 1 for _, _, w in phases)
    site_width = max(SITE_MIN, width - fixed - (len(MARK) + 2 if wide else 0))
    marked = any(straggler is not None and r.pid == straggler for r in ranks)
    title = Text("Ranks", style="bold")
    title.append(" · WAIT: in collectives, waiting for the other ranks (py-spy samples)", style=palette.DIM)
    if marked and not wide:  # the row's mark is a lone ◀ here: say what it means
        title = Text("Ranks", style="bold")
        title.append(" · WAIT: in collectives, waiting for the others", style=palette.DIM)
        title.append(" · ◀ straggler", style=palette.CRIT_STRONG)
    columns = f"{'RANK':>5} " + (f"{'HOST':<{host_width}} " if show_host else "") + f"{'PID':>7} "
    columns += (f"{'STEPS':>5} " if steps else "") + "".join(f"{name:>{w}} " for name, _, w in phases)
    header = Text(columns + "BUSY AT", style="bold reverse")
    header.append(" " * max(0, width - header.cell_len), style="bold reverse")
    title.truncate(max(1, width), overflow="ellipsis")
    header.truncate(max(1, width), overflow="ellipsis")
    out = [title, header]
    layout = (width, wide, len(phases), steps, show_host, host_width, site_width)
    for rank in ranks:
        slow = straggler is not None and rank.pid == straggler
        message = messages.get(rank.pid) if rank.pid is not None and not rank.samples else None
        key = (layout, slow, message, rank.rank, rank.host, rank.pid, rank.steps, rank.samples > 0, rank.shares,
               rank.site)
        line = _ROWS.get(key)
        if line is None:
            if len(_ROWS) >= ROW_CACHE:
                _ROWS.clear()
            line = _ROWS[key] = _row(rank, layout, slow, message)
        out.append(line)
    return out


# A rank's row is built again only when what it draws changes: a 256-rank job's table was most of the job view's
# cost a tick, for rows whose shares move a few times a minute. Keyed by everything the row draws; bounded.
ROW_CACHE = 4096
_ROWS: dict[tuple[object, ...], Text] = {}


def _row(rank: RankFigures, layout: tuple[int, bool, int, bool, bool, int, int], slow: bool,
         message: str | None) -> Text:
    width, wide, phase_count, steps, show_host, host_width, site_width = layout
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
