"""What Textual does for each frame of an idle monitor: the lines each widget is asked for and renders, the
layout passes and the bytes sent; and what a terminal would show after each frame.

    python -m benchmarks.render_frames --recording FILE [--size 200x50] [--frames 60] [--screens OUT] [--check]
    python -m benchmarks.render_frames --demo dgx-a100 [--size 80x24] [--check]
    PYTHONPATH=TREE python3 benchmarks/render_frames.py ...      (another checkout's product, this harness)

The real app (headless, Textual's Pilot), shown one Frame at a time through `HwtopApp.show` as its sampler would,
then Textual's own idle refresh; no tick of its own in between. The frames come from a recording, played through
a Session, so two trees are shown the same frames: this machine's (`python -m hwtop record FILE --seconds 80`) or
a demo's (`... record FILE --demo dgx-a100 --seconds 80`); or, without one, from a demo played on a fake clock
(its figures move from run to run). Nothing in the product is changed: the counters are wrappers installed here.

What a user sees: every update Textual hands the driver is rendered to the bytes it would write
(`render_segments`) and those bytes are applied to a small terminal model (cursor moves and SGR colours, the only
sequences Textual's updates hold); `--screens` writes each frame's screen (its text and each cell's SGR) as one
JSON line, so two trees' files can be compared (`cmp`). `--check` also redraws the whole screen from nothing after
each frame (every widget's styles cache emptied) and compares it with the terminal model: an update that left
a stale cell fails the run (the counts are then not those of a normal run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec
from rich.cells import cell_len

import hwtop.tui.app as app_module
from hwtop.model.frame import Frame
from hwtop.model.history import History
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from tests.factories import ScriptedSource

if TYPE_CHECKING:
    from hwtop.tui.textual_compat import Compositor, StylesCache

_SEQUENCE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|([^\x1b]+)")


class Terminal:
    """The screen a terminal shows after Textual's writes: a character and its SGR parameters per cell."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.cells = [[(" ", "")] * width for _ in range(height)]
        self.x = self.y = 0
        self.sgr = ""

    def feed(self, data: str) -> None:
        for found in _SEQUENCE.finditer(data):
            params, command, text = found.groups()
            if text is not None:
                self._text(text)
            elif command == "H":
                row, _, column = params.partition(";")
                self.y, self.x = int(row or 1) - 1, int(column or 1) - 1
            elif command == "m":
                self.sgr = "" if params in ("", "0") else params
            else:
                raise ValueError(f"unexpected sequence ESC[{params}{command}")

    def _text(self, text: str) -> None:
        for char in text:
            if char == "\n":  # Textual moves the cursor before each line's first segment
                continue
            cells = cell_len(char)
            if 0 <= self.y < self.height and 0 <= self.x < self.width:
                self.cells[self.y][self.x] = (char, self.sgr)
                for extra in range(1, cells):
                    if self.x + extra < self.width:
                        self.cells[self.y][self.x + extra] = ("", self.sgr)
            self.x += cells

    def screen(self) -> dict[str, list[str]]:
        return {"text": ["".join(c for c, _ in row) for row in self.cells],
                "sgr": [" ".join(s or "-" for _, s in row) for row in self.cells]}


class Counts:
    """Counters for the frame being drawn; `take` hands them over and starts the next."""

    def __init__(self) -> None:
        self.now: dict[str, float] = defaultdict(float)

    def add(self, name: str, amount: float = 1) -> None:
        self.now[name] += amount

    def take(self) -> dict[str, float]:
        taken, self.now = dict(self.now), defaultdict(float)
        return taken


def _name(widget: object) -> str:
    node_id = getattr(widget, "id", None)
    return f"{type(widget).__name__}#{node_id}" if node_id else type(widget).__name__


