"""The job view's per-rank table: each rank of the job side by side (its state as the rules judge it, host, pid,
steps, NCCL's state and lag, the share of its time waiting in collectives and in its other phases, what it does
when not waiting). A rank a finding names (the straggler, the rank that never reached the collective, a rank NCCL
lost) is marked ◀ and, in a table sorted worst first (NCCL's view of every node), comes first. Columns are chosen
by width: the least telling give way first, whole, so no header or figure is cut; below WIDE cells, a job whose
ranks all run on one host gives the HOST column's cells to BUSY AT (a column of one repeated name says nothing)."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache, partial
from typing import NamedTuple

from rich.text import Text

from hwtop.advice.ranks import steady_lag
from hwtop.advice.rules.collective import collective_hang
from hwtop.advice.rules.nccl_ras import nccl_error, nccl_rank_lost
from hwtop.advice.rules.straggler import rank_straggler
from hwtop.model.finding import Finding
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.verdict import SHORT, RankState, Verdicts
from hwtop.widgets import palette
from hwtop.widgets.safe_text import data

# (header, phase, width): the phases of probes/stack_classify.py shown as columns, in the order shown.
PHASES: tuple[tuple[str, str, int], ...] = (("WAIT", "collective", 5), ("COMP", "compute", 5), ("DATA", "data", 5),
                                            ("PY", "other", 5), ("H2D", "copy", 5), ("CKPT", "checkpoint", 5),
                                            ("GPU", "gpu-wait", 5))
WIDE = 120
NARROW_PHASES = 4  # below WIDE cells: WAIT, COMP, DATA, PY
SITE_MIN = 14
HOST_MAX = 24  # a longer host label (hostile, or a cluster's FQDN) is cut with an ellipsis
MARK = "◀"
MAX_ROWS = 64  # of a job of thousands of ranks (NCCL RAS), the worst; doctor --json lists them all
HEALTHY = ("RUNNING", None)
# A rank's STATE as the frame's verdicts have it (model/verdict.py SHORT's words), styled by how bad it is
STATE_STYLE: dict[RankState, str] = {"dead": palette.CRIT_STRONG, "before-collective": palette.CRIT_STRONG,
                                     "inside-collective": palette.WARN, "slow": palette.WARN, "unknown": palette.DIM,
                                     "running": ""}
# What the mark says of a rank, by the rule that names it: the words of the finding's own title.
MARK_LABELS: dict[str, str] = {rank_straggler.id: "straggler", collective_hang.id: "never reached the collective",
               nccl_rank_lost.id: "lost to NCCL", nccl_error.id: "NCCL error"}
_RANK_IN_TITLE = re.compile(r"\b[Rr]ank (\d+)\b")  # "Rank 5 never reached…", "NCCL considers rank 12 (pid …) dead"
_RANK_LINE = re.compile(r"^rank (\d+) \(")  # an evidence line about one rank: nccl-rank-lost's, nccl-error's


class Later(Text):
    """A row of a tall panel out of view, built only when it is drawn (widgets/job.py): of a 256-rank job's ~350
    lines a 50-row terminal shows ~45, and each tick built them all. Empty, so two of them read alike and a row
    that stays out of view is never counted as changed; its panel keeps one per line and points it at each tick's
    data, so a row scrolled into view is drawn from the latest data even where nothing in view changed."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[], Text]) -> None:
        super().__init__()
        self.build = build

    @property
    def cell_len(self) -> int:
        return 0  # empty: measured with every line of its panel each tick


# (line index, how to build that line) -> the Later standing for it while it is out of view, or None: build it now
Defer = Callable[[int, Callable[[], Text]], Text | None]


