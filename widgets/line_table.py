"""A table drawn with Textual's line API: one `Strip` per visible row, cached by the row's content and the column
widths, so a tick that changes ten rows of five thousand renders ten strips and repaints ten lines. DataTable
re-rendered every cell of the table on each `clear()`/`add_row` (most of hwtop's CPU in a profile).
Rows arrive already sorted and filtered; the widget only draws them, keeps a row cursor and reports header clicks.
Every cell passes `safe_text.cell`: outside text is literal and its control characters are shown."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

if TYPE_CHECKING:
    from textual.reactive import Reactive

from hwtop.widgets import keys, palette
from hwtop.widgets.safe_text import cell
from hwtop.widgets.strips import span_style

Cells = tuple[Text, ...]
PAD = 1  # cells of space either side of a column, as DataTable's cell_padding

STRIP_CACHE_ROWS = 256  # strips kept for reuse across ticks and scrolling


def _cell(value: object) -> Text:
    """`cell`, with tabs expanded: a tab's width is known only once it is spaces."""
    text = cell(value)
    if "\t" in text.plain:
        text = text.copy()
        text.expand_tabs()
    return text


def _cell_pieces(console: Console, value: Text, width: int) -> list[Segment]:
    """A cell's pieces at its column's width: cut with an ellipsis (only the fitted last column is narrower than its
    cells), aligned, its base style made a span over the aligned cell (Text.render leaves a base style out), as
    DataTable draws a cell. That span comes after the cell's own, so the base style wins where they differ: not
    strips._runs, where a panel line's spans win over its base style."""
    text = value.copy()
    if text.cell_len > width:
        text.truncate(width, overflow="ellipsis")
    text.align(text.justify if text.justify in ("left", "center", "right") else "left", width)
    if text.style:
        text.stylize(text.style)
        text.style = ""
    return list(text.render(console, end=""))


def _plain_cell(console: Console, value: Text, width: int) -> Segment:
    """A cell without spans that fits its width, as `_cell_pieces` draws it: one piece, aligned, with the style
    Rich gives the span of its base style."""
    excess = width - value.cell_len
    justify = value.justify if value.justify in ("left", "center", "right") else "left"
    left = 0 if justify == "left" else excess // 2 if justify == "center" else excess
    aligned = " " * left + value.plain + " " * (excess - left)
    if not value.style:
        return Segment(aligned)
    return Segment(aligned, span_style(console, value.style))  # Style.combine over the null style and it


