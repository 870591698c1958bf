"""Counter-to-rate arithmetic that survives the first sample, counter resets and wraps."""

from __future__ import annotations

from collections.abc import Hashable

import msgspec


def counter_delta(previous: float | None, current: float, wrap_at: float | None = None) -> float | None:
    """How much a monotonic counter advanced, or None when that cannot be known.

    No previous sample: None. A counter that went backwards either wrapped (when its width is known,
    `wrap_at` = 2**bits) or was reset (device re-added, driver reloaded): a reset gives None rather than a
    huge or negative rate.
    """
    if previous is None:
        return None
    if current >= previous:
        return current - previous
    if wrap_at is not None and previous < wrap_at:
        return wrap_at - previous + current
    return None


class RateMeter(msgspec.Struct):
    """Per-key rates from monotonic counters: `rate(key, value, now)` gives units per second."""

    wrap_at: float | None = None
    _last: dict[Hashable, tuple[float, float]] = msgspec.field(default_factory=dict)

    def rate(self, key: Hashable, value: float, now: float) -> float | None:
        previous = self._last.get(key)
        self._last[key] = (value, now)
        if previous is None:
            return None
        last_value, last_time = previous
        elapsed = now - last_time
        if elapsed <= 0:
            return None
        delta = counter_delta(last_value, value, self.wrap_at)
        return None if delta is None else delta / elapsed

    def forget_except(self, keys: set[Hashable]) -> None:
        """Drop state for keys no longer seen, so the map stays bounded (vanished pids, removed disks)."""
        for key in [k for k in self._last if k not in keys]:
            del self._last[key]
