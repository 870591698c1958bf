"""GPU panels: one block per GPU (util and memory bars with history, temperature, power, clocks, PCIe,
throttle reasons, GPM activity, MIG slices), two lines each when space is short, one line each when shorter, and
at the least one summary line of every GPU (a cell each for utilisation and memory); or the reason no GPU shows."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual import events
from textual.message import Message

from hwtop.advice.judge import link_degraded
from hwtop.advice.thresholds import Thresholds
from hwtop.model.history import Recent
from hwtop.model.owner import Owner, distinct, owners_label
from hwtop.model.snapshot import GpuSnapshot, GpuSystem
from hwtop.widgets import palette
from hwtop.widgets.format import NA, SPARK, bar, human_bytes, human_rate, level_style, pct, sparkline
from hwtop.widgets.panel import TextPanel, Want
from hwtop.widgets.safe_text import data

WIDE_BLOCK = 96  # cells one GPU needs for the three-line block
CELL = 34  # cells one GPU needs side by side with others: `GPU0  92% █████░ 9.9G/80G 73°C`


def _num(value: float | None, fmt: str = "{:.0f}", unit: str = "") -> str:
    return NA if value is None else fmt.format(value) + unit


def short_name(name: str | None) -> str:
    if not name:
        return "GPU"
    return name.replace("NVIDIA ", "").replace("GeForce ", "")


class GpuPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.system: GpuSystem | None = None
        self.gpus: tuple[GpuSnapshot, ...] = ()
        self.history: Recent | None = None
        self.mode = "wide"
        self.marked: set[int] = set()
        self.numa_of: dict[int, int] = {}
        self.thresholds = Thresholds()  # the session's (a config file's), given with each frame
        self.border_title = "GPU"

    def show(self, system: GpuSystem | None, gpus: tuple[GpuSnapshot, ...], history: Recent,
             max_lines: int = 1000, marked: set[int] | None = None, numa_of: dict[int, int] | None = None,
             width: int | None = None, thresholds: Thresholds | None = None) -> None:
        """`max_lines` is the height this panel may take; the fullest layout that fits is chosen: three lines a
        GPU (side by side where wide), two lines, one line a GPU, or one line for them all. `thresholds`: those
        the rules judge by, so a link is marked as the pcie-degraded finding says."""
        self.system, self.gpus, self.history = system, gpus, history
        self.thresholds = thresholds or self.thresholds
        self.numa_of = numa_of or {}
        width = max(1, width or self.content_size.width or self.size.width or 80)
        wide, compact, dense, cells, _ = mode_lines(gpus, width)
        if wide <= max_lines:
            self.mode = "wide"
        elif compact <= max_lines:
            self.mode = "compact"
        elif dense <= max_lines or len(gpus) < 2:
            self.mode = "dense"
        elif cells <= max_lines:
            self.mode = "cells"
        else:
            self.mode = "summary"
        self.marked = marked or set()
        title = "GPU"
        if system is not None and system.available:
            title = f"GPU · driver {system.driver_version or NA} · CUDA {system.cuda_driver_version or NA}"
            if system.source.startswith("demo"):
                title += f" · {system.source}"
        self.set_title(data(title))  # the driver and source strings are NVML's or a recording's
        if not gpus:
            if self.same_as_shown(system):  # no GPU: its line says why, and that rarely changes
                return
        else:
            self.forget_shown()  # GPU lines draw the history, which moves on every tick: never compared
        self.changed()

    @staticmethod
    def want(system: GpuSystem | None, gpus: tuple[GpuSnapshot, ...], width: int) -> Want:
        """Lines at each layout: three a GPU, two, one, and one summary line (the least, never left out)."""
        if not gpus:
            return Want.fixed(len(_no_gpu_lines(system, width)))
        modes = mode_lines(gpus, width)
        return Want(modes[0], modes[2], modes[-1], steps=tuple(sorted(set(modes), reverse=True)))

    def lines(self, width: int) -> list[Text]:
        if not self.gpus:
            return [data(line, palette.WARN) for line in _no_gpu_lines(self.system, width)]
        if self.mode == "summary":
            return [self._summary(width)]
        if self.mode == "cells":
            return self._cell_lines(width)
        columns = max(1, width // WIDE_BLOCK) if self.mode == "wide" else 1
        if len(self.gpus) == 1:
            columns = 1
        block_width = width // columns
        blocks = [self._block(gpu, block_width) for gpu in self.gpus]
        out: list[Text] = []
        self._layout = []  # per line: the GPU indices of its columns and the column width (for clicks)
        for start in range(0, len(blocks), columns):
            row = blocks[start:start + columns]
            height = max(len(b) for b in row)
            for line_no in range(height):
                self._layout.append((tuple(g.index for g in self.gpus[start:start + columns]), block_width))
                line = Text()
                for block in row:
                    piece = block[line_no] if line_no < len(block) else Text()
                    piece = piece.copy()
                    piece.truncate(block_width - 1)
                    piece.append(" " * (block_width - piece.cell_len))
                    line.append_text(piece)
                out.append(line)
        return out

    class GpuClicked(Message):
        """A click on a GPU's block: the app shows that GPU's processes."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        layout = getattr(self, "_layout", [])
        if offset is None or not 0 <= offset.y < len(layout):
            return
        indices, width = layout[offset.y]
        column = offset.x // max(1, width)
        if column < len(indices):
            self.post_message(self.GpuClicked(indices[column]))

    def _summary(self, width: int) -> Text:
        """Every GPU on one line: `8× A100-SXM4-80GB util 88% ▇▇▇▇▆▆▇▇ mem 77G/640G ▁▁▁▁▁▁▁▁ 68-75°C 2.7kW`, a cell
        a GPU in each strip (a marked GPU's cell reversed), then whose they are (`· job 4242 (alice) GPU0-3`).
        Where the line is too short for its owners, pieces give way in SUMMARY_GIVE_WAY's order before any is cut."""
        gpus = [g for g in self.gpus if not g.lost]
        names = {short_name(g.name) for g in self.gpus}
        pieces: dict[str, Text] = {}
        pieces["name"] = data(f"{len(self.gpus)}× {names.pop()}" if len(names) == 1 else f"{len(self.gpus)} GPUs",
                              "bold")
        pieces.update(remap_count(gpus))  # before the figures, which a short line cuts from the end
        utils = [g.util_percent for g in gpus if g.util_percent is not None]
        average = sum(utils) / len(utils) if utils else None
        pieces["util"] = Text(" util") + Text(pct(average, 5), style=level_style(average))
        pieces["util strip"] = Text(" ") + self._cells(lambda g: g.util_percent)
        used = [g.memory_used_bytes for g in gpus if g.memory_used_bytes is not None]
        total = [g.memory_total_bytes for g in gpus if g.memory_total_bytes]
        memory = f"{human_bytes(sum(used) if used else None, 0)}/{human_bytes(sum(total) if total else None, 0)}"
        pieces["mem"] = Text(f" mem {memory}")
        pieces["mem strip"] = Text(" ") + self._cells(
            lambda g: 100.0 * g.memory_used_bytes / g.memory_total_bytes
            if g.memory_used_bytes is not None and g.memory_total_bytes else None)
        temps = [g.temperature_c for g in gpus if g.temperature_c is not None]
        if temps:
            pieces["temperature"] = Text(f" {min(temps):.0f}-{max(temps):.0f}°C" if min(temps) != max(temps)
                                         else f" {temps[0]:.0f}°C", style=level_style(max(temps) + 10))
        power = [g.power_w for g in gpus if g.power_w is not None]
        if power:
            pieces["power"] = Text(f" {sum(power) / 1000:.1f}kW" if sum(power) >= 1000 else f" {sum(power):.0f}W")
        throttled = sum(1 for g in gpus if [r for r in g.throttle_reasons if r != "idle"])
        if throttled:
            pieces["throttled"] = Text(f" ⚠{throttled}", style=palette.WARN_STRONG)
        lost = len(self.gpus) - len(gpus)
        if lost:
            pieces["lost"] = Text(f" {lost} LOST", style=palette.CRIT_STRONG)
        spans = owner_spans(self.gpus)
        if spans:
            pieces["owners"] = _owner_piece(spans, users=True)
        for name in SUMMARY_GIVE_WAY if spans else ():  # without owners, the figures are cut as they always were
            if sum(piece.cell_len for piece in pieces.values()) <= width:
                break
            if name == "owner users" and spans:
                pieces["owners"] = _owner_piece(spans, users=False)
            else:
                pieces.pop(name, None)
        line = Text()
        for piece in pieces.values():
            line.append_text(piece)
        line.truncate(max(1, width), overflow="ellipsis")
        return line

    def _cell_lines(self, width: int) -> list[Text]:
        """A short cell a GPU, side by side: `GPU0  92% █████░ 9.9G/80G 73°C`, or `GPU0  92% 9.9G/80G job 4242` where
        a job, pod or container holds it."""
        per_line = max(1, width // CELL)
        out = []
        for start in range(0, len(self.gpus), per_line):
            line = Text()
            for gpu in self.gpus[start:start + per_line]:
                cell = Text(f"GPU{gpu.index}", style=palette.CRIT_STRONG if gpu.index in self.marked else "bold")
                cell.append_text(remap_mark(gpu, "!"))  # one character: the cell's figures keep their room
                if gpu.lost:
                    cell.append(" LOST", style=palette.CRIT_STRONG)
                else:
                    owners = gpu_owners(gpu)
                    cell.append(pct(gpu.util_percent, 5), style=level_style(gpu.util_percent))
                    mem_pct = (100.0 * gpu.memory_used_bytes / gpu.memory_total_bytes
                               if gpu.memory_total_bytes and gpu.memory_used_bytes is not None else None)
                    if not owners:  # an owned GPU's cell says whose it is in the room of the bar and temperature
                        cell.append(" ")
                        cell.append_text(bar(mem_pct, 6))
                    cell.append(f" {human_bytes(gpu.memory_used_bytes)}/{human_bytes(gpu.memory_total_bytes, 0)}")
                    if owners:
                        cell.append(" ")
                        cell.append_text(data(owners_label(owners, CELL - 2 - cell.cell_len), palette.TAG))
                    else:
                        cell.append(f" {_num(gpu.temperature_c, unit='°C')}",
                                    style=level_style(None if gpu.temperature_c is None else gpu.temperature_c + 10))
                    if [r for r in gpu.throttle_reasons if r != "idle"]:
                        cell.append("⚠", style=palette.WARN_STRONG)
                cell.truncate(CELL - 1, overflow="ellipsis")
                cell.append(" " * (CELL - cell.cell_len))
                line.append_text(cell)
            line.rstrip()
            out.append(line)
        return out

    def _cells(self, percent_of) -> Text:  # noqa: ANN001 - GpuSnapshot -> float | None
        cells = Text()
        for gpu in self.gpus:
            percent = None if gpu.lost else percent_of(gpu)
            char = "?" if percent is None else SPARK[min(len(SPARK) - 1, int(percent / 100 * len(SPARK)))]
            cells.append(char, style=level_style(percent) + (" reverse" if gpu.index in self.marked else ""))
        return cells

    def _series(self, key: str) -> tuple[float, ...]:
        return self.history.series(key) if self.history else ()

    def _block(self, gpu: GpuSnapshot, width: int) -> list[Text]:
        head = Text(f"GPU{gpu.index} ", style=palette.CRIT_STRONG if gpu.index in self.marked else "bold")
        head.append_text(data(short_name(gpu.name)[: 14 if self.mode == "dense" else 24], palette.INFO_STRONG))
        owners = gpu_owners(gpu)
        if owners:  # whose it is, next to its name: the first thing cut off a narrow line is the clocks
            head.append(" ")
            head.append_text(data(owners_label(owners, OWNER_WIDTH), palette.TAG))
        if gpu.lost:
            return [head + Text("  LOST: GPU fell off the bus or stopped answering (retrying)",
                                style=palette.CRIT_STRONG)]
        head.append_text(remap_mark(gpu))  # on the GPU's first line, before the figures a narrow line cuts
        mem_pct = (100.0 * gpu.memory_used_bytes / gpu.memory_total_bytes
                   if gpu.memory_total_bytes and gpu.memory_used_bytes is not None else None)
        temp = _num(gpu.temperature_c, unit="°C")
        head.append(f" {temp}", style=level_style(None if gpu.temperature_c is None else gpu.temperature_c + 10))
        head.append(f" {_num(gpu.power_w)}/{_num(gpu.power_limit_w, unit='W')}")
        mem_text = f" {human_bytes(gpu.memory_used_bytes)}/{human_bytes(gpu.memory_total_bytes, 0)}"
        if self.mode == "dense":
            bar_width = max(3, (width - head.cell_len - 22) // 2)
            line = head + Text(" ") + bar(gpu.util_percent, bar_width) + Text(pct(gpu.util_percent))
            line += Text(" ") + bar(mem_pct, bar_width) + Text(mem_text)
            reasons = [r for r in gpu.throttle_reasons if r != "idle"]
            if reasons:
                line.append(" ⚠", style=palette.WARN_STRONG)
            return [line]
        if self.mode == "compact" or width < WIDE_BLOCK - 10:
            bar_width = max(4, (width - 32) // 2)
            line = Text("  util ") + bar(gpu.util_percent, bar_width) + Text(pct(gpu.util_percent))
            line += Text(" mem ") + bar(mem_pct, bar_width) + Text(mem_text)
            head.append(f" SM {_num(gpu.sm_clock_mhz)}MHz")
            if gpu.index in self.numa_of:
                head.append(f" node {self.numa_of[gpu.index]}", style=palette.TAG)
            if self.mode == "wide":  # room for a third line, not for the wide layout
                return [head, line, self._details(gpu, width)]
            if gpu.throttle_reasons and gpu.throttle_reasons != ("idle",):
                head.append(" ⚠ " + ",".join(r for r in gpu.throttle_reasons if r != "idle"), style=palette.WARN_STRONG)
            return [head, line]
        head.append(f"  SM {_num(gpu.sm_clock_mhz)}/{_num(gpu.sm_clock_max_mhz)} MHz")
        head.append(f"  mem {_num(gpu.mem_clock_mhz)} MHz")
        head.append(f"  P{gpu.pstate}" if gpu.pstate is not None else "  P?")
        if gpu.index in self.numa_of:
            head.append(f"  node {self.numa_of[gpu.index]}", style=palette.TAG)
        if gpu.fan_percent is not None:
            head.append(f"  fan {gpu.fan_percent:.0f}%")
        spark = max(6, min(16, (width - 70) // 2))
        bar_width = max(6, (width - 2 * spark - 36) // 2)
        line2 = Text(" util ") + bar(gpu.util_percent, bar_width) + Text(pct(gpu.util_percent)) + Text(" ")
        line2 += sparkline(self._series(f"gpu{gpu.index}.util"), spark)
        line2 += Text("  mem ") + bar(mem_pct, bar_width) + Text(f"{mem_text:>12} ")
        line2 += sparkline(self._series(f"gpu{gpu.index}.mem"), spark)
        lines = [head, line2, self._details(gpu, width)]
        for instance in gpu.mig:
            lines.append(data(f"   └ MIG{instance.index} {instance.name or ''} "
                              f"{human_bytes(instance.memory_used_bytes)}/{human_bytes(instance.memory_total_bytes)}",
                              palette.TAG))
        return lines

    def _details(self, gpu: GpuSnapshot, width: int) -> Text:
        """PCIe link and throughput, throttle reasons, GPM activity, ECC, MIG: the third line of a block."""
        line3 = Text(" ")
        pcie = gpu.pcie
        if pcie is not None:
            link = f"PCIe {pcie.gen or '?'}x{pcie.width or '?'}"
            if pcie.below_max:
                link += f" (max {pcie.max_gen}x{pcie.max_width})"
            line3.append(link, style=palette.WARN if link_degraded(pcie, gpu.util_percent, self.thresholds) else "")
            line3.append(f" ↑{human_rate(pcie.tx_bytes_per_s)} ↓{human_rate(pcie.rx_bytes_per_s)}")
        reasons = [r for r in gpu.throttle_reasons if r != "idle"]
        if reasons:
            line3.append("  throttle: " + ", ".join(reasons), style=palette.WARN_ON_PANEL)
        if gpu.gpm is not None:
            g = gpu.gpm
            line3.append(f"  SM act {pct(g.sm_activity_percent, 0)} occ {pct(g.sm_occupancy_percent, 0)}"
                         f" tensor {pct(g.tensor_activity_percent, 0)} DRAM {pct(g.dram_bw_util_percent, 0)}",
                         style=palette.OK)
        elif gpu.gpm_status and width >= 120:
            line3.append_text(data(f"  GPM: {gpu.gpm_status}", palette.DIM))
        if gpu.ecc is not None and (gpu.ecc.volatile_uncorrected or gpu.ecc.volatile_corrected):
            line3.append(f"  ECC {gpu.ecc.volatile_corrected}/{gpu.ecc.volatile_uncorrected}",
                         style=palette.CRIT_STRONG)
        if gpu.mig_enabled:
            line3.append(f"  MIG {len(gpu.mig)} slices", style=palette.TAG)
        return line3


def remap_mark(gpu: GpuSnapshot, short: str | None = None) -> Text:
    """A GPU whose row remapper failed (critical: drain, reset, RMA) or waits for a reset to apply a remap (a
    warning: reset when the job allows), marked where its figures are (`short` in place of the words where there is
    no room); empty for any other GPU. The gpu-errors finding says the rest."""
    remap = gpu.row_remap
    if remap is not None and remap.failed:
        return Text(short or " REMAP FAILED", style=palette.CRIT_STRONG)
    if remap is not None and remap.pending:
        return Text(short or " RESET: remap pending", style=palette.WARN_STRONG)
    return Text()


def remap_count(gpus: list[GpuSnapshot]) -> dict[str, Text]:
    """The summary line's piece: the GPUs with a failed or pending remap (`REMAP GPU2,6`; critical where one failed)."""
    marks = {g.index: remap_mark(g) for g in gpus}
    marked = [index for index, mark in marks.items() if mark.plain]
    if not marked:
        return {}
    failed = any(mark.style == palette.CRIT_STRONG for mark in marks.values())
    return {"remap": Text(f" REMAP GPU{gpu_numbers(marked)}",
                          style=palette.CRIT_STRONG if failed else palette.WARN_STRONG)}


# What the summary line gives up first when it is too short; whose the GPUs are goes after every figure but the
# name, utilisation and memory, and keeps its jobs after its users.
SUMMARY_GIVE_WAY = ("mem strip", "util strip", "power", "temperature", "owner users")
OWNER_WIDTH = 28  # `job 4242 (alice)`, `research/bert-7f9`; two owners of one GPU are cut to `... +1`


def gpu_owners(gpu: GpuSnapshot) -> tuple[Owner, ...]:
    """The Slurm jobs, pods or containers of the GPU's processes, each once."""
    return distinct([p.owner for p in gpu.processes])


def owner_spans(gpus: tuple[GpuSnapshot, ...]) -> list[tuple[Owner, list[int]]]:
    """Each owner and the GPUs it holds, in GPU order: what the summary line says after the figures."""
    spans: list[tuple[Owner, list[int]]] = []
    for gpu in gpus:
        for owner in gpu_owners(gpu):
            found = next((span for span in spans if span[0].same(owner)), None)
            if found is None:
                spans.append((owner, [gpu.index]))
            else:
                found[1].append(gpu.index)
    return spans


def _owner_piece(spans: list[tuple[Owner, list[int]]], users: bool) -> Text:
    piece = Text(" ·")
    for position, (owner, indices) in enumerate(spans):
        label = owners_label((owner,)) if users else owner.label
        piece.append_text(data(f"{',' if position else ''} {label} GPU{gpu_numbers(indices)}", palette.TAG))
    return piece


def gpu_numbers(indices: list[int]) -> str:
    """0-3 for a run, 0,2,5 otherwise: how nvidia-smi -i and CUDA_VISIBLE_DEVICES list GPUs."""
    ordered = sorted(set(indices))
    if len(ordered) >= 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(map(str, ordered))


def _no_gpu_lines(system: GpuSystem | None, width: int) -> list[str]:
    message = system.message if system and system.message else "no GPU"
    return textwrap.wrap(f"No GPU shown: {message}", max(20, width)) or [""]


def mode_lines(gpus: tuple[GpuSnapshot, ...], width: int) -> tuple[int, int, int, int, int]:
    """Lines the GPUs take at three lines a GPU (side by side where wide, MIG slices under theirs), two, one, a
    cell each side by side, and in the summary."""
    count = len(gpus)
    columns = 1 if count == 1 else max(1, width // WIDE_BLOCK)
    block_width = width // columns
    full = block_width >= WIDE_BLOCK - 10  # the three-line block with its MIG lines; else three short lines
    wide = sum(max(3 + (len(g.mig) if full else 0) for g in gpus[start:start + columns])
               for start in range(0, count, columns))
    cells = -(-count // max(1, width // CELL))
    return wide, 2 * count, count, cells if count > 1 else count, 1 if count > 1 else count
