from __future__ import annotations

import dataclasses

from rich.text import Text

from hwtop.widgets.header import HeaderBar
from tests.factories import host_snapshot


def _counted(header: HeaderBar) -> list[tuple[str, bool]]:
    """Each update the bar asks for: its text and whether it asked for a layout pass."""
    calls: list[tuple[str, bool]] = []

    def update(content: Text, *, layout: bool = True) -> None:
        calls.append((content.plain, layout))
    header.update = update  # type: ignore[method-assign]
    return calls


def test_the_header_repaints_only_when_what_it_shows_changes() -> None:
    header = HeaderBar()
    calls = _counted(header)
    snapshot = host_snapshot()
    header.show(snapshot, 1.0, paused=False)
    header.show(dataclasses.replace(snapshot, time=int(snapshot.time) + 0.4), 1.0, paused=False)  # same second
    header.show(dataclasses.replace(snapshot, time=int(snapshot.time) + 0.7), 1.0, paused=False)
    assert len(calls) == 1 and calls[0][1] is True  # the first text: a layout pass; the same second: nothing
    header.show(dataclasses.replace(snapshot, time=int(snapshot.time) + 1.2), 1.0, paused=False)
    assert len(calls) == 2 and calls[1][1] is False and calls[1][0] != calls[0][0]  # a new second, same width
    header.show(dataclasses.replace(snapshot, time=int(snapshot.time) + 1.2), 1.0, paused=True)
    assert len(calls) == 3 and "PAUSED" in calls[2][0] and calls[2][1] is True  # wider: laid out again
