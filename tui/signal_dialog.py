"""`k` on a process: a dialog that shows the target's pid, user and command and asks before anything is sent
(SIGTERM, or SIGKILL). A process this user may not signal is refused with the reason before the dialog."""

from __future__ import annotations

import signal

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label

from hwtop.probes.signals import Target
from hwtop.tui.dialog import Dialog
from hwtop.widgets import keys
from hwtop.widgets.safe_text import data


class SignalDialog(Dialog[int | None]):
    """SIGTERM has the focus: enter sends it; K sends SIGKILL; escape or n cancels."""

    DEFAULT_CSS = """
    SignalDialog { align: center middle; }
    SignalDialog > Vertical { width: 80; max-width: 100%; height: auto; border: thick $error;
                              background: $surface; padding: 1 2; }
    SignalDialog Horizontal { height: auto; }
    """
    BINDINGS = keys.bindings(keys.SIGNAL_DIALOG)

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        t = self.target
        with Vertical():
            yield Label(Text(f"Signal pid {t.pid}?", style="bold"))
            yield Label(data(f"user: {t.user}"))  # the user and command are the target's, not ours
            yield Label(data(f"command: {t.command[:200]}"))
            yield Label("enter or y: SIGTERM (ask it to stop) · K: SIGKILL · n / escape: cancel")
            with Horizontal():
                yield Button("SIGTERM", variant="warning", id="term")
                yield Button("SIGKILL", variant="error", id="kill")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss({"term": int(signal.SIGTERM), "kill": int(signal.SIGKILL)}.get(event.button.id or ""))

    def action_send(self, sig: int) -> None:
        self.dismiss(sig)

    def confirm(self) -> None:
        self.dismiss(int(signal.SIGTERM))
