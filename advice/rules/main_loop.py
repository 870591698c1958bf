"""work-in-loop: the training loop's main thread spends most of its time in the job's own Python, outside the
model, the optimizer and the DataLoader (tokenizing text, building masks, decoding, per-item metrics), on one
core, on every step. That work belongs in the Dataset, where the DataLoader's workers do it beside the step."""


from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hwtop.advice.job_facts import alive, member_scope, rank_count, running_job, sampled, who, workers_of
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:  # a job's model loads only with a job (tests/hwtop/test_import_hygiene.py)
    from hwtop.model.job import RankStacks


def _trained_share(s: RankStacks) -> float:
    """Its share of compute and data waits since it was first sampled: a loop whose step is a few percent of it
    shows none in some windows (a sample or two of a hundred), while its imports and set-up never had any."""
    seconds = dict(s.phase_seconds)
    total = sum(seconds.values())
    return (seconds.get("compute", 0.0) + seconds.get("data", 0.0)) / total if total > 0 else 0.0


@rule("work-in-loop", order=223, severity="warning", hold_s=5.0, clear_s=10.0,
      watches="the main thread's own Python outside the model and the loader",
      reads=("loop_python_share", "loop_running_share", "loop_training_share", "stuck_stack_s",
             "stack_min_samples"))
def work_in_loop(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    by_pid = {p.pid: p for p in alive(job)}
    for s in sampled(job, t):
        share = s.fraction("other")
        if share < t["loop_python_share"] or (s.still is not None and s.still.seconds >= t["stuck_stack_s"]):
            continue  # a main thread that stopped is loop-stuck's
        if max(s.fraction("compute") + s.fraction("data"), _trained_share(s)) < t["loop_training_share"]:
            continue  # not training yet: its imports and set-up are not a loop
        if s.main_running is not None and (s.main_running < t["loop_running_share"] or
                                           s.main_running - s.fraction("compute") < t["loop_running_share"] * share):
            continue  # beyond its compute, on a CPU for under half its own Python's share: it sleeps or waits there
        site = s.site("other") or s.busy_site or "?"
        process = by_pid.get(s.pid)
        workers = len(workers_of(job, s.pid))
        evidence = [
            f"{who(process, s.pid)}'s main thread runs the job's own Python outside the model, the optimizer and "
            f"the DataLoader in {100 * share:.0f}% of {s.samples} stack samples (limit "
            f"{100 * t['loop_python_share']:.0f}%), mostly at {site}",
            f"the rest: compute {100 * s.fraction('compute'):.0f}%, waiting for data {100 * s.fraction('data'):.0f}%"
            + (f"; on a CPU {100 * s.main_running:.0f}% of the time" if s.main_running is not None else ""),
            f"it has {workers} DataLoader worker(s): that work runs in the main thread, one core, every step"]
        cores = job.usable_cores
        target = max(1, cores // rank_count(job) - 1) if cores else None
        fixes = (
            f"Move the work at {site} into the Dataset's __getitem__ (or a collate_fn), which the DataLoader's "
            "workers run in parallel beside the step"
            + (f": DataLoader(num_workers={max(target, workers)}) ({cores} usable cores / {rank_count(job)} rank(s), "
               "one left for the main thread)." if target is not None else "."),
            "Or make it cheaper: one call on the whole batch instead of a Python loop per item (a fast tokenizer's "
            "batch call, numpy or torch ops), or do it once before training and save the result.")
        yield work_in_loop.finding("warning", "The training loop prepares data itself", tuple(evidence), fixes,
                                   scope=member_scope(process, s.pid), pids=(s.pid,), cause="work in the loop",
                                   measure=100 * share)
