"""The hwtop App: polls a snapshot source on a worker thread, one tick at a time, and hands each
snapshot to the widgets. The source is injected (Sampler live, demo, or a test's scripted source)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING

from textual.screen import ModalScreen, Screen

from hwtop.advice.thresholds import Thresholds
from hwtop.model.frame import Frame
from hwtop.model.snapshot import Snapshot
from hwtop.session.controls import ControlRefused, ReplayState
from hwtop.session.session import Session, SnapshotSource
from hwtop.tui.frame_view import FrameView, Status
from hwtop.tui.guarded_app import GuardedApp
from hwtop.tui.main_screen import DEMO_PIDS as DEMO_PIDS  # the app's words too: re-exported
from hwtop.tui.main_screen import NO_FINDINGS as NO_FINDINGS
from hwtop.tui.main_screen import MainScreen
from hwtop.widgets import keys
from hwtop.widgets.advice import AdvicePanel

if TYPE_CHECKING:
    from textual.widgets import Input

    from hwtop.model.job import JobSnapshot
    from hwtop.recording.store import Recorder
    from hwtop.tui.advice_screen import AdviceScreen
    from hwtop.tui.job_screen import JobScreen
    from hwtop.tui.topology_screen import TopologyScreen

EXIT_GRACE_S = 10.0  # after SIGTERM/SIGHUP, the most a shutdown may take before the watchdog ends the process
DEMO_JOB_VIEW = "a demo machine has no job to focus: its story's job is in the workload pane"
DEMO_JOB = "a demo machine runs its story's job, not a real one: --scenario picks the story"
PALETTE = keys.palette_commands()  # (title, help, action): what ctrl+p lists, from widgets/keys.py


class HwtopApp(GuardedApp[None]):  # GuardedApp: plain-text notifications; run() raises a crash, terminal restored
    CSS_PATH = "hwtop.tcss"
    TITLE = "hwtop"
    BINDINGS = keys.app_bindings()  # every screen's; the main screen binds its own (tui/main_screen.py)
    REPLAY_ACTIONS = {"replay_step", "replay_seek", "replay_speed"}

    def __init__(self, source: SnapshotSource, interval: float = 1.0, workload_args: list[str] | None = None,
                 exit_on_signals: bool = False, thresholds: Thresholds | None = None,
                 open_job: bool = False, theme: str = "dark", hide: tuple[str, ...] = ()) -> None:
        super().__init__()
        from hwtop.session.config import THEMES

        self.theme = THEMES.get(theme, "textual-dark")
        if theme == "mono" and not self.no_color:  # as NO_COLOR does, without touching the environment
            from textual.filter import Monochrome, NoColor

            from hwtop.tui import textual_compat

            self.no_color = True
            textual_compat.add_line_filter(self, NoColor() if self.native_ansi_color else Monochrome())
        self.session = Session(source, thresholds)  # probes → snapshot → advice, one tick at a time
        self.main = MainScreen(self, hide)
        self.frame: Frame | None = None
        self.interval = interval
        self.snapshot: Snapshot | None = None
        self.ticks = 0
        self.first_frame = asyncio.Event()
        self.ticked_before_run: Frame | None = None  # see tick_before_run
        self.topology_screen: TopologyScreen | None = None  # made on first use (t): not on the first frame's path
        self.advice_screen: AdviceScreen | None = None  # the last one opened; shown to while it is on top
        self.workload_args = workload_args
        self.exit_on_signals = exit_on_signals
        self.open_job = open_job  # --pid / --job: start on the job's screen
        self.job_screen: JobScreen | None = None  # made on first use (j)
        self.recorder: Recorder | None = None  # while R records
        self._record_lock = threading.Lock()  # the worker thread writes, the key closes

    @property
    def filter_input(self) -> Input | None:
        """The process filter's line: made on first use (/, a click on a GPU), as the topology screen."""
        return self.main.filter_box

    def get_default_screen(self) -> Screen[None]:
        return self.main

    # The screens' context (tui/frame_view.py): what they read besides the Frame.
    @property
    def watching(self) -> tuple[str, ...]:
        return self.session.watching

    @property
    def thresholds(self) -> Thresholds:
        return self.session.thresholds

    @property
    def paused(self) -> bool:
        return self.session.paused

    def status(self) -> Status:
        replay = self.session.replay
        return Status(self.interval, self.session.paused, replay_words(replay.state()) if replay else None,
                      self.recorder.path if self.recorder is not None else None,
                      workload_stops=self.session.workload is not None and not self.session.simulated)

    def on_mount(self) -> None:
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
        tick on the worker thread that contends with that frame's rendering. It is not advised: the rules are
        imported and run from the next tick, on the worker thread, and the advice pane says so meanwhile."""
        self.ticked_before_run = self.session.tick(advise=False)

    def _signalled(self) -> None:
        """Exit as q does; and should the shutdown itself hang (once seen after a pty vanished under a tmux
        kill-session, not reproduced since), a watchdog stops the job's group and ends the process."""
        self.exit()
        watchdog = threading.Timer(EXIT_GRACE_S, self._force_exit)
        watchdog.daemon = True
        watchdog.start()

    def _force_exit(self) -> None:
        import os

        workload = self.session.workload
        if workload is not None:
            try:
                workload.stop()
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
            if not self.session.paused:
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

    @property
    def replaying(self) -> bool:
        return self.session.replay is not None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.REPLAY_ACTIONS and not self.replaying:
            return False  # hidden and inert outside a replay
        if action in ("start_workload", "stop_workload", "record") and self.replaying:
            return False
        return True

    def action_replay_step(self, ticks: int) -> None:
        if self.session.replay is not None:
            self.session.paused = True  # stepping is frame by frame
            self.show(self.session.replay.step(ticks))

    def action_replay_seek(self, seconds: float) -> None:
        if self.session.replay is not None:
            self.show(self.session.replay.seek(seconds))

    def action_replay_speed(self, factor: float) -> None:
        if self.session.replay is not None:
            self.session.replay.change_speed(factor)
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
        """The Frame to the screen on top and, past a pop-up (help, a dialog, the advice), to those it leaves
        in view; a full screen (topology, the job) hides the ones under it, which get no work."""
        self.frame, self.snapshot = frame, frame.snapshot
        self.ticks += 1
        self._draw(frame)
        self.first_frame.set()

    def _draw(self, frame: Frame) -> None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, FrameView):
                screen.show(frame)
            if not isinstance(screen, ModalScreen):
                break

    def action_toggle_pause(self) -> None:
        self.session.paused = not self.session.paused
        if self.frame is not None:
            self._draw(self.frame)  # the header says so at once

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

            self.topology_screen = TopologyScreen(self)
            # Installed: kept when popped, so t or j opens them again (a popped screen that is not installed is
            # removed, and pushing it once more showed nothing: j after leaving the job view looked frozen).
            self.install_screen(self.topology_screen, name="topology")
        self._bring_up(self.topology_screen)
        if self.frame is not None:
            self.topology_screen.show(self.frame)

    def action_refresh_topology(self) -> None:
        """Re-read the layout (a GPU or NIC added, a link retrained) at the next tick."""
        if self.session.refresh_topology():
            self.notify("topology will be re-read at the next tick")
        else:  # a recording, a demo machine: its layout is the one it came with
            self.notify("this source's topology is fixed: there is no machine to read it again from")

    def action_start_workload(self) -> None:
        if self.session.simulated:
            self.notify(DEMO_JOB, severity="warning")
            return
        workload = self.session.workload
        if workload is None:
            self.notify("this source cannot run a workload (replay or test source)", severity="warning")
            return
        if workload.running:
            self.notify("a workload is running: x stops it first", severity="warning")
            return
        device = "cuda" if self.snapshot is not None and self.snapshot.gpus else "cpu"
        from hwtop.tui.workload_dialog import WorkloadDialog

        self.push_screen(WorkloadDialog(device), self._workload_chosen)

    def _workload_chosen(self, args: list[str] | None) -> None:
        if args is not None:
            self.start_workload(args)

    def start_workload(self, args: list[str]) -> None:
        workload = self.session.workload
        if workload is None:
            self.notify("this source cannot run a workload (replay or test source)", severity="warning")
            return
        try:
            workload.start(args)
        except ControlRefused as refused:
            self.notify(str(refused), severity="error", timeout=10)
            return
        self.notify(f"workload started: {' '.join(args)}")

    def action_stop_workload(self) -> None:
        if self.session.simulated:
            self.notify(DEMO_JOB, severity="warning")
            return
        workload = self.session.workload
        if workload is None or not workload.stop():
            self.notify("no workload running")
            return
        self.notify("workload stopped: its whole process group was terminated")

    def on_advice_panel_details_wanted(self, _message: AdvicePanel.DetailsWanted) -> None:
        self.open_advice_screen()

    def open_advice_screen(self) -> None:
        from hwtop.tui.advice_screen import AdviceScreen

        screen = self.advice_screen = AdviceScreen(self)
        self.push_screen(screen)
        if self.frame is not None:
            screen.show(self.frame)

    def action_job(self) -> None:
        """The focused job's screen; without a focused job, say how to focus one."""
        from hwtop.tui.job_screen import JobScreen

        focus = self.session.job
        if self.snapshot is not None and self.snapshot.job is None and (focus is None or not focus.focused):
            self.notify(DEMO_JOB_VIEW if self.session.simulated else
                        "no job focused: select a process and press f, or start hwtop --pid PID / --job PATTERN")
            return
        if self.job_screen is None:
            self.job_screen = JobScreen(self, simulated=self.session.simulated)
            self.install_screen(self.job_screen, name="job")
        self._bring_up(self.job_screen)
        if self.frame is not None:
            self.job_screen.show(self.frame)
            job = self.frame.snapshot.job
            if job is not None and job.status == "ended":
                self.notify(f"{ended_summary(job)}: its last view; escape, then f on a process picks another job",
                            timeout=8)

    def get_system_commands(self, screen):  # noqa: ANN001, ANN201 - Textual's signature
        """The command palette (ctrl+p) lists every hwtop action, not only Textual's own."""
        from textual.app import SystemCommand

        yield from super().get_system_commands(screen)
        for title, help_text, action in PALETTE:
            owner = self.main if action in keys.MAIN_SCREEN_OWN else self
            yield SystemCommand(title, help_text, getattr(owner, f"action_{action}"))

    def action_report(self) -> None:
        from hwtop.demo.machine import machine_of_source
        from hwtop.tui.report_screen import ReportScreen  # lazy: the first frame does not need it

        system = self.snapshot.gpu_system if self.snapshot else None
        self.push_screen(ReportScreen(machine_of_source(system.source if system else None)))

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


def replay_words(state: ReplayState) -> str:
    """`REPLAY 2x 00:00:01/00:00:09`, and ` END` at the recording's last snapshot."""
    words = f"REPLAY {state.speed:g}x {_clock(state.position_s)}/{_clock(state.length_s)}"
    return words + (" END" if state.at_end else "")


def _clock(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
