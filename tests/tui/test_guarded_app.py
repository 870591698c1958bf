"""The garbage collector around the monitor's start: off from the command line's imports to the first frame (its
passes over the ~70,000 objects of start-up are wasted work), then one collection, and what is alive is
frozen out of later walks (unfrozen, a full collection walked ~42,000 objects, 25-35 ms on the CI box). And the
interpreter's switch interval, short until the first frame is out (the output thread writes it at once), then
Python's again."""

from __future__ import annotations

import gc
import sys

import pytest

from hwtop.cli.main import main
from hwtop.tui.guarded_app import FIRST_FRAME_SWITCH_INTERVAL_S, YOUNG_COLLECTION_THRESHOLD, GuardedApp


class Observed(GuardedApp[tuple[bool, bool, bool, float, float]]):
    """Exits with (collector on while mounting, collector on after the first frame, `alive_at_start` still
    walked by the collector after it, the switch interval while mounting, and after the first frame)."""

    def __init__(self, alive_at_start: list[object]) -> None:
        super().__init__()
        self.alive_at_start = alive_at_start
        self.on_while_mounting = True
        self.interval_while_mounting = 0.0

    def on_mount(self) -> None:
        self.on_while_mounting = gc.isenabled()
        self.interval_while_mounting = sys.getswitchinterval()
        self.set_timer(0.3, self.report)

    def report(self) -> None:
        walked = any(tracked is self.alive_at_start for tracked in gc.get_objects())
        self.exit((self.on_while_mounting, gc.isenabled(), walked, self.interval_while_mounting,
                   sys.getswitchinterval()))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_collector_is_off_until_the_first_frame_then_what_lives_is_frozen() -> None:
    alive_at_start: list[object] = [object()]  # a list: tracked by the collector
    python_interval = sys.getswitchinterval()
    gc.unfreeze()
    assert gc.isenabled() and any(tracked is alive_at_start for tracked in gc.get_objects())
    try:
        observed = Observed(alive_at_start).run(headless=True, size=(40, 10))
    finally:
        gc.unfreeze()
        gc.enable()
    assert observed == (False, True, False, pytest.approx(FIRST_FRAME_SWITCH_INTERVAL_S), python_interval)
    assert sys.getswitchinterval() == python_interval


class Thresholds(GuardedApp[tuple[int, int, int]]):
    """Exits with the collector's thresholds once the first frame is out."""

    def on_mount(self) -> None:
        self.set_timer(0.3, lambda: self.exit(gc.get_threshold()))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_once_running_the_young_collections_are_spaced_out_and_python_s_thresholds_come_back() -> None:
    python_thresholds = gc.get_threshold()
    assert python_thresholds[0] != YOUNG_COLLECTION_THRESHOLD
    try:
        running = Thresholds().run(headless=True, size=(40, 10))
    finally:
        gc.unfreeze()
        gc.enable()
    assert running == (YOUNG_COLLECTION_THRESHOLD, *python_thresholds[1:])
    assert gc.get_threshold() == python_thresholds


def test_a_monitor_start_refused_leaves_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["--job", "no process has this (?!x)x name"])
    assert refused.value.code == 2 and "hwtop: error:" in capsys.readouterr().err
    assert gc.isenabled()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_under_run_test_a_collector_left_off_by_another_app_is_not_taken_for_the_monitor_s_start() -> None:
    """Textual pauses the collector during a smooth scroll; an app that ends mid-scroll leaves it off. The next
    app under run_test must not then freeze the heap or space out the young passes as the monitor's run() does."""
    import asyncio

    python_thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.disable()
    try:
        async def first_frame() -> None:
            app = Thresholds()
            async with app.run_test(size=(40, 10)) as pilot:
                await pilot.pause(0.4)

        asyncio.run(first_frame())
        assert gc.get_threshold() == python_thresholds and not gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.enable()
