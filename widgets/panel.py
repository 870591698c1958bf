"""Base for panels that render Rich Text from the data they were last given, sized to their content, and the one
shape every panel of the monitor has: what it takes from a Frame (`take`), the rows it needs at a width (`want`)
and its lines drawn in the rows it is given (`draw`)."""

from __future__ import annotations

import msgspec
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from hwtop.advice.thresholds import Thresholds
from hwtop.model.frame import Frame
from hwtop.model.record import Record
from hwtop.widgets.safe_text import visible
from hwtop.widgets.strips import line_strip

FRAME = 2  # a panel's border, top and bottom


class Want(Record, frozen=True):
    """What one panel could be drawn in, in lines of content (its border not counted)."""

    most: int
    fold: int
    least: int = 1  # 0: it may be left out (its border too)
    steps: tuple[int, ...] = ()  # only these heights, most first (the GPU panel's modes); empty: any in between
    frame: int = FRAME  # its border rows (0: a borderless line, as the advice pane with nothing to say)
    bare_line: bool = False  # at one line it is drawn bare, its border left out (the line names itself)

    @staticmethod
    def fixed(lines: int, frame: int = FRAME) -> Want:
        return Want(lines, lines, lines, frame=frame)

    def below(self, lines: int, floor: int) -> int | None:
        """The next height under `lines`, not under `floor`; None where there is none."""
        if self.steps:
            lower = [s for s in self.steps if floor <= s < lines]
            return max(lower) if lower else None
        return lines - 1 if lines - 1 >= floor else None

    def above(self, lines: int) -> int | None:
        """The next height over `lines`, not over `most`; None where there is none."""
        if self.steps:
            higher = [s for s in self.steps if lines < s <= self.most]
            return min(higher) if higher else None
        return lines + 1 if lines < self.most else None


class View(msgspec.Struct, frozen=True):
    """A Frame as a panel reads it: the frame, and what the screen showing it adds (the rules' thresholds, the
    terminal's size, whether `x` stops the workload shown)."""

    frame: Frame
    thresholds: Thresholds
    width: int  # the terminal's columns
    height: int  # the terminal's rows
    watching: tuple[str, ...] | None = ()  # what the rules watch (the advice pane names it while it has nothing
    # to say); None before they first ran
    workload_stops: bool = False


