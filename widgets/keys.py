"""Every key of hwtop, declared once: what it does (the action), its word in the footer, and its line on the `?`
screen. Screens and widgets take their BINDINGS from here and the help screen builds its list from the same
entries, so a key cannot be bound without being documented, or documented without being bound."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from textual.binding import Binding, BindingType


class Key(msgspec.Struct, frozen=True):
    keys: str  # Textual key names, comma-separated ("escape,q")
    action: str
    label: str  # the footer's word
    help: str = ""  # the line on the ? screen; empty: not listed there (a screen's own keys)
    show: bool = True  # in the footer
    display: str | None = None  # how the key is written when its name is not the character ("?" for question_mark)
    priority: bool = False
    command: str = ""  # its title in the command palette (ctrl+p); empty: not listed there
    screen: bool = False  # the main screen's own (its processes, its advice pane); else the app's, on every screen

    @property
    def shown(self) -> str:
        return self.display or self.keys

    def binding(self) -> Binding:
        return Binding(self.keys, self.action, self.label, show=self.show, key_display=self.display,
                       priority=self.priority)


def bindings(keys: Sequence[Key]) -> list[BindingType]:
    return [key.binding() for key in keys]


def app_bindings() -> list[BindingType]:
    """The app's: the main screen's keys that every screen has (q, p, t, ?, the replay's …)."""
    return bindings([key for key in MAIN if not key.screen])


def main_screen_bindings() -> list[BindingType]:
    """The main screen's: its own keys, and the app's as `app.` actions, all in the order declared, the order its
    footer lists them in (Textual lists a screen's bindings before the app's)."""
    return bindings([key if key.screen else msgspec.structs.replace(key, action=f"app.{key.action}")
                     for key in MAIN])


# The monitor's main screen, in the order the ? screen lists them.
MAIN = (
    Key("q", "quit", "Quit", "quit (the terminal is restored, no child process is left)"),
    Key("p", "toggle_pause", "Pause", "pause / resume sampling", command="Pause / resume"),
    Key("s", "cycle_sort", "Sort", "sort the processes by the next column: CPU, memory, GPU memory, PID (or click a "
                                   "column header; ▼ biggest first, ▲ smallest first)", command="Sort processes",
        screen=True),
    Key("r", "reverse_sort", "Reverse", "reverse the process order (as does a second click on the sorted column's "
                                        "header)", show=False, command="Reverse sort", screen=True),
    Key("slash", "filter", "Filter", "filter the processes by name, user, owner or pid (enter keeps it, escape clears)",
        show=False, display="/", command="Filter processes", screen=True),
    Key("T", "tree", "Tree", "tree view of the processes: children under their parents", show=False,
        command="Process tree", screen=True),
    Key("t", "topology", "Topology", "topology: GPU/NIC connection matrix, NUMA nodes, live PCIe/NVLink (r re-reads "
                                     "it, t/escape back)", command="Topology"),
    Key("a", "advice", "Advice", "advice: focus the pane and expand the selected finding (up/down select, enter or "
                                 "click toggles); a again: every finding and what changed when", command="Advice",
        screen=True),
    Key("b", "report", "Report", "box report: what this box can train and what limits it (hwtop report for "
                                 "measurements)", show=False, command="Box report"),
    Key("j", "job", "Job", "the focused job's view: process tree, roles, affinity, where threads ran, NUMA memory "
                           "(--pid/--job)", show=False, command="Job view"),
    Key("f", "focus_process", "Focus", "focus the highlighted process and its descendants as the job; in the job "
                                       "view d reads a stack, F asks the ranks for Flight Recorder dumps",
        show=False, command="Focus process as job", screen=True),
    Key("k", "signal_process", "Signal", "signal the highlighted process: shows its user and command, enter or y "
                                         "SIGTERM, K SIGKILL, n cancels", show=False, command="Signal process",
        screen=True),
    Key("w", "start_workload", "Workload", "start the embedded PyTorch DDP/AMP job: pick a scenario and options",
        command="Start workload"),
    Key("x", "stop_workload", "Stop job", "stop the job (its whole process group: SIGTERM, then SIGKILL)",
        show=False, command="Stop workload"),
    Key("R", "record", "Record", "record every tick to hwtop-HOST-TIME.jsonl.gz here; R again stops (hwtop replay "
                                 "FILE)", show=False, command="Record"),
    Key("question_mark", "help", "Help", "this help", display="?", command="Help"),
    # replay only (the app's check_action hides them otherwise)
    Key("full_stop", "replay_step(1)", "Step", "replay: step one tick forward (pauses)", display="."),
    Key("comma", "replay_step(-1)", "Back", "replay: step one tick back", display=","),
    Key("right_square_bracket", "replay_seek(10)", "+10s", "replay: seek 10 s forward", display="]"),
    Key("left_square_bracket", "replay_seek(-10)", "-10s", "replay: seek 10 s back", display="["),
    Key("plus,equals_sign", "replay_speed(2)", "Faster", "replay: twice as fast", display="+"),
    Key("minus", "replay_speed(0.5)", "Slower", "replay: half as fast", display="-"),
)
MAIN_SCREEN_OWN = frozenset(key.action for key in MAIN if key.screen)  # the actions the main screen owns
# Lines of the ? screen that are not keys of the main screen.
HELP_ONLY = (
    ("enter", "confirm a dialog (start the workload, send SIGTERM); on the advice pane, open a finding"),
    ("escape", "close a dialog or a screen"),
    ("ctrl+p", "command palette: every action by name"),
)


def palette_commands() -> tuple[tuple[str, str, str], ...]:
    """(title, help, action) of every main-screen key the command palette lists: the action without arguments."""
    return tuple((key.command, f"{key.help} ({key.shown})", key.action) for key in MAIN if key.command)


def help_lines() -> tuple[tuple[str, str], ...]:
    """(key as written, what it does) for the ? screen."""
    return tuple((key.shown, key.help) for key in MAIN if key.help) + HELP_ONLY


# Screens of their own
JOB_SCREEN = (Key("escape,j", "app.pop_screen", "Back"), Key("d", "dump_stack", "Stack"),
              Key("F", "flight_dump", "FR dump"), Key("q", "app.quit", "Quit"))
TOPOLOGY_SCREEN = (Key("escape,t", "app.pop_screen", "Back"), Key("r", "app.refresh_topology", "Refresh"),
                   Key("q", "app.quit", "Quit"))

# Dialogs (tui/dialog.py): escape cancels, enter confirms; priority, as an Input's own enter or a Select's would
# otherwise take it first.
DIALOG = (Key("escape", "cancel", "Cancel"), Key("enter", "confirm", "OK", priority=True))
SIGNAL_DIALOG = (Key("n", "cancel", "Cancel"), Key("y", "send(15)", "SIGTERM"), Key("K", "send(9)", "SIGKILL"))
HELP_SCREEN = (Key("q,question_mark", "dismiss", "close"),)
ADVICE_SCREEN = (Key("a,q", "dismiss", "close"),)
REPORT_SCREEN = (Key("b,q", "dismiss", "close"),)

# The fleet view
FLEET = (Key("q", "quit", "Quit", "quit"),
         Key("j", "open_job", "Jobs", "the ranks of --job across hosts, worst first: the straggler or the hang "
                                      "named, with its host's likely cause; without --job, the jobs Prometheus "
                                      "holds (hangs and stragglers first), enter opens one"),
         Key("a", "open_alerts", "Alerts", "the alerts Prometheus holds (--prometheus), firing first, with their "
                                           "host, job and rank; enter opens the job's ranks or the host"),
         Key("question_mark", "help", "Help", "this help", display="?"))
FLEET_HOSTS = (Key("enter", "open_host", "GPUs of the host", "open the selected host: its GPUs and every finding "
                                                             "(or a click on its row)"),
               Key("s", "cycle_sort", "Sort", "sort the hosts by the next column: findings first, host, "
                                              "utilisation, GPU memory, CPU"),
               Key("slash", "filter", "Filter", "filter the hosts by host, GPU model, job or finding (enter keeps "
                                                "it, escape clears)", display="/"))
FLEET_HOST_TABLE = (Key("right", "scroll_columns(1)", "Right", show=False),
                    Key("left", "scroll_columns(-1)", "Left", show=False))
FLEET_FILTER = (Key("escape", "clear_filter", "Clear", show=False),)
FLEET_HOST = (Key("escape,q", "app.pop_screen", "Back"),)
FLEET_JOB = (Key("escape,q", "app.pop_screen", "Back"),)
FLEET_JOBS = (Key("enter", "open_selected", "Job's ranks"), Key("escape,q", "app.pop_screen", "Hosts"))
FLEET_ALERTS = (Key("enter", "open_selected", "Open"), Key("escape,q", "app.pop_screen", "Hosts"))
FLEET_HELP_ONLY = (
    ("↑ ↓", "select a host (or a job); the worst is first"),
    ("← →", "scroll the columns (at 80 columns the address is past the right edge)"),
    ("escape", "back from a host's screen, the job's ranks or the jobs, or close this help"),
)


def fleet_help_lines() -> tuple[tuple[str, str], ...]:
    """(key as written, what it does) for the fleet's ? screen."""
    return tuple((key.shown, key.help) for key in (*FLEET_HOSTS, *FLEET) if key.help) + FLEET_HELP_ONLY

# Widgets
LINE_TABLE = (
    Key("up", "cursor_up", "Up", show=False),
    Key("down", "cursor_down", "Down", show=False),
    Key("pageup", "page_up", "Page up", show=False),
    Key("pagedown", "page_down", "Page down", show=False),
    Key("home", "scroll_home", "Top", show=False),
    Key("end", "scroll_end", "Bottom", show=False),
)
ADVICE_PANEL = (Key("up", "move(-1)", "previous", show=False), Key("down", "move(1)", "next", show=False),
                Key("enter,space", "toggle_finding", "expand", show=False))
JOB_PANEL = (Key("up", "move(-1)", "previous", show=False), Key("down", "move(1)", "next", show=False))
