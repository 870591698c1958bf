"""The main screen's row budget, in one pure function: the terminal's size and what is shown in, the rows each
panel may take out. The stylesheet (hwtop.tcss) places the panels; this says how tall the ones that can give way
may be, so the process table keeps its rows."""

from __future__ import annotations

from hwtop.model.record import Record

BARS = 2  # the header and the footer
FRAME = 2  # a panel's border, top and bottom
PROCESS_ROWS = 4  # the process table's least, counted against the CPU panel
USEFUL_PROCESS_ROWS = 7  # the process table's least, counted against the GPU panel: a header and a few rows
GPU_LEAST = 3  # the GPU panel's least beside the CPU panel's budget
TOP_UNMEASURED = 7  # the CPU/memory row's height before the first layout measured it
ADVICE_SHARE = 0.6  # the most of the screen the advice pane takes (as its max-height in hwtop.tcss)


class Shown(Record, frozen=True):
    """What the main screen shows at this tick, in rows of content (borders not counted)."""

    width: int
    height: int
    workload_lines: int | None = None  # the workload pane's lines; None: no workload, no pane
    advice_lines: int = 1  # the advice pane's lines ("no problems seen" is one)
    advice_framed: bool = False  # findings shown in the pane (it has a border then)
    disks: int = 0
    job: bool = False  # a focused job: shown on its own screen (j), it takes no row here
    top_rows: int = 0  # the CPU/memory row's height as last laid out; 0 before the first layout


class Rows(Record, frozen=True):
    """Rows each panel may take, borders included except where said."""

    workload: int
    advice: int
    disks: int
    cpu_lines: int  # the CPU panel's content lines: past them its cores fold into a heat strip
    gpu_lines: int  # the GPU panel's content lines: it picks the densest layout that fits them


def rows(shown: Shown) -> Rows:
    """The header and footer a row each, the process table its least, the workload and advice panes what they
    need; the CPU panel gets what is left beside a GPU panel of GPU_LEAST rows (past it, a heat strip), and the
    GPU panel what the CPU/memory row leaves."""
    height = shown.height
    workload = shown.workload_lines + FRAME if shown.workload_lines is not None else 0
    advice = min(shown.advice_lines, int(height * ADVICE_SHARE)) + (FRAME if shown.advice_framed else 0)
    disks = max(1, shown.disks) + FRAME
    cpu_lines = max(2, height - BARS - PROCESS_ROWS - workload - advice - GPU_LEAST - FRAME - disks)
    top = shown.top_rows or TOP_UNMEASURED
    gpu_lines = max(1, height - BARS - USEFUL_PROCESS_ROWS - top - FRAME - workload - advice)
    return Rows(workload=workload, advice=advice, disks=disks, cpu_lines=cpu_lines, gpu_lines=gpu_lines)
