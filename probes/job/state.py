"""What every reader of the job shares: its bounds, the worker's role name, the error that refuses a focus, and what
the probe needs of a stack sampler."""

from __future__ import annotations

from typing import Protocol

from hwtop.model.job import RankStacks, WorkerStacks

MAX_PROCESSES = 256
WORKER = "DataLoader worker"


class JobError(Exception):
    """The job cannot be focused: no such process, no permission, no match. One line, for exit 2."""


class StackSource(Protocol):
    """What the job probe needs of a stack sampler (probes/stack_sampler.py, or a test's script)."""

    def want(self, targets: dict[int, int | None], on_gpu: frozenset[int] = frozenset(),
             workers: dict[int, int | None] | None = None) -> None: ...

    def results(self) -> tuple[tuple[RankStacks, ...], str | None]: ...

    def worker_results(self) -> tuple[WorkerStacks, ...]: ...

    def finish(self) -> None: ...

    def close(self) -> None: ...
