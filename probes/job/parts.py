"""Where a reader of one more part of the job plugs in. Each tick the job probe finds the job's processes (focus,
tree, figures) and its rows, hands them to its part readers as a JobTick, in order, and builds the JobSnapshot from
the JobParts they filled. A part reader keeps its own state between ticks (rings, files, a sampler) and reads
only what its `read` is handed; a later reader may read what an earlier one filled (the ranks, to join its own
facts to them by pid). A new part: a class with `read(tick, parts)` and `close()` and one entry in JobProbe's
`parts`; a new field it fills is declared here and in JobSnapshot, and passed on in JobProbe._snapshot (joining
facts to the ranks needs none: a RankFigures field)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import msgspec

from hwtop.model.job import CgroupMemory, JobProcess, Pressure, RankFigures, RankStacks, WorkerBirths, WorkerStacks
from hwtop.model.workload import WorkloadState


class JobTick(msgspec.Struct, frozen=True):
    """What the job probe found this tick, for the part readers (read-only: the lists are the probe's)."""

    number: int  # ticks read so far, this one included
    mono: float  # the probe's clock (monotonic)
    wall: float  # the snapshot's time (epoch s)
    processes: list[JobProcess]  # the job's processes now, zombies too, in tree order
    alive: list[JobProcess]  # of those, the ones not zombies
    rows: list[JobProcess]  # the table: `processes`, then the ranks and launchers that ended
    last: dict[int, JobProcess]  # last tick's rows by pid
    roots: list[int]  # the named or matched processes present now
    python: set[int]  # pids of the processes that run Python
    workload: WorkloadState | None  # the embedded job's telemetry, when it is the one watched
    environ: dict[int, dict[str, str]]  # the live processes' environments by pid, where readable (read once each)


@dataclass(slots=True)
class JobParts:
    """The JobSnapshot's fields the part readers fill (JobSnapshot's defaults until they do)."""

    workers_started_last_minute: int = 0
    workers_exited_last_minute: int = 0
    worker_births: tuple[WorkerBirths, ...] = ()
    usable_cores: int | None = None
    pressure: Pressure | None = None
    cgroup_memory: CgroupMemory | None = None
    dataset_devices: tuple[tuple[str, int], ...] = ()
    swap_in_pages_per_s: float | None = None
    stacks: tuple[RankStacks, ...] = ()
    stack_message: str | None = None
    worker_stacks: tuple[WorkerStacks, ...] = ()
    ranks: tuple[RankFigures, ...] = ()


class JobPart(Protocol):
    """A reader of one part of the job, owning its state between ticks."""

    def read(self, tick: JobTick, parts: JobParts) -> None:
        """Fill this part's fields of `parts` from `tick` (and what readers before it filled)."""
        ...

    def close(self) -> None:
        """Let go of what it holds (a sampler's children, open files): the job is no longer watched."""
        ...