def install(counts: Counts, terminal: Callable[[], Terminal | None]) -> Callable[[], None]:
    """Wrappers around Textual's render path that count into `counts` and feed the terminal model; the function
    returned takes them out again."""
    from textual.app import App
    from textual.widget import Widget

    compat = _compat()
    compositor: type[Compositor] = compat.Compositor
    styles_cache: type[StylesCache] = compat.StylesCache
    originals: list[tuple[type, str, object]] = []

    def wrap(owner: type, name: str, wrapper: Callable[..., Any]) -> None:
        originals.append((owner, name, vars(owner)[name]))
        setattr(owner, name, wrapper)

    render_lines = Widget.render_lines

    def counted_render_lines(self: Widget, crop: Any) -> Any:
        counts.add(f"asked {_name(self)}", crop.height)
        counts.add("lines asked", crop.height)
        return render_lines(self, crop)

    styles_line = styles_cache.render_line

    def counted_styles_line(self: StylesCache, styles: Any, y: int, *args: Any, **kwargs: Any) -> Any:
        content = args[5] if len(args) > 5 else kwargs.get("render_content_line")
        counts.add(f"rendered {_name(getattr(content, '__self__', None))}")
        counts.add("lines rendered")
        return styles_line(self, styles, y, *args, **kwargs)

    partial = compositor.render_partial_update

    def counted_partial(self: Compositor) -> Any:
        update = partial(self)
        if update is not None:
            counts.add("spans", len(update.spans))
        return update

    full = compositor.render_full_update

    def counted_full(self: Compositor, simplify: bool = False) -> Any:
        counts.add("full updates")
        return full(self, simplify)

    reflow = compositor.reflow

    def counted_reflow(self: Compositor, *args: Any, **kwargs: Any) -> Any:
        counts.add("layout passes")
        return reflow(self, *args, **kwargs)

    display = App._display

    def counted_display(self: App[Any], screen: Any, renderable: Any) -> None:
        if hasattr(renderable, "render_segments"):  # Textual's screen updates
            data = renderable.render_segments(self.console)
            counts.add("updates")
            counts.add("bytes", len(data.encode("utf-8", "replace")))
            shown = terminal()
            if shown is not None:
                shown.feed(data)
        display(self, screen, renderable)

    wrap(Widget, "render_lines", counted_render_lines)
    wrap(styles_cache, "render_line", counted_styles_line)
    wrap(compositor, "render_partial_update", counted_partial)
    wrap(compositor, "render_full_update", counted_full)
    wrap(compositor, "reflow", counted_reflow)
    wrap(App, "_display", counted_display)

    def undo() -> None:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)

    return undo


def _marked(mark: Callable[[str], None], holder: dict[str, Any]) -> Callable[[], None]:
    """Marks around the screen's refresh; the function returned takes them out again."""
    from textual.screen import Screen

    refresh = vars(Screen)["_compositor_refresh"]

    def marked(self: Screen[Any]) -> None:
        mark(f"{holder.get('frame', 0)} until the refresh")
        refresh(self)
        mark(f"{holder.get('frame', 0)} refresh")

    Screen._compositor_refresh = marked  # type: ignore[method-assign]

    def undo() -> None:
        Screen._compositor_refresh = refresh  # type: ignore[method-assign]

    return undo


