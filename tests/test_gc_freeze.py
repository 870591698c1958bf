"""GuardedApp.run takes what is alive when the app starts out of the garbage collector's walks: unfrozen, the first
full collection (~42,000 objects, 25-35 ms on the CI box) fell in the middle of the monitor's first frame."""

from __future__ import annotations

import gc

from hwtop.tui.guarded_app import GuardedApp


class FreezeCount(GuardedApp[int]):
    def on_mount(self) -> None:
        self.exit(gc.get_freeze_count())


def test_what_exists_at_run_is_frozen_before_the_first_frame() -> None:
    gc.unfreeze()
    alive = len(gc.get_objects())
    try:
        frozen = FreezeCount().run(headless=True, size=(40, 10))
    finally:
        gc.unfreeze()
    assert frozen is not None and frozen >= alive
