"""RAM and swap bars, and memory used per NUMA node (one meaning of "used": model/snapshot.py)."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.snapshot import MemorySnapshot, NumaSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import bar, human_bytes, sparkline
from hwtop.widgets.panel import TextPanel


class MemoryPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.memory: MemorySnapshot | None = None
        self.numa: NumaSnapshot | None = None
        self.history: tuple[float, ...] = ()
        self.border_title = "Memory"

    def show(self, memory: MemorySnapshot | None, numa: NumaSnapshot | None, history: tuple[float, ...]) -> None:
        self.memory, self.numa, self.history = memory, numa, history
        self.changed()

    def lines(self, width: int) -> list[Text]:
        memory = self.memory
        if memory is None:
            return [Text("memory: N/A (probe failed)", style=palette.DIM)]
        # "used" is total − available here, on every node line and everywhere else (model/snapshot.py says why)
        out = [self._row("RAM", memory.total_bytes - memory.available_bytes, memory.total_bytes, width)]
        out.append(self._row("swap", memory.swap_used_bytes, memory.swap_total_bytes, width))
        if self.numa and self.numa.source != "fallback":  # a machine's own layout (sysfs, or a demo's)
            for node in self.numa.nodes:
                if node.memory_total_bytes:
                    out.append(self._row(f"node{node.index}", node.memory_used_bytes, node.memory_total_bytes, width))
        if len(out) < 4 and width > 10:
            out.append(Text("RAM ", style=palette.DIM) + sparkline(self.history, width - 4))
        return out

    @staticmethod
    def _row(label: str, used: int | None, total: int, width: int) -> Text:
        """`used` None: not known (a recording made before nodes carried their share of MemAvailable)."""
        figures = f" {human_bytes(used)}/{human_bytes(total)}" if total else " none"
        percent = None if used is None else 100.0 * used / total if total else 0.0
        bar_width = max(3, width - 6 - len(figures))
        return Text(f"{label:<5} ", style="bold") + bar(percent, bar_width) + Text(figures)
