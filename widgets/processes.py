"""The process table: host processes sorted by a chosen column, with GPU columns merged in by pid. It holds the
first HELD rows of every process the probe saw (filtered, sorted): a filter or a sort reaches all of them, and the
border says how many it holds of how many there are."""

from __future__ import annotations

import heapq

import msgspec
from rich.text import Text

from hwtop.model.owner import Owner
from hwtop.model.snapshot import GpuSnapshot, ProcessInfo
from hwtop.widgets import palette
from hwtop.widgets.format import NA, human_bytes, level_style
from hwtop.widgets.line_table import LineTable
from hwtop.widgets.panel import FRAME, View, Want
from hwtop.widgets.safe_text import data


class Row(msgspec.Struct, frozen=True):
    pid: int
    user: str
    cpu: float | None
    rss: int | None
    threads: int | None
    gpus: str
    gpu_memory: int | None
    sm: float | None
    command: str
    ppid: int | None = None
    depth: int = 0  # in tree view
    owner: str = ""  # its Slurm job, pod or container (model/owner.py's label); "" for the user's own
    owner_short: str = ""  # the same where room is short (a pod's name without its namespace)
    name: str = ""  # the kernel's name for it (its comm), which `/` finds too: a worker's is not its command line


def filter_rows(rows: list[Row], text: str) -> list[Row]:
    """Rows whose command, name, user or owner (`job 4242`, `ns/pod`) contains `text` (case-insensitive), or whose pid
    starts with it (`2443` finds 24437, as a pid is typed from its start); `gpu:N` keeps the processes on GPU N."""
    needle = text.lower().strip()
    if not needle:
        return rows
    if needle.startswith("gpu:") and needle[4:].isdigit():
        return [r for r in rows if needle[4:] in r.gpus.split(",")]
    return [r for r in rows if needle in r.command.lower() or needle in r.name.lower() or needle in r.user.lower()
            or str(r.pid).startswith(needle) or needle in r.owner.lower()]


def with_descendants(marked: set[int], processes: tuple[ProcessInfo, ...]) -> set[int]:
    """`marked` and every process under one of them (a rank's DataLoader workers), up to 64 parents up; each
    parent chain walked once, however many processes share it."""
    if not marked:
        return marked
    parents = {p.pid: p.ppid for p in processes}
    under: dict[int | None, bool] = dict.fromkeys(marked, True)
    for pid in parents:
        chain: list[int] = []
        at: int | None = pid
        while at in parents and at not in under and len(chain) < 64:
            chain.append(at)
            at = parents[at]
        verdict = under.get(at, False)
        for member in chain:
            under[member] = verdict
    return {pid for pid, inside in under.items() if inside and pid is not None} | marked


def tree_rows(rows: list[Row]) -> list[Row]:
    """Parents before their children, children indented under them; siblings keep the sort order given."""

    present = {r.pid for r in rows}
    children: dict[int | None, list[Row]] = {}
    for row in rows:
        parent = row.ppid if row.ppid in present else None
        children.setdefault(parent, []).append(row)
    out: list[Row] = []
    placed: set[int] = set()

    def walk(tops: list[Row]) -> None:
        stack = [(r, 0) for r in reversed(tops)]
        while stack:
            row, depth = stack.pop()
            if row.pid in placed:
                continue
            placed.add(row.pid)
            out.append(msgspec.structs.replace(row, depth=depth))
            stack += [(child, depth + 1) for child in reversed(children.get(row.pid, []))]

    walk(children.get(None, []))
    # Rows caught in a parent cycle (a pid reused between two reads can make one) still show, as roots.
    walk([r for r in rows if r.pid not in placed])
    return out


SORT_KEYS = ("cpu", "rss", "gpu_memory", "pid")
COLUMNS = (("PID", "pid"), ("USER", "user"), ("OWNER", "owner"), ("CPU%", "cpu"), ("RSS", "rss"), ("THR", "threads"),
           ("GPU", "gpus"),
           ("GPU MEM", "gpu_memory"), ("SM%", "sm"), ("COMMAND", "command"))
CLICK_KEYS = tuple(key for _, key in COLUMNS)
GPU_KEYS = ("gpus", "gpu_memory", "sm")
# The OWNER column's widest: a long pod name is cut, the table's width belongs to the command line; below
# WIDE_TABLE cells it gives up more (`job 4242` still fits) so that 80 columns keep a readable command.
OWNER_WIDTH, NARROW_OWNER_WIDTH, WIDE_TABLE = 16, 10, 96
SORT_NAMES = {"pid": "PID", "user": "user", "owner": "owner", "cpu": "CPU", "rss": "memory (RSS)",
              "threads": "threads",
              "gpus": "GPU", "gpu_memory": "GPU memory", "sm": "GPU SM", "command": "command"}  # as a user says it
