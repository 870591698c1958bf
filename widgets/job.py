"""The job view: a focused job's process tree with roles, CPU, memory (PSS), threads, GPUs, affinity against
where its threads ran, NUMA placement of its memory, I/O, dataset disks; workers coming and going, pressure,
where each rank's time goes; sparklines; and a stack when asked. Ended workers leave the table (counted)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from rich.text import Text
from textual.containers import ScrollableContainer
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from hwtop.advice.grouping import covering
from hwtop.advice.judge import memory_far
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import JobProcess, JobSnapshot, RankStacks
from hwtop.model.verdict import Verdicts
from hwtop.probes.sysfs import format_cpulist
from hwtop.widgets import keys, palette
from hwtop.widgets.format import NA, human_bytes, human_rate, sparkline
from hwtop.widgets.job_ranks import Defer, Later, fit_words, named_ranks, parts_lines, rank_table
from hwtop.widgets.panel import TextPanel, View, Want
from hwtop.widgets.safe_text import data, visible

ROLE_STYLE = {"launcher": palette.GROUP, "DataLoader worker": palette.WORKER, "helper": palette.DIM,
              "worker of a rank": palette.WORKER}


Column = tuple[str, int, bool]  # header, width, right-aligned
# In the order shown; the first five always, the rest while the command keeps COMMAND_MIN cells (the placement
# lines under the table repeat what a narrow terminal leaves out: affinity, where threads ran, NUMA memory).
COLUMNS: tuple[Column, ...] = (("PID", 7, True), ("ROLE", 24, False), ("S", 4, False), ("CPU%", 5, True),
                               ("PSS", 7, True), ("THR", 4, True), ("GPU", 12, False), ("ALLOWED", 12, False),
                               ("RAN ON", 10, False), ("MEMORY", 14, False), ("IO r/w", 17, False))
ALWAYS = 5
COMMAND_MIN = 16
NARROW_ROLE = 18  # ROLE's width when the terminal is too narrow for 24


def fitting_columns(width: int) -> tuple[Column, ...]:
    """The columns that fit `width` with COMMAND_MIN cells left for the command line."""
    def used(columns: tuple[Column, ...]) -> int:
        return sum(w + 1 for _, w, _ in columns)

    columns = COLUMNS[:ALWAYS]
    if used(columns) + COMMAND_MIN > width:
        columns = tuple((name, NARROW_ROLE if name == "ROLE" else w, right) for name, w, right in columns)
    for column in COLUMNS[ALWAYS:]:
        if used((*columns, column)) + COMMAND_MIN > width:
            break
        columns = (*columns, column)
    return columns


def _unbuilt() -> Text:
    return Text()


def numa_share(pages: tuple[tuple[int, int], ...] | None) -> str:
    if pages is None:
        return "N/A"
    total = sum(count for _, count in pages)
    if not total:
        return "-"
    return " ".join(f"n{node} {100 * count / total:.0f}%" for node, count in pages if count)


COMMAND_SLACK = 4  # cells a command cut after a whole word may leave empty; more, and it is cut inside one
SERIES = (("job.cpu", "cpu"), ("job.gpu", "gpu util"), ("job.rss", "rss"))  # the sparklines: history key, label


class JobPanel(TextPanel):
    can_focus = True
    BINDINGS = keys.bindings(keys.JOB_PANEL)

    def __init__(self, *, id: str | None = None, classes: str | None = None, stacks: bool = True) -> None:
        """`stacks`: `d` reads the selected process's stack here (not on a demo machine, whose pids are simulated)."""
        super().__init__(id=id, classes=classes)
        self.stacks = stacks
        self.job: JobSnapshot | None = None
        self.series: dict[str, tuple[float, ...]] = {}
        self.node_of_gpu: dict[int, int] = {}
        self.node_of_cpu: dict[int, int] = {}
        self.cursor = 0
        self.stack: list[Text] = []
        self.named: Mapping[int, str] = {}
        self.verdicts: Verdicts | None = None  # the frame's: the rank table's STATE column
        self.thresholds = Thresholds()  # the session's (a config file's), given with each frame
        self.border_title = "Job"
        # A process's row kept while what it draws is the same (its formatted cells, role, command, width): a
        # 256-rank job's dozens of rows were built again every tick, each cell a new Text, most of them unchanged.
        self._rows: dict[tuple[object, ...], Text] = {}
        self._process_rows: list[int] = []  # the line each process's row is on, as last built
        self._later: list[Later] = []  # the Later standing for line i while it is out of view, kept across ticks
        # A rank's placement lines kept while what they say is the same (the process's placement, the width), for
        # as long as the maps and the threshold they are read with stay the same (`_placement_context`)
        self._placements: dict[tuple[object, ...], list[Text]] = {}
        self._placement_context: tuple[object, ...] = ()

    def take(self, view: View) -> None:
        """The focused job, its sparklines' history, the NUMA nodes of the GPUs and CPUs its placement is read
        against, the ranks the findings single out (marked, and first) and every rank's verdict as the rules read it
        (the frame's, never judged here)."""
        frame = view.frame
        snapshot, numa = frame.snapshot, frame.snapshot.numa
        self.job, self.thresholds = snapshot.job, view.thresholds
        self.series = {key: frame.history.series(key) for key, _ in SERIES}
        self.node_of_gpu = snapshot.topology.gpu_numa_nodes() if snapshot.topology is not None else {}
        self.node_of_cpu = {cpu: node.index for node in numa.nodes for cpu in node.cpus} if numa else {}
        self.named = named_ranks(frame.findings)
        self.verdicts = frame.verdicts

    def want(self, width: int) -> Want:
        """Every line: the screen scrolls it."""
        return Want.fixed(self._row_count(width))

    def draw(self, rows: int) -> None:
        """Every line, whatever `rows`: the screen scrolls it."""
        self.show(self.job, self.series, self.node_of_gpu, self.node_of_cpu, self.named, self.thresholds,
                  self.verdicts)

    def show(self, job: JobSnapshot | None, series: dict[str, tuple[float, ...]], node_of_gpu: dict[int, int],
             node_of_cpu: dict[int, int], named: Mapping[int, str] | None = None,
             thresholds: Thresholds | None = None, verdicts: Verdicts | None = None) -> None:
        """`named`: rank -> what a finding says of it (job_ranks.named_ranks: the straggler, the hung rank),
        marked in the rank table; `thresholds`: those the rules judge by, so far memory is marked as the
        numa-misplaced finding says; `verdicts`: the frame's, each rank's STATE in the rank table (None: none)."""
        self.job, self.series, self.node_of_gpu, self.node_of_cpu = job, series, node_of_gpu, node_of_cpu
        self.thresholds = thresholds or self.thresholds
        self.named = named or {}
        self.verdicts = verdicts
        if job is not None:
            self.cursor = min(self.cursor, max(0, len(job.processes) - 1))
            stack = " · d: Python stack of the selected process" if self.stacks else ""
            self.set_title(data(f"Job · {job.label}{stack} · escape: back"))
        self.changed()

    @property
    def selected(self) -> JobProcess | None:
        if self.job is None or not self.job.processes:
            return None
        return self.job.processes[self.cursor]

    def action_move(self, step: int) -> None:
        if self.job and self.job.processes:
            self.cursor = (self.cursor + step) % len(self.job.processes)
            self.changed()
            self.call_after_refresh(self._show_cursor)

    def _show_cursor(self) -> None:
        """Scroll the screen to the selected row: a tree taller than the terminal keeps its last child reachable."""
        width = self.content_size.width
        if width <= 0 or self.job is None or not 0 <= self.cursor < len(self.job.processes):
            return  # a new snapshot with fewer processes came between the key and this callback
        lines = self.cached_lines(width)
        if self.cursor >= len(self._process_rows):
            return
        # the rows above the selected one, wrapped lines counted (a row out of view is one row: each is cut to fit)
        rows_before = sum(max(1, -(-line.cell_len // width)) for line in lines[:self._process_rows[self.cursor]])
        container = self.parent
        if isinstance(container, Widget):  # the screen's VerticalScroll
            top = self.virtual_region.y + self.styles.gutter.top + rows_before
            if self.cursor == 0:  # the first row: the job's summary and the table's header with it
                container.scroll_to(y=0, animate=False, immediate=True)
            else:
                container.scroll_to_region(Region(0, top, width, 1), animate=False, immediate=True)

    def set_stack(self, title: str, text: str | None, message: str | None) -> None:
        """What the view shows below the job at a key's request: `d`'s stack, `F`'s answer (`text`: the job's own
        words, shown as data), `message` as a warning."""
        self.stack = [data(title, "bold")]
        if text:  # py-spy's output: function names and paths the process chose
            self.stack += [data(line) for line in text.split("\n")]
        if message:
            self.stack.append(data(message, palette.WARN))
        self.changed()

    def _node_label(self, cpus: tuple[int, ...] | None) -> str:
        if not cpus or not self.node_of_cpu:
            return ""
        nodes = sorted({self.node_of_cpu[c] for c in cpus if c in self.node_of_cpu})
        return f" (node {','.join(map(str, nodes))})" if nodes else ""

    def _in_view(self) -> Callable[[int], bool]:
        """Whether line i is on screen now, as the scroll container shows this panel: a row out of view is built
        when it is drawn (`render_line`), not each tick. Everything is in view until the panel is laid out in one."""
        container = self.parent
        rows = container.scrollable_content_region.height if isinstance(container, ScrollableContainer) else 0
        if rows <= 0 or self._height is None:
            return lambda _: True
        top = round(container.scroll_y) - self.virtual_region.y - self.styles.gutter.top  # type: ignore[union-attr]
        return range(top - 1, top + rows + 1).__contains__

    def _defer(self, in_view: Callable[[int], bool]) -> Defer:
        """Line i's Later, pointed at `build`, where that line is out of view; None where it is in view."""
        def defer(line: int, build: Callable[[], Text]) -> Text | None:
            if in_view(line):
                return None
            while len(self._later) <= line:
                self._later.append(Later(_unbuilt))
            later = self._later[line]
            later.build = build
            return later
        return defer

    def render_line(self, y: int) -> Strip:
        lines = self.cached_lines(self.content_size.width or self.size.width)
        line = lines[y] if 0 <= y < len(lines) else None
        if isinstance(line, Later):
            lines[y] = visible(line.build())
        return super().render_line(y)

    def render(self) -> Text:
        """The whole text (a selection, a line that wraps): every row built."""
        lines = self.cached_lines(self.content_size.width or self.size.width)
        for index, line in enumerate(lines):
            if isinstance(line, Later):
                lines[index] = visible(line.build())
        return super().render()

    def lines(self, width: int) -> list[Text]:
        job = self.job
        if job is None:
            return [Text("no job focused: hwtop --pid PID, --job PATTERN, or f on a process", style=palette.DIM)]
        out = parts_lines(_summary_parts(job), width, sep_style="")  # wrapped between its figures, never inside one
        defer = self._defer(self._in_view())
        out += self._job_lines(job, width, len(out), defer)
        out.append(self._sparklines(job, width))
        if job.message:
            out += _wrapped(job.message, palette.WARN, width)
        if job.status == "ended":
            out.append(Text("escape, then f on a process, picks another job", style=palette.WARN))
        columns = fitting_columns(width)
        out.append(_table_header(columns, width))
        self._table_rows(job, width, columns, out, defer)
        placement = self._placement_lines(job, width)
        if placement:
            out.append(Text("Placement", style="bold"))
            out += placement
        if job.dataset_devices:
            disks = ", ".join(f"{d} ({n})" for d, n in job.dataset_devices)
            out += _wrapped("  dataset disks (files the job's processes, workers included, had open in the last 2 "
                            f"min): {disks}", "", width)
        if self.stack:
            out += self.stack
        return out

    def _sparklines(self, job: JobSnapshot, width: int) -> Text:
        """The job's CPU, GPU utilisation (where it uses a GPU) and RSS over time, on one line."""
        spark = max(8, min(40, (width - 30) // 3))
        marks = Text()
        for key, label in SERIES:
            values = self.series.get(key, ())
            if key == "job.gpu" and not job.gpu_memory:
                continue  # the job uses no GPU: no line to draw
            marks.append(f"{label} ", style="bold")
            marks.append_text(sparkline(values, spark, high=max(values) if values and key != "job.gpu" else 100.0))
            marks.append("  ")
        return marks

    def _table_rows(self, job: JobSnapshot, width: int, columns: tuple[Column, ...], out: list[Text],
                    defer: Defer) -> None:
        """A row a process, appended to `out`; a row out of view is built when it is drawn."""
        rows, self._rows = self._rows, {}
        self._process_rows = []
        for index, process in enumerate(job.processes):
            self._process_rows.append(len(out))
            selected = index == self.cursor and self.has_focus
            later = defer(len(out), partial(self._row, process, width, columns, selected, rows))
            out.append(later if later is not None else self._row(process, width, columns, selected, rows))

    def _placement_lines(self, job: JobSnapshot, width: int) -> list[Text]:
        """Where each rank (or process on a GPU) runs, its lines kept from the last tick where nothing changed."""
        context = (tuple(self.node_of_gpu.items()), tuple(self.node_of_cpu.items()),
                   self.thresholds["numa_local_memory_share"])
        if context != self._placement_context:
            self._placements, self._placement_context = {}, context
        placements, self._placements = self._placements, {}
        return [line for p in job.processes if p.alive and (p.role.startswith("rank") or p.gpus)
                for line in self._kept_placement(p, width, placements)]

    def _job_lines(self, job: JobSnapshot, width: int, first: int, defer: Defer) -> list[Text]:
        """Workers coming and going, pressure, the memory cgroup, and where each rank's time goes: a table of
        the ranks side by side when there are several, else a line per sampled process. `first`: the line these
        start on, for `defer`."""
        out = []
        if job.workers_started_last_minute or job.workers_exited_last_minute:
            out.append(Text(f"DataLoader workers: {job.workers_started_last_minute} started, "
                            f"{job.workers_exited_last_minute} exited in the last minute",
                            style=palette.WARN if job.workers_exited_last_minute else ""))
        pressure = job.pressure
        if pressure is not None:
            line = Text(f"pressure ({pressure.source}): ", style="bold")
            line.append(" · ".join(f"{name} {NA if value is None else f'{value:.0f}%'}" for name, value in
                                   (("cpu", pressure.cpu_some), ("io", pressure.io_some),
                                    ("memory", pressure.memory_some))))
            group = job.cgroup_memory
            if group is not None and group.limit_bytes:
                line.append(f" · cgroup memory {human_bytes(group.used_bytes)} of {human_bytes(group.limit_bytes)}")
            out.append(line)
        start = first + len(out) + (1 if job.stack_message else 0)  # the table's first line
        table = rank_table(job, width, self.named, lambda i, build: defer(start + i, build), self.verdicts)
        if (job.stacks or job.stack_message) and not table:
            out.append(Text("Where the time goes (main thread, py-spy samples)", style="bold"))
        if job.stack_message:
            out.append(data(f"  {job.stack_message}", palette.WARN))
        if table:
            return out + table
        for stacks in job.stacks:
            out += self._stacks_lines(stacks, width)
        return out

    def _stacks_lines(self, stacks: RankStacks, width: int) -> list[Text]:
        """`  rank 0 (pid 41000): data 62% · compute 30%  (380 samples, 10 s) at AugmentedImages.__getitem__ (…)`,
        wrapped between its parts under its head, never back to the first column (a long site at 120 columns)."""
        from hwtop.probes.stack_classify import LABELS

        who = f"rank {stacks.rank}" if stacks.rank is not None else "main"
        head = Text(f"  {who} (pid {stacks.pid}):", style="bold")
        if not stacks.samples:
            return parts_lines([head, data(stacks.message or "no samples yet", palette.DIM)], width, sep=" ",
                               indent=4, sep_style="")
        shares = sorted(stacks.fractions, key=lambda kv: -kv[1])
        phases = Text()
        for index, (name, value) in enumerate(shares):
            phases.append(("" if index == 0 else " · ") + f"{LABELS.get(name, name)} {100 * value:.0f}%",
                          style=palette.WARN_STRONG if name == "data" and value >= 0.3 else "")
        parts = [head, phases, Text(f" ({stacks.samples} samples, {stacks.window_s:.0f} s)", style=palette.DIM)]
        site = stacks.site(shares[0][0]) if shares else None
        if site:
            parts.append(data(f"at {site}", palette.DIM))
        return parts_lines(parts, width, sep=" ", indent=4, sep_style="")

    def _row(self, p: JobProcess, width: int, columns: tuple[Column, ...], selected: bool,
             last: dict[tuple[object, ...], Text]) -> Text:
        role_width = next(w for name, w, _ in columns if name == "ROLE")
        values = _cells(p, role_width)
        key = (*values.values(), p.role, p.rank is not None, p.alive, p.cmdline or p.name, width, columns, selected)
        kept = last.get(key) or self._rows.get(key)
        if kept is not None:
            self._rows[key] = kept
            return kept
        line = Text()
        for name, w, right in columns:
            value = values[name][:w]
            cell = f"{value:>{w}} " if right else f"{value:<{w}} "
            if name == "PID":
                line.append(cell, style="reverse" if selected else "")
            elif name == "ROLE":
                line.append(cell, style=ROLE_STYLE.get(p.role, "bold" if p.rank is not None else ""))
            else:
                line.append(cell)
        # One row whatever the command line holds: a newline or a tab in it shows as a symbol, never breaks it.
        command = data(p.cmdline or p.name, palette.DIM if not p.alive else "")
        line.append_text(fit_words(command, max(1, width - line.cell_len), slack=COMMAND_SLACK))  # after a whole word
        line.truncate(max(1, width), overflow="ellipsis")
        self._rows[key] = line
        return line

    def _kept_placement(self, p: JobProcess, width: int, last: dict[tuple[object, ...], list[Text]]) -> list[Text]:
        """`_placement`, kept from the last tick where every input it reads is the same."""
        key = (p.rank, p.role, p.pid, tuple(i for i, _ in p.gpus), p.cuda_visible_devices, p.local_rank,
               p.cpu_affinity, p.thread_cpus, p.numa_pages, p.dataset_devices, width)
        lines = last.get(key) or self._placements.get(key)
        if lines is None:
            lines = self._placement(p, width)
        self._placements[key] = lines
        return lines

    def _placement(self, p: JobProcess, width: int) -> list[Text]:
        """Where a rank runs: its GPUs and their nodes, its CPUs, its memory; wrapped between its parts, indented."""
        who = f"rank {p.rank}" if p.rank is not None else p.role
        head = Text(f"  {who} (pid {p.pid}): ", style="bold")
        gpus = [i for i, _ in p.gpus]
        if gpus:
            head.append(", ".join(f"GPU{i}" + (f" (node {self.node_of_gpu[i]})" if i in self.node_of_gpu else "")
                                  for i in gpus))
        elif p.cuda_visible_devices is not None:
            head.append_text(data(f"CUDA_VISIBLE_DEVICES={p.cuda_visible_devices}"))  # the process's environment
        else:
            head.append("no GPU")
        parts = [head]
        if p.local_rank is not None:
            parts.append(Text(f"LOCAL_RANK={p.local_rank}"))
        allowed = f"{format_cpulist(p.cpu_affinity)}{self._node_label(p.cpu_affinity)}" if p.cpu_affinity else ""
        if p.thread_cpus:
            parts.append(Text(f"threads ran on {format_cpulist(p.thread_cpus)}{self._node_label(p.thread_cpus)}"
                              + (f" of allowed {allowed}" if allowed else "")))
        elif allowed:
            parts.append(Text(f"allowed CPUs {allowed}"))
        parts.append(Text(f"memory {numa_share(p.numa_pages)}"))
        far = self._far_memory(p)
        if far:
            parts.append(Text(far, style=palette.CRIT_STRONG))
        if p.dataset_devices:
            parts.append(data("open files on " + ", ".join(f"{d} ({n})" for d, n in p.dataset_devices)))
        return parts_lines(parts, width, indent=4, sep_style="")

    def _far_memory(self, p: JobProcess) -> str | None:
        homes = {self.node_of_gpu[i] for i, _ in p.gpus if i in self.node_of_gpu}
        if len(homes) != 1 or not p.numa_pages:
            return None
        home = homes.pop()
        share = memory_far(p.numa_pages, home, self.thresholds)  # the numa-misplaced rule's own judgement
        return None if share is None else f"only {100 * share:.0f}% on the GPU's node {home}"


def _summary_parts(job: JobSnapshot) -> list[Text]:
    """The job's state and process count, its CPU, memory and GPU memory: the pieces of its first line(s)."""
    head = Text(f"{job.status.upper()} ", style=palette.OK_STRONG if job.status == "running" else palette.WARN_STRONG)
    alive = sum(1 for p in job.processes if p.alive)
    cpu = NA if job.cpu_percent is None else f"{job.cpu_percent:.0f}%"
    memory = f"PSS {human_bytes(job.pss_bytes)}" if job.pss_bytes is not None else f"RSS {human_bytes(job.rss_bytes)}"
    head.append(f"{alive} process(es) ({job.pids_seen} seen)")
    parts = [head, Text(f"CPU {cpu}" + (f" of {job.usable_cores} cores" if job.usable_cores else "")), Text(memory)]
    by_figure: dict[str, list[int]] = {}
    for index, used in job.gpu_memory:  # eight GPUs holding alike: one figure, not eight to compare
        by_figure.setdefault(human_bytes(used), []).append(index)
    for shown, indices in by_figure.items():
        gpus = covering([f"GPU{i}" for i in indices])[0]
        parts.append(Text(f"{gpus} {shown}" + (" each" if len(indices) > 1 else "")))
    return parts


def _table_header(columns: tuple[Column, ...], width: int) -> Text:
    header = Text(" ".join(f"{name:>{w}}" if right else f"{name:<{w}}" for name, w, right in columns),
                  style="bold reverse")
    header.append(" COMMAND" + " " * max(0, width - header.cell_len - 8), style="bold reverse")
    return header


def _cells(p: JobProcess, role_width: int) -> dict[str, str]:
    """A process's figures as its row writes them, by column."""
    state = p.state or "?"
    if not p.alive:
        state = "gone" if p.exit_code is None else f"x{p.exit_code}"
    return {
        "PID": str(p.pid),
        "ROLE": ("  " * min(p.depth, 6) + ("└ " if p.depth else "") + p.role)[:role_width],
        "S": state,
        "CPU%": NA if p.cpu_percent is None else f"{p.cpu_percent:.0f}",
        "PSS": human_bytes(p.pss_bytes if p.pss_bytes is not None else p.rss_bytes),
        "THR": str(p.threads or 0),
        "GPU": ",".join(f"{i}:{human_bytes(m)}" for i, m in p.gpus) or "-",
        "ALLOWED": format_cpulist(p.cpu_affinity) if p.cpu_affinity else NA,
        "RAN ON": format_cpulist(p.thread_cpus) if p.thread_cpus else "-",
        "MEMORY": numa_share(p.numa_pages),
        "IO r/w": "N/A" if p.read_bytes_per_s is None else
        f"{human_rate(p.read_bytes_per_s)}/{human_rate(p.write_bytes_per_s)}",
    }


def _wrapped(text: str, style: str, width: int, indent: int = 4) -> list[Text]:
    """Other people's text (a probe's message, device names) wrapped between its words, the lines after the
    first indented: a long line never wraps back to the panel's first column."""
    words = [data(word, style) for word in text.split(" ") if word]
    lead = len(text) - len(text.lstrip(" "))
    if lead and words:
        words[0] = Text(" " * lead) + words[0]
    return parts_lines(words, width, sep=" ", indent=indent, sep_style="")