class TextPanel(Widget):
    """Subclasses implement `lines(width)` and call `changed()` after new data. The lines are built once per
    (data, width) and shared by layout and render; a change that keeps the panel's height repaints it without
    a layout pass (most ticks: values change, rows do not). Every line passes `visible`: a process name or GPU
    name appended to a line cannot carry a control character or a line break to the screen."""

    DEFAULT_CSS = "TextPanel { height: auto; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._generation = 0
        self._cache: tuple[tuple[int, int, bool], list[Text]] | None = None
        self._height: tuple[int, int] | None = None  # (width, rows) the last layout asked for
        self._border_shown: dict[str, _Drawn] = {}  # "title"/"subtitle" → how the text last set draws
        self._one_row_each: tuple[object, int, bool] | None = None  # (lines, width, each fits one row)
        # The widest line and whether any holds a tab, for the last two sets of lines measured (a tick's new
        # lines are the next tick's old ones, and render_line asks of them again)
        self._measured: list[tuple[list[Text], int, bool]] = []
        self._shown_inputs: object = _NOTHING_SHOWN

    def lines(self, width: int) -> list[Text]:
        raise NotImplementedError

    # The panel shape (tui/panels.py lists the monitor's panels): the screen hands each panel the frame, asks each
    # for the rows it wants at its width, shares the rows out (tui/layout.py) and has each draw in its share.
    def take(self, view: View) -> None:
        """What this panel shows of the frame, kept for `want` and `draw`; nothing is drawn yet."""
        raise NotImplementedError

    def want(self, width: int) -> Want | None:
        """The rows the data taken could be drawn in at this content width; None: not on the screen."""
        raise NotImplementedError

    def draw(self, rows: int) -> None:
        """The data taken, drawn in `rows` lines of content."""
        raise NotImplementedError

    def set_title(self, title: str | Text) -> None:
        """The border title, set only when it reads differently: Textual repaints the whole panel (every row,
        border included) whenever it is set, even to the same text, and panels set theirs each tick."""
        self._set_border("title", title)

    def set_subtitle(self, subtitle: str | Text) -> None:
        """The border subtitle, likewise set only when it reads differently."""
        self._set_border("subtitle", subtitle)

    def _set_border(self, which: str, text: str | Text) -> None:
        shown = _drawn(text)
        if shown != self._border_shown.get(which):
            self._border_shown[which] = shown
            setattr(self, f"border_{which}", text)

    def cached_lines(self, width: int) -> list[Text]:
        key = (width, self._generation, self.has_focus)  # has_focus turns true after on_focus has run
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, [visible(line) for line in self.lines(width)])
        return self._cache[1]

    def _row_count(self, width: int) -> int:
        width = max(1, width)
        return max(1, sum(max(1, -(-line.cell_len // width)) for line in self.cached_lines(width)))

    def same_as_shown(self, inputs: object) -> bool:
        """Whether a tick's data for this panel equals what its lines were last built from; a subclass's `show`
        then returns before building them again. `inputs` must compare by value (msgspec Structs, tuples of them,
        numbers): on an idle box most ticks bring no disk traffic, no finding and no GPU, and those panels cost
        nothing. A panel whose lines depend on something else as well (the terminal's height) puts it in."""
        if self._cache is not None and self._shown_inputs == inputs:
            return True
        self._shown_inputs = inputs
        return False

    def forget_shown(self) -> None:
        """The next `same_as_shown` answers no: for data that cannot be compared (updated in place)."""
        self._shown_inputs = _NOTHING_SHOWN

    def changed(self) -> None:
        """New data: repaint only if a line on screen reads differently. Values are formatted before they are
        compared, so a number that moved below the precision shown (12.31 % to 12.34 %) costs no repaint and
        sends no bytes to the terminal."""
        if not self.display:  # hidden (no workload, or hidden by the config): nothing to draw, and a layout pass
            self._generation += 1  # asked for here would reflow the whole screen every tick for nothing;
            self._cache = None  # showing it again lays it out anew
            return
        dirty: list[int] | None = None
        dirty_width: int | None = None
        if self._cache is not None:
            (width, _, _), shown = self._cache
            dirty_width = width
            lines = [visible(line) for line in self.lines(width)]
            if _same(lines, shown):
                return
            dirty = None if len(lines) != len(shown) or self._widest(lines)[0] > width or \
                self._widest(shown)[0] > width else _changed_rows(lines, shown)
            self._generation += 1
            self._cache = ((width, self._generation, self.has_focus), lines)
        else:
            self._generation += 1
        if self._height is None:
            self.refresh(layout=True)
            return
        width, rows = self._height
        # lines compared row by row at the laid-out width are one row each: their count is the height (a 256-rank
        # job table measured again every tick was a tenth of the job view's show)
        count = len(self._cache[1]) if dirty is not None and dirty_width == width and self._cache else \
            self._row_count(width)
        if count != rows:
            self.refresh(layout=True)
        elif dirty and dirty_width == width:
            # only the rows that read differently are drawn again and sent to the terminal (rows compared at the
            # width the panel is laid out at: during a resize the two may differ, and then all of it is drawn)
            self.refresh(*(Region(0, row, width, 1) for row in dirty))
        else:
            self.refresh()

    def watch_has_focus(self, focused: bool) -> None:
        """A selection is drawn only while focused. Watched, not on_focus: Textual calls a subclass's on_focus
        before its own handler sets has_focus, so lines built there drew the selection one state late."""
        super().watch_has_focus(focused)  # the :focus styles
        self.changed()

    def render(self) -> Text:
        return Text("\n").join(self.cached_lines(self.content_size.width or self.size.width))

    def render_line(self, y: int) -> Strip:
        """Line by line when every line fits its row: Textual then draws again only the rows `changed` marked
        (its styles cache keeps the others), where its own path would render the whole panel for any one row.
        A line that wraps or holds a tab, or a text selection (which spans lines), takes Textual's whole-text path."""
        lines = self.cached_lines(self.content_size.width or self.size.width)
        width = self.size.width
        if self.text_selection is not None or not self._each_fits(lines, width):
            return super().render_line(y)
        if y >= len(lines):
            return Strip.blank(width, self.visual_style.rich_style)
        return line_strip(self, lines[y], y)

    def _each_fits(self, lines: list[Text], width: int) -> bool:
        """Whether every line is one row at `width`, decided once per set of lines (not once per row drawn)."""
        known = self._one_row_each
        if known is None or known[0] is not lines or known[1] != width:
            widest, tab = self._widest(lines)
            known = self._one_row_each = (lines, width, widest <= width and not tab)
        return known[2]

    def _widest(self, lines: list[Text]) -> tuple[int, bool]:
        """(the widest line's cells, whether any line holds a tab): strips.drawable for a whole set of lines, measured
        once per set, where a 256-rank job's ~350 lines were measured three times a tick (as new, as old, to draw)."""
        for known, widest, tab in self._measured:
            if known is lines:
                return widest, tab
        widest = max((line.cell_len for line in lines), default=0)
        tab = any("\t" in line.plain for line in lines)
        self._measured = [*self._measured[-1:], (lines, widest, tab)]
        return widest, tab

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Rows the text takes at this width, counting lines that wrap."""
        rows = self._row_count(width)
        self._height = (max(1, width), rows)
        return rows


_NOTHING_SHOWN = object()
_Drawn = tuple[str, object, tuple[object, ...]]


def _drawn(text: str | Text) -> _Drawn:
    """What a border title draws: its characters, base style and spans (cheaper to build than Text.markup, which
    panels would otherwise render each tick to compare)."""
    if isinstance(text, str):
        return text, "", ()  # as Text(text) would draw it
    return text.plain, text.style, tuple(text.spans)


def _changed_rows(new: list[Text], old: list[Text]) -> list[int]:
    """The rows whose line changed, for lines that each take exactly one row before and after (then line i is
    row i; where they differ in number or one wraps, the caller draws the whole panel again)."""
    return [row for row, (a, b) in enumerate(zip(new, old, strict=True)) if a is not b and not _same([a], [b])]


def _same(new: list[Text], old: list[Text]) -> bool:
    """Drawn alike: the same characters in the same styles (Text's own `==` leaves out the base style)."""
    return len(new) == len(old) and all(
        a is b or (a.plain == b.plain and a.style == b.style and a.spans == b.spans and a.justify == b.justify)
        for a, b in zip(new, old, strict=True))  # `is`: a line a widget kept from the last tick (job_ranks' rows)
