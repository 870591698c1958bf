"""The base of hwtop's Textual apps: a notification is plain text. Its message often quotes someone else's words
(an error about a process, a path, a command), so it is never parsed as markup and its control characters are
shown."""

from __future__ import annotations

from textual.app import App, ReturnType
from textual.notifications import SeverityLevel

from hwtop.model.safe_text import printable


class GuardedApp(App[ReturnType]):
    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Always plain text (`markup` is accepted for Textual's callers and ignored)."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout,
                       markup=False)