UP, DOWN = "▲", "▼"
LEAST_ROWS = 3  # the fewest processes the table shows
LEAST = LEAST_ROWS + 1 + FRAME  # with its column header and its border
HELD = 60  # rows the table holds: the first of every process in the order shown (the title says N of M)
_GpuEntry = tuple[int, int | None, float | None, str | None]  # (GPU index, its memory, SM %, command) of a pid


def merge_rows(processes: tuple[ProcessInfo, ...], gpus: tuple[GpuSnapshot, ...],
               kept: dict[int, tuple[ProcessInfo, Row]] | None = None) -> list[Row]:
    """One row per pid: host processes, plus GPU processes the host table did not list. `kept`: the rows made at
    the last call, by pid, handed out again for the very same ProcessInfo on no GPU (the probe hands out the same
    record for a process that did not change: most of a big box's thousands); updated to this call's."""
    gpu_of: dict[int, list[_GpuEntry]] = {}
    owner_of: dict[int, Owner] = {}
    for gpu in gpus:
        for proc in gpu.processes:
            gpu_of.setdefault(proc.pid, []).append((gpu.index, proc.used_memory_bytes, proc.sm_percent, proc.command))
            if proc.owner is not None:
                owner_of[proc.pid] = proc.owner
    rows = []
    seen = set()
    last, made = kept if kept is not None else {}, {}
    for proc in processes:
        seen.add(proc.pid)
        entries = gpu_of.get(proc.pid)
        known = last.get(proc.pid) if entries is None else None
        row = known[1] if known is not None and known[0] is proc else \
            _row(proc.pid, proc.user or NA, proc.cpu_percent, proc.rss_bytes, proc.threads, proc.cmdline or proc.name,
                 entries or [], proc.ppid, proc.owner, proc.name)
        if entries is None:
            made[proc.pid] = (proc, row)
        rows.append(row)
    if kept is not None:
        kept.clear()
        kept.update(made)
    for pid, entries in gpu_of.items():
        if pid not in seen:
            rows.append(_row(pid, NA, None, None, None, entries[0][3] or "(not visible in this pid namespace)",
                             entries, owner=owner_of.get(pid)))
    return rows


def _row(pid: int, user: str, cpu: float | None, rss: int | None, threads: int | None, command: str,
         entries: list[_GpuEntry], ppid: int | None = None,
         owner: Owner | None = None, name: str = "") -> Row:
    gpus = ",".join(str(e[0]) for e in entries)
    known = [e[1] for e in entries if e[1] is not None]
    sms = [e[2] for e in entries if e[2] is not None]
    return Row(pid, user, cpu, rss, threads, gpus, sum(known) if known else None, max(sms) if sms else None,
               command, ppid, owner=owner.label if owner else "", owner_short=owner.short_label if owner else "",
               name=name)


TEXT_KEYS = ("user", "owner", "gpus", "command")
ASCENDING_KEYS = ("pid", *TEXT_KEYS)  # read top down from the smallest; the rest from the biggest


def descending_by_default(key: str) -> bool:
    return key not in ASCENDING_KEYS


def sort_rows(rows: list[Row], key: str, descending: bool | None = None) -> list[Row]:
    """By any column, in either direction (the column's own by default: numbers descending, pid and text
    ascending); a value a process does not have (None) is last either way."""
    if descending is None:
        descending = descending_by_default(key)
    known = [row for row in rows if getattr(row, key) is not None]
    unknown = [row for row in rows if getattr(row, key) is None]
    if key in TEXT_KEYS:
        return sorted(known, key=lambda row: str(getattr(row, key)).lower(), reverse=descending) + unknown
    return sorted(known, key=lambda row: float(getattr(row, key)), reverse=descending) + unknown


def first_rows(rows: list[Row], key: str, descending: bool, count: int) -> list[Row]:
    """`sort_rows(rows, key, descending)[:count]`, without sorting all of a big box's thousands."""
    if len(rows) <= count:
        return sort_rows(rows, key, descending)
    known = [row for row in rows if getattr(row, key) is not None]
    pick = heapq.nlargest if descending else heapq.nsmallest  # each as stable as sorted()
    if key in TEXT_KEYS:
        first = pick(count, known, key=lambda row: str(getattr(row, key)).lower())
    else:
        first = pick(count, known, key=lambda row: float(getattr(row, key)))
    return first + [row for row in rows if getattr(row, key) is None][:count - len(first)]


