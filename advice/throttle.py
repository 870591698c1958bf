"""The clock event reasons NVML reports (probes/nvml/device.py), by cause: the ones gpu-throttled names and
rank-straggler gives as a slow rank's cause."""

from __future__ import annotations

THERMAL = {"SW thermal", "HW thermal"}
POWER = {"power cap"}
HARDWARE = {"HW slowdown", "power brake"}
