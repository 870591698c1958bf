"""The workload panel: the embedded job's state, per-rank step time and throughput with history, data-wait
fraction, memory, and the last event (or why it crashed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from hwtop.widgets import palette
from hwtop.widgets.format import NA, human_bytes, sparkline
from hwtop.widgets.panel import TextPanel
from hwtop.widgets.safe_text import data

if TYPE_CHECKING:
    from hwtop.model.workload import WorkloadState

STATUS_STYLE = {"running": palette.OK_STRONG, "starting": palette.WARN, "stalled": palette.WARN_STRONG,
                "finished": palette.INFO, "crashed": palette.CRIT_STRONG, "stopped": palette.DIM}


class WorkloadPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.state: WorkloadState | None = None
        self.border_title = "Workload"

    def show(self, state: WorkloadState | None) -> None:
        self.state = state
        self.display = state is not None
        if state is not None:
            self.set_title(data(f"Workload · {state.scenario} · x stop"))
        if not self.same_as_shown(state):
            self.changed()

    def lines(self, width: int) -> list[Text]:
        state = self.state
        if state is None:
            return [Text("no workload (w starts one)", style=palette.DIM)]
        head = Text(state.status.upper(), style=STATUS_STYLE.get(state.status, ""))
        if state.exit_code is not None:
            head.append(f" exit {state.exit_code}")
        if state.last_event:
            head.append_text(data(f"  last: {state.last_event}"[: max(0, width - head.cell_len)], palette.DIM))
        out = [head]
        summary = state.summary
        if summary is not None and summary.speedup is not None:
            saving = summary.memory_saving_fraction
            out.append(data(f"AMP: {summary.speedup:.2f}x throughput, "
                            f"{'N/A' if saving is None else f'{100 * saving:.1f}%'} less "
                            f"{summary.memory_metric or 'memory'}", palette.OK))
        spark = max(0, min(20, (width - 86) // 2))
        for rank in state.ranks:
            wait = rank.data_wait_fraction
            memory = rank.cuda_allocated_bytes if rank.cuda_allocated_bytes is not None else rank.rss_bytes
            line = Text(f"rank {rank.rank} ", style="bold")
            line.append(f"step {rank.step if rank.step is not None else NA:>5} ")
            line.append(f"{NA if rank.step_time_s is None else f'{rank.step_time_s * 1000:7.1f} ms'} ")
            if spark:
                line.append_text(sparkline(rank.step_times, spark, high=max(rank.step_times or (1.0,))))
            line.append(f" {NA if rank.samples_per_s is None else f'{rank.samples_per_s:8.1f}'} samples/s ")
            if spark:
                line.append_text(sparkline(rank.throughput, spark, high=max(rank.throughput or (1.0,))))
            line.append(f" wait {NA if wait is None else f'{100 * wait:3.0f}%'}",
                        style=palette.CRIT_STRONG if wait is not None and wait > 0.5 else "")
            line.append(f" loss {NA if rank.loss is None else f'{rank.loss:.3f}'} {rank.amp or ''}")
            line.append(f" mem {human_bytes(memory)}")
            line.truncate(max(1, width), overflow="ellipsis")  # one row per rank, never wrapped
            out.append(line)
        for tail in state.stderr_tail:
            out.append(data(tail[:width], palette.CRIT))  # the job's own stderr
        if state.garbage_lines:
            out.append(Text(f"{state.garbage_lines} unreadable telemetry line(s) skipped", style=palette.WARN))
        return out
