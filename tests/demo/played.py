"""A demo machine played at high speed on a hand-moved clock: every frame its session ticks, from 0 to `seconds`."""

from __future__ import annotations

from functools import cache

from hwtop.demo.machine import demo_sampler
from hwtop.model.frame import Frame
from hwtop.session.session import Session
from tests.manual_clock import ManualClock

EPOCH = 1_800_000_000.0


def play(story: str | None, seconds: float, profile: str = "dgx-a100", step: float = 2.0,
         seed: int = 7) -> list[Frame]:
    """A tick every `step` seconds of the story's clock (`story` None: the steady job)."""
    clock = ManualClock()
    session = Session(demo_sampler(profile, story, seed=seed, clock=clock, wall=lambda: EPOCH + clock.now))
    frames = []
    try:
        while clock.now <= seconds:
            frames.append(session.tick())
            clock.now += step
    finally:
        session.close()
    return frames


@cache
def played(story: str | None, seconds: float, profile: str = "dgx-a100", step: float = 2.0,
           seed: int = 7) -> tuple[Frame, ...]:
    """`play`'s frames, played once per process for the tests that read the same story (frames are immutable)."""
    return tuple(play(story, seconds, profile, step, seed))