def named_ranks(findings: Iterable[Finding]) -> dict[int, str]:
    """rank -> what the mark says, for each rank a finding singles out, as its title names it (a rank number is
    the job's, on every host; a pid is only this host's). A finding about many ranks (NCCL lost three) names
    each in an evidence line of its own."""
    out: dict[int, str] = {}
    for finding in findings:
        label = MARK_LABELS.get(finding.id)
        if label is None:
            continue
        numbers = _RANK_IN_TITLE.findall(finding.title)[:1]
        if not numbers and finding.id in (nccl_rank_lost.id, nccl_error.id):
            numbers = [m.group(1) for line in finding.evidence if (m := _RANK_LINE.match(line))]
        for number in numbers:
            out.setdefault(int(number), label)
    return out


def worst_key(rank: RankFigures, named: Mapping[int, str] | None = None,
              behind: Mapping[int, int] | None = None) -> tuple[bool, bool, int, int]:
    """What the findings name first, then not running (dead, unresponsive, aborted, erred, initialising), then the
    most collectives behind judged over NCCL's queries (advice/ranks.py steady_lag): a remote rank one
    behind once, by normal jitter, never sorts above the others."""
    return (rank.rank not in (named or {}), rank.nccl_state in HEALTHY, -steady_lag(rank, None, behind), rank.rank)


def shown_ranks(ranks: tuple[RankFigures, ...], limit: int = MAX_ROWS,
                named: Mapping[int, str] | None = None, behind: Mapping[int, int] | None = None) -> list[RankFigures]:
    """The rows drawn: every rank of a small job in rank order; with NCCL's view, the worst `limit` first.
    `behind`: rank -> in how many of NCCL's recent queries it was behind (NcclComm.behind)."""
    if not any(r.nccl_state is not None for r in ranks):
        return list(ranks)
    return heapq.nsmallest(limit, ranks, key=lambda r: worst_key(r, named, behind))


def fit_words(text: Text, width: int, slack: int | None = None) -> Text:
    """`text` in `width` cells, cut after its last whole word that fits (then `…`), mid-word where the first word
    alone is too long (a path, a hostile label) or, given `slack`, where a whole-word cut would leave more than that
    many cells empty (a command line: `python3 -c <a script>` would read `python3 -c …`)."""
    if text.cell_len <= width:
        return text
    plain = text.plain
    cut = plain.rfind(" ", 0, max(0, width - 1))
    out = text.copy()
    if cut > 0 and plain[:cut].strip() and (slack is None or width - 1 - cut <= slack):
        out.truncate(cut)
        out.append(" …")
        out.truncate(width)
        return out
    out.truncate(max(1, width), overflow="ellipsis")
    return out


def parts_lines(parts: list[Text], width: int, sep: str = " · ", indent: int = 2,
                sep_style: str = palette.DIM) -> list[Text]:
    """Parts joined by `sep`, wrapped between parts, never inside one (a part wider than a line is cut by
    `fit_words`); lines after the first indented."""
    lines: list[Text] = []
    line = Text()
    for part in parts:
        if line.plain and line.cell_len + len(sep) + part.cell_len <= width:
            line.append(sep, style=sep_style)
            line.append_text(part)
            continue
        if line.plain:
            lines.append(line)
            line = Text(" " * indent)
        line.append_text(fit_words(part, max(1, width - line.cell_len)))
    if line.plain:
        lines.append(line)
    return lines


def nccl_lines(job: JobSnapshot, width: int) -> list[Text]:
    """Where hwtop asks NCCL's RAS and how that goes, wrapped between its parts, and the latest error."""
    view = job.nccl
    if view is None:
        return []
    told = f"{view.queries} answer{'s' if view.queries != 1 else ''}" + (f" ({view.format})" if view.format else "")
    head = Text("NCCL RAS ", style="bold")
    head.append_text(data(f"at {view.address}", palette.DIM))
    parts = [head, data(f"({view.source}):", palette.DIM), data(told, palette.DIM)]
    if view.policy:  # when hwtop sends STATUS to this release, and why (first, do no harm)
        clauses = view.policy.split("; ")
        parts += [data(("· " if i == 0 else "") + clause + (";" if i < len(clauses) - 1 else ""), palette.DIM)
                  for i, clause in enumerate(clauses)]
    if view.holding:
        parts.append(data(f"· {view.holding}", palette.WARN))
    out = parts_lines(parts, width, sep=" ")
    said = view.foreign or (view.notes[-1] if view.notes else None) or (view.errors[-1] if view.errors else None)
    if said:
        error = data(f"  {said}", palette.WARN)
        error.truncate(max(1, width), overflow="ellipsis")  # NCCL's or the network's text: long, untrusted
        out.append(error)
    return out


