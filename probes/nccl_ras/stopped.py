"""Whether the job made no progress for a while, so that a careful NCCL release (versions.py) may be asked STATUS;
and whether a rank is inside communicator initialisation (never a time to ask: nccl#1669, #2346). Read from the
JobSnapshot alone (its ranks' figures and stacks), each tick, cheaply.

Progress is what is measured, never guessed from a wait: the job's steps advancing (where its telemetry gives them)
and its ranks' main-thread stacks moving (where they are sampled; Stillness is one stack for `seconds`). The job has
stopped only when every measure it has says so for `still_s`: no step, and every sampled rank's main thread on the
same stack; a job with neither measure is never called stopped. Ranks waiting in a collective nearly all the time
and GPUs busy at idle power (NCCL's kernels spinning on a flag: the sampler keeps a GpuSpin beside the watch and
passes its answer as `spinning`) are what a healthy straggler or network-bound job shows too (its fast ranks wait
in the all-reduce, their GPUs spin), so they are said beside a stop as corroboration, and never make one."""

from __future__ import annotations

from dataclasses import dataclass

from hwtop.model.job import JobSnapshot, RankStacks
from hwtop.model.snapshot import GpuSnapshot

STILL_S = 30.0  # hwtop's choice: a step of a training job is seconds; half a minute of nothing is not a step
WAIT_SHARE = 0.9  # a rank waiting in a collective nine tenths of its samples: said beside a stop, never one alone
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
        """Why the job looks stopped, in words, or None while it makes progress (or the signals cannot tell):
        every measure of progress it has (steps, stacks) still for `still_s`, the waits and the GPUs beside."""
        steps = self._steps_still(job, now)
        stacks = _stacks_still(job.stacks)
        measured = [seconds for seconds in (steps, stacks) if seconds is not None]
        if not measured or min(measured) < self.still_s:
            return None
        said = ([f"no step for {steps:.0f} s"] if steps is not None else []) + (
            [f"every rank's main thread on one stack for {stacks:.0f} s"] if stacks is not None else [])
        return " and ".join(said) + "".join(f"; {why}" for why in _corroboration(job.stacks, spinning))

    def _steps_still(self, job: JobSnapshot, now: float) -> float | None:
        """Seconds since the job's steps last advanced (0 as they do), or None where no rank reports steps."""
        known = [r.steps for r in job.ranks if r.steps is not None and not r.nccl_only]
        if not known:
            return None
        total = sum(known)
        if total != self._steps:
            self._steps, self._steps_since = total, now
        return now - self._steps_since


def _frames(stacks: RankStacks) -> list[str]:
    out = [site for _, site in stacks.sites]
    if stacks.busy_site:
        out.append(stacks.busy_site)
    if stacks.still is not None:
        out += [text for text in (stacks.still.frame, stacks.still.site) if text]
    return out


def _sampled(all_stacks: tuple[RankStacks, ...]) -> list[RankStacks]:
    return [s for s in all_stacks if s.rank is not None and s.samples >= MIN_SAMPLES]


def _stacks_still(all_stacks: tuple[RankStacks, ...]) -> float | None:
    """Seconds every sampled rank's main thread has shown one stack (0 once one moves), or None where no rank has
    enough samples to tell."""
    sampled = _sampled(all_stacks)
    if not sampled:
        return None
    return min(s.still.seconds if s.still is not None else 0.0 for s in sampled)


def _corroboration(all_stacks: tuple[RankStacks, ...], spinning: bool | None) -> list[str]:
    """What a stopped job shows besides, and a healthy one may show too: never a stop on its own."""
    out = []
    waits = [s.fraction("collective") for s in _sampled(all_stacks)]
    if waits and min(waits) >= WAIT_SHARE:
        out.append(f"every rank waits in a collective ({100 * min(waits):.0f}% or more of its samples)")
    if spinning:
        out.append("its GPUs busy at idle power (NCCL kernels waiting for a peer)")
    return out


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
