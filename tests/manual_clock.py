"""A clock a test moves by hand (`clock.now += 3`): handed to a sampler, a probe or a demo machine in place of
time.time or time.monotonic, so what they compute from time depends on the test, never on the box's speed."""

from __future__ import annotations


class ManualClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
