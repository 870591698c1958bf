"""Per-core bars grouped by NUMA node, laid out in as many columns as the width allows (2 or 256 cores)."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.snapshot import CpuSnapshot, NumaSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import SPARK, bar, level_style, pct, sparkline
from hwtop.widgets.panel import TextPanel, View, Want
from hwtop.widgets.safe_text import data

CELL_MIN = 16  # "127 ██████ 100%" plus a gap
BUSY, WAITING = "█", "▒"  # iowait is time a core sat idle waiting on storage: drawn apart, left out of the %


SHORT_NAMES = {"user": "usr", "system": "sys", "irq": "irq", "steal": "stl", "iowait (not in %)": "io≠%"}


def occasional_parts(cpu: CpuSnapshot | None) -> set[str]:
    """The parts of the core bars that only some machines show: irq and steal, where a core has them now."""
    cores = cpu.cores if cpu is not None else ()
    found = set()
    if any((c.irq or 0.0) >= 0.5 for c in cores):
        found.add("irq")
    if any((c.steal or 0.0) >= 0.5 for c in cores):
        found.add("steal")
    return found


def cpu_legend(cpu: CpuSnapshot | None, width: int = 1000, seen: frozenset[str] | set[str] = frozenset()) -> Text:
    """Which colour is which in the core bars, as btop/htop show it; irq and steal only where a core has them
    (now, or in `seen`: once shown, a part stays, or a VM's steal flickering about 0.5 % would redraw the panel
    every other tick). Within `width` cells: the names in full, then htop's short ones."""
    parts = [(BUSY, "user", palette.USER), (BUSY, "system", palette.SYSTEM)]
    occasional = occasional_parts(cpu) | set(seen)
    if "irq" in occasional:
        parts.append((BUSY, "irq", palette.IRQ))
    if "steal" in occasional:
        parts.append((BUSY, "steal", palette.STEAL))
    parts.append((WAITING, "iowait (not in %)", palette.IOWAIT))
    legend = Text()
    for short in (False, True):
        legend = Text()
        for index, (glyph, name, style) in enumerate(parts):
            legend.append(("" if index == 0 else " ") + glyph, style=style)
            legend.append(SHORT_NAMES[name] if short else name)
        if legend.cell_len <= width:
            break
    return legend