def _percent(rank: RankFigures, phase: str) -> str:
    if not rank.samples:
        return "-"
    value = rank.share(phase)
    return f"{100 * value:.0f}%" if value >= 0.005 else "·"


class Column(NamedTuple):
    name: str  # header, and the key its cells are made by
    width: int
    keep: int  # the lower, the longer it stays on a narrow terminal


# Which give way first on a narrow terminal: the mark and the rank never; then the collective wait (the figure
# the straggler and hang findings cite), the rank's state (the verdict the findings rest on), NCCL's lag and state,
# the host, the data wait, the pid, compute, the site.
KEEP = {"RANK": 0, "WAIT": 1, "STATE": 2, "LAG": 3, "NCCL": 4, "HOST": 5, "DATA": 6, "PID": 7, "COMP": 8,
        "BUSY AT": 9, "GPU": 10, "STEPS": 11, "PY": 12, "H2D": 13, "CKPT": 14}


def choose_columns(ranks: list[RankFigures], width: int, labels: Iterable[str] = (),
                   states: Iterable[str] | None = None) -> tuple[tuple[Column, ...], int]:
    """The columns that fit `width`, in the order shown, and BUSY AT's width (0: not shown). `labels`: what the
    marks of the rows say, after the row on a wide terminal; `states`: the STATE cells of the rows (None: no
    verdicts, no STATE column), as wide as the longest."""
    wide = width >= WIDE
    nccl = any(r.nccl_state is not None for r in ranks)
    candidates = [Column("RANK", 5, KEEP["RANK"])]
    if states is not None:
        candidates.append(Column("STATE", max(len("STATE"), max((len(s) for s in states), default=0)), KEEP["STATE"]))
    if wide or len({r.host for r in ranks}) > 1:
        host = max(4, min(HOST_MAX, max(_host_cells(h) for h in {r.host for r in ranks})))
        candidates.append(Column("HOST", host, KEEP["HOST"]))
    candidates.append(Column("PID", 7, KEEP["PID"]))
    if any(r.steps is not None for r in ranks):
        candidates.append(Column("STEPS", 5, KEEP["STEPS"]))
    if nccl:
        state = max(4, max(len(r.nccl_state or "-") for r in ranks))
        candidates += [Column("NCCL", state, KEEP["NCCL"]), Column("LAG", 5, KEEP["LAG"])]
    phases = PHASES if wide else PHASES[:NARROW_PHASES]
    candidates += [Column(name, w, KEEP[name]) for name, _, w in phases]
    # A marked row says why after its site on a wide terminal, in the site's room: enough for the longest.
    suffix = max((len(f"  {MARK} {label}") for label in labels), default=0) if wide else 0
    candidates.append(Column("BUSY AT", max(SITE_MIN, suffix), KEEP["BUSY AT"]))
    kept = list(candidates)
    while sum(c.width + 1 for c in kept) - 1 > width and len(kept) > 1:  # the last needs no space after it
        kept.remove(max(kept, key=lambda c: c.keep))
    site = 0
    if any(c.name == "BUSY AT" for c in kept):
        kept = [c for c in kept if c.name != "BUSY AT"]
        site = width - sum(c.width + 1 for c in kept)
    return tuple(kept), site


@lru_cache(maxsize=4096)
def _host_cells(host: str) -> int:
    """A host label's cells as drawn (its control characters made visible): 256 ranks' labels measured each tick
    are a few dozen names."""
    return data(host).cell_len


