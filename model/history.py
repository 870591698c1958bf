"""Bounded history rings for sparklines: a fixed number of recent values per metric, nothing more. The source's
ring (`History`) is filled as it ticks; each Frame carries it frozen (`Recent`), so the widgets draw a sparkline
from the Frame alone, never from a ring that moved on since."""

from __future__ import annotations

from collections import deque

from hwtop.model.record import Record
from hwtop.model.snapshot import Snapshot


class Recent(Record, frozen=True):
    """Each metric's last values (at most the ring's length), oldest first, as of one tick."""

    rings: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def series(self, key: str) -> tuple[float, ...]:
        return next((values for name, values in self.rings if name == key), ())


class History:
    def __init__(self, length: int = 120) -> None:
        self.length = length
        self._series: dict[str, deque[float]] = {}

    def add(self, key: str, value: float | None) -> None:
        if value is None:
            return
        ring = self._series.get(key)
        if ring is None:
            ring = self._series[key] = deque(maxlen=self.length)
        ring.append(float(value))

    def series(self, key: str) -> tuple[float, ...]:
        ring = self._series.get(key)
        return tuple(ring) if ring else ()

    def keys(self) -> list[str]:
        return list(self._series)

    def frozen(self) -> Recent:
        """The rings as they are now, for a Frame."""
        return Recent(tuple((key, tuple(ring)) for key, ring in self._series.items()))

    def push(self, snapshot: Snapshot) -> None:
        """Record the metrics the widgets draw as sparklines."""
        if snapshot.cpu is not None:
            self.add("cpu", snapshot.cpu.percent)
        if snapshot.memory is not None:
            self.add("mem", snapshot.memory.used_percent)
        job = snapshot.job
        if job is not None and job.status == "running":
            self.add("job.cpu", job.cpu_percent)
            self.add("job.rss", float(job.rss_bytes))
            mine = {index for index, _ in job.gpu_memory}
            utils = [g.util_percent for g in snapshot.gpus if g.index in mine and g.util_percent is not None]
            if utils:
                self.add("job.gpu", sum(utils) / len(utils))
        for gpu in snapshot.gpus:
            self.add(f"gpu{gpu.index}.util", gpu.util_percent)
            if gpu.memory_total_bytes and gpu.memory_used_bytes is not None:
                self.add(f"gpu{gpu.index}.mem", 100.0 * gpu.memory_used_bytes / gpu.memory_total_bytes)
