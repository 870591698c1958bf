"""memory-growing: a focused job whose memory (PSS, all its processes) climbs steadily, named with its rate and
when the box (or its cgroup) runs out at that rate, before any pressure: by then the box swaps or the OOM killer
ends the job. Growth that levels off (a cache that fills, the allocator warming up) stays quiet."""


from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.job_facts import WORKER, alive, running_job, size_spans, timed_jobs, who
from hwtop.advice.registry import rule
from hwtop.advice.text import gib
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

WINDOW_S = 120.0
MIB = 1 << 20


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(slope, R^2) of a least-squares line through the points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    syy = sum((y - my) ** 2 for _, y in points)
    if sxx <= 0:
        return 0.0, 0.0
    slope = sxy / sxx
    return slope, (sxy * sxy / (sxx * syy) if syy > 0 else 0.0)


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@rule("memory-growing", order=224, severity="warning", hold_s=0.0, clear_s=30.0,
      watches="the job's memory (PSS) over the window: a steady climb",
      reads=("memory_growth_span_s", "memory_growth_min_bytes", "memory_growth_floor_bytes_per_s",
             "memory_growth_fit", "memory_growth_level_share", "memory_exhaustion_s"))
def memory_growing(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    timed = [(when, j) for when, j in timed_jobs(window, WINDOW_S)]
    points = [(when, float(j.pss_bytes if j.pss_bytes is not None else j.rss_bytes)) for when, j in timed]
    if len(points) < 5 or points[-1][0] - points[0][0] < t["memory_growth_span_s"]:
        return
    span = points[-1][0] - points[0][0]
    slope, fit = line_fit(points)
    grown = points[-1][1] - points[0][1]
    if slope < t["memory_growth_floor_bytes_per_s"] or grown < t["memory_growth_min_bytes"] or \
            fit < t["memory_growth_fit"]:
        return
    last = [p for p in points if p[0] >= points[-1][0] - span / 3]
    middle = [p for p in points if points[0][0] + span / 3 <= p[0] <= points[-1][0] - span / 3]
    recent = line_fit(last)[0] if len(last) >= 3 else slope
    before = line_fit(middle)[0] if len(middle) >= 3 else slope
    # Levelling off is the rate falling away from the one just before it. A leak also slows as it grows (each
    # garbage collection walks more kept objects: tests/jobs/keep_losses.py's rate falls by about three quarters
    # in its first 15 s, then holds), so against the whole window's rate its last third looked like a warm-up's.
    if recent < t["memory_growth_level_share"] * before:
        return  # levelling off: a warm-up, not a leak
    room: list[tuple[float, str]] = []
    memory = window.latest.memory
    if memory is not None and memory.total_bytes:
        room.append((memory.available_bytes, f"the box's {gib(memory.available_bytes)} available (of "
                                             f"{gib(memory.total_bytes)})"))
    group = job.cgroup_memory
    if group is not None and group.limit_bytes:
        room.append((max(0, group.limit_bytes - group.used_bytes),
                     f"its cgroup's {gib(group.limit_bytes)} limit ({gib(group.used_bytes)} used)"))
    if not room:
        return
    left, what = min(room)
    exhausted_s = left / slope
    if exhausted_s > t["memory_exhaustion_s"]:
        return
    processes = alive(job)
    evidence = [
        f"the job's memory (PSS of its {len(processes)} process(es)) grew from {gib(points[0][1])} to "
        f"{gib(points[-1][1])} in {span:.0f} s: {slope / MIB:.1f} MiB/s, steadily (a straight line fits, R² "
        f"{fit:.2f}; the last third grew at {recent / MIB:.1f} MiB/s)",
        f"at that rate {what} run out in {duration(exhausted_s)}"]
    spans = size_spans(timed)
    growth = []
    for p in processes:
        seen = spans.get(p.pid)
        if seen is not None and timed[-1][0] - seen.first[0] >= span / 2:
            growth.append((seen.last[1] - seen.first[1], p))
    growth.sort(key=lambda g: -g[0])
    by_workers = sum(g for g, p in growth if p.role == WORKER and g > 0)
    for grew, p in growth[:3]:
        if grew >= t["memory_growth_min_bytes"] / 4:
            label = f"DataLoader worker pid {p.pid}" if p.role == WORKER else who(p, p.pid)
            evidence.append(f"growing: {label} +{grew / MIB:.0f} MiB")
    kept = ("Tensors kept across steps: a loss or an output appended to a list keeps its whole autograd graph "
            "(and the batch it came from) alive; keep loss.item() or loss.detach(), and only the figures you log.")
    caches = ("Caches that never evict: a dict filled in __getitem__ or a functools.lru_cache(maxsize=None) grows "
              "with every new sample; bound it (lru_cache(maxsize=N)) or cache to disk.")
    copies = ("DataLoader workers copying the dataset: Python lists and dicts of objects read in __getitem__ are "
              "copied into each worker page by page (their refcounts write to them); hold the data in numpy arrays "
              "or tensors, or read each sample from a file.")
    main_grows = sum(g for g, p in growth if p.role != WORKER and g > 0)
    fixes = (copies, caches, kept) if by_workers > main_grows else (kept, caches, copies)
    yield memory_growing.finding("warning", "The job's memory grows steadily", tuple(evidence), fixes, scope="job",
                                 pids=tuple(p.pid for _, p in growth[:3]), measure=slope)