def _legend(columns: tuple[Column, ...], named: Mapping[int, str], ranks: list[RankFigures], wide: bool) -> list[Text]:
    """The table's title in parts: what STATE, WAIT and LAG mean, and what the ◀ mark says where the row cannot."""
    names = {c.name for c in columns}
    title = Text("Ranks", style="bold")
    parts = [title]
    if "STATE" in names:
        parts.append(Text("STATE: each rank's verdict, as the findings judge it" + (
            " (never launched / not finished: a collective)" if wide else ""), style=palette.DIM))
    if "WAIT" in names:
        parts.append(Text("WAIT: in collectives, waiting for the " + ("other ranks (py-spy samples)" if wide else
                                                                      "others"), style=palette.DIM))
    shown = {r.rank for r in ranks}
    marks = {rank: label for rank, label in named.items() if rank in shown}
    if marks and not wide:  # the row's mark is a lone ◀ here: say what it means, and of which rank
        if len(set(marks.values())) == 1:
            parts.append(Text(f"{MARK} {next(iter(marks.values()))}", style=palette.CRIT_STRONG))
        else:
            parts += [Text(f"{MARK} rank {rank}: {label}", style=palette.CRIT_STRONG)
                      for rank, label in sorted(marks.items())]
    if "LAG" in names:
        parts.append(Text("LAG: collectives behind the most advanced rank (NCCL RAS)" + (", worst first" if wide else
                                                                                          ""), style=palette.DIM))
    return parts


def rank_states(ranks: Iterable[RankFigures], verdicts: Verdicts) -> dict[tuple[str, int], RankState]:
    """(host, rank) -> its verdict's state, for the ranks given (a rank the verdicts do not name has none)."""
    judged: dict[tuple[str, int], RankState] = {(v.host, v.rank): v.state for v in verdicts.ranks}
    return {(r.host, r.rank): judged[(r.host, r.rank)] for r in ranks if (r.host, r.rank) in judged}


def rank_table(job: JobSnapshot, width: int, named: Mapping[int, str] | None = None,
               defer: Defer | None = None, verdicts: Verdicts | None = None) -> list[Text]:
    """The table's lines for `width` cells; nothing for a job of fewer than two ranks. `named`: rank -> what the
    findings say of it (`named_ranks`), marked ◀ before its rank (and said after its row on a wide terminal).
    `defer(i, build)`: a `Later` for the table's line i where it is out of view (a rank's row), else None.
    `verdicts`: the frame's (Frame.verdicts, the answer the rules read), each rank's state in a STATE column (`-`
    for a rank they do not name); None (a replay of recorded findings): no STATE column."""
    if len(job.ranks) < 2:
        return []
    named = named or {}
    main = job.nccl.main if job.nccl is not None else None
    ranks = shown_ranks(job.ranks, named=named, behind=dict(main.behind) if main is not None else None)
    wide = width >= WIDE
    states = rank_states(ranks, verdicts) if verdicts is not None else None
    cells = None if states is None else [SHORT[states[k]] if (k := (r.host, r.rank)) in states else "-" for r in ranks]
    columns, site_width = choose_columns(ranks, width, {named[r.rank] for r in ranks if r.rank in named}, cells)
    messages = {s.pid: s.message for s in job.stacks if s.message}
    header = Text(" ".join(f"{c.name:<{c.width}}" if c.name in ("HOST", "NCCL", "STATE") else
                           f"{c.name:>{c.width}}" for c in columns) + " ", style="bold reverse")
    if site_width:
        header.append("BUSY AT", style="bold reverse")
    header.append(" " * max(0, width - header.cell_len), style="bold reverse")
    header.truncate(max(1, width))
    out = [*nccl_lines(job, width), *parts_lines(_legend(columns, named, ranks, wide), width), header]
    layout = (width, wide, columns, site_width)
    for rank in ranks:
        label = named.get(rank.rank)
        message = messages.get(rank.pid) if rank.pid is not None and not rank.samples else None
        state = states.get((rank.host, rank.rank)) if states is not None else None
        later = (defer(len(out), partial(_kept_row, rank, layout, label, message, state)) if defer is not None
                 else None)
        out.append(later if later is not None else _kept_row(rank, layout, label, message, state))
    if len(job.ranks) > len(ranks):
        out += parts_lines([Text(f"… and {len(job.ranks) - len(ranks)} more ranks, none worse than those above",
                                 style=palette.DIM),
                            Text("hwtop doctor --pid PID --json lists them all", style=palette.DIM)], width)
    return out


