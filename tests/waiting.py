"""Waiting for an event outside the test's process (a pane's text, a thread's call, a child's output): the predicate
is polled until it holds, and the timeout is a bound for a loaded box, not a pace (it returns at the event)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float = 20.0, poll: float = 0.1) -> bool:
    """True as soon as `predicate()` is true, False once `timeout` seconds have passed without it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(poll)
    return False
