"""The `?` screen: every key and what it does. Built as styled `Text`, not markup: the keys `[` and `]` are
characters to show, not tags (as markup, `[b][[/b]` left a stray `[/b]` on the screen)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from hwtop.tui.dialog import Dialog

KEYS = (
    ("q", "quit (the terminal is restored, no child process is left)"),
    ("p", "pause / resume sampling"),
    ("s", "sort the processes by the next column: CPU, memory, GPU memory, PID (or click a column header; "
          "▼ biggest first, ▲ smallest first)"),
    ("r", "reverse the process order (as does a second click on the sorted column's header)"),
    ("/", "filter the processes by name, user or pid (enter keeps it, escape clears)"),
    ("T", "tree view of the processes: children under their parents"),
    ("t", "topology: GPU/NIC connection matrix, NUMA nodes, live PCIe/NVLink (r re-reads it, t/escape back)"),
    ("a", "advice: focus the pane and expand the selected finding (up/down select, enter or click toggles)"),
    ("b", "box report: what this box can train and what limits it (hwtop report for measurements)"),
    ("j", "the focused job's view: process tree, roles, affinity, where threads ran, NUMA memory (--pid/--job)"),
    ("f", "focus the highlighted process and its descendants as the job; in the job view d reads a stack"),
    ("k", "signal the highlighted process: shows its user and command, y SIGTERM, K SIGKILL, n cancels"),
    ("w", "start the embedded PyTorch DDP/AMP job: pick a scenario and options"),
    ("x", "stop the job (its whole process group: SIGTERM, then SIGKILL)"),
    ("R", "record every tick to hwtop-HOST-TIME.jsonl.gz here; R again stops (hwtop replay FILE)"),
    (".", "replay: step one tick forward (pauses)"),
    (",", "replay: step one tick back"),
    ("]", "replay: seek 10 s forward"),
    ("[", "replay: seek 10 s back"),
    ("+", "replay: twice as fast"),
    ("-", "replay: half as fast"),
    ("?", "this help"),
    ("escape", "close a dialog"),
    ("ctrl+p", "command palette: every action by name"),
)


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: auto; max-height: 100%;
                                  border: thick $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        # Scrolls (up/down, page keys, the wheel) when the terminal is shorter than the list: at 80x24 it is.
        scroll = VerticalScroll()
        scroll.border_title = "hwtop keys"
        scroll.border_subtitle = "↑↓ PgUp PgDn scroll · escape closes"
        with scroll:
            yield Static(help_text())

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()  # the arrow and page keys scroll at once


def help_text() -> Group:
    """The keys as a two-column grid: a long description wraps under itself, never under the key column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True, width=8)
    grid.add_column(ratio=1)
    for key, what in KEYS:
        grid.add_row(key, what)
    return Group(grid, Text(), Text("Data flows one way: probes → one snapshot per tick → advice → widgets."),
                 Text("N/A means this machine cannot say; it is never shown as 0."))
