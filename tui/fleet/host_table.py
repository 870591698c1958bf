"""The fleet's hosts table for a thousand rows: LineTable's drawing (a Strip per visible line, cached) with rows
that are made only when drawn. A frame hands over its hosts; sorting and filtering a thousand frozen rows is a
list operation, and only the twenty-odd rows on screen are ever turned into cells. Column widths are declared
(a cell is cut to its column), so no row has to be measured to lay the table out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import overload

from rich.text import Text
from textual.geometry import Size

from hwtop.fleet.model import HostView
from hwtop.tui.fleet import cells
from hwtop.widgets import keys, palette
from hwtop.widgets.format import sparkline
from hwtop.widgets.line_table import LineTable

NARROW = 120  # columns: below this the cells are cut shorter and the trend left out, so TOP FINDING is on screen
COLUMNS = ("HOST", "STATUS", "GPUS", "UTIL", "TREND", "GPU MEMORY", "CPU", "TOP FINDING", "NETWORK", "ADDRESS",
           "GPU MODELS")
NARROW_COLUMNS = ("HOST", "STATUS", "GPUS", "UTIL", "", "GPU MEM", "CPU", "TOP FINDING", "NETWORK", "ADDRESS",
                  "GPU MODELS")
WIDTHS = (32, 36, 4, 4, 12, 13, 4, 40, 24, 30, 30)  # the most a column takes; HOST, ADDRESS, MODELS fit their rows
NARROW_WIDTHS = (15, 10, 4, 4, 0, 9, 4, 20, 20, 21, 30)  # 80 columns: HOST to TOP FINDING on screen
ON_SCREEN = 8  # HOST to TOP FINDING: on the screen; NETWORK, ADDRESS and GPU MODELS a scroll (right) away
# Where the on-screen columns are wider than the terminal, they give way by importance: the trend first (to
# nothing), then a down host's status (its error in full is on the host's screen), the host's name, the GPU memory;
# TOP FINDING, the column the table is about, last. (index, the fewest cells it goes down to)
GIVE_WAY = ((4, 0), (1, 10), (0, 15), (5, 9))
SORTS = (("worst", "TOP FINDING"), ("host", "HOST"), ("util", "UTIL"), ("memory", "GPU MEMORY"), ("cpu", "CPU"))


def _used_share(view: HostView) -> float:
    memory = view.memory
    return memory[0] / memory[1] if memory and memory[1] else -1.0


_BY_FIGURE: dict[str, Callable[[HostView], float]] = {  # the biggest first
    "util": lambda v: -(v.util_mean if v.util_mean is not None else -1.0),
    "memory": lambda v: -_used_share(v),
    "cpu": lambda v: -(v.cpu_busy if v.cpu_busy is not None else -1.0),
}


def sort_hosts(hosts: Sequence[HostView], key: str) -> list[HostView]:
    """`worst` keeps the frame's order (critical, down, warnings, info, healthy); the others are stable on it."""
    if key == "host":
        return sorted(hosts, key=lambda v: cells.host_label(v).lower())
    by = _BY_FIGURE.get(key)
    return list(hosts) if by is None else sorted(hosts, key=by)


def haystack(view: HostView, jobs: Sequence[str] = ()) -> str:
    """What `/` searches in a row: host, address, GPU models, who runs there (owner labels, jobs), findings."""
    parts = [cells.host_label(view), view.address, view.gpu_models, *view.owners, *jobs, view.error or "",
             *(f"{f.severity} {f.rule} {f.scope}" for f in view.findings)]
    return "\n".join(parts).lower()


def filter_hosts(hosts: Sequence[HostView], text: str, jobs: dict[str, tuple[str, ...]]) -> list[HostView]:
    needle = text.strip().lower()
    if not needle:
        return list(hosts)
    return [v for v in hosts if needle in haystack(v, jobs.get(v.name, ()))]


def row_cells(view: HostView, narrow: bool, widths: tuple[int, ...]) -> tuple[Text, ...]:
    host, status, *_ = widths
    name = cells.plain(cells.host_label(view), "bold", host)
    address = cells.plain(cells.short_address(view.address), palette.DIM, widths[9])
    if not view.up:  # nothing measured now: blank, not N/A
        return (name, cells.status(view, status), *(Text("") for _ in range(7)), address,
                cells.plain(view.gpu_models, palette.DIM, widths[10]))
    memory = view.memory
    return (name, cells.status(view, status), Text(str(len(view.gpus))), cells.num(view.util_mean, "{:.0f}%"),
            sparkline(view.trend, widths[4]) if view.trend and not narrow else Text(""),
            Text("N/A", style=palette.DIM) if memory is None else cells.gib(*memory, narrow=narrow),
            cells.num(view.cpu_busy, "{:.0f}%"), cells.finding(view, widths[7]), cells.port(view), address,
            cells.plain(view.gpu_models, "", widths[10]))


