from __future__ import annotations

from rich.style import Style as RichStyle
from rich.text import Span, Text
from textual.geometry import Region
from textual.strip import Strip

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


def test_a_title_set_again_to_the_same_text_repaints_nothing() -> None:
    """Textual repaints the whole panel, border included, whenever border_title is set: panels set theirs each
    tick, so only a title that reads differently may reach it."""
    panel = Lines(["a"])
    calls = _laid_out(panel, 10)
    panel.set_title("Advice")
    panel.set_title("Advice")
    panel.set_title(Text("Advice"))
    assert calls == [((), False)] and panel.border_title == "Advice"
    panel.set_title(Text("Advice · 1 finding", style="bold"))
    assert len(calls) == 2 and "Advice · 1 finding" in str(panel.border_title)


def test_a_hidden_panel_asks_for_no_layout() -> None:
    panel = Lines(["no workload"])
    panel.display = False
    calls = _laid_out(panel, 20)
    panel.text = ["RUNNING"]
    panel.changed()
    assert calls == []
    assert [line.plain for line in panel.cached_lines(20)] == ["RUNNING"]  # what it shows once displayed again


def cells(strip: Strip) -> list[tuple[object, ...]]:
    """A drawn row cell by cell: character, colours, attributes, link and click offset (how a row is cut into
    segments is not what the terminal shows)."""
    out: list[tuple[object, ...]] = []
    for segment in strip:
        style = segment.style or RichStyle()
        x, y = (style.meta or {}).get("offset", (None, None))
        look = (style.color, style.bgcolor, style._attributes & style._set_attributes, style.link)  # noqa: SLF001
        out += [(char, look, None if x is None else x + i, y) for i, char in enumerate(segment.text)]
    return out


async def test_line_by_line_drawing_matches_textual_drawing_the_whole_text() -> None:
    """Every row of every panel, drawn by the panel's render_line, is segment for segment what Textual's own
    whole-text path draws (styles, the line's base style, click offsets), on a screen with GPUs and findings."""
    from textual.widget import Widget

    from hwtop.widgets.header import HeaderBar
    from tests.widgets.test_advice import troubled_frames, warmed_app

    app = warmed_app(troubled_frames())
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        rows = 0
        for panel in app.screen.query(TextPanel):
            if not panel.display:
                continue
            for y in range(panel.size.height):
                ours = cells(TextPanel.render_line(panel, y))
                panel._dirty_regions.add(panel.size.region)  # noqa: SLF001 - Textual's path renders afresh
                assert ours == cells(Widget.render_line(panel, y)), (type(panel).__name__, y)
                rows += 1
        assert rows >= 12
        header = app.query_one(HeaderBar)
        ours = cells(HeaderBar.render_line(header, 0))
        header._dirty_regions.add(header.size.region)  # noqa: SLF001
        assert ours == cells(Widget.render_line(header, 0)) and len(ours) > 40


