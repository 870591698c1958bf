"""What the job probe is told and keeps between ticks (JobState), shared by the mixins that read each part."""

from __future__ import annotations

import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from hwtop.model.job import JobProcess, RankStacks, WorkerStacks
from hwtop.probes import owners, proctree
from hwtop.probes.cgroup import Cgroups
from hwtop.probes.job.records import _Tracked
from hwtop.probes.psi import PressureProbe

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


@dataclass(slots=True)
class JobState:
    """The job probe's fields: what the caller names (roots, pattern, root, ...) and each part's memory."""

    roots: tuple[int, ...] = ()
    pattern: str | None = None
    root: str = "/"
    clock: Callable[[], float] = time.monotonic
    label: str = ""
    sample_stacks: bool = False
    stacks: StackSource | None = None
    exclude: frozenset[int] | None = None  # hwtop and its ancestors; computed when not given
    host: str = ""  # the name the job's ranks carry (RankFigures.host); this host's name when not given
    _tracked: dict[tuple[int, int], _Tracked] = field(default_factory=dict)
    _last: dict[int, JobProcess] = field(default_factory=dict)
    _seen: int = 0
    _members: dict[int, int] = field(default_factory=dict)  # pid → start ticks of every live member
    _exit_codes: dict[int, int] = field(default_factory=dict)
    _ended_at: float | None = None
    _regex: re.Pattern[str] | None = None
    _matched: tuple[int, ...] = ()
    _matched_at: float = -1e9
    _ticks: int = 0
    _births: deque[tuple[float, int]] = field(default_factory=deque)  # (when, parent)
    _exits: deque[float] = field(default_factory=deque)
    _alive_per_parent: deque[tuple[float, dict[int, int]]] = field(default_factory=deque)
    _parent_since: dict[int, float] = field(default_factory=dict)
    _devices: dict[str, tuple[int, float]] = field(default_factory=dict)  # disk → (files, last seen)
    _pressure: PressureProbe | None = None
    _cgroups: Cgroups | None = None
    _previous_tick: float | None = None
    _cmdlines: dict[tuple[int, int], str] = field(default_factory=dict)
    _pswpin: tuple[float, int] | None = None
    _env_launchers: set[int] = field(default_factory=set)
    _python: set[int] = field(default_factory=set)
    note: str | None = None  # how the named pid led to the job (a rank → its launcher)
    _owners: owners.OwnerFocus | None = None  # --job slurm:ID / pod:NAME; the title's Slurm job or pod
    proc: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.proc = os.path.join(self.root, "proc")
        if self.exclude is None:
            self.exclude = proctree.own_lineage(self.proc) if self.root == "/" else frozenset()
        self._owners = owners.OwnerFocus(self.proc, self.pattern)
        if self._owners.target is not None:
            self.label = self.label or owners.describe_target(self._owners.target)
        elif self.pattern is not None:
            number, pattern = proctree.parse_target(self.pattern)
            if number is not None:
                self.roots, self.pattern = (*self.roots, number), None
            else:
                try:
                    self._regex = re.compile(pattern or "")
                except re.error as error:
                    raise JobError(f"--job {self.pattern!r} is not a regular expression: {error}") from None
        self._pressure = PressureProbe(self.root, self.clock)
        if not self.host:
            self.host = os.uname().nodename
        if not self.label:
            self.label = f"pid {', '.join(map(str, self.roots))}" if self.roots else f"job /{self.pattern}/"