class LineTable(ScrollView, can_focus=True):
    """A header line fixed at the top, then the rows; `set_rows` replaces them and repaints only changed lines."""

    COMPONENT_CLASSES = {"linetable--header", "linetable--cursor"}
    DEFAULT_CSS = """
    LineTable {
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .linetable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .linetable--header { background-tint: $foreground 5%; }
        }
        & > .linetable--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .linetable--header { background: """ + palette.ANSI_HEADER_BACKGROUND + "; color: " + \
        palette.ANSI_DEFAULT + """; }
        & > .linetable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    BINDINGS = keys.bindings(keys.LINE_TABLE)

    class HeaderClicked(Message):
        """A click on a column's label."""

        def __init__(self, table: LineTable, column: int) -> None:
            super().__init__()
            self.table = table
            self.column = column

    def __init__(self, labels: Sequence[str], *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._labels: Cells = tuple(Text(label) for label in labels)
        self._keys: list[Hashable] = []
        self._rows: Sequence[Cells] = []  # a subclass may hand over rows made only when read (tui/fleet/host_table)
        self._safe: dict[Hashable, tuple[Cells, tuple[int, ...]]] = {}  # cells made safe, and their widths
        self._widths: tuple[int, ...] = tuple(label.cell_len for label in self._labels)
        self._cursor = 0
        self.chosen = False  # the cursor was put on a row (a key, a click): it follows that row's key from then on
        # A few screens of rows: a row whose figures changed never comes back, so more only keeps dead strips
        # (4096 of them, ~4 KiB each at 200 columns, grew a 1 s monitor from 42.5 to 58.8 MiB over its first 20 min).
        self._strips: LRUCache[tuple[Hashable, ...], Strip] = LRUCache(STRIP_CACHE_ROWS)
        self._fitted: tuple[tuple[tuple[int, ...], int] | None, tuple[int, ...]] = (None, ())  # for, widths drawn
        self._base: tuple[object, Style] | None = None  # (the visual style it was made for, the Rich style)

    # ----- data -----

    def set_labels(self, labels: Sequence[str]) -> None:
        """New column labels (a sort arrow moved): the header line is drawn again, and the widths if they grow."""
        texts = tuple(Text(label) for label in labels)
        if [t.plain for t in texts] == [t.plain for t in self._labels]:
            return
        self._labels = texts
        self._widths = tuple(max(width, label.cell_len) for width, label in zip(self._widths, texts, strict=True))
        self.virtual_size = Size(self._total_width(), len(self._rows) + 1)
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        return self._cursor if self._rows else -1

    def get_row_at(self, index: int) -> Cells:
        return self._rows[index]

    def set_rows(self, keys: Sequence[Hashable], cells: Sequence[Sequence[object]],
                 cursor: int | None = None) -> None:
        """`keys[i]` names the content of `cells[i]` (equal keys, equal cells): a known row is not made safe or
        measured again, and an unchanged line on screen is not repainted."""
        old_keys, old_widths, old_cursor = self._keys, self._widths, self.cursor_row
        old_top = int(self.scroll_offset.y)
        known, made = self._safe, {}
        self._keys = list(keys)
        rows: list[Cells] = []
        self._rows = rows
        widths = [label.cell_len for label in self._labels]
        for key, row in zip(self._keys, cells, strict=True):
            entry = known.get(key) or made.get(key)
            if entry is None:
                texts = tuple(_cell(value) for value in row)
                entry = (texts, tuple(text.cell_len for text in texts))
            made[key] = entry
            rows.append(entry[0])
            for index, cell_width in enumerate(entry[1]):
                if cell_width > widths[index]:
                    widths[index] = cell_width
        self._safe = made  # the rows on show only: it cannot outgrow the table
        self._widths = tuple(widths)
        self._cursor = max(0, min(self._cursor if cursor is None else cursor, len(self._rows) - 1))
        self._set_virtual_size(Size(self._total_width(), len(self._rows) + 1))
        if self._cursor != old_cursor:
            self._scroll_to_cursor(animate=False)  # a selected pid that moved stays in sight
        if self._widths != old_widths:  # every row moved sideways: all drawn again
            self.refresh()
            return
        top = int(self.scroll_offset.y)
        if top != old_top:  # every row moved up or down: Textual's watch_scroll_y repainted the whole table
            return
        # Only the rows on screen whose content changed: a process that came or went changes the rows below it and
        # the one past the shorter list's end, not the header or the rows above it (each row drawn again costs
        # Textual a styled line, and an idle box's process count changes every few ticks).
        width = max(self.virtual_size.width, self.size.width)
        moved = (old_cursor, self._cursor) if old_cursor != self._cursor else ()
        new_keys, old_count, new_count = self._keys, len(old_keys), len(self._keys)
        changed = [Region(0, index + 1 - top, width, 1)  # + 1: the header row; one refresh for them all
                   for index in range(top, min(max(old_count, new_count), top + self.size.height))
                   if index in moved or old_keys[index:index + 1] != new_keys[index:index + 1]]  # one list's end
        if changed:
            self.refresh(*changed)

    def _set_virtual_size(self, size: Size) -> None:
        """A process came or went. `virtual_size` is a layout reactive: each change laid the whole screen out again
        (10 passes in 30 s on an idle box, about a quarter of the monitor's CPU). Where the table's own size does
        not follow its rows (a height in fr or cells, as the process table's 1fr), no scrollbar appears or goes and
        the width that matters is unchanged, the new size is set without that pass: the scrollbar, where there is
        one, is told the new height and the scroll position kept in range. Any other change takes the pass."""
        old, styles, seen = self.virtual_size, self.styles, self.container_size
        fixed = styles.height is not None and not styles.height.is_auto and seen.height > 0
        same_width = size.width == old.width or styles.overflow_x == "hidden"
        scrolls = size.height > seen.height
        if size == old or not (fixed and same_width and styles.overflow_y == "auto"
                               and scrolls == (old.height > seen.height) == self.show_vertical_scrollbar):
            self.virtual_size = size
            return
        self.set_reactive(cast("Reactive[Size]", LineTable.virtual_size), size)  # the class's descriptor
        if scrolls:
            self.vertical_scrollbar.window_virtual_size = size.height
        self.scroll_y = self.validate_scroll_y(self.scroll_y)

    def move_cursor(self, *, row: int, animate: bool = False) -> None:
        self.chosen = True
        if not self._rows:
            return
        old, self._cursor = self._cursor, max(0, min(row, len(self._rows) - 1))
        if old != self._cursor:
            self.refresh_line(old + 1)
            self.refresh_line(self._cursor + 1)
        self._scroll_to_cursor(animate)

    def unchoose(self) -> None:
        """No row chosen any more (a new sort): the cursor and the view go back to the top."""
        self.chosen = False
        if self._cursor:
            self.move_cursor(row=0)
            self.chosen = False

    def _scroll_to_cursor(self, animate: bool) -> None:
        rows = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_offset.y)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=animate)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=animate)

    def _total_width(self) -> int:
        return sum(width + 2 * PAD for width in self._widths if width)  # an empty column takes no cell at all

    # ----- input -----

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self._cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self._cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down(self) -> None:
        self.move_cursor(row=self._cursor + max(1, self.scrollable_content_region.height - 1))

    def action_scroll_home(self) -> None:
        self.move_cursor(row=0)

    def action_scroll_end(self) -> None:
        self.move_cursor(row=len(self._rows) - 1)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x + int(self.scroll_offset.x)
            for column, width in enumerate(self._widths):
                if not width:
                    continue
                x -= width + 2 * PAD
                if x < 0:
                    self.post_message(self.HeaderClicked(self, column))
                    return
            return
        self.move_cursor(row=int(self.scroll_offset.y) + offset.y - 1)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # ----- drawing -----

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = int(self.scroll_offset.x), int(self.scroll_offset.y)
        width = self.scrollable_content_region.width
        base = self._base_style()
        if y == 0:
            over: Style | None = self.get_component_rich_style("linetable--header")
            strip = self._strip(("header", *(label.plain for label in self._labels)), self._labels, base, over)
        else:
            index = scroll_y + y - 1
            if not 0 <= index < len(self._rows):
                return Strip.blank(width, base)
            # The cursor's colours win over a cell's own, as in DataTable: a red CPU% stays readable on it.
            over = self.get_component_rich_style("linetable--cursor") if index == self._cursor else None
            strip = self._strip(self._keys[index], self._rows[index], base, over)
        # The header and the cursor fill the line, past the last column, as DataTable's do.
        return strip.crop_extend(scroll_x, scroll_x + width, base if over is None else base + over)

    def _drawn_widths(self) -> tuple[int, ...]:
        """The widths drawn. A table that does not scroll sideways (overflow-x hidden, as the process table) gives
        its last column what the others leave of the visible width: a long command line ends in `…` and its
        padding before the scrollbar, not cut off under it (the scrollbar drawn over COMMAND)."""
        widths, room = self._widths, self.scrollable_content_region.width
        if self.styles.overflow_x != "hidden" or room <= 0:
            return widths
        if self._fitted[0] == (widths, room):
            return self._fitted[1]
        shown = [index for index, width in enumerate(widths) if width]
        fitted = widths
        if shown:
            last = shown[-1]
            left = room - sum(widths[i] + 2 * PAD for i in shown[:-1]) - 2 * PAD
            if left < widths[last]:
                fitted = (*widths[:last], max(1, left), *widths[last + 1:])
        self._fitted = ((widths, room), fitted)
        return fitted

    def _base_style(self) -> Style:
        """The table's Rich style, made again only when Textual makes its visual style again (a style change,
        focus, the theme): `rich_style` walks every ancestor's styles on each call, and each row drawn asked."""
        visual = self.visual_style
        if self._base is None or self._base[0] is not visual:
            self._base = (visual, self.rich_style)
        return self._base[1]

    def _strip(self, key: Hashable, cells: Cells, style: Style, over: Style | None) -> Strip:
        widths = self._drawn_widths()
        cache_key = (key, widths, style, over)
        strip = self._strips.get(cache_key)
        if strip is None:
            strip = self._build(cells, widths, style, over)
            self._strips[cache_key] = strip
        return strip

    def _build(self, cells: Cells, widths: tuple[int, ...], style: Style, over: Style | None) -> Strip:
        console = self.app.console
        segments: list[Segment] = []
        pad = Segment(" " * PAD)
        for value, width in zip(cells, widths, strict=True):
            if not width:  # an empty column (no label, no value): left out, padding too
                continue
            # a plain cell (most): its one piece built directly, the same as the general path's
            pieces = [_plain_cell(console, value, width)] if not value.spans and value.cell_len <= width else \
                _cell_pieces(console, value, width)
            segments += Segment.apply_style([pad, *pieces, pad], style, over)
        # One segment per run of one style across the cells, not per cell: each costs the terminal a style change
        # (a row of plain cells is one), and the compositor a step when it lays the row into the screen's line.
        return Strip(list(Segment.simplify(segments)), sum(width + 2 * PAD for width in widths if width))
