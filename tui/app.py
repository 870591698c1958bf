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
from tui.topology_screen import TopologyScreen
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
        Binding("t", "topology", "Topology"),
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
        self.topology_screen = TopologyScreen()

    def compose(self) -> ComposeResult:
        # Kept as attributes: the main screen's widgets, whichever screen (help, a dialog) is on top.
        self.header, self.cpu_panel = HeaderBar(id="header"), CpuPanel(id="cpu")
        self.disks_panel = DisksPanel(id="disks")
        self.memory_panel, self.gpu_panel = MemoryPanel(id="memory"), GpuPanel(id="gpu")
        self.process_table = ProcessTable(id="processes")
        yield self.header
        self.top = Horizontal(id="top")
        with self.top:
            with Vertical(id="left"):
                yield self.cpu_panel
                yield self.disks_panel
            yield self.memory_panel
        yield self.gpu_panel
        yield self.process_table
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self._poll(), name="sampler", exclusive=True)

    async def _poll(self) -> None:
        """Ticks never overlap: the next sample starts only after the last one was shown.
        The second tick comes early, since rates (CPU %, throughput) need two samples to exist."""
        while True:
            started = time.monotonic()
            if not self.paused:
                snapshot = await asyncio.to_thread(self.source.sample)
                self.show(snapshot)
            wait = min(self.interval, 0.25) if self.ticks == 1 else self.interval
            await asyncio.sleep(max(0.02, wait - (time.monotonic() - started)))

    def show(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.ticks += 1
        if self.screen is self.topology_screen:  # no work for hidden screens: only the visible one renders
            self.topology_screen.show(snapshot, self.interval, self.paused)
            self.first_frame.set()
            return
        history = self.source.history
        height = self.size.height
        gpus = snapshot.gpus
        self.screen_stack[0].set_class(self.size.width < 100, "narrow")
        self.header.show(snapshot, self.interval, self.paused)
        self.cpu_panel.show(snapshot.cpu, snapshot.numa, history.series("cpu"))
        self.memory_panel.show(snapshot.memory, snapshot.numa, history.series("mem"))
        self.disks_panel.show(snapshot.disks)
        # The GPU panel may take what the other panels leave, keeping some rows for the process table.
        top = self.top.outer_size.height or 7
        budget = max(1, height - 1 - top - 1 - 2 - 7)
        numa_of = {}
        if snapshot.topology is not None:
            numa_of = {int(d.name[3:]): d.numa_node for d in snapshot.topology.devices
                       if d.kind == "gpu" and d.numa_node is not None and d.name[3:].isdigit()}
        self.gpu_panel.show(snapshot.gpu_system, gpus, history, max_lines=budget, numa_of=numa_of)
        self.process_table.show(snapshot.processes, gpus)
        self.first_frame.set()

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if self.snapshot is not None:
            self.header.show(self.snapshot, self.interval, self.paused)

    def action_cycle_sort(self) -> None:
        table = self.process_table
        table.cycle_sort()
        if self.snapshot is not None:
            table.show(self.snapshot.processes, self.snapshot.gpus)

    def action_topology(self) -> None:
        self.push_screen(self.topology_screen)
        if self.snapshot is not None:
            self.topology_screen.show(self.snapshot, self.interval, self.paused)

    def action_refresh_topology(self) -> None:
        """Re-read the layout (a GPU or NIC added, a link retrained) at the next tick."""
        refresh = getattr(self.source, "refresh_topology", None)
        if refresh is not None:
            refresh()
            self.notify("topology will be re-read at the next tick")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        self.source.close()
