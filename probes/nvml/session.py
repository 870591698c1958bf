"""One NVML session: the bindings, nvmlInit and nvmlShutdown, what the driver is, the tick's clock and the count of
every call made. The library is looked for before the bindings are imported (a CPU-only box never imports them);
a failed start says why in one line and is retried every INIT_RETRY_S; a session that stops answering mid-tick is
let go and opened afresh later."""

from __future__ import annotations

import os
import sys
import time
import types
from collections import Counter
from collections.abc import Callable
from typing import Any

from hwtop.model.snapshot import GpuSystem
from hwtop.probes.nvml.calls import DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, error_code

SLOW_TIER_S = 5.0  # power limit, ECC, energy, PCIe replays, MIG slices, NVLink states, faults; /dev/nvidiaN holders
LOST_RETRY_S = 5.0  # how often a lost GPU is looked up again
INIT_RETRY_S = 10.0  # how often a failed nvmlInit is tried again
PCIE_FIELDS_FROM_DRIVER = 555  # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES answer from this branch on

NVML_LIBRARY = "libnvidia-ml.so.1"  # what nvidia-ml-py's loader opens on Linux
NO_LIBRARY = f"no NVIDIA driver / NVML not found ({NVML_LIBRARY}): running CPU-only"


def nvml_library_loads() -> bool:
    """Whether the library nvidia-ml-py would load can be loaded: asked before the bindings are imported, so a
    CPU-only box never imports them. Elsewhere than Linux the bindings' own loader is left to decide."""
    if not sys.platform.startswith("linux"):
        return True
    # ctypes.CDLL's own dlopen, without importing ctypes (a CPU-only box's start never needs the rest of it). The
    # handle is kept, as CDLL keeps it: the bindings open the same library next.
    from _ctypes import dlopen

    try:
        dlopen(NVML_LIBRARY, os.RTLD_LOCAL)
    except OSError:
        return False
    return True


def driver_major(version: str | None) -> int | None:
    try:
        return int((version or "").split(".")[0])
    except ValueError:
        return None


def text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class NvmlSession:
    """What every GPU's reader shares: the bindings, the calls made, this tick's time and what the driver has."""

    def __init__(self, nvml: types.ModuleType | None, source: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.module = nvml  # None until the bindings are imported, on the first open
        self.source = source
        self.clock = clock
        self.calls: Counter[str] = Counter()  # NVML calls made, by function: what a tick costs
        self.now = 0.0  # the time of the tick being read
        self.tick = 0
        self.count = 0  # GPUs the driver reported at the last open
        self.pcie_fields = False  # the driver answers the PCIe byte counters as field values (R555+)
        self.process_version = {"compute": 0, "graphics": 0}  # index into processes.VERSIONS, per list
        self.system: GpuSystem | None = None
        self.retry_at: float | None = None

    @property
    def nvml(self) -> types.ModuleType:
        if self.module is None:
            raise RuntimeError("NVML is not open")
        return self.module

    def begin_tick(self) -> float:
        self.now = self.clock()
        self.tick += 1
        return self.now

    def optional(self, call: Callable[[], Any]) -> Any:
        """An optional fact, or None."""
        try:
            return call()
        except Exception:  # noqa: BLE001 - an optional fact
            return None

    def open(self, now: float) -> GpuSystem:
        """nvmlInit and what the driver is; on success `count` GPUs are there to look up."""
        self.retry_at = now + INIT_RETRY_S
        retry = f"; retrying every {INIT_RETRY_S:g} s"
        if self.module is None:
            if not nvml_library_loads():
                return GpuSystem(False, NO_LIBRARY + retry, source="none")
            try:
                import pynvml  # lazy, and only where the library loads: not on a CPU-only box's first frame
            except ImportError:
                self.retry_at = None
                return GpuSystem(False, "nvidia-ml-py is not installed: no GPU monitoring", source="none")
            self.module = pynvml
        nvml = self.module
        self.calls["nvmlInit"] += 1
        try:
            nvml.nvmlInit()
        except Exception as error:  # noqa: BLE001 - NVMLError, or anything the loader raises
            code = error_code(error)
            if code == LIBRARY_NOT_FOUND:
                message = NO_LIBRARY
            elif code == DRIVER_NOT_LOADED:
                message = "NVIDIA driver not loaded (is the kernel module in?): running CPU-only"
            else:
                message = f"NVML failed to start: {error}: running CPU-only"
            return GpuSystem(False, message + retry, source="none")
        driver = self.optional(lambda: text(nvml.nvmlSystemGetDriverVersion()))
        cuda = self.optional(nvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        major = driver_major(driver)
        self.pcie_fields = major is None or major >= PCIE_FIELDS_FROM_DRIVER
        self.process_version = {"compute": 0, "graphics": 0}
        try:
            self.count = int(nvml.nvmlDeviceGetCount())
        except Exception as error:  # noqa: BLE001
            self.shutdown()
            return GpuSystem(False, f"NVML could not count GPUs: {error}{retry}", driver, cuda_text, self.source)
        if self.count == 0:
            self.shutdown()
            return GpuSystem(False, f"NVIDIA driver loaded but no GPU visible{retry}", driver, cuda_text,
                             self.source)
        self.retry_at = None
        return GpuSystem(True, None, driver, cuda_text, self.source)

    def shutdown(self) -> None:
        if self.module is not None:
            self.optional(self.module.nvmlShutdown)

    def drop(self, why: str, now: float) -> GpuSystem:
        """NVML stopped answering mid-tick: let go of it (the GPUs' readers first let go of theirs); it is opened
        afresh INIT_RETRY_S later."""
        old = self.system or GpuSystem(False)
        self.shutdown()
        self.retry_at = now + INIT_RETRY_S
        self.system = GpuSystem(False, f"NVML stopped answering ({why}); retrying every {INIT_RETRY_S:g} s",
                                old.driver_version, old.cuda_driver_version, self.source)
        return self.system
