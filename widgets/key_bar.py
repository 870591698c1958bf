"""The footer: one line of the screen's keys, ` q Quit  p Pause …`, and the command palette's key at the right.

Drawn as it looks in Textual's own `Footer`, from one widget instead of the Footer's one per key (nine on the main
screen): those widgets, their stylesheet and their second composition were a visible part of hwtop's first frame
(benchmarks/README.md). What a user does with it is kept: the keys shown follow the focused widget and the
screen (a screen's or the app's `check_action` hides a key or dims it), and a click on a key presses it."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen

PALETTE_SEPARATOR = "\N{LEFT ONE EIGHTH BLOCK}"  # as the Footer's `vkey` border draws it


class Shown(NamedTuple):
    key: str  # the Textual key it presses
    display: str  # how it is written (`?`, `^p`)
    label: str
    enabled: bool


class KeyBar(Widget):
    """Docked at the bottom, one row. Rebuilt only when the screen's bindings change (a focus change, a screen
    pushed): a tick never touches it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--label", "key-bar--separator", "key-bar--hover"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-bar--key { color: $footer-key-foreground; background: $footer-key-background; text-style: bold; }
        & > .key-bar--label { color: $footer-description-foreground; background: $footer-description-background; }
        & > .key-bar--separator { color: $foreground 20%; }
        & > .key-bar--hover { background: $block-hover-background; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._spans: list[tuple[int, int, Shown]] = []  # (first cell, end cell, key) of each key drawn
        self._hover: str | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen:
            self.refresh()

    def keys(self) -> tuple[list[Shown], Shown | None]:
        """The keys to show, in the order bound, and the command palette's (None when the app has none)."""
        app = self.app
        shown: list[Shown] = []
        seen_actions: set[str] = set()
        palette: Shown | None = None
        for _, binding, enabled, _ in self.screen.active_bindings.values():
            item = Shown(binding.key, app.get_key_display(binding), binding.description, enabled)
            if binding.key == app.COMMAND_PALETTE_BINDING:
                palette = item
            elif binding.show and binding.action not in seen_actions:  # one entry per action, as the Footer
                seen_actions.add(binding.action)
                shown.append(item)
        if not app.ENABLE_COMMAND_PALETTE:
            palette = None
        return shown, palette

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y != 0 or width <= 0:
            return Strip.blank(width, base)
        key_style = base + self.get_component_rich_style("key-bar--key")
        label_style = base + self.get_component_rich_style("key-bar--label")
        hover = self.get_component_rich_style("key-bar--hover")
        shown, palette = self.keys()
        right: list[Segment] = []
        right_spans: list[tuple[int, int, Shown]] = []
        if palette is not None:
            separator = base + self.get_component_rich_style("key-bar--separator")
            right = [Segment(PALETTE_SEPARATOR, separator), *self._key(palette, key_style, label_style, hover, 0, 0)]
            right.append(Segment(" ", base))
        right_width = sum(cell_len(segment.text) for segment in right)
        if right_width > width:  # too narrow for the palette's key: the others take the row
            right, right_width = [], 0
        room = width - right_width
        left: list[Segment] = []
        spans: list[tuple[int, int, Shown]] = []
        x = 0
        for item in shown:
            segments = self._key(item, key_style, label_style, hover, 1, 1)
            cells = sum(cell_len(segment.text) for segment in segments)
            if x + cells > room:
                break
            left.extend(segments)
            spans.append((x, x + cells, item))
            x += cells
        left.append(Segment(" " * (room - x), base))
        if right and palette is not None:
            right_spans.append((room + 1, width - 1, palette))  # after the separator, before the last blank
        self._spans = spans + right_spans
        return Strip([*left, *right]).adjust_cell_length(width, base)

    def _key(self, item: Shown, key_style: Style, label_style: Style, hover: Style, pad: int,
             gap: int) -> list[Segment]:
        """` q ` then `Quit `: the key padded by `pad`, the label followed by `gap` spaces."""
        if item.key == self._hover:
            key_style, label_style = key_style + hover, label_style + hover
        if not item.enabled:
            key_style, label_style = key_style + Style(dim=True), label_style + Style(dim=True)
        if not item.label:  # a key without a word: the key alone, unpadded, as the Footer draws it
            return [Segment(item.display, key_style)]
        padding = " " * pad
        label = f"{' ' if pad == 0 else ''}{item.label}{' ' * gap}"
        return [Segment(f"{padding}{item.display}{padding}", key_style), Segment(label, label_style)]

    def key_at(self, x: int) -> Shown | None:
        """The key drawn at cell `x` of the bar, if any."""
        return next((item for start, end, item in self._spans if start <= x < end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A click presses the key, as a click on a key of Textual's Footer does; a dimmed one rings the bell."""
        item = self.key_at(event.x)
        if item is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self.key_at(event.x)
        self._set_hover(item.key if item is not None else None)

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, key: str | None) -> None:
        if key != self._hover:
            self._hover = key
            self.refresh()
