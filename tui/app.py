"""The hwtop App: polls a snapshot source on a worker thread, one tick at a time, and hands each
snapshot to the widgets. The source is injected (Sampler live, demo, or a test's scripted source)."""

from __future__ import annotations

import asyncio
import time

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from probes.model import Snapshot
from probes.sampler import SnapshotSource
from tui.help import HelpScreen
from widgets.cpu import CpuPanel
from widgets.disks import DisksPanel
from widgets.gpu import GpuPanel
from widgets.header import HeaderBar
from widgets.memory import MemoryPanel
from widgets.processes import ProcessTable


class HwtopApp(App[None]):
    CSS_PATH = "hwtop.tcss"
    TITLE = "hwtop"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(self, source: SnapshotSource, interval: float = 1.0) -> None:
        super().__init__()
        self.source = source
        self.interval = interval
        self.paused = False
        self.snapshot: Snapshot | None = None
        self.ticks = 0
        self.first_frame = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield CpuPanel(id="cpu")
                yield DisksPanel(id="disks")
            yield MemoryPanel(id="memory")
        yield GpuPanel(id="gpu")
        yield ProcessTable(id="processes")
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self._poll(), name="sampler", exclusive=True)

    async def _poll(self) -> None:
        """Ticks never overlap: the next sample starts only after the last one was shown."""
        while True:
            started = time.monotonic()
            if not self.paused:
                snapshot = await asyncio.to_thread(self.source.sample)
                self.show(snapshot)
            await asyncio.sleep(max(0.02, self.interval - (time.monotonic() - started)))

    def show(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.ticks += 1
        history = self.source.history
        height = self.size.height
        gpus = snapshot.gpus
        self.screen.set_class(self.size.width < 100, "narrow")
        self.query_one(HeaderBar).show(snapshot, self.interval, self.paused)
        self.query_one(CpuPanel).show(snapshot.cpu, snapshot.numa, history.series("cpu"))
        self.query_one(MemoryPanel).show(snapshot.memory, snapshot.numa, history.series("mem"))
        self.query_one(DisksPanel).show(snapshot.disks)
        compact = len(gpus) * 3 > max(6, height // 2) or self.size.width < 100
        self.query_one(GpuPanel).show(snapshot.gpu_system, gpus, history, compact=compact)
        self.query_one(ProcessTable).show(snapshot.processes, gpus)
        self.first_frame.set()

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if self.snapshot is not None:
            self.query_one(HeaderBar).show(self.snapshot, self.interval, self.paused)

    def action_cycle_sort(self) -> None:
        table = self.query_one(ProcessTable)
        table.cycle_sort()
        if self.snapshot is not None:
            table.show(self.snapshot.processes, self.snapshot.gpus)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        self.source.close()