class _Rows(Sequence[tuple[Text, ...]]):
    """The table's rows, each made when it is drawn (LineTable caches the line it makes)."""

    def __init__(self, hosts: Sequence[HostView], narrow: bool, widths: tuple[int, ...]) -> None:
        self.hosts, self.narrow, self.widths = hosts, narrow, widths

    def __len__(self) -> int:
        return len(self.hosts)

    @overload
    def __getitem__(self, index: int) -> tuple[Text, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Text, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[Text, ...] | Sequence[tuple[Text, ...]]:
        if isinstance(index, slice):
            return _Rows(self.hosts[index], self.narrow, self.widths)
        return tuple(_tabs(text) for text in row_cells(self.hosts[index], self.narrow, self.widths))


def _tabs(text: Text) -> Text:
    """A tab's width is known only once it is spaces (as LineTable's own cells)."""
    if "\t" in text.plain:
        text = text.copy()
        text.expand_tabs()
    return text


def key_of(view: HostView) -> str:
    return f"{view.name}\x00{view.address}"


class HostTable(LineTable):
    """`show` takes the hosts in the order to show; the cursor stays on the same host as rows move."""

    BINDINGS = keys.bindings(keys.FLEET_HOST_TABLE)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(COLUMNS, id=id, classes=classes)
        self.hosts: list[HostView] = []
        self._sized: Sequence[HostView] | None = None  # the rows the column widths were measured on
        self._sized_narrow: tuple[bool, int] = (False, 0)  # the layout and the terminal's width they were sized for
        self._sized_widths: tuple[int, ...] = ()

    def selected(self) -> HostView | None:
        return self.hosts[self.cursor_row] if 0 <= self.cursor_row < len(self.hosts) else None

    def show(self, hosts: list[HostView], width: int, sorted_by: str, every: Sequence[HostView] | None = None) -> None:
        """`every`: the frame's rows, whose longest values size the columns (kept while it is the same object: the
        rows of one frame, however they are sorted or filtered); else `hosts`' own."""
        selected = self.selected()
        narrow = width < NARROW
        every = hosts if every is None else every
        if self._sized is not every or self._sized_narrow != (narrow, width):
            self._sized, self._sized_narrow = every, (narrow, width)
            self._sized_widths = _given_way(self._widths_for(every, narrow), width)
        widths = self._sized_widths
        labels = NARROW_COLUMNS if narrow else COLUMNS
        column = dict(SORTS).get(sorted_by)
        self._labels = tuple(Text(f"{label} ▼" if label and (label == column or (narrow and column == "GPU MEMORY"
                                                                                and label == "GPU MEM")) else label)
                             for label in labels)
        self.hosts = hosts
        self._keys = [(narrow, widths, view) for view in hosts]  # a frozen row: equal rows draw equal lines
        self._rows = _Rows(hosts, narrow, widths)  # made when read, by index
        self._widths = tuple(max(w, label.cell_len) if w else 0 for w, label in zip(widths, self._labels,
                                                                                       strict=True))
        keys = {key_of(view): index for index, view in enumerate(hosts)}
        index = keys.get(key_of(selected)) if selected is not None else None
        self._cursor = max(0, min(self._cursor if index is None else index, len(hosts) - 1))
        self._set_virtual_size(Size(self._total_width(), len(hosts) + 1))
        self._scroll_to_cursor(animate=False)
        self.refresh()

    def action_scroll_columns(self, direction: int) -> None:
        """To the start of the next column right (or left) of the first one on screen."""
        starts, x = [], 0
        for width in self._widths:
            if width:
                starts.append(x)
                x += width + 2
        left = int(self.scroll_offset.x)
        if direction > 0:
            target = next((start for start in starts if start > left), left)
        else:
            target = next((start for start in reversed(starts) if start < left), 0)
        self.scroll_to(x=target, animate=False)

    @staticmethod
    def _widths_for(hosts: Sequence[HostView], narrow: bool) -> tuple[int, ...]:
        """Declared widths; HOST, STATUS, TOP FINDING, ADDRESS and GPU MODELS no wider than their longest value."""
        widths: list[int] = list(NARROW_WIDTHS if narrow else WIDTHS)
        if hosts:
            widths[0] = min(widths[0], max(len(cells.host_label(v)) for v in hosts))
            widths[1] = min(widths[1], max(cells.status(v, 1000).cell_len for v in hosts))
            widths[7] = min(widths[7], max(cells.finding(v, 1000).cell_len for v in hosts))
            widths[9] = min(widths[9], max(len(cells.short_address(v.address)) for v in hosts))
            widths[10] = min(widths[10], max(len(v.gpu_models) for v in hosts))
        return tuple(widths)


def _given_way(widths: tuple[int, ...], width: int) -> tuple[int, ...]:
    """The widths with the on-screen columns given way in GIVE_WAY's order until they fit `width` terminal cells
    (a column is followed by two cells, the table starts with one); TOP FINDING keeps its width."""
    fitted = list(widths)
    for index, floor in GIVE_WAY:
        excess = 1 + sum(w + 2 for w in fitted[:ON_SCREEN] if w) - width
        if excess <= 0:
            break
        fitted[index] = max(floor, fitted[index] - excess)
    return tuple(fitted)