class CpuPanel(TextPanel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.cpu: CpuSnapshot | None = None
        self.numa: NumaSnapshot | None = None
        self.history: tuple[float, ...] = ()
        self.marked: set[int] = set()
        self.rows = 1000
        self._legend_seen: set[str] = set()
        self._legend_shown = False

    def take(self, view: View) -> None:
        """The cores, their NUMA nodes and history, and the cores a serious finding names (marked)."""
        frame = view.frame
        self.cpu, self.numa, self.history = frame.snapshot.cpu, frame.snapshot.numa, frame.history.series("cpu")
        self.marked = {c for f in frame.serious if not f.clearing(frame.time) for c in f.cores}

    def want(self, width: int) -> Want:
        """The summary line with a cell a core (most), a heat strip of a character a core (folded), the summary
        line alone (least)."""
        cpu = self.cpu
        if cpu is None:
            return Want.fixed(1)
        groups = core_groups(cpu, self.numa)
        width = max(width, CELL_MIN)
        most = 1 + grid_rows(cpu, groups, width)
        return Want(most, min(most, 1 + len(_strip_cells(groups, width))), 1)

    def draw(self, rows: int) -> None:
        self.show(self.cpu, self.numa, self.history, self.marked, rows)

    def show(self, cpu: CpuSnapshot | None, numa: NumaSnapshot | None, history: tuple[float, ...],
             marked: set[int] | None = None, rows: int = 1000) -> None:
        """`rows`: what the layout can spare; past it every core becomes one cell of a heat strip."""
        self.cpu, self.numa, self.history = cpu, numa, history
        self.marked = marked or set()
        self.rows = rows
        self.set_title("CPU" if cpu is None or cpu.model is None else data(f"CPU · {cpu.model}"))
        parts = occasional_parts(cpu)
        if not self._legend_shown or not parts <= self._legend_seen:  # the legend changes only with a new part
            self._legend_seen |= parts
            self._show_legend()
        self.changed()

    def _show_legend(self) -> None:
        self._legend_shown = True
        self.set_subtitle(cpu_legend(self.cpu, self.size.width - 2 if self.size.width else 1000,  # 2: title gaps
                                     self._legend_seen))

    def on_resize(self) -> None:
        self._show_legend()  # the first tick comes before the layout: the width it saw was not the panel's

    def lines(self, width: int) -> list[Text]:
        cpu = self.cpu
        if cpu is None:
            return [Text("CPU: N/A (probe failed)", style=palette.DIM)]
        width = max(width, CELL_MIN)
        summary = Text()
        summary.append(f"all {pct(cpu.percent)} ", style="bold")
        waits = [c.iowait for c in cpu.cores if c.iowait is not None]
        if waits and sum(waits) / len(waits) >= 1.0:  # busy % leaves it out: say how much waiting there was
            summary.append(f"iowait {sum(waits) / len(waits):.0f}% ", style=palette.IOWAIT)
        phys = f"{cpu.physical_cores}c/" if cpu.physical_cores else ""
        extras = [Text(f"{phys}{cpu.logical_cores}t ", style=palette.DIM)]
        if cpu.load_average:
            extras.insert(0, Text("load " + " ".join(f"{v:.2f}" for v in cpu.load_average) + " "))
        for extra in extras:  # on one line: what does not fit is left out, last first
            if summary.cell_len + extra.cell_len <= width:
                summary.append_text(extra)
        summary.append_text(sparkline(self.history, max(0, width - summary.cell_len)))
        out = [summary]
        groups = core_groups(cpu, self.numa)
        columns = max(1, min(width // CELL_MIN, len(cpu.cores)))
        cell = min(width // columns, 40)
        if 1 + grid_rows(cpu, groups, width) > self.rows:
            strips = self._strips(cpu, groups, width)
            room = max(0, self.rows - 1)
            if len(strips) > room and room:  # the last strip shown says how many cores are not: +90
                shown = strips[:room]
                cells = _strip_cells(groups, width)[:room]
                last = shown[-1]
                cut = max(0, last.cell_len + len(f" +{len(cpu.cores)}") - width)  # room for the mark's digits
                last.truncate(last.cell_len - cut)
                hidden = len(cpu.cores) - sum(cells) + cut
                last.append(f" +{hidden}", style=palette.DIM)
                return out + shown
            return (out + strips)[: max(1, self.rows)]
        for label, members in groups:
            if label is not None:
                out.append(Text(f"─ {label} ({len(members)} cpus) ", style=palette.GROUP))
            for start in range(0, len(members), columns):
                line = Text()
                for index in members[start:start + columns]:
                    line.append_text(self._cell(cpu, index, cell))
                out.append(line)
        return out

    def _strips(self, cpu: CpuSnapshot, groups: list[tuple[str | None, list[int]]], width: int) -> list[Text]:
        """One character per core, its height and colour its load (as btop does when space is short)."""
        out = []
        for label, members in groups:
            tag = _tag(label)
            per_row = max(1, width - len(tag))
            for start in range(0, len(members), per_row):
                line = Text(tag if start == 0 else " " * len(tag), style=palette.GROUP)
                for index in members[start:start + per_row]:
                    percent = cpu.cores[index].percent
                    char = "?" if percent is None else SPARK[min(len(SPARK) - 1, int(percent / 100 * len(SPARK)))]
                    style = level_style(percent) + (" reverse" if index in self.marked else "")
                    line.append(char, style=style)
                out.append(line)
        return out

    def _cell(self, cpu: CpuSnapshot, index: int, width: int) -> Text:
        core = cpu.cores[index]
        label = Text(f"{index:>3} ", style=palette.CRIT_STRONG if index in self.marked else "bold")
        bar_width = max(3, width - 4 - 5 - 1)
        segments = [(core.user, palette.USER), (core.system, palette.SYSTEM), (core.irq, palette.IRQ),
                    (core.steal, palette.STEAL)]
        line = label + bar(core.percent, bar_width, segments, waiting=(core.iowait, palette.IOWAIT)) + \
            Text(pct(core.percent, 5))
        line.append(" " * max(0, width - line.cell_len))
        return line


def _strip_cells(groups: list[tuple[str | None, list[int]]], width: int) -> list[int]:
    """Cores on each heat-strip row."""
    cells = []
    for label, members in groups:
        per_row = max(1, width - len(_tag(label)))
        cells += [min(per_row, len(members) - start) for start in range(0, len(members), per_row)]
    return cells


def _tag(label: str | None) -> str:
    """A heat strip's label: `cpu `, or `n0 ` for node 0."""
    return f"n{label[5:]} " if label else "cpu "


def core_groups(cpu: CpuSnapshot, numa: NumaSnapshot | None) -> list[tuple[str | None, list[int]]]:
    """The cores by NUMA node (labelled), or all of them where there is one node."""
    nodes = numa.nodes if numa and len(numa.nodes) > 1 else ()
    groups: list[tuple[str | None, list[int]]] = []
    for node in nodes:
        members = [c for c in node.cpus if c < len(cpu.cores)]
        if members:
            groups.append((f"node {node.index}", members))
    return groups or [(None, list(range(len(cpu.cores))))]


def grid_rows(cpu: CpuSnapshot, groups: list[tuple[str | None, list[int]]], width: int) -> int:
    """Rows of the grid of a cell a core, a heading a node."""
    columns = max(1, min(width // CELL_MIN, len(cpu.cores)))
    return sum(-(-len(m) // columns) + (label is not None) for label, m in groups)