# A rank's row is built again only when what it draws changes: a 256-rank job's table was most of the job view's
# cost a tick, for rows whose shares move a few times a minute. Keyed by everything the row draws; bounded.
ROW_CACHE = 4096
_ROWS: dict[tuple[object, ...], Text] = {}
PHASE_OF = {name: phase for name, phase, _ in PHASES}


def _kept_row(rank: RankFigures, layout: tuple[int, bool, tuple[Column, ...], int], label: str | None,
              message: str | None, state: RankState | None = None) -> Text:
    key = (layout, label, message, state, rank.rank, rank.host, rank.pid, rank.steps, rank.samples > 0, rank.shares,
           rank.site, rank.nccl_state, rank.lag)
    line = _ROWS.get(key)
    if line is None:
        if len(_ROWS) >= ROW_CACHE:
            _ROWS.clear()
        line = _ROWS[key] = _row(rank, layout, label, message, state)
    return line


def _cell(line: Text, column: Column, rank: RankFigures, label: str | None, state: RankState | None) -> None:
    """One column's cell of a rank's row, with the space after it."""
    w = column.width
    if column.name == "RANK":
        line.append(f"{MARK if label else ' '}{rank.rank:>{w - 1}} ", style=palette.CRIT_STRONG if label else "bold")
    elif column.name == "STATE":
        line.append(f"{'-' if state is None else SHORT[state]:<{w}} ",
                    style=palette.DIM if state is None else STATE_STYLE[state])
    elif column.name == "HOST":
        host = data(rank.host)
        host.truncate(w, overflow="ellipsis")
        host.pad_right(w - host.cell_len)
        line.append_text(host)
        line.append(" ")
    elif column.name == "PID":
        line.append(f"{'' if rank.pid is None else rank.pid:>{w}} ")
    elif column.name == "STEPS":
        line.append(f"{'-' if rank.steps is None else rank.steps:>{w}} ")
    elif column.name == "NCCL":
        bad = rank.nccl_state not in HEALTHY
        line.append(f"{rank.nccl_state or '-':<{w}} ", style=palette.CRIT_STRONG if bad else "")
    elif column.name == "LAG":
        line.append(f"{'' if rank.lag is None else rank.lag:>{w}} ", style=palette.WARN if rank.lag else "")
    else:
        phase = PHASE_OF[column.name]
        style = palette.WARN if phase == "collective" and rank.samples and rank.collective_share >= 0.5 else ""
        line.append(f"{_percent(rank, phase):>{w}} ", style=style)


def _row(rank: RankFigures, layout: tuple[int, bool, tuple[Column, ...], int], label: str | None,
         message: str | None, state: RankState | None = None) -> Text:
    width, wide, columns, site_width = layout
    line = Text()
    for column in columns:
        _cell(line, column, rank, label, state)
    suffix = f"  {MARK} {label}" if label and wide else ""
    room = site_width - len(suffix)
    if site_width and room >= 4:
        site = data(rank.site or message or "", palette.DIM if message or not rank.site else "")
        line.append_text(fit_words(site, room))
    if suffix:
        line.append(suffix, style=palette.CRIT_STRONG)
    line.rstrip_end(width)  # the space after the last column, where the columns fill the width: no cut, no `…`
    line.truncate(max(1, width), overflow="ellipsis")
    return line
