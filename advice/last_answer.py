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


Subject = TypeVar("Subject")


class KeptAnswers(Generic[Subject, Answer]):
    """`ask(subject, work)`: `work(subject)`'s answer, kept for that very subject (by identity) among the last
    `size` asked (the oldest let go first): a dozen rules ask the same of each of a tick's GPUs, or of each job of
    the last seconds. The subjects are held while their
    answers are kept (no identity passes to another object meanwhile); only immutable subjects are kept."""

    __slots__ = ("_kept", "_size")

    def __init__(self, size: int = 64) -> None:
        self._kept: dict[int, tuple[Subject, Answer]] = {}
        self._size = size

    def ask(self, subject: Subject, work: Callable[[Subject], Answer]) -> Answer:
        kept = self._kept.get(id(subject))
        if kept is not None and kept[0] is subject:
            return kept[1]
        answer = work(subject)
        kept_now = self._kept
        if len(kept_now) >= self._size:
            del kept_now[next(iter(kept_now))]  # the first kept: the oldest asked
        kept_now[id(subject)] = (subject, answer)
        return answer
