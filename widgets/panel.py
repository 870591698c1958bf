"""Base for panels that render Rich Text from the data they were last given, sized to their content."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget


class TextPanel(Widget):
    """Subclasses implement `lines(width)`; `refresh(layout=True)` after new data resizes the panel."""

    DEFAULT_CSS = "TextPanel { height: auto; }"

    def lines(self, width: int) -> list[Text]:
        raise NotImplementedError

    def render(self) -> Text:
        return Text("\n").join(self.lines(self.content_size.width or self.size.width))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Rows the text takes at this width, counting lines that wrap."""
        width = max(1, width)
        return max(1, sum(max(1, -(-line.cell_len // width)) for line in self.lines(width)))
