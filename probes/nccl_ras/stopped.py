"""Whether the job's own signals say it stopped, so that a careful NCCL release (versions.py) may be asked STATUS:
no step for a while where steps are known, or every rank's main thread still (the same stack) or waiting in a
collective for a while; and whether a rank is inside communicator initialisation (never a time to ask: nccl#1669,
#2346). Read from the JobSnapshot alone (its ranks' figures and stacks), each tick, cheaply. GPUs busy at idle
power (NCCL's kernels spinning on a flag) are the third signal; the watch has no GPU readings of its own, so the
sampler, which has them, keeps a GpuSpin beside it and passes its answer as `spinning`. The per-rank verdict
(advice/ranks.py) may replace `_stacks_say`: one function, one place to swap."""

from __future__ import annotations

from dataclasses import dataclass

from hwtop.model.job import JobSnapshot, RankStacks
from hwtop.model.snapshot import GpuSnapshot

STILL_S = 30.0  # hwtop's choice: a step of a training job is seconds; half a minute of nothing is not a step
WAIT_SHARE = 0.9  # a rank waiting in a collective nine tenths of its samples makes no progress of its own
MIN_SAMPLES = 10  # fewer stack samples say nothing
INIT_WORDS = ("init_process_group", "new_group", "new_subgroups", "_new_process_group_helper", "ncclCommInit",
              "ncclCommSplit", "comm_split", "_store_based_barrier", "rendezvous")


@dataclass(slots=True)
class StopSignals:
    """The job's progress, remembered across ticks (steps need two looks)."""

    still_s: float = STILL_S
    _steps: int | None = None
    _steps_since: float = 0.0

    def initialising(self, job: JobSnapshot) -> str | None:
        """The rank inside communicator initialisation, in words, or None."""
        for stacks in job.stacks:
            for text in _frames(stacks):
                if any(word in text for word in INIT_WORDS):
                    who = f"rank {stacks.rank}" if stacks.rank is not None else f"pid {stacks.pid}"
                    return f"{who} is initialising a communicator ({text[:80]})"
        return None

    def stopped(self, job: JobSnapshot, now: float, spinning: bool | None = None) -> str | None:
        """Why the job looks stopped, in words, or None while it makes progress (or the signals cannot tell)."""
        steps = self._steps_say(job, now)
        if steps is not None:
            return steps
        stacks = _stacks_say(job.stacks, self.still_s)
        if stacks is not None:
            return stacks
        return "its GPUs are busy at idle power (NCCL kernels waiting for a peer)" if spinning else None

    def _steps_say(self, job: JobSnapshot, now: float) -> str | None:
        known = [r.steps for r in job.ranks if r.steps is not None and not r.nccl_only]
        if not known:
            return None
        total = sum(known)
        if total != self._steps:
            self._steps, self._steps_since = total, now
            return None
        idle = now - self._steps_since
        return f"no step for {idle:.0f} s" if idle >= self.still_s else None


def _frames(stacks: RankStacks) -> list[str]:
    out = [site for _, site in stacks.sites]
    if stacks.busy_site:
        out.append(stacks.busy_site)
    if stacks.still is not None:
        out += [text for text in (stacks.still.frame, stacks.still.site) if text]
    return out


def _stacks_say(all_stacks: tuple[RankStacks, ...], still_s: float) -> str | None:
    """Every sampled rank still for still_s, or waiting in a collective nearly all the time."""
    sampled = [s for s in all_stacks if s.rank is not None and s.samples >= MIN_SAMPLES]
    if not sampled:
        return None
    still = [s.still.seconds for s in sampled if s.still is not None]
    if len(still) == len(sampled) and min(still) >= still_s:
        return f"every rank's main thread has not moved for {min(still):.0f} s"
    waits = [dict(s.fractions).get("collective", 0.0) for s in sampled]
    if min(waits) >= WAIT_SHARE:
        return f"every rank's main thread waits in a collective ({100 * min(waits):.0f}% or more of its samples)"
    return None


@dataclass(slots=True)
class GpuSpin:
    """Whether every GPU the job holds has been busy at near-idle power for `seconds`: NCCL's kernels polling a flag
    for a peer that never arrives (the collective-hang rule's sign; its thresholds are handed in by the sampler, from
    the advice's table, so both say the same)."""

    util_percent: float
    power_share: float
    seconds: float
    _since: float | None = None

    def update(self, gpus: tuple[GpuSnapshot, ...], job: JobSnapshot, now: float) -> bool:
        held = {index for index, _ in job.gpu_memory}
        mine = [g for g in gpus if g.index in held and not g.lost]
        if mine and all(self._spins(g) for g in mine):
            self._since = now if self._since is None else self._since
        else:
            self._since = None
        return self._since is not None and now - self._since >= self.seconds

    def _spins(self, gpu: GpuSnapshot) -> bool:
        power, limit = gpu.power_w, gpu.power_limit_w
        return (gpu.util_percent is not None and gpu.util_percent >= self.util_percent and power is not None
                and bool(limit) and power / limit <= self.power_share)
