"""The `w` dialog: pick the embedded job's kind and options, start it."""

from __future__ import annotations

import shlex

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select

from hwtop.tui.dialog import Dialog
from hwtop.workload.kinds import KINDS


class WorkloadDialog(Dialog[list[str] | None]):
    """The list of kinds has the focus; enter starts, escape cancels."""

    DEFAULT_CSS = """
    WorkloadDialog { align: center middle; }
    WorkloadDialog > Vertical { width: 70; max-width: 100%; height: auto; border: thick $accent;
                                background: $surface; padding: 1 2; }
    WorkloadDialog Horizontal { height: auto; }
    """
    def __init__(self, device: str = "cpu") -> None:
        super().__init__()
        self.device = device

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Start the embedded PyTorch DDP/AMP job", style="bold"))
            yield Select([(s, s) for s in KINDS], value="balanced", allow_blank=False, id="scenario")
            yield Label("options (as for `hwtop workload`):")
            yield Input(value=f"--device {self.device} --world-size 2 --seconds 120", id="options")
            with Horizontal():
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.confirm()
        else:
            self.dismiss(None)

    def confirm(self) -> None:
        try:
            options = shlex.split(self.query_one("#options", Input).value)  # split like a shell, run without one
        except ValueError as error:
            self.notify(f"options: {error}", severity="error")
            return
        scenario = str(self.query_one("#scenario", Select).value)
        self.dismiss(["--scenario", scenario, *options])
