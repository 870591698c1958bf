"""One line: host, kernel, uptime, refresh interval, snapshot time, and paused/replay state."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

from probes.model import Snapshot
from widgets.format import duration


class HeaderBar(Static):
    def show(self, snapshot: Snapshot, interval: float, paused: bool) -> None:
        host = snapshot.host
        text = Text()
        text.append(" hwtop ", style="bold reverse")
        if host is not None:
            text.append(f" {host.hostname} ", style="bold")
            text.append(f"│ {host.kernel} │ up {duration(host.uptime_s)} ")
        text.append(f"│ every {interval:g}s ")
        text.append(f"│ {time.strftime('%H:%M:%S', time.localtime(snapshot.time))} ")
        if snapshot.errors:
            text.append(f"│ {len(snapshot.errors)} probe error(s) ", style="bold red")
        if paused:
            text.append(" PAUSED ", style="bold black on yellow")
        self.update(text)
