"""What each NVML call costs the caller, so a test can add up a tick's time spent in the driver.

One figure is NVIDIA's own: nvmlDeviceGetPcieThroughput "is querying a byte counter over a 20ms interval"
(NVML API reference), so it blocks for about 20 ms. The others are estimates for a card with persistence mode
on (no driver start-up per call): tens of microseconds for a query answered from the driver's cached state,
more for those that walk lists (processes, samples). They are not measurements: scripts/capture-gpu.sh
records every call's real latency on a GPU machine, and its figures should replace these.
"""

from __future__ import annotations

US = 1e-6

DEFAULT_S = 10 * US
COST_S: dict[str, float] = {
    "nvmlInitWithFlags": 50_000 * US,
    "nvmlInit_v2": 50_000 * US,
    "nvmlShutdown": 5_000 * US,
    "nvmlDeviceGetHandleByIndex_v2": 2 * US,
    "nvmlDeviceGetMemoryInfo": 15 * US,
    "nvmlDeviceGetMemoryInfo_v2": 15 * US,
    "nvmlDeviceGetUtilizationRates": 15 * US,
    "nvmlDeviceGetPowerUsage": 20 * US,
    "nvmlDeviceGetPcieThroughput": 20_000 * US,
    "nvmlDeviceGetComputeRunningProcesses": 40 * US,
    "nvmlDeviceGetComputeRunningProcesses_v2": 40 * US,
    "nvmlDeviceGetComputeRunningProcesses_v3": 40 * US,
    "nvmlDeviceGetGraphicsRunningProcesses": 40 * US,
    "nvmlDeviceGetGraphicsRunningProcesses_v2": 40 * US,
    "nvmlDeviceGetGraphicsRunningProcesses_v3": 40 * US,
    "nvmlDeviceGetProcessUtilization": 60 * US,
    "nvmlGpmSampleGet": 50 * US,
    "nvmlGpmMetricsGet": 20 * US,
    "nvmlDeviceGetTopologyCommonAncestor": 30 * US,
}
FIELD_VALUES_BASE_S = 10 * US
FIELD_VALUES_PER_FIELD_S = 1 * US


def cost_s(symbol: str, fields: int = 0) -> float:
    """The modelled time one call of `symbol` takes (`fields`: how many a nvmlDeviceGetFieldValues asked for)."""
    if symbol == "nvmlDeviceGetFieldValues":
        return FIELD_VALUES_BASE_S + FIELD_VALUES_PER_FIELD_S * fields
    return COST_S.get(symbol, DEFAULT_S)
