"""The hwtop App: polls a snapshot source on a worker thread, one tick at a time, and hands each
snapshot to the widgets. The source is injected (Sampler live, demo, or a test's scripted source)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen

from hwtop.advice.thresholds import Thresholds
from hwtop.model.frame import Frame
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session, SnapshotSource
from hwtop.tui.guarded_app import GuardedApp
from hwtop.widgets import keys
from hwtop.widgets.advice import AdvicePanel
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.disks import DisksPanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.processes import ProcessTable
from hwtop.widgets.workload import WorkloadPanel

if TYPE_CHECKING:
    from textual.widgets import Input

    from hwtop.model.job import JobSnapshot
    from hwtop.tui.advice_screen import AdviceScreen
    from hwtop.tui.topology_screen import TopologyScreen

SHORT_TERMINAL = 32  # rows: below this an open finding gets its own screen
EXIT_GRACE_S = 10.0  # after SIGTERM/SIGHUP, the most a shutdown may take before the watchdog ends the process
DEMO_PIDS = "a demo machine's processes are simulated: there is nothing to signal or focus (try a --scenario story)"
DEMO_JOB_VIEW = "a demo machine has no job to focus: its story's job is in the workload pane"
DEMO_JOB = "a demo machine runs its story's job, not a real one: --scenario picks the story"
PALETTE = keys.palette_commands()  # (title, help, action): what ctrl+p lists, from widgets/keys.py


class HwtopApp(GuardedApp[None]):  # GuardedApp: plain-text notifications; run() raises a crash, terminal restored
    CSS_PATH = "hwtop.tcss"
    AUTO_FOCUS = "ProcessTable"  # the advice pane takes focus only when asked (a, tab, a click)
    TITLE = "hwtop"
    BINDINGS = keys.bindings(keys.MAIN)
    REPLAY_ACTIONS = {"replay_step", "replay_seek", "replay_speed"}

    def __init__(self, source: SnapshotSource, interval: float = 1.0, workload_args: list[str] | None = None,
                 exit_on_signals: bool = False, thresholds: Thresholds | None = None,
                 open_job: bool = False, theme: str = "dark", hide: tuple[str, ...] = ()) -> None:
        super().__init__()
        from hwtop.session.config import THEMES

        self.theme = THEMES.get(theme, "textual-dark")
        if theme == "mono" and not self.no_color:  # as NO_COLOR does, without touching the environment
            from textual.filter import Monochrome, NoColor

            self.no_color = True
            self._filters.append(NoColor() if self.native_ansi_color else Monochrome())
        self.hidden_panels = set(hide)
        self.session = Session(source, thresholds)  # probes → snapshot → advice, one tick at a time
        self.source = source
        self.frame: Frame | None = None
        self.interval = interval
        self.paused = False
        self.snapshot: Snapshot | None = None
        self.ticks = 0
        self.first_frame = asyncio.Event()
        self.ticked_before_run: Frame | None = None  # see tick_before_run
        self.topology_screen: TopologyScreen | None = None  # made on first use (t): not on the first frame's path
        self.filter_input: Input | None = None  # made on first use (/, a click on a GPU), as the topology screen
        self._filter_mount: asyncio.Future[Input] | None = None
        self.advice_screen: AdviceScreen | None = None  # the last one opened; shown to while it is on top
        self.workload_args = workload_args
        self.exit_on_signals = exit_on_signals
        self.replaying = hasattr(source, "seek")
        self.open_job = open_job  # --pid / --job: start on the job's screen
        self.job_screen = None  # a JobScreen once one is opened
        self.recorder = None  # a probes.recording.Recorder while R records
        self._record_lock = threading.Lock()  # the worker thread writes, the key closes

    def compose(self) -> ComposeResult:
        # Kept as attributes: the main screen's widgets, whichever screen (help, a dialog) is on top.
        self.header, self.cpu_panel = HeaderBar(id="header"), CpuPanel(id="cpu")
        self.disks_panel = DisksPanel(id="disks")
        self.memory_panel, self.gpu_panel = MemoryPanel(id="memory"), GpuPanel(id="gpu")
        self.process_table = ProcessTable(id="processes")
        self.workload_panel = WorkloadPanel(id="workload")
        self.workload_panel.display = False
        self.advice_panel = AdvicePanel(id="advice", classes="empty")  # as the first show finds it, mostly: no restyle
        yield self.header
        self.top = Horizontal(id="top")
        with self.top:
            with Vertical(id="left"):
                yield self.cpu_panel
                yield self.disks_panel
            yield self.memory_panel
        yield self.gpu_panel
        yield self.workload_panel
        yield self.advice_panel
        yield self.process_table
        self.footer = KeyBar()
        yield self.footer

    def on_mount(self) -> None:
        panels = {"cpu": self.cpu_panel, "memory": self.memory_panel, "disks": self.disks_panel,
                  "gpu": self.gpu_panel, "advice": self.advice_panel, "processes": self.process_table}
        for name in self.hidden_panels:
            panels[name].display = False
        if self.exit_on_signals:
            # SIGTERM and SIGHUP (an SSH drop) end the app like q: terminal restored, the job's group stopped.
            # Through the event loop, never a raw signal handler that could interrupt a held lock.
            import signal

            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._signalled)
        if self.workload_args is not None:
            self.start_workload(self.workload_args)
        ticked = self.ticked_before_run
        if ticked is not None:
            self.show(ticked)  # drawn in the first frame, which is then never a frame of empty panels
        if self.open_job:
            self.action_job()
        self.run_worker(self._poll(first_wait=self.interval if ticked is not None else 0.0), name="sampler",
                        exclusive=True)

    def tick_before_run(self) -> None:
        """The first tick, taken before run() (the command line's first sample was taken before Textual was
        imported): the first frame draws it at once, with rates, instead of a frame of empty panels followed by a
        tick on the worker thread that contends with that frame's rendering."""
        self.ticked_before_run = self.session.tick()

    def _signalled(self) -> None:
        """Exit as q does; and should the shutdown itself hang (once seen after a pty vanished under a tmux
        kill-session, not reproduced since), a watchdog stops the job's group and ends the process."""
        self.exit()
        watchdog = threading.Timer(EXIT_GRACE_S, self._force_exit)
        watchdog.daemon = True
        watchdog.start()

    def _force_exit(self) -> None:
        import os

        monitor = getattr(self.source, "workload", None)
        if monitor is not None:
            try:
                monitor.stop()
            except Exception:  # noqa: BLE001 - last resort: the exit must happen regardless
                pass
        os._exit(129)

    async def _poll(self, first_wait: float = 0.0) -> None:
        """Ticks never overlap: the next sample starts only after the last one was shown.
        The second tick comes early, since rates (CPU %, throughput) need two samples to exist; after a tick
        taken before run (with rates already), the first waits `first_wait`."""
        await asyncio.sleep(first_wait)
        while True:
            started = time.monotonic()
            if not self.paused:
                frame = await asyncio.to_thread(self._tick)
                if not self.is_running:  # the app began shutting down during the tick: its screens may be gone
                    return
                self.show(frame)
            wait = min(self.interval, 0.25) if self.ticks == 1 else self.interval
            await asyncio.sleep(max(0.02, wait - (time.monotonic() - started)))

    def _tick(self) -> Frame:
        """On the worker thread: the session's tick (probes → snapshot → advice), then the recording, if one is
        being written."""
        frame = self.session.tick()
        failed: str | None = None
        with self._record_lock:
            recorder = self.recorder
            if recorder is not None:
                from hwtop.recording.store import RecordingError

                try:
                    recorder.write(frame)
                except RecordingError as error:
                    self.recorder = None
                    failed = str(error)
        if failed is not None:  # outside the lock: the main thread may be waiting for it (on_unmount)
            self.call_from_thread(self.notify, failed, severity="error", timeout=10)
        return frame

    def _replay_state(self) -> str | None:
        if not self.replaying:
            return None
        source = self.source
        state = f"REPLAY {source.speed:g}x {_clock(source.position_s)}/{_clock(source.length_s)}"  # type: ignore
        return state + (" END" if source.at_end else "")  # type: ignore[attr-defined]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.REPLAY_ACTIONS and not self.replaying:
            return False  # hidden and inert outside a replay
        if action in ("start_workload", "stop_workload", "record", "focus_process", "signal_process") and \
                self.replaying:
            return False
        return True

    def action_replay_step(self, ticks: int) -> None:
        self.paused = True  # stepping is frame by frame
        self.show(self.session.advance(lambda: self.source.step(ticks)))  # type: ignore[attr-defined]

    def action_replay_seek(self, seconds: float) -> None:
        self.show(self.session.advance(lambda: self.source.seek(seconds)))  # type: ignore[attr-defined]

    def action_replay_speed(self, factor: float) -> None:
        self.source.set_speed(self.source.speed * factor)  # type: ignore[attr-defined]
        if self.frame is not None:
            self.show(self.frame)

    def action_record(self) -> None:
        """R starts writing every tick to hwtop-HOST-TIME.jsonl.gz here, R again stops (hwtop replay FILE)."""
        from hwtop.recording.store import Recorder, RecordingError

        if self.recorder is not None:
            with self._record_lock:
                recorder, self.recorder = self.recorder, None
                recorder.close(quiet=True)
            self.notify(f"recording stopped: {recorder.count} ticks in {recorder.path}")
            return
        host = self.snapshot.host.hostname if self.snapshot and self.snapshot.host else "host"
        path = f"hwtop-{host}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"
        try:
            self.recorder = Recorder(path, self.interval, host)
        except RecordingError as error:
            self.notify(str(error), severity="error", timeout=10)
            return
        self.notify(f"recording every tick to {path} (R stops)")

    def show(self, frame: Frame) -> None:
        self.frame, self.snapshot = frame, frame.snapshot
        snapshot = frame.snapshot
        watching, rule_errors = self.session.watching, dict(frame.rule_errors)
        self.ticks += 1
        if self.topology_screen is not None and self.screen is self.topology_screen:
            self.topology_screen.show(snapshot, self.interval, self.paused)  # hidden screens get no work
            self.first_frame.set()
            return
        if self.job_screen is not None and self.screen is self.job_screen:
            self.job_screen.show(snapshot, self.source.history, self.interval, self.paused)
            self.first_frame.set()
            return
        if self.advice_screen is not None and self.screen is self.advice_screen:
            self.advice_screen.show(frame.findings, snapshot.time, watching, rule_errors, frame.timeline)
        history = self.source.history
        height = self.size.height
        gpus = snapshot.gpus
        self.screen_stack[0].set_class(self.size.width < 100, "narrow")
        self.header.show(snapshot, self.interval, self.paused, self._replay_state(),
                         self.recorder.path if self.recorder is not None else None)
        self.memory_panel.show(snapshot.memory, snapshot.numa, history.series("mem"))
        self.disks_panel.show(snapshot.disks)
        self.workload_panel.show(snapshot.workload)
        findings = frame.findings
        self.advice_panel.inline = height >= SHORT_TERMINAL
        # A short terminal: a headline per cause, three at most (the row budget's to decide: ui-layout's rule).
        self.advice_panel.rows = None if self.advice_panel.inline else min(3, max(1, len(findings)))
        self.advice_panel.show(findings, snapshot.time, watching, rule_errors, frame.timeline)
        serious = [f for f in frame.serious if not f.clearing(snapshot.time)]  # a GPU that recovered is not red
        marked_gpus = {i for f in serious for i in f.gpus}
        marked_cores = {c for f in serious for c in f.cores}
        # Rows: header and footer 1 each, the process table at least 4, the workload and advice panes what
        # they need; the CPU panel gets what is left beside a 3-row GPU panel (past it, a heat strip), and the
        # GPU panel what the CPU panel leaves.
        inner = max(1, self.size.width - 4)
        # cached_lines: the same lines the panels then draw at this width, built once
        workload_rows = len(self.workload_panel.cached_lines(inner)) + 2 if snapshot.workload is not None else 0
        advice_rows = min(len(self.advice_panel.cached_lines(inner)), int(height * 0.6)) + \
            (2 if findings and self.advice_panel.inline else 0)
        disks_rows = max(1, len(snapshot.disks)) + 2
        cpu_budget = height - 2 - 4 - workload_rows - advice_rows - 3 - 2 - disks_rows
        self.cpu_panel.show(snapshot.cpu, snapshot.numa, history.series("cpu"), marked=marked_cores,
                            max_lines=max(2, cpu_budget))
        top = self.top.outer_size.height or 7
        budget = max(1, height - 2 - 7 - top - 2 - workload_rows - advice_rows)  # 7: a useful process table
        numa_of = snapshot.topology.gpu_numa_nodes() if snapshot.topology is not None else {}
        self.gpu_panel.show(snapshot.gpu_system, gpus, history, max_lines=budget, numa_of=numa_of,
                            marked=marked_gpus)
        self.process_table.show(snapshot.processes, gpus,
                                marked=set(snapshot.workload.pids) if snapshot.workload else None)
        self.first_frame.set()

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if self.snapshot is not None:
            self.header.show(self.snapshot, self.interval, self.paused, self._replay_state(),
                             self.recorder.path if self.recorder is not None else None)

    def action_cycle_sort(self) -> None:
        self.process_table.cycle_sort()
        self.process_table.redraw()  # the last data, the job's marks kept

    def action_reverse_sort(self) -> None:
        self.process_table.reverse_sort()
        self.process_table.redraw()

    def _bring_up(self, screen: Screen[None]) -> None:
        """Show an installed screen: back down to it when it is already open under another (j, t, j, t… would
        otherwise stack it again and again, one escape each), else push it."""
        if self.screen is screen:
            return
        if screen in self.screen_stack:
            while self.screen is not screen:
                self.pop_screen()
        else:
            self.push_screen(screen)

    def action_topology(self) -> None:
        if self.topology_screen is None:
            from hwtop.tui.topology_screen import TopologyScreen

            self.topology_screen = TopologyScreen()
            # Installed: kept when popped, so t or j opens them again (a popped screen that is not installed is
            # removed, and pushing it once more showed nothing: j after leaving the job view looked frozen).
            self.install_screen(self.topology_screen, name="topology")
        self._bring_up(self.topology_screen)
        if self.snapshot is not None:
            self.topology_screen.show(self.snapshot, self.interval, self.paused)

    def action_refresh_topology(self) -> None:
        """Re-read the layout (a GPU or NIC added, a link retrained) at the next tick."""
        refresh = getattr(self.source, "refresh_topology", None)
        if refresh is not None:
            refresh()
            self.notify("topology will be re-read at the next tick")

    def action_start_workload(self) -> None:
        if self._simulated:
            self.notify(DEMO_JOB, severity="warning")
            return
        if not hasattr(self.source, "workload"):
            self.notify("this source cannot run a workload (replay or test source)", severity="warning")
            return
        current = self.source.workload  # type: ignore[attr-defined]
        if current is not None and current.job.process.poll() is None:
            self.notify("a workload is running: x stops it first", severity="warning")
            return
        device = "cuda" if self.snapshot is not None and self.snapshot.gpus else "cpu"
        from hwtop.tui.workload_dialog import WorkloadDialog

        self.push_screen(WorkloadDialog(device), self._workload_chosen)

    def _workload_chosen(self, args: list[str] | None) -> None:
        if args is not None:
            self.start_workload(args)

    def start_workload(self, args: list[str]) -> None:
        from hwtop.workload.launcher import torch_missing
        from hwtop.workload.monitor import WorkloadMonitor  # lazy: no cost until a job is started

        missing = torch_missing()
        if missing:
            self.notify(missing, severity="error", timeout=10)
            return
        self.source.workload = WorkloadMonitor(args)  # type: ignore[attr-defined]
        self.notify(f"workload started: {' '.join(args)}")

    def action_stop_workload(self) -> None:
        if self._simulated:
            self.notify(DEMO_JOB, severity="warning")
            return
        monitor = getattr(self.source, "workload", None)
        if monitor is None:
            self.notify("no workload running")
            return
        monitor.stop()
        self.notify("workload stopped: its whole process group was terminated")

    def action_advice(self) -> None:
        """Focus the advice pane and open (or close) its selected finding; on a short terminal, where an open
        finding would push the panels off screen, and at a second `a`, every finding opens on a screen of its own,
        with the timeline of what was raised and cleared when."""
        panel = self.advice_panel
        if self.screen is not self.screen_stack[0]:
            return
        if self.size.height < SHORT_TERMINAL and self.frame is not None and self.frame.findings or panel.has_focus:
            self.open_advice_screen()  # a second `a`: every finding, and the timeline of what changed when
            return
        panel.focus()
        panel.action_toggle_finding()

    def on_advice_panel_details_wanted(self, _message: AdvicePanel.DetailsWanted) -> None:
        self.open_advice_screen()

    def open_advice_screen(self) -> None:
        from hwtop.tui.advice_screen import AdviceScreen

        screen = self.advice_screen = AdviceScreen()
        self.push_screen(screen)
        frame = self.frame
        screen.show(frame.findings if frame else (), frame.time if frame else None, self.session.watching,
                    dict(frame.rule_errors) if frame else {}, frame.timeline if frame else ())

    def action_job(self) -> None:
        """The focused job's screen; without a focused job, say how to focus one."""
        from hwtop.tui.job_screen import JobScreen

        if self.snapshot is not None and self.snapshot.job is None and getattr(self.source, "job", None) is None:
            self.notify(DEMO_JOB_VIEW if self._simulated else
                        "no job focused: select a process and press f, or start hwtop --pid PID / --job PATTERN")
            return
        if self.job_screen is None:
            self.job_screen = JobScreen()
            self.install_screen(self.job_screen, name="job")
        self._bring_up(self.job_screen)
        if self.snapshot is not None:
            self.job_screen.show(self.snapshot, self.source.history, self.interval, self.paused)
            job = self.snapshot.job
            if job is not None and job.status == "ended":
                self.notify(f"{ended_summary(job)}: its last view; escape, then f on a process picks another job",
                            timeout=8)

    def action_focus_process(self) -> None:
        """f: the highlighted process and its descendants become the focused job."""
        from hwtop.probes.job import JobError, JobProbe

        table = self.process_table
        if self._simulated:
            self.notify(DEMO_PIDS, severity="warning")
            return
        if not hasattr(self.source, "job") or self.replaying:
            self.notify("this source cannot focus a job (replay or test source)", severity="warning")
            return
        rows = table.rows_shown
        if not rows or not 0 <= table.cursor_row < len(rows):
            return
        pid = rows[table.cursor_row].pid
        probe = JobProbe(roots=(pid,))
        try:
            probe.check()
        except JobError as error:
            self.notify(str(error), severity="error")
            return
        self.source.job = probe  # type: ignore[attr-defined]
        self.notify(f"focused on pid {pid} and its descendants: j shows the job")
        self.action_job()

    @property
    def _simulated(self) -> bool:
        """A demo machine: its pids are not this machine's, so no key may signal or focus one."""
        from hwtop.session.sampler import Sampler

        return isinstance(self.source, Sampler) and self.source.simulated

    def action_signal_process(self) -> None:
        """k: signal the highlighted process, after a confirmation that shows its user and command."""
        from hwtop.probes.signals import describe, may_signal, send
        from hwtop.tui.signal_dialog import SignalDialog

        if self.replaying:
            return
        if self._simulated:
            self.notify(DEMO_PIDS, severity="warning")
            return
        rows, table = self.process_table.rows_shown, self.process_table
        if not rows or not 0 <= table.cursor_row < len(rows):
            return
        target = describe(rows[table.cursor_row].pid)
        if target is None:
            self.notify("that process has already exited", severity="warning")
            return
        refusal = may_signal(target)
        if refusal:
            self.notify(refusal, severity="error")
            return

        def chosen(sig: int | None) -> None:
            if sig is not None:
                self.notify(send(target, sig))

        self.push_screen(SignalDialog(target), chosen)

    async def _filter_box(self) -> Input:
        """The filter's input line, mounted above the footer the first time it is wanted: composed hidden, its
        stylesheet and widget cost 18 M instructions (~4 ms) of the first frame, for a key not every session
        presses. A second call while the first still mounts waits for the same mount."""
        mounting = self._filter_mount
        if mounting is None:
            from textual.widgets import Input

            box = Input(placeholder="filter processes by name, user or pid (enter keeps it, escape clears)",
                        id="filter")
            box.display = False
            self.filter_input = box

            async def mounted() -> Input:
                await self.mount(box, before=self.footer)
                return box

            mounting = self._filter_mount = asyncio.ensure_future(mounted())
        return await mounting

    async def action_filter(self) -> None:
        box = await self._filter_box()
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.filter_input:
            self.process_table.filter_text = event.value
            self.process_table.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is self.filter_input:
            event.input.display = bool(event.value)
            self.process_table.focus()

    def on_key(self, event) -> None:  # noqa: ANN001 - textual.events.Key
        box = self.filter_input
        if event.key == "escape" and box is not None and box.has_focus:
            box.value = ""
            box.display = False
            self.process_table.focus()
            event.stop()

    async def on_gpu_panel_gpu_clicked(self, message: GpuPanel.GpuClicked) -> None:
        """A click on a GPU shows its processes; a second click on it shows everything again."""
        wanted = f"gpu:{message.index}"
        value = "" if self.process_table.filter_text == wanted else wanted
        box = await self._filter_box()
        box.value = value  # the Input's change event applies it to the table
        box.display = bool(value)
        self.process_table.filter_text = value
        self.process_table.redraw()

    def action_tree(self) -> None:
        table = self.process_table
        table.tree_view = not table.tree_view
        table.redraw()

    def get_system_commands(self, screen):  # noqa: ANN001, ANN201 - Textual's signature
        """The command palette (ctrl+p) lists every hwtop action, not only Textual's own."""
        from textual.app import SystemCommand

        yield from super().get_system_commands(screen)
        for title, help_text, action in PALETTE:
            yield SystemCommand(title, help_text, getattr(self, f"action_{action}"))

    def action_report(self) -> None:
        from hwtop.tui.report_screen import ReportScreen  # lazy: the first frame does not need it

        system = self.snapshot.gpu_system if self.snapshot else None
        demo = system.source[5:] if system and system.source.startswith("demo:") else None
        self.push_screen(ReportScreen(demo))

    def action_help(self) -> None:
        from hwtop.tui.help import HelpScreen

        self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        with self._record_lock:
            if self.recorder is not None:
                self.recorder.close(quiet=True)  # the file ends on a whole line
                self.recorder = None
        self.session.close()


def ended_summary(job: JobSnapshot) -> str:
    """"job ended (exit codes pid 41: 0, pid 42: 1)": the codes of the processes the job probe kept."""
    codes = [f"pid {p.pid}: {p.exit_code}" for p in job.processes if p.exit_code is not None]
    return f"job ended (exit codes {', '.join(codes)})" if codes else \
        "job ended (exit codes unknown: known only for processes hwtop started or saw as zombies)"


def _clock(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
