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
from tui.workload_dialog import WorkloadDialog
from widgets.cpu import CpuPanel
from widgets.disks import DisksPanel
from widgets.gpu import GpuPanel
from widgets.header import HeaderBar
from widgets.memory import MemoryPanel
from widgets.processes import ProcessTable
from widgets.workload import WorkloadPanel


class HwtopApp(App[None]):
    CSS_PATH = "hwtop.tcss"
    TITLE = "hwtop"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("t", "topology", "Topology"),
        Binding("w", "start_workload", "Workload"),
        Binding("x", "stop_workload", "Stop job", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(self, source: SnapshotSource, interval: float = 1.0, workload_args: list[str] | None = None,
                 exit_on_signals: bool = False) -> None:
        super().__init__()
        self.source = source
        self.interval = interval
        self.paused = False
        self.snapshot: Snapshot | None = None
        self.ticks = 0
        self.first_frame = asyncio.Event()
        self.topology_screen = TopologyScreen()
        self.workload_args = workload_args
        self.exit_on_signals = exit_on_signals

    def compose(self) -> ComposeResult:
        # Kept as attributes: the main screen's widgets, whichever screen (help, a dialog) is on top.
        self.header, self.cpu_panel = HeaderBar(id="header"), CpuPanel(id="cpu")
        self.disks_panel = DisksPanel(id="disks")
        self.memory_panel, self.gpu_panel = MemoryPanel(id="memory"), GpuPanel(id="gpu")
        self.process_table = ProcessTable(id="processes")
        self.workload_panel = WorkloadPanel(id="workload")
        self.workload_panel.display = False
        yield self.header
        self.top = Horizontal(id="top")
        with self.top:
            with Vertical(id="left"):
                yield self.cpu_panel
                yield self.disks_panel
            yield self.memory_panel
        yield self.gpu_panel
        yield self.workload_panel
        yield self.process_table
        yield Footer()

    def on_mount(self) -> None:
        if self.exit_on_signals:
            # SIGTERM and SIGHUP (an SSH drop) end the app like q: terminal restored, the job's group stopped.
            # Through the event loop, never a raw signal handler that could interrupt a held lock.
            import signal

            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self.exit)
        if self.workload_args is not None:
            self.start_workload(self.workload_args)
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
        self.workload_panel.show(snapshot.workload)
        self.process_table.show(snapshot.processes, gpus,
                                marked=set(snapshot.workload.pids) if snapshot.workload else None)
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

    def action_start_workload(self) -> None:
        if not hasattr(self.source, "workload"):
            self.notify("this source cannot run a workload (replay or test source)", severity="warning")
            return
        current = self.source.workload  # type: ignore[attr-defined]
        if current is not None and current.job.process.poll() is None:
            self.notify("a workload is running: x stops it first", severity="warning")
            return
        device = "cuda" if self.snapshot is not None and self.snapshot.gpus else "cpu"
        self.push_screen(WorkloadDialog(device), self._workload_chosen)

    def _workload_chosen(self, args: list[str] | None) -> None:
        if args is not None:
            self.start_workload(args)

    def start_workload(self, args: list[str]) -> None:
        from workload.launcher import torch_missing
        from workload.monitor import WorkloadMonitor  # lazy: no cost until a job is started

        missing = torch_missing()
        if missing:
            self.notify(missing, severity="error", timeout=10)
            return
        self.source.workload = WorkloadMonitor(args)  # type: ignore[attr-defined]
        self.notify(f"workload started: {' '.join(args)}")

    def action_stop_workload(self) -> None:
        monitor = getattr(self.source, "workload", None)
        if monitor is None:
            self.notify("no workload running")
            return
        monitor.stop()
        self.notify("workload stopped: its whole process group was terminated")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        self.source.close()
