"""Waiting for an event outside the test's process (a pane's text, a thread's call, a child's output): the predicate
is polled until it holds, and the timeout is a bound for a loaded box, not a pace (it returns at the event)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.pilot import Pilot


def wait_until(predicate: Callable[[], object], timeout: float = 20.0, poll: float = 0.1) -> bool:
    """True as soon as `predicate()` is true, False once `timeout` seconds have passed without it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(poll)
    return False


async def pilot_until(pilot: Pilot[object], predicate: Callable[[], object], timeout: float = 20.0) -> None:
    """As wait_until, inside a Pilot test: the app runs between looks (a fleet's rounds come from its own thread,
    drawn at its next tick); AssertionError once `timeout` seconds pass without it."""
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "the screen never showed it"
        await pilot.pause(0.05)