async def test_a_tick_that_brings_the_same_data_builds_no_lines(monkeypatch) -> None:
    """Disks with no traffic, no finding, no GPU: most ticks of an idle box. Those panels build nothing; a panel
    whose data did change builds its lines again, and a new disk reading is drawn."""
    from msgspec.structs import replace

    from hwtop.tui.app import HwtopApp
    from hwtop.widgets.advice import AdvicePanel
    from hwtop.widgets.disks import DisksPanel
    from hwtop.widgets.gpu import GpuPanel
    from hwtop.widgets.memory import MemoryPanel
    from tests.factories import ScriptedSource, host_snapshot

    built: dict[str, int] = {}
    for panel in (AdvicePanel, DisksPanel, GpuPanel, MemoryPanel):
        original = panel.lines

        def counted(self, width: int, _original=original, _name=panel.__name__) -> list[Text]:
            built[_name] = built.get(_name, 0) + 1
            return _original(self, width)
        monkeypatch.setattr(panel, "lines", counted)
    first = host_snapshot()
    app = HwtopApp(ScriptedSource([first]), interval=30.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.first_frame.wait()
        while app.ticks < 2:  # the early second tick (0.25 s after the first) is in: no tick comes for 30 s
            await pilot.pause(0.05)
        await pilot.pause()
        before = dict(built)
        later = replace(first, time=first.time + 1)
        app.show(app.session.advance(lambda: later))
        await pilot.pause()
        assert built["DisksPanel"] == before["DisksPanel"]
        assert built["AdvicePanel"] == before["AdvicePanel"]
        assert built["GpuPanel"] == before["GpuPanel"]
        busy = replace(later, time=later.time + 1,
                       disks=tuple(replace(d, read_bytes_per_s=123e6) for d in later.disks))
        app.show(app.session.advance(lambda: busy))
        await pilot.pause()
        assert built["DisksPanel"] > before["DisksPanel"]
        assert "123.0MB/s" in "\n".join(line.plain for line in app.main.panels["disks"].cached_lines(
            app.main.panels["disks"].content_size.width))


def _rich_runs(line: Text, console) -> list[tuple[str, object]]:
    """What line_strip took from Rich before: the line with its base style as a first span, rendered."""
    whole = Text()
    whole.append_text(line)
    return [(text, style) for text, style, _ in whole.render(console, end="")]


def test_a_lines_pieces_are_richs_own() -> None:
    """The pieces made without Rich's walk over the spans (spans one after another) are Rich's, text and style;
    spans that overlap are left to Rich."""
    from rich.console import Console
    from rich.text import Span

    from hwtop.widgets.strips import _runs

    console = Console()
    bar = Text("cpu ", style="bold")
    bar.append("████", style="green")
    bar.append("░░", style=RichStyle(color="grey37"))
    bar.append(" 12%")
    lines = [Text(""), Text("plain"), Text("based", style="red on blue"), Text("", style="bold"), bar,
             Text("ab cd ef", spans=[Span(0, 2, "red"), Span(2, 2, "blue"), Span(5, 8, "italic")]),
             Text("ab cd ef", style="dim", spans=[Span(0, 2, "red"), Span(2, 5, "blue")]),
             Text("gap at the end", spans=[Span(4, 6, "u")])]
    for line in lines:
        assert _runs(line, console) == _rich_runs(line, console), line.markup
    overlapping = Text("abcdef", spans=[Span(0, 4, "red"), Span(2, 6, "bold")])
    assert _runs(overlapping, console) is None
    assert _runs(Text("ab", spans=[Span(0, 5, "red")]), console) is None  # past the text's end


def test_runs_are_rich_s_own_pieces_or_none() -> None:
    """Spans one after another (gaps, empty spans, a base style or none) give Rich's pieces with the base style as a
    first span; overlapping spans or a span past the text's end give None (Rich's walk draws those)."""
    from rich.console import Console

    from hwtop.widgets.strips import _runs

    console = Console()

    def rich_walk(line: Text) -> list[tuple[str, RichStyle | None]]:
        whole = Text()
        whole.append_text(line)
        return [(text, style) for text, style, _ in whole.render(console, end="")]

    def line(base: str, *spans: tuple[int, int, str], plain: str = "abcdefghij") -> Text:
        text = Text(plain, style=base)
        for start, end, style in spans:
            text.spans.append(Span(start, end, style))
        return text

    drawn = [line("", (0, 3, "red")), line("bold", (2, 4, "red"), (4, 4, "blue"), (6, 10, "not bold on green")),
             line("italic"), line("", (1, 2, "nonsense style"), (2, 5, "")), line("dim", (0, 10, "red"))]
    for text in drawn:
        assert _runs(text, console) == rich_walk(text), text.spans
    assert _runs(line(""), console) == [("abcdefghij", None)]
    for text in (line("", (0, 4, "red"), (3, 6, "blue")), line("bold", (5, 11, "red")),
                 line("", (4, 6, "red"), (1, 2, "blue")), line("", (5, 4, "red"))):
        assert _runs(text, console) is None, text.spans
