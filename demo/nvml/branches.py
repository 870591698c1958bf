"""Which symbols and field ids a driver branch's libnvidia-ml.so has: what an older driver lacks is what breaks
a monitor written against today's bindings.

What this model holds, from nvml.h's history as monitors meet it (nvitop and others fall back for the first):
- the `_v3` running-process functions arrived after R470 (R470 has `_v2` and the unversioned v1, whose struct
  has only pid and memory);
- `nvmlDeviceGetMemoryInfo_v2` (reserved memory apart from used) and GPM (`nvmlGpm*`, Hopper activity) are
  newer than R470 too;
- `nvmlDeviceGetCurrentClocksEventReasons` is the R535 name of `...ThrottleReasons` (which stays exported);
- the PCIe byte-counter fields `NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES` (197/198) answer from R555 on.
A real R580 (580.159.04 on an H200, tests/fixtures/gpu-capture/h200-r580) answered every call hwtop makes: the
`_v3` process lists, the v2 memory info, GPM, `...ClocksEventReasons`, and fields 197/198 as 32-bit counters.
Not measured here (no older driver was at hand): that R470 lacks the NVLink throughput fields (138/139), and
which branch first exported each symbol exactly; a capture on such a driver (scripts/capture-gpu.sh) would.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwtop.demo.nvml import abi

_PROCESS_V3 = frozenset({"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3"})
_GPM = frozenset({"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet",
                  "nvmlGpmMetricsGet"})
_PCIE_BYTES = frozenset({abi.FI_PCIE_COUNT_TX_BYTES, abi.FI_PCIE_COUNT_RX_BYTES})
_NVLINK_THROUGHPUT = frozenset({abi.FI_NVLINK_THROUGHPUT_DATA_TX, abi.FI_NVLINK_THROUGHPUT_DATA_RX, 140, 141})


@dataclass(frozen=True, slots=True)
class DriverBranch:
    name: str
    missing_symbols: frozenset[str]
    missing_fields: frozenset[int]


R470 = DriverBranch("R470", _PROCESS_V3 | _GPM | {"nvmlDeviceGetMemoryInfo_v2",
                                                   "nvmlDeviceGetCurrentClocksEventReasons"},
                    _PCIE_BYTES | _NVLINK_THROUGHPUT)
R535 = DriverBranch("R535", frozenset(), _PCIE_BYTES)
R550 = DriverBranch("R550", frozenset(), _PCIE_BYTES)
R555 = DriverBranch("R555+", frozenset(), frozenset())


def branch_of(driver_version: str) -> DriverBranch:
    """The modelled branch for a version string such as "550.90.07"."""
    major = int(driver_version.split(".")[0])
    if major < 510:
        return R470
    if major < 550:
        return R535
    if major < 555:
        return R550
    return R555
