"""The fleet's monitor loop, off the UI's thread: a worker reads a round from the source (fetch, parse, assemble,
judge), sorts and counts it, and publishes one immutable FleetFrame. The UI asks for what its screen shows
(`ask`), reads `frame` when it draws, and never waits on the network or on parsing. A round that fails keeps
the last good hosts, marked stale with their age."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.frame import FleetFrame, Summary
from hwtop.fleet.model import HostView, worst_first
from hwtop.fleet.sources import WAITING, Ask, FleetSource, Round


def summarise(hosts: tuple[HostView, ...], thresholds: Thresholds) -> Summary:
    """Each GPU once, memory as used of total (total = FB_TOTAL or used + free + reserved)."""
    gpus = [g for h in hosts for g in h.gpus]
    known = [g for g in gpus if g.fb_used_mib is not None and g.memory_total_mib is not None]
    utils = [g.util for g in gpus if g.util is not None]
    rules = Counter(rule for h in hosts for rule in {f.rule for f in h.findings})
    return Summary(len(hosts), sum(1 for h in hosts if h.up), len(gpus),
                   _idle_gpus(hosts, thresholds["gpu_busy_util_percent"]),
                   float(sum(g.fb_used_mib or 0.0 for g in known)),
                   float(sum(g.memory_total_mib or 0.0 for g in known)),
                   sum(utils) / len(utils) if utils else None,
                   tuple(sorted(rules.items(), key=lambda item: (-item[1], item[0]))))


def _idle_gpus(hosts: tuple[HostView, ...], busy: float) -> int:
    """The GPUs of the hosts up whose utilization is known and at most `busy`."""
    return sum(1 for h in hosts if h.up for g in h.gpus if g.util is not None and g.util <= busy)


@contextmanager
def collector_paused() -> Iterator[None]:
    """A round makes ~10^5 containers (a parsed series each) that die when it ends. While they live, the cyclic
    collector's full passes walk them all, holding the interpreter's lock, and so the UI's thread, for a tenth of
    a second and more (benchmarks/README.md). Nothing of a round forms a cycle: automatic collection waits for
    the round (process-wide; left as found when someone else had turned it off)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


ROUND_SWITCH_INTERVAL_S = 0.001


@contextmanager
def lock_shared() -> Iterator[None]:
    """While a round's parse and assembly (Python, on the worker) compete with the UI's thread for the interpreter
    lock, a thread that wakes (a key read, a frame to write) waits for it at most this long, not Python's default
    interval at each of the several times a redraw gives the lock up (benchmarks/README.md). Put back after the
    round unless someone else changed it meanwhile (the app's first frame has its own)."""
    before = sys.getswitchinterval()
    mine = min(before, ROUND_SWITCH_INTERVAL_S)
    sys.setswitchinterval(mine)
    try:
        yield
    finally:
        if sys.getswitchinterval() == mine:
            sys.setswitchinterval(before)


class FleetSession:
    """`frame` is replaced whole, never changed: a reader on another thread sees one frame or the next."""

    def __init__(self, source: FleetSource, clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self._clock = clock
        self._ask = Ask(source.job, False)
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._answered_at: float | None = None
        self._warnings: dict[str, None] = {}
        self.failure: BaseException | None = None  # a bug in a round: the UI raises it (a crash, reported)
        self.frame = FleetFrame(0, source.description, source.interval, (), Summary(), WAITING)

    def ask(self, job: str | None, jobs: bool, host: str | None = None) -> None:
        """From the UI: read this job's ranks, the job list (or not) and the open host's own GPU fields; a change
        starts a round at once."""
        wanted = Ask(job, jobs and self.source.reads_jobs, host)
        if wanted != self._ask:
            self._ask = wanted
            self._wake.set()

    def round(self) -> FleetFrame:
        """One round, read and made into the frame it publishes (the worker's step; `--json` calls it once)."""
        ask, started = self._ask, self._clock()
        with collector_paused(), lock_shared():
            got = self.source.read(ask)
        self.frame = self._frame(got, ask, self._clock() - started)
        return self.frame

    def _frame(self, got: Round, ask: Ask, took: float) -> FleetFrame:
        last = self.frame
        for warning in got.warnings:
            self._warnings.setdefault(warning, None)
        base = {"seq": last.seq + 1, "description": self.source.description, "interval": self.source.interval,
                "warnings": tuple(self._warnings), "round_s": took}
        if got.hosts is None:  # nothing usable: the last good hosts, and how old they are
            age = None if self._answered_at is None else self._clock() - self._answered_at
            problem = got.problem if age is None else f"{got.problem}; showing what it said {age:.0f} s ago"
            return FleetFrame(hosts=last.hosts, summary=last.summary, problem=problem, stale_s=age,
                              job=last.job if ask.job is not None else None,
                              jobs=last.jobs if ask.jobs else None, alerts=last.alerts, **base)
        self._answered_at = self._clock()
        hosts = tuple(worst_first(list(got.hosts)))
        return FleetFrame(hosts=hosts, summary=summarise(hosts, self.source.thresholds), problem=got.problem,
                          job=got.job, jobs=got.jobs, alerts=got.alerts, **base)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hwtop-fleet-session", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """Round after round, one `interval` from the start of each to the next (at once when the ask changes)."""
        while not self._closed.is_set():
            started = self._clock()
            self._wake.clear()
            try:
                self.round()
            except BaseException as error:  # noqa: BLE001 - handed to the UI, which reports it and exits 1
                self.failure = error
                return
            self._wake.wait(max(0.0, started + self.source.interval - self._clock()))

    def close(self) -> None:
        """The worker ends after its round; a request in flight ends by its own deadline (daemon threads)."""
        self._closed.set()
        self._wake.set()
        self.source.close()
