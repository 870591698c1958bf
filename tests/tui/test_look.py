"""Snapshot tests of the look (SVG baselines under tests/tui/__snapshots__/), deterministic injected sources."""

from __future__ import annotations

import pytest

from hwtop.tui.app import HwtopApp
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot


async def _first_frame(pilot) -> None:
    await pilot.app.first_frame.wait()
    await pilot.pause()


def _app(kind: str) -> HwtopApp:
    if kind == "nogpu":
        return HwtopApp(ScriptedSource([host_snapshot()]))
    return HwtopApp(ScriptedSource(demo_snapshots(kind)))


@pytest.mark.parametrize(("kind", "size"), [
    ("nogpu", (80, 24)), ("nogpu", (160, 50)), ("nogpu", (200, 60)),
    ("dgx-a100", (80, 24)), ("dgx-a100", (200, 60)),
    ("gtx1660s", (80, 24)), ("gtx1660s", (200, 60)),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_look(snap_compare, kind: str, size: tuple[int, int]) -> None:
    assert snap_compare(_app(kind), terminal_size=size, run_before=_first_frame)


async def _topology(pilot) -> None:
    await _first_frame(pilot)
    await pilot.press("t")
    await pilot.pause()


@pytest.mark.parametrize(("kind", "size"), [("dgx-a100", (200, 60)), ("dgx-a100", (80, 24)), ("nogpu", (80, 24))])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_topology_look(snap_compare, kind: str, size: tuple[int, int]) -> None:
    from tests.factories import with_demo_topology

    if kind == "nogpu":
        app = HwtopApp(ScriptedSource([host_snapshot()]))
    else:
        app = HwtopApp(ScriptedSource(with_demo_topology(demo_snapshots(kind), kind)))
    assert snap_compare(app, terminal_size=size, run_before=_topology)


async def _advice_open(pilot) -> None:
    await _first_frame(pilot)
    await pilot.press("a")
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_advice_look(snap_compare, size: tuple[int, int]) -> None:
    """A starved job on a busy GPU with a degraded link: two findings, the first expanded."""
    from tests.widgets.test_advice import troubled_frames, warmed_app

    assert snap_compare(warmed_app(troubled_frames()), terminal_size=size, run_before=_advice_open)
