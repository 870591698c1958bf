"""What the job rules read from a focused job over the recent past: its running snapshots, the ranks' stack
samples, each rank's DataLoader workers, its CPU demand, pressure and memory. Headless and pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from hwtop.advice.last_answer import KeptAnswers
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, mean

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot, RankStacks, WorkerBirths, WorkerStacks

SPAN_S = 10.0  # job figures are averaged over this much of the recent past
WORKER = "DataLoader worker"


def running_job(window: Window) -> JobSnapshot | None:
    job = window.latest.job
    return job if job is not None and job.status == "running" else None


def timed_jobs(window: Window, seconds: float = SPAN_S) -> list[tuple[float, JobSnapshot]]:
    """(time, job) of the job's running snapshots of the last `seconds` (the same job: same label)."""
    latest = running_job(window)
    if latest is None:
        return []
    return [(s.time, s.job) for s in window.recent(seconds) if s.job is not None and s.job.status == "running"
            and s.job.label == latest.label]


def recent_jobs(window: Window, seconds: float = SPAN_S) -> list[JobSnapshot]:
    return [job for _, job in timed_jobs(window, seconds)]


def job_mean(window: Window, read: Callable[[JobSnapshot], float | None], seconds: float = SPAN_S) -> float | None:
    return mean(read(job) for job in recent_jobs(window, seconds))


_ALIVE: KeptAnswers[JobSnapshot, tuple[JobProcess, ...]] = KeptAnswers(32)  # rules read the last ~10 s of jobs


def alive(job: JobSnapshot) -> tuple[JobProcess, ...]:
    """Its live processes: kept for the (immutable) job, which rules ask once per rank and tick for the latest,
    once per tick for the last seconds' jobs."""
    return _ALIVE.ask(job, _alive)


def _alive(job: JobSnapshot) -> tuple[JobProcess, ...]:
    return tuple(p for p in job.processes if p.alive and p.state != "Z")


class SizeSpan(NamedTuple):
    """One process's memory over the recent past: its first and last samples (time, bytes)."""

    role: str
    first: tuple[float, int]
    last: tuple[float, int]


def size_spans(timed: list[tuple[float, JobSnapshot]], rss: bool = False) -> dict[int, SizeSpan]:
    """Each live process's first and last memory sample of `timed`, by pid: on PSS once it has been read (RSS
    before), never from one to the other, as RSS counts each shared library whole and PSS a share of it. With
    `rss`, on RSS alone: read every tick, where PSS is read every few seconds, so it follows a fast climb."""
    spans: dict[tuple[int, bool], SizeSpan] = {}
    for when, job in timed:
        for p in alive(job):
            pss = p.pss_bytes is not None and not rss
            size = p.pss_bytes if pss else p.rss_bytes
            if size is not None:
                known = spans.get((p.pid, pss))
                spans[(p.pid, pss)] = SizeSpan(p.role, known.first if known else (when, size), (when, size))
    return {pid: span for (pid, pss), span in spans.items() if pss or (pid, True) not in spans}


def mains(job: JobSnapshot) -> list[JobProcess]:
    """The processes running the training loop: the ranks, else the processes whose stacks are sampled, else
    the job's top processes that are neither launchers nor helpers."""
    live = alive(job)
    ranks = [p for p in live if p.role.startswith("rank")]
    if ranks:
        return ranks
    sampled = {s.pid for s in job.stacks}
    if sampled:
        return [p for p in live if p.pid in sampled]
    return [p for p in live if p.role == "process" and not any(q.pid == p.ppid and q.role == "process" for q in live)]


def workers_of(job: JobSnapshot, pid: int) -> list[JobProcess]:
    return [p for p in alive(job) if p.role == WORKER and p.ppid == pid]


def label(pid: int, role: str, process: JobProcess | None) -> str:
    """How evidence names one of the job's processes: a worker as such, else by rank or pid."""
    return f"DataLoader worker pid {pid}" if role == WORKER else who(process, pid)


def who(process: JobProcess | None, pid: int) -> str:
    if process is not None and process.rank is not None:
        return f"rank {process.rank} (pid {pid})"
    return f"pid {pid}"


def member_scope(process: JobProcess | None, pid: int) -> str:
    """A per-process finding's scope: "rank 3" for a rank (eight group as "ranks 0-7"), else "pid 123"."""
    return f"rank {process.rank}" if process is not None and process.rank is not None else f"pid {pid}"


def process_mean(window: Window, pid: int, read: Callable[[JobProcess], float | None],
                 seconds: float = SPAN_S) -> float | None:
    return mean(read(p) for job in recent_jobs(window, seconds) for p in job.processes if p.pid == pid and p.alive)


def sampled(job: JobSnapshot, t: Thresholds) -> list[RankStacks]:
    """Ranks with enough main-thread samples to read fractions from."""
    return [s for s in job.stacks if s.samples >= t["stack_min_samples"]]


def stacks_line(stacks: RankStacks, limit: int = 4) -> str:
    from hwtop.probes.stack_classify import LABELS

    parts = sorted(stacks.fractions, key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{LABELS.get(name, name)} {100 * value:.0f}%" for name, value in parts)


def churn(job: JobSnapshot, t: Thresholds) -> list[tuple[WorkerBirths, float]]:
    """Parents re-creating their DataLoader workers: (births, per minute) above the thresholds."""
    out = []
    for births in job.worker_births:
        span = max(births.span_s, 10.0)  # under 10 s watched, a burst of starts says little about a rate
        per_minute = births.born * 60.0 / span
        generations = births.born / max(1, births.peak_alive)
        if per_minute >= t["worker_births_per_min"] and generations >= t["worker_generations"]:
            out.append((births, per_minute))
    return out


def job_demand(job: JobSnapshot) -> tuple[float, float] | None:
    """(CPUs the job's threads want, of which queued) summed over its processes; None before two ticks."""
    demands = [(p.cpu_demand, p.run_wait_share) for p in alive(job) if p.cpu_demand is not None]
    if not demands:
        return None
    total = sum(d for d, _ in demands)
    waiting = sum(d * (w or 0.0) for d, w in demands)
    return total, waiting


def rank_count(job: JobSnapshot) -> int:
    return max(1, len(mains(job)))


def stuck_workers(window: Window, t: Thresholds, job: JobSnapshot,
                  for_s: float | None = None) -> list[tuple[WorkerStacks, float | None]]:
    """(worker, its CPU %) for each worker whose stack stopped inside its fetch (for `for_s`, stuck_stack_s
    unless given), using (next to) no CPU and never woken: blocked, not sleeping between slow reads."""
    out = []
    for w in job.worker_stacks:
        still = w.still
        if still is None or not still.fetching or still.seconds < (t["stuck_stack_s"] if for_s is None else for_s):
            continue
        cpu = process_mean(window, w.pid, lambda p: p.cpu_percent, SPAN_S)
        if cpu is not None and cpu > t["stuck_cpu_percent"]:
            continue  # one line at full CPU: a loop that has not finished, not a wait
        woken = process_mean(window, w.pid, lambda p: p.switches_per_s, SPAN_S)
        if woken is not None and woken > t["stuck_switches_per_s"]:
            continue  # the same line, but woken again and again: a slow read per sample, still moving
        out.append((w, cpu))
    return out
