"""PCIe byte counters that cannot wrap unseen.

A real R580 driver answers NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES as 32-bit counters (tests/fixtures/gpu-capture/
h200-r580): they wrap every 4 GiB, every 78 ms at the 55 GB/s a PCIe 5 x16 link carries, and two readings a tick
apart cannot say how many times. So every reading of such a counter, the tick's and a poller's, adds its wrapped
difference to a 64-bit total (`WideCounters`), and while the traffic is heavy a `CounterPoller` reads the two
fields every POLL_S on a thread of its own, so that consecutive readings stay under one wrap apart (exact up to
4 GiB per 50 ms, 86 GB/s). The tick's rate is the total's difference: exact, never a guess at the wraps.

What is left: from light traffic to heavy within one tick, before anything says the traffic is heavy, that tick's
readings are one tick apart; what they show is below a wrap's worth, possibly an alias. The poller starts as soon
as either the tick's rate or the slow tier's nvmlDeviceGetPcieThroughput sample (every SLOW_TIER_S) is heavy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

POLL_S = 0.05
HEAVY_BYTES_PER_S = 2**30  # a quarter of a 32-bit counter's wrap per second: start polling
POLL_HOLD_S = 10.0  # ...and keep on this long after the traffic last looked heavy


@dataclass(frozen=True, slots=True)
class _Reading:
    raw: int
    at_us: int
    total: int


class WideCounters:
    """Narrow counters widened: each reading adds (raw - last raw) modulo its width to a running total. A reading
    not newer than the last one fed (by its own timestamp) adds nothing, so the tick and the poller may feed in
    any order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, _Reading] = {}

    def feed(self, field_id: int, raw: int, at_us: int, bits: int) -> tuple[int, int]:
        """(the total so far, the timestamp of the newest reading in it)."""
        with self._lock:
            last = self._last.get(field_id)
            if last is None:
                last = _Reading(raw, at_us, 0)
            elif at_us > last.at_us:
                last = _Reading(raw, at_us, last.total + (raw - last.raw) % (1 << bits))
            self._last[field_id] = last
            return last.total, last.at_us


class CounterPoller:
    """Calls `read` every `period` seconds on a thread of its own until `keep_alive`'s deadline passes, or `read`
    returns False (its call failed: the tick's own readings carry on). `threaded=False` starts no thread: tests
    call `poll_once`."""

    def __init__(self, read: Callable[[], bool], clock: Callable[[], float] = time.monotonic,
                 period: float = POLL_S, threaded: bool = True) -> None:
        self._read = read
        self._clock = clock
        self._period = period
        self._threaded = threaded
        self._lock = threading.Lock()
        self._until = float("-inf")
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def active(self) -> bool:
        return self._clock() < self._until

    def keep_alive(self, seconds: float = POLL_HOLD_S) -> None:
        with self._lock:
            self._until = max(self._until, self._clock() + seconds)
            if self._threaded and self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="hwtop-pcie-poller", daemon=True)
                self._thread.start()

    def poll_once(self) -> bool:
        return self._read()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=1.0)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            with self._lock:
                if not self.active:
                    self._thread = None
                    return
            if not self._read():
                with self._lock:
                    self._until = float("-inf")
                    self._thread = None
                return
