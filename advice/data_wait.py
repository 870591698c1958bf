"""Who waits for data, as the rules about loading tell it: the ranks a focused job's stacks show waiting, the
embedded job's own step figures, a worker that has stopped, a parent that re-creates its workers. Shared so
that one wait is one finding (gpu-starved from the job's figures, data-starved from its stacks, worker-stuck for
a hang)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwtop.advice.job_facts import churn, running_job, sampled, stuck_workers
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, workload_running

if TYPE_CHECKING:
    from hwtop.model.job import JobSnapshot, RankStacks

SPAN_S = 10.0  # utilisations are averaged over this much of the recent past
WAIT_SPAN_S = 5.0  # the job's data-wait fraction (already a per-step figure) over this much


def job_data_wait(window: Window) -> dict[int, float]:
    """Each rank's mean data-wait fraction over the span (the embedded job's telemetry)."""
    latest = window.latest
    if not workload_running(latest) or latest.workload is None:
        return {}
    out = {}
    for rank in latest.workload.ranks:
        value = window.rank_mean(rank.rank, lambda r: r.data_wait_fraction, WAIT_SPAN_S)
        if value is not None:
            out[rank.rank] = value
    return out


def telemetry_starved(window: Window, t: Thresholds) -> tuple[float, dict[int, float | None]] | None:
    """(the mean wait, the job's GPUs' utilisations) where the embedded job's own telemetry says its training step
    waits for data while its GPUs are under-used: gpu-starved's finding."""
    latest = window.latest
    waits = job_data_wait(window)
    workload = latest.workload
    if not waits or workload is None:
        return None
    mean_wait = sum(waits.values()) / len(waits)
    if mean_wait < t["data_wait_fraction"]:
        return None
    job_gpus = [g for g in latest.gpus if set(compute_pids(g)) & set(workload.pids)]
    utils = {g.index: window.gpu_mean(g.index, lambda x: x.util_percent, SPAN_S) for g in job_gpus}
    if any(u is not None and u >= t["gpu_waiting_util_percent"] for u in utils.values()):
        return None  # the GPU is busy regardless: waiting on data costs little
    return mean_wait, utils


def told_by_telemetry(window: Window, t: Thresholds) -> set[int]:
    """The pids of the embedded job whose waiting for data gpu-starved tells from the job's own step figures: the
    same wait as data-starved reads from their stacks, one cause, so that rule leaves them to this one."""
    latest = window.latest
    if latest.workload is None or telemetry_starved(window, t) is None:
        return set()
    return set(latest.workload.pids)


def stuck_worker_of(window: Window, t: Thresholds, job: JobSnapshot, pid: int) -> bool:
    """A worker of this rank whose stack stopped inside its Dataset, however briefly watched: more workers would
    not help a hang (worker-stuck names it once it has held stuck_stack_s)."""
    return any(w.parent == pid for w, _ in stuck_workers(window, t, job, for_s=0.0))


def starved_ranks(window: Window, t: Thresholds) -> list[RankStacks]:
    job = running_job(window)
    if job is None:
        return []
    return [s for s in sampled(job, t) if s.data_wait >= t["data_wait_fraction"]]


def churn_cause(window: Window, t: Thresholds, pids: set[int] | None = None) -> tuple[list[str], list[str]]:
    """Evidence and fix when a parent re-creates its DataLoader workers: for the GPU and data rules to say that
    the loader's restarts are why they wait."""
    job = running_job(window)
    if job is None:
        return [], []
    found = [(b, per_minute) for b, per_minute in churn(job, t) if pids is None or b.parent in pids]
    if not found:
        return [], []
    evidence = [f"pid {b.parent} started {b.born} DataLoader workers in the last {max(b.span_s, 1):.0f} s "
                f"({per_minute:.0f}/min, at most {b.peak_alive} at once): it re-creates them every epoch"
                for b, per_minute in found]
    return evidence, ["persistent_workers=True in DataLoader(...) keeps the workers alive across epochs (see "
                      "worker-churn)."]
