"""The one way outside text enters a widget: as a Rich `Text` built from the plain string, never parsed as markup
(`[/x]` is not a closing tag, `[@click=app.quit]` is not an action), its control characters shown, not sent
(model.safe_text.printable). Our own styling is added as `Text` styles, so it cannot be confused with data."""

from __future__ import annotations

from rich.style import StyleType
from rich.text import Text

from hwtop.model.safe_text import printable


def data(value: object, style: StyleType = "") -> Text:
    """A string someone else controls (a process name, a hostname, an error message) as a `Text`: literal."""
    return Text(printable("" if value is None else str(value)), style=style)


def visible(text: Text) -> Text:
    """`text` with any control character that reached it shown, spans kept: the net under every panel line and
    table cell, for data appended to our own `Text` without going through `data`."""
    plain = text.plain
    cleaned = printable(plain)
    if cleaned == plain:
        return text
    text = text.copy()
    text.plain = cleaned
    return text


def cell(value: object) -> Text:
    """A table cell: our own `Text` kept with its styles (made visible), anything else as data."""
    return visible(value) if isinstance(value, Text) else data(value)
