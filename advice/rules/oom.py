"""job-oom-killed: the kernel's OOM killer ended a process in the focused job's memory cgroup. It strikes in a
moment, often before a pressure figure has held long enough to be shown (a per-worker cache under a 1 GiB
limit was killed 1.6 s into training), and the job then dies of it; so this rule reads the job whatever its
state, running or ended, and names what was killed and what had grown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hwtop.advice.job_facts import alive, label
from hwtop.advice.job_memory import growth_lines, growth_of, memory_fixes
from hwtop.advice.registry import rule
from hwtop.advice.text import gib
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import CgroupMemory, JobSnapshot

SHOWN_S = 60.0  # a kill stays shown this long: the job it ended has nothing newer to show
MIB = 1 << 20


@rule("job-oom-killed", severity="critical", hold_s=0, clear_s=10, order=205,
      watches="the OOM killer in the job's memory cgroup", reads=("memory_growth_bytes_per_s",))
def job_oom_killed(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest.job
    if latest is None:
        return
    jobs = [(s.time, s.job) for s in window.recent(SHOWN_S) if s.job is not None and s.job.label == latest.label]
    counted = [(when, job, job.cgroup_memory) for when, job in jobs
               if job.cgroup_memory is not None and job.cgroup_memory.oom_kills is not None]
    at = _first_rise(counted)
    if at is None:  # a count from before the watch may be someone else's, long ago: only a rise is this job's
        return
    _, before, group = counted[at - 1]  # the last look before the kill: the cgroup as it was full
    evidence = _kill_lines(window.latest.time, counted, at)
    evidence += gone_lines(before, [job for _, job, _ in counted[at:]])
    running = [(w, j) for w, j in jobs if j.status == "running"]
    # A cache that fills a limit in seconds is killed before the pressure rule's 5 s of samples: 2 s will do, on
    # RSS, which is read every tick (PSS every few seconds lagged a worker's climb by hundreds of MiB)
    growing = [g for g in growth_of(running, min_s=2.0, rss=True) if g[2] >= t["memory_growth_bytes_per_s"]]
    evidence += growth_lines(growing[:4], before)
    if latest.status != "running":
        evidence.append(latest.message or f"the job has {latest.status}")  # how it ended, where known
    yield job_oom_killed.finding(
        "critical", "The OOM killer ended a process of the job", tuple(evidence),
        tuple(memory_fixes(growing, group)), scope="job", pids=tuple(g[0] for g in growing[:4]))


Counted = list[tuple[float, "JobSnapshot", "CgroupMemory"]]  # (when, the job, its cgroup with an oom_kill count)


def _first_rise(counted: Counted) -> int | None:
    """The first look at which the cgroup's oom_kill count is above the first look's; None if it never rose."""
    if len(counted) < 2:
        return None
    before_kills = counted[0][2].oom_kills or 0
    return next((index for index, (_, _, group) in enumerate(counted) if (group.oom_kills or 0) > before_kills),
                None)


def _kill_lines(now: float, counted: Counted, at: int) -> list[str]:
    """How many the OOM killer ended, when, and how full the cgroup was at the look before."""
    before_kills = counted[0][2].oom_kills or 0
    killed = (counted[-1][2].oom_kills or 0) - before_kills
    group = counted[at - 1][2]
    lines = [f"the kernel's OOM killer ended {killed} process(es) in the job's memory cgroup {group.path} "
             f"{now - counted[at][0]:.0f} s ago (its oom_kill count went {before_kills} → {before_kills + killed})"]
    if group.limit_bytes:
        lines.append(f"just before, the cgroup used {gib(group.used_bytes)} of its {gib(group.limit_bytes)} limit")
    return lines


def gone_lines(before: JobSnapshot, since: list[JobSnapshot]) -> list[str]:
    """The job's processes alive at the last look before the kill and gone at the first look after it that misses
    any: a killed process may still be exiting when the count rises, and the job's others go later, with it."""
    was = alive(before)
    for job in since:
        still = {p.pid for p in alive(job)}
        gone = [p for p in was if p.pid not in still]
        if gone:
            return [f"gone since: {label(p.pid, p.role, p)}" + (f" (RSS {p.rss_bytes / MIB:.0f} MiB a moment before)"
                                                  if p.rss_bytes else "") for p in gone]
    return []

