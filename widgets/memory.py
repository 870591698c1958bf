"""RAM and swap bars, and memory used per NUMA node (one meaning of "used": model/snapshot.py). Given fewer
rows, the history goes first, then the NUMA nodes, then swap."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.snapshot import MemorySnapshot, NumaSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import bar, human_bytes, sparkline
from hwtop.widgets.panel import TextPanel, View, Want


class MemoryPanel(TextPanel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.memory: MemorySnapshot | None = None
        self.numa: NumaSnapshot | None = None
        self.history: tuple[float, ...] = ()
        self.rows = 1000
        self.border_title = "Memory"

    def show(self, memory: MemorySnapshot | None, numa: NumaSnapshot | None, history: tuple[float, ...],
             rows: int = 1000) -> None:
        self.memory, self.numa, self.history, self.rows = memory, numa, history, rows
        self.changed()

    def take(self, view: View) -> None:
        snapshot = view.frame.snapshot
        self.memory, self.numa, self.history = snapshot.memory, snapshot.numa, view.frame.history.series("mem")

    def want(self, width: int) -> Want:
        """Every line (most), RAM and swap (folded), RAM alone (least)."""
        count = len(_rows(self.memory, self.numa, width))
        return Want(count, min(count, 2), 1)

    def draw(self, rows: int) -> None:
        self.show(self.memory, self.numa, self.history, rows)

    def lines(self, width: int) -> list[Text]:
        memory = self.memory
        if memory is None:
            return [Text("memory: N/A (probe failed)", style=palette.DIM)]
        rows = _rows(memory, self.numa, width)
        kept = sorted(rows, key=lambda row: row[0])[: max(1, self.rows)]
        return [self._line(row, memory, width) for row in rows if row in kept]

    def _line(self, row: _Row, memory: MemorySnapshot, width: int) -> Text:
        _, label, used, total = row
        if label == _HISTORY:  # under the RAM bar: RAM used over time
            return Text("  └  ", style=palette.DIM) + sparkline(self.history, width - 5)
        return self._row(label, used, total, width)

    @staticmethod
    def _row(label: str, used: int | None, total: int, width: int) -> Text:
        """`used` None: not known (a recording made before nodes carried their share of MemAvailable)."""
        figures = f" {human_bytes(used)}/{human_bytes(total)}" if total else " none"
        percent = None if used is None else 100.0 * used / total if total else 0.0
        bar_width = max(3, width - 6 - len(figures))
        return Text(f"{label:<5} ", style="bold") + bar(percent, bar_width) + Text(figures)


_HISTORY = ""  # the row of RAM used over time
_Row = tuple[int, str, int | None, int]  # (priority, label, used: None where not known, total)


def _rows(memory: MemorySnapshot | None, numa: NumaSnapshot | None, width: int) -> list[_Row]:
    """(priority: the lowest is kept longest, label, used, total) of each line, in the order drawn: RAM, its
    history (where there are fewer than two NUMA nodes to show), swap, the NUMA nodes."""
    if memory is None:
        return [(0, "N/A", 0, 0)]
    # "used" is total − available here, on every node line and everywhere else (model/snapshot.py says why)
    rows: list[_Row] = [
        (0, "RAM", memory.total_bytes - memory.available_bytes, memory.total_bytes),
        (1, "swap", memory.swap_used_bytes, memory.swap_total_bytes)]
    if numa and numa.source != "fallback":  # a machine's own layout (sysfs, or a demo's)
        for node in numa.nodes:
            if node.memory_total_bytes:
                rows.append((2 + node.index, f"node{node.index}", node.memory_used_bytes, node.memory_total_bytes))
    if len(rows) < 4 and width > 10:
        rows.insert(1, (1000, _HISTORY, 0, 0))
    return rows
