"""checkpoint-stall: a rank's main thread spends a share of its time saving checkpoints (torch.save, safetensors,
torch.distributed.checkpoint) while training waits: where it saves (the job's line), how often and how long
each save takes (from the bursts of the rank's own writes, tick by tick), and its share of the wall time. A save
inside the batch loop (pytorch/examples' word_language_model, moved into the loop "so a crash loses nothing")
took a 2-core box from 124 to 207 ms a batch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from hwtop.advice.job_facts import running_job, sampled, stacks_line, timed_jobs, who
from hwtop.advice.registry import rule
from hwtop.advice.text import rate
from hwtop.advice.thresholds import Threshold, Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobSnapshot, RankStacks

WINDOW_S = 30.0  # the stack samples' window (probes/stack_sampler.py WINDOW_S): the writes over as long
WRITING_BYTES = 1 << 20  # a tick in which the rank wrote at least this much is a tick of a save


class Saves(NamedTuple):
    """A rank's saves over the recent past, from its writes tick by tick."""

    span_s: float  # how long its writes were watched
    written: float  # bytes
    bursts: int  # runs of ticks with writes, between ticks without
    writing_ticks: int
    ticks: int

    @property
    def every_tick(self) -> bool:
        """It wrote in every tick: it saves at least once a tick, so one save cannot be told from the next."""
        return self.writing_ticks == self.ticks


def saves_of(jobs: list[tuple[float, JobSnapshot]], pid: int) -> Saves | None:
    """The rank's writes, tick by tick (its I/O rate times the tick's length), grouped into bursts."""
    bursts = writing = ticks = 0
    written = 0.0
    was_writing = False
    previous: float | None = None
    for when, job in jobs:
        process = next((p for p in job.processes if p.pid == pid and p.alive), None)
        if process is None or process.write_bytes_per_s is None or previous is None:
            previous = when
            continue
        wrote = process.write_bytes_per_s * (when - previous)
        previous = when
        ticks += 1
        written += wrote
        now_writing = wrote >= WRITING_BYTES
        writing += now_writing
        bursts += now_writing and not was_writing
        was_writing = now_writing
    if not ticks:
        return None
    return Saves(jobs[-1][0] - jobs[0][0], written, bursts, writing, ticks)


def cadence(saves: Saves | None, share: float) -> str:
    """How often and how long, where the writes say."""
    if saves is None or not saves.writing_ticks:
        return ("its writes were not seen (a file system that does not count them, such as tmpfs): how often it "
                "saves is not known")
    tick = saves.span_s / saves.ticks
    if saves.every_tick:
        return (f"it wrote in every one of the last {saves.ticks} ticks ({rate(saves.written / saves.span_s)}): a "
                f"save at least every {tick:.0f} s, each taking at most {share * tick:.1f} s")
    every = saves.span_s / saves.bursts
    return (f"it wrote {saves.bursts} burst(s) in {saves.span_s:.0f} s, {rate(saves.written / saves.span_s)} on "
            f"average, {saves.written / saves.bursts / 1e6:.0f} MB each: a save about every {every:.0f} s, "
            f"each taking about {share * every:.1f} s")


def fixes_for(share: float, site: str | None) -> tuple[str, ...]:
    at = f" (at {site})" if site else ""
    return (
        f"Save less often{at}: every N steps or minutes, as much work as you would redo after a crash; saving "
        f"k times less often takes its {100 * share:.0f}% of the time to {100 * share:.0f}/k %.",
        "Save the state_dict (model.state_dict(), optimizer.state_dict()), not the pickled module, to fast local "
        "storage (a local NVMe disk, or /dev/shm and copy it away after): the training waits for the write.",
        "Save asynchronously: torch.distributed.checkpoint.async_save(state_dict, checkpoint_id=...) stages the "
        "tensors to CPU memory and writes them in the background (PyTorch 2.3+), one save in flight at a time. "
        + BESIDE,
        "Or save in a background thread or process yourself: copy the state_dict ({k: v.detach().clone()}), hand "
        "the copy to a thread that calls torch.save, and wait for the last save before the next one. " + BESIDE)


# measured (benchmarks/advice_fixes.py checkpoint, a 2-core box at load 20): a thread's save ran 0.76x as fast
BESIDE = ("It needs a core free beside the step: where the cores are busy, the copy and the write slow the step "
          "instead.")


@rule("checkpoint-stall", hold_s=5, clear_s=15, order=215,
      watches="the ranks' main threads saving checkpoints while training waits",
      reads=("stack_min_samples",),
      thresholds={"checkpoint_share": Threshold(
          0.1, "fraction", "hwtop's choice: a rank that spends a tenth of its time saving trains a tenth slower for "
                           "it (tests/jobs/checkpoint_every.py saving every 2 batches: 20-40% on a 2-core box)")})
def checkpoint_stall(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    saving = [s for s in sampled(job, t) if s.fraction("checkpoint") >= t["checkpoint_share"]]
    if not saving:
        return
    jobs = timed_jobs(window, WINDOW_S)
    by_pid = {p.pid: p for p in job.processes}
    evidence: list[str] = []
    for s in saving:
        evidence += _rank_lines(s, who(by_pid.get(s.pid), s.pid), saves_of(jobs, s.pid))
    worst = max(saving, key=lambda s: s.fraction("checkpoint"))
    share = worst.fraction("checkpoint")
    yield checkpoint_stall.finding(
        "warning", f"Saving checkpoints stalls training {100 * share:.0f}% of the time", tuple(evidence),
        fixes_for(share, worst.site("checkpoint")), scope="job", pids=tuple(s.pid for s in saving),
        cause="synchronous checkpoint", measure=100 * share)


def _rank_lines(s: RankStacks, name: str, saves: Saves | None) -> list[str]:
    share = s.fraction("checkpoint")
    site = s.site("checkpoint")
    return [f"{name}: its main thread saves a checkpoint in {100 * share:.0f}% of {s.samples} stack samples over "
            f"{s.window_s:.0f} s" + (f", at {site}" if site else "") + ": training waits meanwhile",
            f"  {cadence(saves, share)}",
            f"  where its time goes: {stacks_line(s)}"]
