"""The `?` screen: every key and what it does. Built as styled `Text`, not markup: the keys `[` and `]` are
characters to show, not tags (as markup, `[b][[/b]` left a stray `[/b]` on the screen)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hwtop.tui.dialog import Dialog
from hwtop.widgets import keys

KEYS = keys.help_lines()  # built from the bindings themselves: widgets/keys.py


class HelpScreen(Dialog[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: auto; max-height: 100%;
                                  border: thick $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = keys.bindings(keys.HELP_SCREEN)

    def __init__(self, lines: tuple[tuple[str, str], ...] = KEYS, title: str = "hwtop keys") -> None:
        super().__init__()
        self.lines, self.title_text = lines, title

    def compose(self) -> ComposeResult:
        # Scrolls (up/down, page keys, the wheel) when the terminal is shorter than the list: at 80x24 it is.
        scroll = VerticalScroll()
        scroll.border_title = self.title_text
        scroll.border_subtitle = "↑↓ PgUp PgDn Home End scroll · escape closes"
        with scroll:
            yield Static(help_text(self.lines))

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()  # the arrow and page keys scroll at once


def help_text(lines: tuple[tuple[str, str], ...] = KEYS) -> Group:
    """The keys as a two-column grid: a long description wraps under itself, never under the key column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True, width=8)
    grid.add_column(ratio=1)
    for key, what in lines:
        grid.add_row(key, what)
    notes = [Text("Data flows one way: probes → one snapshot per tick → advice → widgets.")] if lines is KEYS else []
    return Group(grid, Text(), *notes, Text("N/A means this machine cannot say; it is never shown as 0."))
