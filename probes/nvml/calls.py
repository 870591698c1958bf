"""What an NVML error means for a monitor, and what it remembers about a GPU's answers.

An error is one of: the driver lacks the function (remember until the library is opened again); the card says
NOT_SUPPORTED (ask again on a slow schedule, or at once when the card's state changes: MIG, ECC, a reset);
the GPU has fallen off the bus (only GPU_IS_LOST / RESET_REQUIRED, and only once a fresh handle lookup
agrees); the NVML session itself is gone (driver unloaded: reopen later); or anything else (TIMEOUT,
UNKNOWN, NO_PERMISSION...), which costs this one value this one tick and nothing more.
"""

from __future__ import annotations

from enum import Enum

# nvmlReturn_t codes, fixed by the NVML ABI (this module need not import pynvml to know them).
import msgspec

UNINITIALIZED = 1
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
RESET_REQUIRED = 16
LIB_RM_VERSION_MISMATCH = 18
UNKNOWN = 999

REPROBE_S = 60.0  # how long a NOT_SUPPORTED answer stands before the question is asked again


class Verdict(Enum):
    ABSENT = "absent"  # this driver's library has no such function
    UNSUPPORTED = "unsupported"  # the card (in its current state) does not do this
    LOST = "lost"  # the GPU may have fallen off the bus: confirm before believing it
    SESSION = "session"  # the NVML session is unusable (driver unloaded or replaced)
    DENIED = "denied"  # no permission
    TRANSIENT = "transient"  # this tick's value is unknown; ask again next tick


def error_code(error: BaseException) -> int | None:
    """The nvmlReturn_t behind an exception from the bindings (FUNCTION_NOT_FOUND for the bindings' own
    "library too old for this function" errors)."""
    value = getattr(error, "value", None)
    if isinstance(value, int):
        return value
    if isinstance(error, AttributeError) or type(error).__name__ == "NVMLLibraryMismatchError":
        return FUNCTION_NOT_FOUND
    return None


def verdict(code: int | None) -> Verdict:
    if code == FUNCTION_NOT_FOUND:
        return Verdict.ABSENT
    if code == NOT_SUPPORTED:
        return Verdict.UNSUPPORTED
    if code in (GPU_IS_LOST, RESET_REQUIRED):
        return Verdict.LOST
    if code in (UNINITIALIZED, DRIVER_NOT_LOADED, LIB_RM_VERSION_MISMATCH):
        return Verdict.SESSION
    if code == NO_PERMISSION:
        return Verdict.DENIED
    return Verdict.TRANSIENT


class Capabilities(msgspec.Struct):
    """Per GPU: which queries to skip, and since when. Keys name a query (`util`, `fan`, `pcie_fields`...)."""

    absent: set[str] = msgspec.field(default_factory=set)
    retry_at: dict[str, float] = msgspec.field(default_factory=dict)
    answered: set[str] = msgspec.field(default_factory=set)

    def skip(self, key: str, now: float) -> bool:
        return key in self.absent or self.retry_at.get(key, float("-inf")) > now

    def succeeded(self, key: str) -> None:
        self.answered.add(key)
        self.retry_at.pop(key, None)

    def unsupported(self, key: str, now: float) -> bool:
        """Note NOT_SUPPORTED; True when the query used to work (the card's state changed under us)."""
        changed = key in self.answered
        self.answered.discard(key)
        self.retry_at[key] = now + REPROBE_S
        return changed

    def forget(self) -> None:
        """The card changed state (MIG or ECC mode, a reset): ask everything again. What the driver lacks
        stays known until the library is opened again."""
        self.retry_at.clear()
        self.answered.clear()


class GpuLost(Exception):
    """The GPU answered GPU_IS_LOST or RESET_REQUIRED, and a fresh handle lookup agreed."""


class SessionGone(Exception):
    """NVML itself stopped answering (driver unloaded, version mismatch after an upgrade)."""