class ProcessTable(LineTable):
    """Sorted by CPU by default; `cycle_sort` or a header click changes the column. Rows are sorted and filtered
    here, drawn by LineTable; every cell is data (a user or command line is shown as typed, never as markup)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__([label for label, _ in COLUMNS], id=id, classes=classes)
        self.sort_key = "cpu"
        self.sort_reversed = False  # against the column's own direction (r, or the same column again)
        self.rows_shown: list[Row] = []
        self.filter_text = ""
        self.tree_view = False
        self.marked: set[int] = set()
        self._last: tuple[tuple[ProcessInfo, ...], tuple[GpuSnapshot, ...]] = ((), ())
        self._view: tuple[object, ...] | None = None  # sort, filter, tree and marks the last rows were made for
        self._made: dict[tuple[object, ...], tuple[object, ...]] = {}
        self._taken: tuple[tuple[ProcessInfo, ...], tuple[GpuSnapshot, ...], set[int] | None] = ((), (), None)
        self._merged: dict[int, tuple[ProcessInfo, Row]] = {}  # merge_rows' rows of the last data, by pid
        self.border_title = "Processes"

    def take(self, view: View) -> None:
        """The processes, the GPUs' (merged in by pid) and the workload's pids (marked, with their descendants)."""
        snapshot = view.frame.snapshot
        workload = snapshot.workload
        self._taken = (snapshot.processes, snapshot.gpus, set(workload.pids) if workload else None)

    def want(self, width: int) -> Want:
        """At the least LEAST_ROWS processes under the column header, inside the border (the table's height is the
        screen's rest: the row budget gives it what the other panels leave)."""
        return Want(LEAST, LEAST, LEAST, frame=0)

    def draw(self, rows: int) -> None:
        self.show(*self._taken)

    @property
    def sort_descending(self) -> bool:
        return descending_by_default(self.sort_key) != self.sort_reversed

    def cycle_sort(self) -> str:
        self.unchoose()  # a new order is read from its top
        current = SORT_KEYS.index(self.sort_key) if self.sort_key in SORT_KEYS else -1
        self.sort_key, self.sort_reversed = SORT_KEYS[(current + 1) % len(SORT_KEYS)], False
        return self.sort_key

    def sort_by(self, key: str) -> None:
        """Sort by `key`; the column already sorted by turns round instead."""
        self.unchoose()  # a new order is read from its top
        if key == self.sort_key:
            self.sort_reversed = not self.sort_reversed
        else:
            self.sort_key, self.sort_reversed = key, False

    def reverse_sort(self) -> None:
        self.unchoose()  # a new order is read from its top
        self.sort_reversed = not self.sort_reversed

    def on_line_table_header_clicked(self, event: LineTable.HeaderClicked) -> None:
        event.stop()
        self.sort_by(CLICK_KEYS[event.column])
        self.redraw()

    def redraw(self) -> None:
        """Again, from the last data: after a sort, filter or tree change."""
        self.show(*self._last, marked=self.marked)

    def show(self, processes: tuple[ProcessInfo, ...], gpus: tuple[GpuSnapshot, ...],
             marked: set[int] | None = None) -> None:
        """`marked`: pids of the embedded job; their descendants (DataLoader workers) are marked too. The same
        data in the same view is not sorted again: the process list is re-read every other tick at a 1 s refresh."""
        owner_width = OWNER_WIDTH if (self.size.width or WIDE_TABLE) >= WIDE_TABLE else NARROW_OWNER_WIDTH
        view = (self.sort_key, self.sort_descending, self.filter_text, self.tree_view, frozenset(marked or ()),
                owner_width)
        if processes is self._last[0] and gpus is self._last[1] and view == self._view:
            return
        self._last, self._view = (processes, gpus), view
        self.marked = marked = with_descendants(set(marked or ()), processes)
        cursor = self.cursor_row
        selected = self.rows_shown[cursor].pid if 0 <= cursor < len(self.rows_shown) else None
        every = merge_rows(processes, gpus, self._merged)
        self._label_columns(every, bool(gpus))
        matching = filter_rows(every, self.filter_text)
        rows = first_rows(matching, self.sort_key, self.sort_descending, HELD)
        if self.tree_view:
            rows = tree_rows(rows)
        self.rows_shown = rows
        self._say_view()
        self._say_count(len(rows), len(matching), len(every))
        keys = [_key(row, marked, owner_width) for row in rows]
        made: dict[tuple[object, ...], tuple[object, ...]] = {}
        for key, row in zip(keys, rows, strict=True):
            made[key] = self._made.get(key) or made.get(key) or self._cells(row, marked, owner_width)
        self._made = made  # the rows on show only: it cannot outgrow the process count
        # The cursor follows the pid a user put it on; until then it stays on the top row, so the busiest process
        # stays in sight as processes come and go (it followed whichever pid happened to be first, and the table
        # began at a 10 % process after `w` started a job).
        index = next((i for i, row in enumerate(rows) if row.pid == selected), None) if self.chosen else 0
        self.set_rows(keys, [made[key] for key in keys], cursor=index)

    def _label_columns(self, rows: list[Row], gpus: bool) -> None:
        """The column labels, the sorted one with its arrow; the GPU columns blank on a GPU-less box (COMMAND takes
        their room) and OWNER blank where no job, pod or container holds a process."""
        arrow = DOWN if self.sort_descending else UP
        gpu_columns = gpus or any(row.gpus for row in rows)
        owners = any(row.owner for row in rows)
        self.set_labels([f"{label} {arrow}" if key == self.sort_key else
                         "" if (key in GPU_KEYS and not gpu_columns) or (key == "owner" and not owners) else label
                         for label, key in COLUMNS])

    def _say_count(self, held: int, matching: int, every: int) -> None:
        """The title says how many rows the table holds of how many there are, where it holds fewer: `60 of 193`,
        or with a filter `60 of 75 matching` (every match held: `3 of 193`)."""
        if held < matching:
            count = f" · {held} of {matching}" + (" matching" if self.filter_text else "")
        else:
            count = f" · {held} of {every}" if held < every else ""
        title = "Processes" + count
        if str(self.border_title) != title:  # setting it repaints the whole table, even to the same
            self.border_title = title

    def _say_view(self) -> None:
        """The border's subtitle: the sort, the tree and the filter in force, and the keys that change them."""
        arrow = DOWN if self.sort_descending else UP
        name = SORT_NAMES.get(self.sort_key, self.sort_key)
        subtitle = data(f"sorted by {name} {arrow} (s: next, r: reverse)" + (" · tree (T)" if self.tree_view else "") +
                        (f" · filter {self.filter_text!r} (/)" if self.filter_text else ""))
        if str(self.border_subtitle) != subtitle.plain:  # setting it repaints the whole table, even to the same
            self.border_subtitle = subtitle

    @staticmethod
    def _cells(row: Row, marked: set[int], owner_width: int = OWNER_WIDTH) -> tuple[object, ...]:
        return (
            Text(str(row.pid), style=palette.GROUP if row.pid in marked else ""), row.user[:10],
            _owner_cell(row, owner_width),
            Text(NA if row.cpu is None else f"{row.cpu:.1f}", style=level_style(row.cpu), justify="right"),
            Text(human_bytes(row.rss), justify="right"),
            Text(NA if row.threads is None else str(row.threads), justify="right"),
            row.gpus or "",
            Text(human_bytes(row.gpu_memory) if row.gpu_memory is not None else ("N/A" if row.gpus else ""),
                 justify="right"),
            Text("" if row.sm is None else f"{row.sm:.0f}", justify="right"),
            ("  " * min(row.depth, 8) + "└ " if row.depth else "") + row.command[:160],
        )


def _key(row: Row, marked: set[int], owner_width: int = OWNER_WIDTH) -> tuple[object, ...]:
    """What a row shows, as formatted text: a change below display precision (12.31 % to 12.34 %) is no change."""
    return (row.pid, row.pid in marked, row.user[:10], _owner_cell(row, owner_width),
            NA if row.cpu is None else f"{row.cpu:.1f}",
            level_style(row.cpu), human_bytes(row.rss), row.threads, row.gpus,
            human_bytes(row.gpu_memory) if row.gpu_memory is not None else ("N/A" if row.gpus else ""),
            "" if row.sm is None else f"{row.sm:.0f}", row.depth, row.command[:160])


def _owner_cell(row: Row, width: int) -> str:
    owner = row.owner if width >= OWNER_WIDTH else row.owner_short
    return owner if len(owner) <= width else owner[: width - 1] + "…"
