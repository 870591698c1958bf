"""`hwtop fleet`'s app: a FleetSession reads rounds on its worker; the app tells it what the screen on show wants
(a job's ranks, the job list), and four times a second swaps in the newest FleetFrame and hands it to that
screen. It never waits on the network or on parsing, so `q` quits at once and keys answer during a round."""

from __future__ import annotations

from textual.screen import Screen

from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import FleetSource
from hwtop.tui.fleet.alerts_screen import FleetAlertsScreen, open_alerts, open_alerts_first
from hwtop.tui.fleet.host_screen import FleetHostScreen
from hwtop.tui.fleet.hosts_screen import FleetHostsScreen
from hwtop.tui.fleet.job_screen import FleetJobScreen
from hwtop.tui.fleet.jobs_screen import FleetJobsScreen
from hwtop.tui.guarded_app import GuardedApp
from hwtop.widgets import keys

SCREENS = (FleetHostsScreen, FleetHostScreen, FleetJobsScreen, FleetJobScreen, FleetAlertsScreen)


class FleetApp(GuardedApp[None]):
    TITLE = "hwtop fleet"
    CSS = """
    #fleet-title, #fleet-summary, #host-title, #job-title, #jobs-title { height: 1; background: $panel; }
    #job-verdict { height: auto; max-height: 6; }
    #fleet-warnings { height: auto; max-height: 3; color: $warning; }
    DataTable, HostTable { height: 1fr; }
    #fleet-filter { dock: bottom; margin-bottom: 1; }
    """
    BINDINGS = keys.bindings(keys.FLEET)

    def __init__(self, source: FleetSource, refresh_s: float = 0.25, alerts: bool = False) -> None:
        super().__init__()
        self.session = FleetSession(source)
        self.source = source
        self.refresh_s = refresh_s
        self.frame: FleetFrame = self.session.frame
        self.hosts_screen = FleetHostsScreen(lambda: self.frame)
        self.given_job = source.job  # --job: the job the screen opens on and `j` shows
        self.given_alerts = alerts  # --alerts: open on the alerts even when none fires
        self.alerts_seen = False  # the first alert list came: the fleet opened on it where it had to
        self.redraws = 0
        self._drawn: Screen[object] | None = None

    def on_mount(self) -> None:
        self.push_screen(self.hosts_screen)
        self.session.ask(self.given_job, False)
        self.session.start()
        self.set_interval(self.refresh_s, self.tick)
        self.call_after_refresh(self.tick)
        if self.given_job is not None:  # --job: its ranks first; escape shows the hosts
            self.action_open_job()

    def tick(self) -> None:
        """Tells the session what the screen on show reads, then draws the newest frame on it if it has not."""
        if self.session.failure is not None:
            raise self.session.failure
        screen = self.screen
        self.session.ask(screen.job if isinstance(screen, FleetJobScreen) else self.given_job,
                         isinstance(screen, FleetJobsScreen),
                         screen.host if isinstance(screen, FleetHostScreen) else None)
        frame = self.session.frame
        if not self.alerts_seen:  # the fleet opens on what fired (tui/fleet/alerts_screen.py)
            self.alerts_seen = open_alerts_first(self, frame, self.given_alerts,
                                                 screen is self.hosts_screen and self.given_job is None)
        if frame is self.frame and screen is self._drawn:
            return
        self.frame, self._drawn = frame, screen
        if isinstance(screen, SCREENS):
            screen.show(frame)
            self.redraws += 1
        for warning in frame.warnings[len(self._warned):]:
            self.notify(warning, severity="warning", timeout=8)
        self._warned = frame.warnings

    _warned: tuple[str, ...] = ()

    def action_help(self) -> None:
        from hwtop.tui.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(keys.fleet_help_lines(), "hwtop fleet keys"))

    def action_open_job(self) -> None:
        """The ranks of --job; without one, the jobs Prometheus holds; exporters read directly hold none."""
        if isinstance(self.screen, FleetJobScreen | FleetJobsScreen):
            return
        if self.given_job is not None:
            job = self.frame.job
            self.push_screen(FleetJobScreen(self.given_job, job if job is not None and job.job == self.given_job
                                            else None))
            return
        if not self.source.reads_jobs:
            self.notify("hwtop fleet --prometheus URL lists the jobs and their ranks across hosts", timeout=6)
            return
        self.push_screen(FleetJobsScreen(self.frame.jobs))
        self.session.ask(None, True)

    def action_open_alerts(self) -> None:
        open_alerts(self, self.frame, self.source.reads_jobs)

    def on_unmount(self) -> None:
        self.session.close()
