"""A round's Python work (parse, assemble) shares the interpreter lock with the UI's thread: during a round a
waking thread waits at most ROUND_SWITCH_INTERVAL_S for it, and Python's own interval is back after the round."""

from __future__ import annotations

import sys

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.session import ROUND_SWITCH_INTERVAL_S, FleetSession
from hwtop.fleet.sources import Ask, Round


class _Seen:
    def __init__(self) -> None:
        self.description, self.interval, self.reads_jobs = "one", 1.0, False
        self.job: str | None = None
        self.thresholds = Thresholds()
        self.intervals: list[float] = []

    def read(self, ask: Ask) -> Round:
        self.intervals.append(sys.getswitchinterval())
        return Round(())

    def close(self) -> None:
        pass


def test_a_round_runs_with_the_short_interval_and_puts_it_back() -> None:
    before = sys.getswitchinterval()
    assert before > ROUND_SWITCH_INTERVAL_S
    source = _Seen()
    session = FleetSession(source)
    session.round()
    session.round()
    assert source.intervals == [ROUND_SWITCH_INTERVAL_S] * 2
    assert sys.getswitchinterval() == before
