"""What grew in a focused job's memory, process by process, and what to change for it: the evidence and fixes
job-memory-pressure and job-oom-killed both give."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwtop.advice.job_facts import WORKER, alive, label, size_spans
from hwtop.advice.text import gib

if TYPE_CHECKING:
    from hwtop.model.job import CgroupMemory, JobSnapshot

MIB = 1 << 20


def growth_of(timed: list[tuple[float, JobSnapshot]], min_s: float = 5.0,
              rss: bool = False) -> list[tuple[int, str, float, float, bool]]:
    """(pid, role, bytes/s, seconds, ended) of each process from its first to its last memory sample of the
    recent past. A process that grew and then ended is still named: under a memory limit the worker that grew is
    the one the OOM killer ends, and the job shuts its other workers down with it."""
    if len(timed) < 2:
        return []
    now = {p.pid for p in alive(timed[-1][1])}
    out = []
    for pid, (role, (start, size), (end, final)) in size_spans(timed, rss).items():
        if end - start >= min_s:
            out.append((pid, role, (final - size) / (end - start), end - start, pid not in now))
    return sorted(out, key=lambda g: -g[2])


def growth_lines(growing: list[tuple[int, str, float, float, bool]], job: JobSnapshot) -> list[str]:
    """One evidence line per process of growth_of's that grew."""
    by_pid = {p.pid: p for p in job.processes}
    lines = []
    for pid, role, per_s, seconds, ended in growing:
        lines.append(f"growing: {label(pid, role, by_pid.get(pid))} +{per_s * seconds / MIB:.0f} MiB in "
                     f"{seconds:.0f} s ({per_s / MIB:.1f} MiB/s)" + (", then it ended" if ended else ""))
    return lines


def memory_fixes(growing: list[tuple[int, str, float, float, bool]], group: CgroupMemory | None) -> list[str]:
    """What to change, from what grew: the workers each on its own, or the training process."""
    workers_growing = [g for g in growing if g[1] == WORKER]
    fixes = []
    if workers_growing:
        fixes.append(f"{len(workers_growing)} DataLoader worker(s) grow each on its own: a cache or list filled in "
                     "Dataset.__getitem__ is copied per worker. Drop the per-worker cache, or build it once before "
                     "the DataLoader starts and share it (numpy.memmap, torch tensors in shared memory).")
    if any(g[1] != WORKER for g in growing):
        fixes.append("The training process grows: references kept across steps (losses or outputs appended with "
                     "their graph: use loss.item() or .detach()), lists of batches, an ever-growing history.")
    return fixes + ["Fewer DataLoader workers and a smaller prefetch_factor: each worker holds its own Dataset copy "
                    "and prefetch_factor x batch samples.",
                    "A larger memory limit for the job" + (f" (its cgroup allows {gib(group.limit_bytes)})"
                                                           if group is not None and group.limit_bytes else "")
                    + ", or a smaller batch."]
