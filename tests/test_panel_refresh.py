from __future__ import annotations

from rich.text import Text
from textual.geometry import Region

from hwtop.widgets.panel import TextPanel


class Lines(TextPanel):
    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.text = lines

    def lines(self, width: int) -> list[Text]:
        return [Text(line) for line in self.text]


def _laid_out(panel: Lines, width: int) -> list[tuple[tuple[Region, ...], bool]]:
    """The panel as after its first layout and paint at `width`; then each refresh it asks for."""
    panel.get_content_height(None, None, width)  # type: ignore[arg-type]  # sizes only use width
    panel.cached_lines(width)
    calls: list[tuple[tuple[Region, ...], bool]] = []

    def refresh(*regions: Region, layout: bool = False, **_: object) -> Lines:
        calls.append((regions, layout))
        return panel
    panel.refresh = refresh  # type: ignore[method-assign]
    return calls


def test_a_changed_line_repaints_that_row_alone() -> None:
    panel = Lines(["cpu 12%", "mem 3G", "disk 0"])
    calls = _laid_out(panel, 40)
    panel.text = ["cpu 12%", "mem 4G", "disk 0"]
    panel.changed()
    assert calls == [((Region(0, 1, 40, 1),), False)]
    panel.changed()  # nothing reads differently: no repaint at all
    assert len(calls) == 1


def test_a_wrapping_line_or_a_new_row_repaints_the_whole_panel() -> None:
    panel = Lines(["a", "b"])
    calls = _laid_out(panel, 10)
    panel.text = ["a", "b" * 15]  # wraps: rows no longer match lines, and the height grows
    panel.changed()
    assert calls[-1] == ((), True)
    panel = Lines(["a", "b"])
    calls = _laid_out(panel, 10)
    panel.text = ["a", "c" * 10]  # still one row each, but the old and new lines are compared by row
    panel.changed()
    assert calls[-1] == ((Region(0, 1, 10, 1),), False)
