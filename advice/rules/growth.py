"""memory-growing: a focused job whose memory (PSS, all its processes) climbs steadily, named with its rate and
when the box (or its cgroup) runs out at that rate, before any pressure: by then the box swaps or the OOM killer
ends the job. Growth that levels off (a cache that fills, the allocator warming up) stays quiet."""


from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from hwtop.advice.job_facts import WORKER, alive, running_job, size_spans, timed_jobs, who
from hwtop.advice.registry import rule
from hwtop.advice.text import gib
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot

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


class Trend(NamedTuple):
    """The job's memory over the window, fitted: a climb, and how it holds once the first third is set aside."""

    first: tuple[float, float]
    last: tuple[float, float]
    slope: float  # bytes/s over the whole window
    fit: float  # R^2 of that line
    late: float  # bytes/s over the window less its first third

    @property
    def span(self) -> float:
        return self.last[0] - self.first[0]


def steady_growth(points: list[tuple[float, float]], t: Thresholds) -> Trend | None:
    """A climb that holds: enough of it, fast enough, a straight line, and still climbing once the window's first
    third is set aside. Start-up settles (torch's allocator, the workers' first batches, a cache filling: the
    #13246 job fixed with numpy arrays grew 200 MiB in its first 10 s of training, then held within 5 MiB): its
    rate is front-loaded, so without the first third the rest climbs at a fraction of the whole window's rate. A
    leak climbs in every part of the window. A leak also slows as it grows (each garbage collection walks more
    kept objects: tests/jobs/keep_losses.py's rate falls by about three quarters in its first 15 s, then holds),
    so the later part is set against a share of the whole window's rate, not against its own start."""
    if len(points) < 5 or points[-1][0] - points[0][0] < t["memory_growth_span_s"]:
        return None
    slope, fit = line_fit(points)
    span = points[-1][0] - points[0][0]
    # how much it grew, from the fitted line: its two end readings alone (each a few MiB off, on a loaded box
    # one stale by seconds) crossed the limit back and forth as a leak reached it, and the finding flickered
    if slope < t["memory_growth_floor_bytes_per_s"] or slope * span < t["memory_growth_min_bytes"] \
            or fit < t["memory_growth_fit"]:
        return None
    rest = [p for p in points if p[0] >= points[0][0] + span / 3]
    late = line_fit(rest)[0] if len(rest) >= 3 else slope
    if late < t["memory_growth_level_share"] * slope or late < t["memory_growth_floor_bytes_per_s"]:
        return None  # settling: the climb was its first third
    if stopped(points, span, t["memory_growth_level_share"]):
        return None
    return Trend(points[0], points[-1], slope, fit, late)


def stopped(points: list[tuple[float, float]], span: float, share: float) -> bool:
    """The climb stopped lately: its last third grew less than `share` of its middle third, in bytes and in rate.
    Judged only on four points a third or more (PSS is read every 2 s and a loaded box reads it late): on fewer, a
    leak's staircase of stale readings read as a stop, and the finding flickered to "clearing" as it grew."""
    start, end = points[0][0], points[-1][0]
    middle = [p for p in points if start + span / 3 <= p[0] <= end - span / 3]
    last = [p for p in points if p[0] >= end - span / 3]
    if len(middle) < 4 or len(last) < 4:
        return False
    grew_middle, grew_last = middle[-1][1] - middle[0][1], last[-1][1] - last[0][1]
    return grew_last < share * grew_middle and line_fit(last)[0] < share * line_fit(middle)[0]


def runs_out(window: Window, job: JobSnapshot, slope: float) -> tuple[float, str] | None:
    """(seconds, what) until the box's available memory or the job's cgroup limit runs out at `slope`."""
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
        return None
    left, what = min(room)
    return left / slope, what


@rule("memory-growing", order=224, severity="warning", hold_s=0.0, clear_s=30.0,
      watches="the job's memory (PSS) over the window: a steady climb",
      reads=("memory_growth_span_s", "memory_growth_min_bytes", "memory_growth_floor_bytes_per_s",
             "memory_growth_fit", "memory_growth_level_share", "memory_exhaustion_s"))
def memory_growing(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    timed = timed_jobs(window, WINDOW_S)
    points = [(when, float(j.pss_bytes if j.pss_bytes is not None else j.rss_bytes)) for when, j in timed]
    trend = steady_growth(points, t)
    if trend is None:
        return
    out = runs_out(window, job, trend.slope)
    if out is None or out[0] > t["memory_exhaustion_s"]:
        return
    processes = alive(job)
    evidence = [
        f"the job's memory (PSS of its {len(processes)} process(es)) grew from {gib(trend.first[1])} to "
        f"{gib(trend.last[1])} in {trend.span:.0f} s: {trend.slope / MIB:.1f} MiB/s, steadily (a straight line fits, "
        f"R² {trend.fit:.2f}; without its first third it grew at {trend.late / MIB:.1f} MiB/s)",
        f"at that rate {out[1]} run out in {duration(out[0])}"]
    growth = _grown(timed, processes, trend.span)
    for grew, p in growth[:3]:
        if grew >= t["memory_growth_min_bytes"] / 4:
            label = f"DataLoader worker pid {p.pid}" if p.role == WORKER else who(p, p.pid)
            evidence.append(f"growing: {label} +{grew / MIB:.0f} MiB")
    by_workers = sum(g for g, p in growth if p.role == WORKER and g > 0)
    main_grows = sum(g for g, p in growth if p.role != WORKER and g > 0)
    fixes = (COPIES, CACHES, KEPT) if by_workers > main_grows else (KEPT, CACHES, COPIES)
    yield memory_growing.finding("warning", "The job's memory grows steadily", tuple(evidence), fixes, scope="job",
                                 pids=tuple(p.pid for _, p in growth[:3]), measure=trend.slope)


def _grown(timed: list[tuple[float, JobSnapshot]], processes: tuple[JobProcess, ...],
           span: float) -> list[tuple[float, JobProcess]]:
    """(bytes grown, process) of the live processes watched for half the window or more, most first."""
    spans = size_spans(timed)
    growth = []
    for p in processes:
        seen = spans.get(p.pid)
        if seen is not None and timed[-1][0] - seen.first[0] >= span / 2:
            growth.append((float(seen.last[1] - seen.first[1]), p))
    growth.sort(key=lambda g: -g[0])
    return growth


KEPT = ("Tensors kept across steps: a loss or an output appended to a list keeps its whole autograd graph "
        "(and the batch it came from) alive; keep loss.item() or loss.detach(), and only the figures you log.")
CACHES = ("Caches that never evict: a dict filled in __getitem__ or a functools.lru_cache(maxsize=None) grows "
          "with every new sample; bound it (lru_cache(maxsize=N)) or cache to disk.")
COPIES = ("DataLoader workers copying the dataset: Python lists and dicts of objects read in __getitem__ are "
          "copied into each worker page by page (their refcounts write to them); hold the data in numpy arrays "
          "or tensors, or read each sample from a file.")
