"""Where each rank's time goes: the stack sampler's targets (the main processes) and its results joined to the ranks."""

from __future__ import annotations

import msgspec.structs

from hwtop.model.job import JobProcess, RankFigures, RankStacks
from hwtop.model.workload import WorkloadState
from hwtop.probes.job.parts import JobParts, JobTick
from hwtop.probes.job.state import WORKER, StackSource


class JobRanks:
    """One RankFigures per rank, with its stack samples (when sampling stacks): owns the stack source."""

    __slots__ = ("host", "sample_stacks", "stacks")

    def __init__(self, host: str, sample_stacks: bool, stacks: StackSource | None) -> None:
        self.host = host  # the name the job's ranks carry (RankFigures.host)
        self.sample_stacks = sample_stacks
        self.stacks = stacks

    def read(self, tick: JobTick, parts: JobParts) -> None:
        parts.stacks, parts.stack_message = self._stacks(tick.alive, tick.python)
        parts.worker_stacks = self.stacks.worker_results() if self.stacks is not None else ()
        parts.ranks = self._ranks(tick.rows, parts.stacks, tick.workload)

    def finish(self) -> tuple[RankStacks, ...] | None:
        """Where each rank's time went, with the samples of the chunks still running; sampling ends."""
        if self.stacks is None:
            return None
        self.stacks.finish()
        return self.stacks.results()[0]

    def close(self) -> None:
        if self.stacks is not None:
            self.stacks.close()

    def _stacks(self, alive: list[JobProcess], python: set[int]) -> tuple[tuple[RankStacks, ...], str | None]:
        if not self.sample_stacks and self.stacks is None:
            return (), None
        if self.stacks is None:
            from hwtop.probes.stack_sampler import StackSampler

            self.stacks = StackSampler()
        mains = main_processes(alive, python)
        workers: dict[int, int | None] = {p.pid: p.ppid for p in alive if p.role == WORKER and p.ppid in mains}
        self.stacks.want(mains, frozenset(p.pid for p in alive if p.gpus), workers)
        return self.stacks.results()

    def _ranks(self, ordered: list[JobProcess], stacks: tuple[RankStacks, ...],
               workload: WorkloadState | None) -> tuple[RankFigures, ...]:
        """One RankFigures per rank of the job on this host (rank order), from its process and its samples."""
        steps = {r.pid: r.step for r in workload.ranks if r.pid} if workload else {}
        out: dict[int, RankFigures] = {}
        for p in ordered:
            if p.rank is None or not p.role.startswith("rank") or (p.rank in out and not p.alive):
                continue
            out[p.rank] = RankFigures(rank=p.rank, host=self.host, pid=p.pid, local_rank=p.local_rank,
                                      gpu=p.gpus[0][0] if p.gpus else None, steps=steps.get(p.pid))
        return with_stacks(tuple(out[rank] for rank in sorted(out)), stacks)


def with_stacks(ranks: tuple[RankFigures, ...], stacks: tuple[RankStacks, ...]) -> tuple[RankFigures, ...]:
    """The ranks with what their stack samples say (phase seconds, shares, busy site), matched by pid: each tick,
    and once more with the final samples at the end of a doctor's watch."""
    by_pid = {s.pid: s for s in stacks}
    out = []
    for figures in ranks:
        s = by_pid.get(figures.pid) if figures.pid is not None else None
        if s is not None:
            figures = msgspec.structs.replace(figures, phase_seconds=s.phase_seconds, shares=s.fractions,
                                              site=s.busy_site, samples=s.samples, seen_at=s.updated_at)
        out.append(figures)
    return tuple(out)


def main_processes(alive: list[JobProcess], python: set[int]) -> dict[int, int | None]:
    """The processes whose main thread is the training loop: the ranks; without ranks (a plain `python
    train.py`), the topmost Python processes that are not launchers, helpers or workers."""
    ranks = {p.pid: p.rank for p in alive if p.role.startswith("rank") and p.pid in python}
    if ranks:
        return ranks
    members = {p.pid for p in alive}
    parents = {p.pid: p.ppid for p in alive}
    out: dict[int, int | None] = {}
    for p in alive:
        if p.role != "process" or p.pid not in python:
            continue
        ancestor, hops = parents.get(p.pid), 0
        while ancestor in members and ancestor not in out and hops < 64:
            ancestor, hops = parents.get(ancestor), hops + 1
        if ancestor not in out:
            out[p.pid] = None
    return out
