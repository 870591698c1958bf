"""One answer remembered for the last input it was asked of: several rules ask the same question of each tick's
job (two judge the same 256 ranks, four read the same network facts), and the answer depends only on that
immutable snapshot and a few thresholds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

Answer = TypeVar("Answer")


class LastAnswer(Generic[Answer]):
    """`ask(subject, settings, work)`: `work()`'s answer, or the one kept for this very `subject` (by identity) under
    equal `settings`. The subject is held while its answer is kept, so its identity cannot pass to another object
    meanwhile; only immutable subjects (a snapshot's tuples and records) are kept."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: tuple[object, object, Answer] | None = None

    def ask(self, subject: object, settings: object, work: Callable[[], Answer]) -> Answer:
        kept = self._kept  # one read: another thread's ask replaces the whole tuple
        if kept is not None and kept[0] is subject and kept[1] == settings:
            return kept[2]
        answer = work()
        self._kept = (subject, settings, answer)
        return answer
