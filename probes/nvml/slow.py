"""NVML calls too slow for a tick, run on one background thread.

nvmlDeviceGetPcieThroughput samples a counter for 20 ms inside the driver: two of them on each of 8 GPUs is 320 ms,
most of a 1 s tick. Where the PCIe byte counters are not field values (drivers before R555), or are 32-bit ones
whose bursts they reveal (R580), those calls run here instead, one request per key at a time; the tick takes
whatever result is latest and never waits. `inline=True` runs each request at once on the caller's thread (for
tests that want no thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import msgspec

Call = Callable[[], tuple[Any, int | None]]  # returns (value, the nvmlReturn_t it failed with or None)



class Result(msgspec.Struct, frozen=True):
    at: float  # the caller's clock when the request was made
    value: Any
    error: int | None


class BackgroundCalls:
    def __init__(self, inline: bool = False) -> None:
        self.inline = inline
        self._queue: queue.Queue[tuple[str, float, Call] | None] = queue.Queue()
        self._pending: set[str] = set()
        self._results: dict[str, Result] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def request(self, key: str, at: float, call: Call) -> None:
        """Run `call` unless a request for `key` is still pending."""
        if self.inline:
            self._store(key, at, call)
            return
        with self._lock:
            if key in self._pending:
                return
            self._pending.add(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hwtop-nvml-slow", daemon=True)
                self._thread.start()
        self._queue.put((key, at, call))

    def result(self, key: str) -> Result | None:
        with self._lock:
            return self._results.get(key)

    def drain(self) -> None:
        """Wait until every request made so far has its result (tests)."""
        if self._thread is not None:
            self._queue.join()

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout=2.0)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._store(*item)
            finally:
                self._queue.task_done()

    def _store(self, key: str, at: float, call: Call) -> None:
        try:
            value, error = call()
        except Exception:  # noqa: BLE001 - a slow call that breaks costs its own value only
            value, error = None, None
        with self._lock:
            self._pending.discard(key)
            self._results[key] = Result(at, value, error)
