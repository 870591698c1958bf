"""GuardedApp.run takes what is alive when the app starts out of the garbage collector's walks: unfrozen, the first
full collection (~42,000 objects, 25-35 ms on the CI box) fell in the middle of the monitor's first frame."""

from __future__ import annotations

import gc

from hwtop.tui.guarded_app import GuardedApp


class StillWalked(GuardedApp[bool]):
    """Exits with whether the collector still walks `alive_at_start` (frozen objects are not among its objects)."""

    def __init__(self, alive_at_start: list[object]) -> None:
        super().__init__()
        self.alive_at_start = alive_at_start

    def on_mount(self) -> None:
        self.exit(any(tracked is self.alive_at_start for tracked in gc.get_objects()))


def test_what_exists_at_run_is_frozen_before_the_first_frame() -> None:
    alive_at_start: list[object] = [object()]  # a list: tracked by the collector
    gc.unfreeze()
    assert any(tracked is alive_at_start for tracked in gc.get_objects())
    try:
        walked = StillWalked(alive_at_start).run(headless=True, size=(40, 10))
    finally:
        gc.unfreeze()
    assert walked is False
