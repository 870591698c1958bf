"""A full screen's one panel (the job view, the topology), scrolled inside its border: the border is the scroll's,
so the scrollbar is drawn inside it (it was drawn beside the panel's right border, outside it), and the panel's
title is shown on it. The panel's content keeps its width: the border and the scrollbar swap places."""

from __future__ import annotations

from textual.containers import VerticalScroll

from hwtop.widgets.panel import TextPanel


class ScrolledPanel(VerticalScroll):
    DEFAULT_CSS = """
    ScrolledPanel { border: round $primary-darken-1; border-title-color: $accent; }
    ScrolledPanel > TextPanel { border: none; padding: 0 1; }
    """

    def __init__(self, panel: TextPanel, *, id: str | None = None) -> None:
        super().__init__(panel, id=id)
        self.panel = panel

    def follow_title(self) -> None:
        """The panel's title on the border, set only when it reads differently (setting it repaints the scroll)."""
        title = self.panel.border_title
        if str(self.border_title) != str(title):
            self.border_title = title
