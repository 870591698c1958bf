"""Per-core CPU load from cumulative kernel times, plus the CPU's static facts (read in the background)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil

from hwtop.model.snapshot import CoreLoad, CpuSnapshot
from hwtop.probes.cpu_facts import cache_totals, cpu_model
from hwtop.probes.processes import CLOCK_TICKS
from hwtop.probes.sysfs import proc_lines

# Field names as psutil (and /proc/stat) give them; guest and guest_nice are already inside user and nice.
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

TimesSource = Callable[[], Sequence[Any]]
FreqSource = Callable[[], Sequence[Any]]


def _times_tuple(sample: Any) -> tuple[float, ...]:
    return tuple(float(getattr(sample, name, 0.0) or 0.0) for name in _FIELDS)


def proc_stat_times(proc: str = "/proc") -> list[tuple[float, ...]]:
    """Each CPU's times, as `_times_tuple` makes them of psutil.cpu_times(percpu=True)'s, from one read of
    `proc`/stat (the file psutil reads; seconds: the clock ticks over SC_CLK_TCK): no record per core, each tick,
    for every core. A core whose line cannot be read has too few figures, which core_load calls N/A (sysfs.proc_lines'
    rule)."""
    lines = proc_lines(proc, "stat")
    steal = bool(lines) and len(lines[0].split()) - 1 >= len(_FIELDS)  # Linux 2.6.11+; psutil's field list by it
    count = len(_FIELDS) if steal else len(_FIELDS) - 1
    cpus = []
    for line in lines[1:]:
        if line.startswith(b"cpu"):
            values = line.split()[1:count + 1]
            try:
                times = tuple(float(value) / CLOCK_TICKS for value in values)
            except ValueError:
                times = ()
            cpus.append(times if steal else (*times, 0.0))
    return cpus


def core_load(index: int, node: int, before: tuple[float, ...] | None, after: tuple[float, ...],
              mhz: float | None = None) -> CoreLoad:
    """Percentages of one core between two samples; None before there are two (or after a reset: a time that
    went back; or a sample without its eight figures, a line that could not be read). Written out field by field: a
    256-core box makes 256 of these a tick."""
    if before is None:
        return CoreLoad(index, node, None, mhz=mhz)
    try:
        b_user, b_nice, b_system, b_idle, b_iowait, b_irq, b_softirq, b_steal = before
        a_user, a_nice, a_system, a_idle, a_iowait, a_irq, a_softirq, a_steal = after
    except ValueError:
        return CoreLoad(index, node, None, mhz=mhz)
    if not (a_user >= b_user and a_nice >= b_nice and a_system >= b_system and a_idle >= b_idle
            and a_iowait >= b_iowait and a_irq >= b_irq and a_softirq >= b_softirq and a_steal >= b_steal):
        return CoreLoad(index, node, None, mhz=mhz)
    user, nice, system = float(a_user - b_user), float(a_nice - b_nice), float(a_system - b_system)
    idle, iowait, irq = float(a_idle - b_idle), float(a_iowait - b_iowait), float(a_irq - b_irq)
    softirq, steal = float(a_softirq - b_softirq), float(a_steal - b_steal)
    total = user + nice + system + idle + iowait + irq + softirq + steal
    if total <= 0:
        return CoreLoad(index, node, None, mhz=mhz)
    busy = total - idle - iowait
    return CoreLoad(
        index, node, round(100.0 * busy / total, 2), user=round(100.0 * (user + nice) / total, 2),
        system=round(100.0 * system / total, 2), iowait=round(100.0 * iowait / total, 2),
        irq=round(100.0 * (irq + softirq) / total, 2), steal=round(100.0 * steal / total, 2), mhz=mhz,
    )


class CpuStaticInfo:
    """The CPU's model and cache sizes: read once, off the first frame. The kernel's own files first
    (probes/cpu_facts.py); py-cpuinfo only for what they do not state, as its subprocess costs far more CPU."""

    def __init__(self, start: bool = True, delay_s: float = 2.0, root: str = "/") -> None:
        self.model: str | None = None
        self.l2_cache_bytes: int | None = None
        self.l3_cache_bytes: int | None = None
        self.physical_cores: int | None = psutil.cpu_count(logical=False)
        self.root = root
        self.ready = threading.Event()
        if start:
            # Delayed so that even the fallback's subprocess does not compete with the first frames.
            timer = threading.Timer(delay_s, self.load)
            timer.name, timer.daemon = "hwtop-cpuinfo", True
            timer.start()

    def load(self) -> None:
        try:
            caches = cache_totals(self.root)
            self.model = cpu_model(self.root)
            self.l2_cache_bytes, self.l3_cache_bytes = caches.get(2), caches.get(3)
            if self.model is None or self.l2_cache_bytes is None or self.l3_cache_bytes is None:
                self._load_from_py_cpuinfo()
        finally:
            self.ready.set()

    def _load_from_py_cpuinfo(self) -> None:
        try:
            import cpuinfo  # lazy: slow to import and to run

            info = cpuinfo.get_cpu_info()
        except Exception:  # noqa: BLE001 - the facts stay None; the monitor does not depend on them
            return
        self.model = self.model or info.get("brand_raw") or None
        self.l2_cache_bytes = self.l2_cache_bytes or _cache_bytes(info.get("l2_cache_size"))
        self.l3_cache_bytes = self.l3_cache_bytes or _cache_bytes(info.get("l3_cache_size"))


def _cache_bytes(value: Any) -> int | None:
    if isinstance(value, int):
        return value or None
    return None


FREQ_EVERY_S = 5.0


class CpuProbe:
    """Owns the previous per-core times, so each `read` returns load over the interval since the last.

    Core frequencies are read at most every `FREQ_EVERY_S` and carried between reads: psutil reads three sysfs
    files per core for them (384 a tick on a 128-core box) or parses /proc/cpuinfo, and no view draws them yet."""

    def __init__(
        self,
        times_source: TimesSource | None = None,
        freq_source: FreqSource | None = None,
        static: CpuStaticInfo | None = None,
        loadavg: Callable[[], tuple[float, float, float]] | None = os.getloadavg,
        clock: Callable[[], float] = time.monotonic,
        root: str = "/",
    ) -> None:
        proc = os.path.join(root, "proc")
        self._samples: Callable[[], list[tuple[float, ...]]] = (
            (lambda: proc_stat_times(proc)) if times_source is None
            else (lambda: [_times_tuple(sample) for sample in times_source()]))
        self._freq_source = freq_source or (lambda: psutil.cpu_freq(percpu=True) or [])
        self.static = static if static is not None else CpuStaticInfo()
        self._loadavg = loadavg
        self._clock = clock
        self._previous: list[tuple[float, ...]] | None = None
        self._mhz: list[float | None] = []
        self._mhz_at: float | None = None

    def _frequencies(self) -> list[float | None]:
        now = self._clock()
        if self._mhz_at is None or now - self._mhz_at >= FREQ_EVERY_S or now < self._mhz_at:
            self._mhz_at = now
            try:
                self._mhz = [float(f.current) if f.current else None for f in self._freq_source()]
            except Exception:  # noqa: BLE001 - frequency is optional everywhere
                self._mhz = []
        return self._mhz

    def read(self, node_of_cpu: dict[int, int]) -> CpuSnapshot:
        samples = self._samples()
        previous = self._previous
        if previous is not None and len(previous) != len(samples):
            previous = None  # CPUs went on- or offline: start over rather than pair the wrong cores
        self._previous = samples
        mhz = self._frequencies()
        cores = [core_load(index, node_of_cpu.get(index, 0), previous[index] if previous else None, after,
                           mhz[index] if index < len(mhz) else None)
                 for index, after in enumerate(samples)]
        measured = [c.percent for c in cores if c.percent is not None]
        total = round(sum(measured) / len(measured), 2) if measured and len(measured) == len(cores) else None
        try:
            load_average = tuple(self._loadavg()) if self._loadavg else None
        except OSError:
            load_average = None
        return CpuSnapshot(
            cores=tuple(cores),
            percent=total,
            load_average=load_average,  # type: ignore[arg-type]
            logical_cores=len(cores),
            physical_cores=self.static.physical_cores,
            model=self.static.model,
            l2_cache_bytes=self.static.l2_cache_bytes,
            l3_cache_bytes=self.static.l3_cache_bytes,
        )

