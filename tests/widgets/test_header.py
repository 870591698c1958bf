from __future__ import annotations

from msgspec.structs import replace
from rich.text import Text
from textual.geometry import Region

from hwtop.widgets.header import HeaderBar
from tests.factories import host_snapshot


def _counted(header: HeaderBar) -> list[tuple[str, object]]:
    """Each repaint the bar asks for: ("update", its text, whether laid out) or ("refresh", the regions)."""
    calls: list[tuple[str, object]] = []

    def update(content: Text, *, layout: bool = True) -> None:
        calls.append(("update", (content.plain, layout)))

    def refresh(*regions: Region, **_: object) -> HeaderBar:
        calls.append(("refresh", regions))
        return header
    header.update = update  # type: ignore[method-assign]
    header.refresh = refresh  # type: ignore[method-assign]
    return calls


def test_the_header_repaints_only_what_changed() -> None:
    header = HeaderBar()
    calls = _counted(header)
    snapshot = host_snapshot()
    start = int(snapshot.time)
    header.show(replace(snapshot, time=start + 0.1), 1.0, paused=False)
    first = str(header.render())
    header.show(replace(snapshot, time=start + 0.4), 1.0, paused=False)  # the same second
    header.show(replace(snapshot, time=start + 0.7), 1.0, paused=False)
    assert calls == [("update", (first, True))]  # the first text, laid out; then nothing
    header.show(replace(snapshot, time=start + 1.2), 1.0, paused=False)
    second = str(header.render())
    assert second != first and len(calls) == 2
    kind, regions = calls[1]
    changed = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    assert kind == "refresh" and regions == (Region(changed[0], 0, changed[-1] + 1 - changed[0], 1),)  # the clock
    header.show(replace(snapshot, time=start + 1.2), 1.0, paused=True)
    assert calls[2][0] == "update" and "PAUSED" in str(header.render())  # wider: the whole line, laid out
    assert calls[2][1] == (str(header.render()), True)