def _compat() -> Any:
    """The tree's tui/textual_compat.py where it has what this harness reads (Textual's private names live there
    only), else this checkout's: an older tree measured for an A/B has the same Textual underneath."""
    import hwtop.tui.textual_compat as compat

    if all(hasattr(compat, name) for name in ("Compositor", "StylesCache", "screen_redrawn")):
        return compat
    import importlib.util

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tui", "textual_compat.py")
    spec = importlib.util.spec_from_file_location("render_frames_compat", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Playlist:
    """The snapshots in order, one a sample (the last again once they run out)."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots, self.index, self.history = snapshots, 0, History()

    def sample(self) -> Snapshot:
        snapshot = self.snapshots[min(self.index, len(self.snapshots) - 1)]
        if self.index and snapshot.processes == self.snapshots[self.index - 1].processes:
            # as the sampler hands them on between two reads of the process list: the same tuple (a recording
            # decodes each line anew), which the process table recognises without comparing
            snapshot = msgspec.structs.replace(snapshot, processes=self.snapshots[self.index - 1].processes)
            self.snapshots[self.index] = snapshot
        self.index += 1
        self.history.push(snapshot)
        return snapshot

    def close(self) -> None:
        pass


def frames_of(count: int, recording: str | None, demo: str = "dgx-a100") -> list[Frame]:
    """`count` Frames of a recording (any machine's, a demo's too: `hwtop record --demo dgx-a100`), or of a demo
    played on a fake clock (its figures move from run to run: for counts, not for comparing two trees' screens)."""
    if recording is not None:
        from hwtop.recording.store import load

        played = load(recording)
        snapshots = [played.snapshot(i) for i in range(len(played))]
    else:
        from hwtop.demo.machine import demo_sampler
        from tests.tui.screens import EPOCH, FakeClock

        clock = FakeClock()
        sampler = demo_sampler(demo, seed=7, clock=clock, wall=lambda: EPOCH + clock.t)
        snapshots = []
        try:
            while len(snapshots) < count:
                snapshots.append(sampler.sample())
                clock.t += 1.0
        finally:
            sampler.close()
    session = Session(_Playlist(snapshots[:count]))
    try:
        return [session.tick() for _ in range(min(count, len(snapshots)))]
    finally:
        session.close()


class _Shown(HwtopApp):
    """The app with no sampler of its own: the harness hands it each Frame."""

    CSS_PATH = os.path.join(os.path.dirname(app_module.__file__), str(HwtopApp.CSS_PATH))  # found beside the app

    async def _poll(self, first_wait: float = 0.0) -> None:
        return


def _fresh(app: HwtopApp, width: int, height: int) -> Terminal:
    """The whole screen drawn from nothing (every visible widget's kept lines dropped), as a terminal shows it."""
    fresh = Terminal(width, height)
    for y, strip in enumerate(_compat().screen_redrawn(app.screen)):
        fresh.feed(f"\x1b[{y + 1};1H" + strip.render(app.console))
    return fresh


async def measure(frames: list[Frame], size: tuple[int, int], warmup: int, screens: str | None,
                  check: bool, mark: Callable[[str], None] | None = None) -> list[dict[str, float]]:
    """Each frame after `warmup`'s counts. With `mark` (under callgrind: benchmarks/callgrind_marks.py) nothing is
    counted, and the instructions are marked by part: the show, Textual until the screen's refresh, the refresh
    (compositor and the update's bytes), the rest (Textual's idle, the Pilot) until the next show."""
    counts = Counts()
    holder: dict[str, Any] = {}
    undo = install(counts, lambda: holder.get("terminal")) if mark is None else _marked(mark, holder)
    app = _Shown(ScriptedSource([frames[0].snapshot]))
    per_frame: list[dict[str, float]] = []
    out = open(screens, "w") if screens else None  # noqa: SIM115 - closed below
    try:
        async with app.run_test(size=size) as pilot:
            if screens or check:  # the model costs as much as Textual's write: left out of a plain count
                holder["terminal"] = Terminal(*size)
            app.show(frames[0])
            await pilot.pause()
            app.refresh()  # the whole screen once: the terminal model starts from a full frame
            await pilot.pause()
            counts.take()
            for number, frame in enumerate(frames[1:], 1):
                holder["frame"] = number
                if mark is not None:
                    mark(f"{number - 1} rest")
                app.show(frame)
                if mark is not None:
                    mark(f"{number} show")
                await pilot.pause()
                taken = counts.take()
                if number > warmup:
                    per_frame.append(taken)
                terminal = holder.get("terminal", Terminal(*size))
                if out is not None:
                    out.write(json.dumps({"frame": number, **terminal.screen()}) + "\n")
                if check:
                    fresh = _fresh(app, *size)
                    if fresh.cells != terminal.cells:
                        rows = [y for y in range(size[1]) if fresh.cells[y] != terminal.cells[y]]
                        raise Stale(f"frame {number}: the terminal differs from a full redraw in rows {rows}:\n"
                                         + "\n".join(f"shown {''.join(c for c, _ in terminal.cells[y])}\n"
                                                     f"fresh {''.join(c for c, _ in fresh.cells[y])}"
                                                     for y in rows[:4]))
                    counts.take()
    finally:
        undo()
        if out is not None:
            out.close()
    return per_frame


class Stale(Exception):
    """A cell on the terminal is not what a full redraw draws there."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recording", help="the frames: a recording (`python -m hwtop record FILE --seconds 80`, "
                        "with --demo PROFILE for a demo machine's)")
    parser.add_argument("--demo", default="dgx-a100", help="without --recording: this demo, on a fake clock")
    parser.add_argument("--size", default="200x50")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5, help="frames left out of the figures")
    parser.add_argument("--screens", help="write each frame's screen to this file (JSON lines)")
    parser.add_argument("--check", action="store_true", help="compare each frame with a full redraw")
    parser.add_argument("--instructions", action="store_true", help="count each part's instructions with "
                        "valgrind's callgrind instead (a run of the same frames under valgrind)")
    parser.add_argument("--tree", default=ROOT, help="with --instructions: the checkout whose product is measured")
    parser.add_argument("--marks", help=argparse.SUPPRESS)  # the run under valgrind: where its dumps go
    args = parser.parse_args()
    width, height = (int(part) for part in args.size.split("x"))
    if args.instructions:
        instructions(args)
        return
    frames = frames_of(args.frames + 1, args.recording, args.demo)
    if args.marks:
        asyncio.run(measure(frames, (width, height), args.warmup, None, False, mark=_marks_module().Marks()))
        return
    per_frame = asyncio.run(measure(frames, (width, height), args.warmup, args.screens, args.check))
    totals: Counter[str] = Counter()
    for taken in per_frame:
        totals.update(taken)
    count = len(per_frame)
    source = f"--recording {args.recording}" if args.recording else f"--demo {args.demo}"
    print(f"# python -m benchmarks.render_frames {source} --size {args.size} --frames {args.frames}"
          + (" --check" if args.check else "") + f"   ({count} frames counted)")
    print("| per frame (mean) | value |")
    print("|---|---|")
    general = ("lines asked", "lines rendered", "spans", "updates", "bytes", "layout passes", "full updates")
    for name in general:
        print(f"| {name} | {totals[name] / count:,.1f} |")
    rendered = statistics.mean(t.get("lines rendered", 0) for t in per_frame) if per_frame else 0.0
    print(f"| lines rendered, median | {statistics.median(t.get('lines rendered', 0) for t in per_frame):,.1f} "
          f"(mean {rendered:,.1f}) |")
    widgets = sorted({name.split(" ", 1)[1] for name in totals if name.startswith(("asked ", "rendered "))})
    print("\n| widget | lines asked / frame | lines rendered / frame |")
    print("|---|---|---|")
    for widget in widgets:
        print(f"| {widget} | {totals['asked ' + widget] / count:.1f} | {totals['rendered ' + widget] / count:.1f} |")


PARTS = ("show", "until the refresh", "refresh", "rest")


def _marks_module() -> ModuleType:
    """benchmarks/callgrind_marks.py, from beside this file whatever tree is on the path (another checkout's
    `benchmarks` may have none, or an older one)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("render_frames_marks", os.path.join(HERE, "callgrind_marks.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def instructions(args: argparse.Namespace) -> None:
    """The same frames under callgrind: instructions per frame by part, frames after the warm-up."""
    import shutil
    import subprocess
    import tempfile

    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    marks = _marks_module()
    source = ["--recording", args.recording] if args.recording else ["--demo", args.demo]
    with tempfile.TemporaryDirectory(prefix="render-frames-cg-") as work:
        command = marks.callgrind_command(work, f"{work}/valgrind.log", [
            os.path.abspath(__file__), *source, "--size", args.size, "--frames", str(args.frames),
            "--warmup", str(args.warmup), "--marks", work])
        subprocess.run(command, check=True, cwd=args.tree, env={**os.environ, "PYTHONPATH": args.tree})
        parts: dict[str, float] = defaultdict(float)
        for name in os.listdir(work):
            got = marks.read_dump(os.path.join(work, name)) if name.startswith("cg.out.") else None
            found = re.match(r"(\d+) (.+)", got[0]) if got else None
            if got and found and args.warmup < int(found.group(1)) <= args.frames and found.group(2) in PARTS:
                parts[found.group(2)] += got[1]
    counted = args.frames - args.warmup
    print(f"# python -m benchmarks.render_frames {' '.join(source)} --size {args.size} --frames {args.frames} "
          f"--warmup {args.warmup} --instructions --tree {args.tree}   ({counted} frames counted)")
    print("| part (M instructions per frame) | mean |")
    print("|---|---|")
    for part in PARTS:
        print(f"| {part} | {parts[part] / counted / 1e6:.2f} |")
    loop = sum(parts[part] for part in PARTS[:3])
    print(f"| **show + Textual until and in the refresh** | **{loop / counted / 1e6:.2f}** |")


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


if __name__ == "__main__":
    main()
