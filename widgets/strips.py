"""One line of Rich Text as the row Textual would draw for it, without Textual's Content path.

Textual draws a widget's text by converting it to its own Content and rendering that, most of a tick's drawing;
Rich renders the same line to segments several times faster (benchmarks/README.md). What Textual adds
is its colours (a Rich colour goes through Textual's own: an 8-bit grey becomes truecolour) on the widget's base
style, and click offsets. Both are done here, the colour conversion cached per style
(tests/widgets/test_strips.py compares every row with Textual's own drawing, cell by cell)."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.terminal_theme import TerminalTheme
from rich.text import Text
from textual.cache import LRUCache
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.widget import Widget

_STYLES: LRUCache[tuple[int, VisualStyle, RichStyle | None], RichStyle] = LRUCache(1024)
# A segment's style with its click offset, as Textual's Strip.apply_offsets makes it (a new Style per segment, each
# added to a new meta Style): a changed row mostly keeps its segments' styles at the same offsets. Bounded: a
# 256-core CPU panel's changed rows hold a few thousand segments.
_OFFSET_STYLES: LRUCache[tuple[RichStyle | None, int, int], RichStyle] = LRUCache(4096)


def drawable(line: Text, width: int) -> bool:
    """Whether `line_strip` draws this line as Textual would: one row (it neither wraps nor holds a tab)."""
    return line.cell_len <= width and "\t" not in line.plain


def line_strip(widget: Widget, line: Text, y: int) -> Strip:
    """Row `y` of `widget`, showing `line` (which `drawable` accepted)."""
    base = widget.visual_style
    theme = widget.app.ansi_theme
    console = widget.app.console
    runs = _runs(line, console)
    if runs is None:  # spans that overlap (or reach past the text): Rich's own walk over them
        whole = Text()
        whole.append_text(line)  # its base style as a span: Text.render leaves a base style out
        runs = [(text, style) for text, style, _ in whole.render(console, end="")]
    segments = [Segment(text, _drawn_style(theme, base, style)) for text, style in runs]
    return Strip(_with_offsets(segments, y))


def _runs(line: Text, console: Console) -> list[tuple[str, RichStyle | None]] | None:
    """The (text, style) pieces Rich's `Text.render` yields for `line` with its base style as a first span (what
    line_strip drew before), made without Rich's walk when the spans lie one after another without overlapping
    (a panel's lines: pieces appended in turn), as most of a changed line's drawing went to that walk; None for
    any other line. Same pieces, same styles: a piece at every span's start and end, each styled by
    Style.combine over the null style, the base style and the span's, in that order (tests/widgets/test_strips.py
    compares both ways on every line of the demo's screens)."""
    plain, spans, base = line.plain, line.spans, line.style
    size = len(plain)
    if not spans and not base:
        return [(plain, None)]
    gap = span_style(console, base)  # Style.combine over the null style and it: the null style adds nothing
    runs: list[tuple[str, RichStyle | None]] = []
    at = 0
    for span in spans:
        if span.start < at or span.end < span.start or span.end > size:
            return None
        if span.start > at:
            runs.append((plain[at:span.start], gap))
        if span.end > span.start:  # Style.combine is `+`, whose sums Rich caches
            runs.append((plain[span.start:span.end], gap + span_style(console, span.style)))
        at = span.end
    if size > at:
        runs.append((plain[at:], gap))
    return runs


def span_style(console: Console, style: str | RichStyle) -> RichStyle:
    """A span's style as Rich's Text.render reads it."""
    return console.get_style(style, default=RichStyle.null())


def _with_offsets(segments: list[Segment], y: int) -> list[Segment]:
    """The segments as Strip.apply_offsets(0, y) gives them (each style with {"offset": (x, y)} in its meta), the
    styles remembered."""
    out: list[Segment] = []
    x = 0
    for text, style, _ in segments:
        key = (style, x, y)
        found = _OFFSET_STYLES.get(key)
        if found is None:
            offset = RichStyle.from_meta({"offset": (x, y)})
            found = _OFFSET_STYLES[key] = style + offset if style else offset
        out.append(Segment(text, found))
        x += len(text)
    return out


def _drawn_style(theme: TerminalTheme, base: VisualStyle, style: RichStyle | None) -> RichStyle:
    key = (id(theme), base, style)
    found = _STYLES.get(key)
    if found is None:
        found = base.rich_style if style is None else \
            (base + VisualStyle.from_rich_style(style, theme)).rich_style
        _STYLES[key] = found
    return found
