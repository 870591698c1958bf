"""The main screen's row budget, in one pure function: the terminal's size and what each panel could show in, the
rows each panel may take out. The panels and where each sits are tui/panels.py's list; this says how tall each may
be, so that at any size from 80x24 up the header, the GPU panel's summary and at least three processes (the
table's own least) are on the screen and nothing opens scrolled.

Each panel says what it could be drawn in (`Want`): all of it (`most`), folded (`fold`: the CPU's heat strip, the
busiest disks, one line a GPU, the advice's headlines) and at the least (`least`: one line). When everything does
not fit, panels give way in a declared order: first each folds, in FOLD_ORDER; then each goes down to its least,
in LEAST_ORDER. Then what is left over is given back, in the reverse of FOLD_ORDER (the GPU panel first), and the
process table takes the rest."""

from __future__ import annotations

from collections.abc import Mapping

from hwtop.model.record import Record
from hwtop.tui.panels import NAMES, SLOTS
from hwtop.widgets.panel import Want

BARS = 2  # the header and the footer
PROCESS_SHARE = 4  # the table keeps a quarter of the screen until every other panel has folded
ADVICE_SHARE = 0.6  # the most of the screen the advice pane takes (as its max-height in hwtop.tcss)

# The order panels give way in. The CPU grid becomes a heat strip first (every core still shown), then the disks
# and network ports fold to the busiest, the memory panel drops its history and NUMA lines, the GPU panel goes
# from three lines a GPU to two and to one, the advice pane to one headline a finding, the workload pane's ranks to
# those that fit, and last the process table from a quarter of the screen to its fewest rows. Past that each goes
# down to its least, the GPU panel last: a short cell a GPU side by side, then one summary line of every GPU.
FOLD_ORDER = ("cpu", "disks", "network", "memory", "gpu", "advice", "workload", "processes")
LEAST_ORDER = ("network", "disks", "memory", "cpu", "workload", "advice", "gpu")
TOP_LEFT = tuple(slot.name for slot in SLOTS if slot.place == "left")  # the left column of the top row
TOP_RIGHT = tuple(slot.name for slot in SLOTS if slot.place == "right")  # beside it
BELOW = tuple(slot.name for slot in SLOTS if slot.place == "full")  # under the top row, the full width each
FILLS = next(slot.name for slot in SLOTS if slot.fills)  # the process table: the rest of the screen


class Shown(Record, frozen=True):
    """The terminal's size and what each panel on the screen could be drawn in, by name (a panel not on the
    screen is left out)."""

    width: int
    height: int
    wants: Mapping[str, Want]
    filter: bool = False  # the process filter's input line, above the footer


class Rows(Record, frozen=True):
    """Lines of content each panel may draw, by name (0 for one not shown; the process table's count its border
    and column header), and the top row's height."""

    lines: Mapping[str, int]
    top: int = 0

    def __getitem__(self, name: str) -> int:
        return self.lines.get(name, 0)

    @staticmethod
    def of(top: int = 0, **lines: int) -> Rows:
        """Rows by keyword, every panel of the list there (0 where not given)."""
        return Rows({name: lines.get(name, 0) for name in NAMES}, top)


def rows(shown: Shown) -> Rows:
    budget = _Budget(shown)
    for order, floor in ((FOLD_ORDER, _fold), (LEAST_ORDER, _least)):
        for name in order:
            if name in budget.wants:
                budget.give_way(name, floor(budget.wants[name]))
    for name in reversed(FOLD_ORDER):  # what is left over goes back, the GPU panel first
        if name in budget.wants:
            budget.take_back(name)
    lines = budget.lines
    if FILLS in lines:  # the process table takes the rest
        lines[FILLS] = max(0, budget.room - budget.total() + lines[FILLS])
    return Rows({name: lines.get(name, 0) for name in NAMES}, budget.top())


def _fold(want: Want) -> int:
    return min(want.fold, want.most)


def _least(want: Want) -> int:
    return min(want.least, want.most)


class _Budget:
    """The lines each panel has while the rows are shared out, and what they add up to on the screen."""

    def __init__(self, shown: Shown) -> None:
        wants = dict(shown.wants)
        if FILLS in wants:  # rows kept for the table: it takes whatever is left in the end
            least = wants[FILLS].least
            comfort = max(least, shown.height // PROCESS_SHARE)
            wants[FILLS] = Want(comfort, least, least, frame=0)
        advice = wants.get("advice")
        if advice is not None:  # the pane's share of the screen at the most
            cap = max(1, int(shown.height * ADVICE_SHARE))
            wants["advice"] = Want(min(advice.most, cap), min(advice.fold, cap), min(advice.least, cap),
                                   frame=advice.frame, bare_line=advice.bare_line)
        self.wants = wants
        self.lines = {name: want.most for name, want in wants.items()}
        self.room = shown.height - BARS - (1 if shown.filter else 0)

    def drawn(self, name: str) -> int:
        """Rows the panel takes on the screen: its lines and its border (none for a bare line)."""
        count, want = self.lines.get(name, 0), self.wants.get(name)
        if not count or want is None:
            return 0
        return count + (0 if count == 1 and want.bare_line else want.frame)

    def top(self) -> int:
        return max(sum(self.drawn(name) for name in TOP_LEFT), max((self.drawn(name) for name in TOP_RIGHT),
                                                                       default=0))

    def total(self) -> int:
        return self.top() + sum(self.drawn(name) for name in BELOW)

    def give_way(self, name: str, floor: int) -> None:
        """The panel down by what is too much, not below `floor` (a top-row panel may need to give more)."""
        want = self.wants[name]
        while (excess := self.total() - self.room) > 0:
            count = self.lines[name]
            lower = want.below(count - excess + 1, floor) if count - excess >= floor else None
            lower = lower if lower is not None else want.below(count, floor)
            if lower is None:
                return
            self.lines[name] = min(lower, max(floor, count - excess)) if not want.steps else lower

    def take_back(self, name: str) -> None:
        """The panel up to the tallest of its heights that fits what is left over (the total grows with a panel's
        height: found by bisection)."""
        want, before = self.wants[name], self.lines[name]
        higher = sorted(h for h in (want.steps or range(before + 1, want.most + 1)) if before < h <= want.most)
        low, high = 0, len(higher)
        while low < high:
            middle = (low + high) // 2
            self.lines[name] = higher[middle]
            if self.total() <= self.room:
                low = middle + 1
            else:
                high = middle
        self.lines[name] = higher[low - 1] if low else before
