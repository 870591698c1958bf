"""What an NVML error means for a monitor (a GPU remembers the answers in probes/nvml/capabilities.py).

An error is one of: the driver lacks the function (remember until the library is opened again); the card says
NOT_SUPPORTED (ask again on a slow schedule, or at once when the card's state changes: MIG, ECC, a reset);
the GPU has fallen off the bus (only GPU_IS_LOST / RESET_REQUIRED, and only once a fresh handle lookup
agrees); the NVML session itself is gone (driver unloaded: reopen later); or anything else (TIMEOUT,
UNKNOWN, NO_PERMISSION...), which costs this one value this one tick and nothing more.
"""

from __future__ import annotations

from enum import Enum

# nvmlReturn_t codes, fixed by the NVML ABI (this module need not import pynvml to know them).
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


class GpuLost(Exception):
    """The GPU answered GPU_IS_LOST or RESET_REQUIRED, and a fresh handle lookup agreed."""


class SessionGone(Exception):
    """NVML itself stopped answering (driver unloaded, version mismatch after an upgrade)."""
