"""The main screen's row budget, in one pure function: the terminal's size and what each panel could show in, the
rows each panel may take out. The stylesheet (hwtop.tcss) places the panels; this says how tall each may be, so
that at any size from 80x24 up the header, the GPU panel's summary and at least PROCESS_ROWS processes are on the
screen and nothing opens scrolled.

Each panel says what it could be drawn in (`Want`): all of it (`most`), folded (`fold`: the CPU's heat strip, the
busiest disks, one line a GPU, the advice's headlines) and at the least (`least`: one line). When everything does
not fit, panels give way in a declared order: first each folds, in FOLD_ORDER; then each goes down to its least,
in LEAST_ORDER. Then what is left over is given back, in the reverse of FOLD_ORDER (the GPU panel first), and the
process table takes the rest."""

from __future__ import annotations

from hwtop.model.record import Record
from hwtop.widgets.panel import FRAME, Want

BARS = 2  # the header and the footer
PROCESS_ROWS = 3  # the fewest processes the table shows
PROCESS_LEAST = PROCESS_ROWS + 1 + FRAME  # with its column header and its border
PROCESS_SHARE = 4  # the table keeps a quarter of the screen until every other panel has folded
ADVICE_SHARE = 0.6  # the most of the screen the advice pane takes (as its max-height in hwtop.tcss)

# The order panels give way in. The CPU grid becomes a heat strip first (every core still shown), then the disks
# and network ports fold to the busiest, the memory panel drops its history and NUMA lines, the GPU panel goes
# from three lines a GPU to two and to one, the advice pane to one headline a finding, the workload pane's ranks to
# those that fit, and last the process table from a quarter of the screen to its PROCESS_ROWS. Past that each goes
# down to its least, the GPU panel last: a short cell a GPU side by side, then one summary line of every GPU.
FOLD_ORDER = ("cpu", "disks", "network", "memory", "gpu", "advice", "workload", "processes")
LEAST_ORDER = ("network", "disks", "memory", "cpu", "workload", "advice", "gpu")
TOP_LEFT = ("cpu", "disks")  # the left column of the top row; the memory panel beside it


class Shown(Record, frozen=True):
    """The terminal's size and what each panel could show; None: the panel is not on the screen."""

    width: int
    height: int
    cpu: Want | None = None
    disks: Want | None = None
    network: Want | None = None
    memory: Want | None = None
    gpu: Want | None = None
    workload: Want | None = None
    advice: Want | None = None
    processes: bool = True
    filter: bool = False  # the process filter's input line, above the footer


class Rows(Record, frozen=True):
    """Lines of content each panel may draw (0 for one not shown), the process table's rows (border and column
    header included) and the top row's height."""

    cpu: int = 0
    disks: int = 0
    network: int = 0
    memory: int = 0
    gpu: int = 0
    workload: int = 0
    advice: int = 0
    processes: int = 0
    top: int = 0


def rows(shown: Shown) -> Rows:
    wants = {name: getattr(shown, name) for name in FOLD_ORDER if name != "processes"}
    wants = {name: want for name, want in wants.items() if want is not None}
    if shown.processes:  # rows kept for the table: it takes whatever is left in the end
        comfort = max(PROCESS_LEAST, shown.height // PROCESS_SHARE)
        wants["processes"] = Want(comfort, PROCESS_LEAST, PROCESS_LEAST, frame=0)
    advice = wants.get("advice")
    if advice is not None:  # the pane's share of the screen at the most
        cap = max(1, int(shown.height * ADVICE_SHARE))
        wants["advice"] = Want(min(advice.most, cap), min(advice.fold, cap), min(advice.least, cap),
                               frame=advice.frame, bare_line=advice.bare_line)
    lines = {name: want.most for name, want in wants.items()}
    room = shown.height - BARS - (1 if shown.filter else 0)

    def drawn(name: str) -> int:
        count, want = lines.get(name, 0), wants[name]
        return count + (0 if count == 1 and want.bare_line else want.frame) if count else 0

    def top() -> int:
        return max(sum(drawn(name) for name in TOP_LEFT if name in lines), drawn("memory") if "memory" in lines else 0)

    def total() -> int:
        return top() + sum(drawn(name) for name in ("gpu", "network", "workload", "advice", "processes")
                           if name in lines)

    for order, floor in ((FOLD_ORDER, lambda w: min(w.fold, w.most)), (LEAST_ORDER, lambda w: min(w.least, w.most))):
        for name in order:
            if name not in wants:
                continue
            want = wants[name]
            while (excess := total() - room) > 0:  # down by what is too much (a top-row panel may need more)
                lower = want.below(lines[name] - excess + 1, floor(want)) if lines[name] - excess >= floor(want) \
                    else None
                lower = lower if lower is not None else want.below(lines[name], floor(want))
                if lower is None:
                    break
                lines[name] = min(lower, max(floor(want), lines[name] - excess)) if not want.steps else lower
    for name in reversed(FOLD_ORDER):  # what is left over goes back, the GPU panel first
        if name not in wants:
            continue
        want, before = wants[name], lines[name]
        higher = [h for h in (want.steps or range(before + 1, want.most + 1)) if before < h <= want.most]
        higher.sort()
        low, high = 0, len(higher)  # the total grows with a panel's height: the tallest that fits, by bisection
        while low < high:
            middle = (low + high) // 2
            lines[name] = higher[middle]
            if total() <= room:
                low = middle + 1
            else:
                high = middle
        lines[name] = higher[low - 1] if low else before
    processes = room - total() + lines["processes"] if shown.processes else 0
    return Rows(**{name: lines.get(name, 0) for name in FOLD_ORDER if name != "processes"},
                processes=max(0, processes), top=top())
