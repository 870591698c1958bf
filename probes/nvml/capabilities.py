"""What one GPU answers: every question the probe asks of NVML (`Query`), and per GPU which of them to skip and
until when (`Capabilities`). How an error becomes one of these states is probes/nvml/calls.py's verdict."""

from __future__ import annotations

from enum import StrEnum

import msgspec

REPROBE_S = 60.0  # how long a NOT_SUPPORTED answer stands before the question is asked again


class Query(StrEnum):
    """One question to NVML about a GPU (a StrEnum: as cheap to look up in a set as the string it was)."""

    # static facts, once per handle
    PCI = "pci"
    NAME = "name"
    UUID = "uuid"
    COMPUTE_CAPABILITY = "cc"
    SM_MAX = "sm_max"
    MEM_MAX = "mem_max"
    PCIE_MAX_GEN = "pcie_max_gen"
    PCIE_MAX_WIDTH = "pcie_max_width"
    MINOR = "minor"
    GPM_SUPPORT = "gpm_support"
    # every tick: what the rest means depends on it
    MIG_MODE = "mig_mode"
    # the slow tier
    POWER_LIMIT = "power_limit"
    ECC_MODE = "ecc_mode"
    ECC = "ecc"
    MIG_COUNT = "mig_count"
    MIG_HANDLE = "mig_handle"
    MIG_MEMORY = "mig_memory"
    MIG_UUID = "mig_uuid"
    MIG_NAME = "mig_name"
    NVLINK_STATE = "nvlink_state"
    ENERGY = "energy"
    PCIE_REPLAYS = "pcie_replays"
    PCIE_THROUGHPUT = "pcie_tp"  # the 20-ms sample, on the background thread
    REMAPPED_ROWS = "remapped_rows"  # GPU faults (probes/nvml/faults.py)
    NVLINK_ERROR_FIELDS = "nvlink_error_fields"  # ...the NVLink error totals, one nvmlDeviceGetFieldValues call
    NVLINK_CRC_FLIT = "nvlink_crc_flit"  # ...each NVLink error counter per link, where a total is not given
    NVLINK_CRC_DATA = "nvlink_crc_data"
    NVLINK_REPLAY = "nvlink_replay"
    NVLINK_RECOVERY = "nvlink_recovery"
    VIOLATION_POWER = "violation_power"
    VIOLATION_THERMAL = "violation_thermal"
    # every tick
    UTIL = "util"
    POWER = "power"
    REASONS = "reasons"
    REASONS_OLD = "reasons_old"  # the name drivers before R535 export
    PSTATE = "pstate"
    PCIE_GEN = "pcie_gen"
    PCIE_WIDTH = "pcie_width"
    TEMPERATURE = "temp"
    SM_CLOCK = "sm_clock"
    MEM_CLOCK = "mem_clock"
    FAN = "fan"
    MEMORY_V2 = "memory_v2"
    MEMORY = "memory"
    FIELDS = "fields"  # the one nvmlDeviceGetFieldValues call
    NVLINK_FIELDS = "nvlink_fields"  # ...its NVLink byte counters
    PCIE_FIELDS = "pcie_fields"  # ...its PCIe byte counters (R555+)
    GPM_SAMPLE = "gpm_sample"
    PROCS_COMPUTE = "procs_compute"
    PROCS_GRAPHICS = "procs_graphics"
    PROC_UTIL = "proc_util"


class Capabilities(msgspec.Struct):
    """Per GPU: the queries its driver lacks (until NVML is opened again), those it said NOT_SUPPORTED to (asked
    again at `retry_at`), and those that answered last time (a NOT_SUPPORTED after one is a change of state)."""

    absent: set[Query] = msgspec.field(default_factory=set)
    retry_at: dict[Query, float] = msgspec.field(default_factory=dict)
    answered: set[Query] = msgspec.field(default_factory=set)

    def skip(self, query: Query, now: float) -> bool:
        return query in self.absent or self.retry_at.get(query, float("-inf")) > now

    def lacks(self, query: Query) -> bool:
        """The driver has no such function."""
        return query in self.absent

    def missing(self, query: Query) -> None:
        """Note that the driver (or the bindings) has no such function."""
        self.absent.add(query)

    def succeeded(self, query: Query) -> None:
        self.answered.add(query)
        self.retry_at.pop(query, None)

    def unsupported(self, query: Query, now: float) -> bool:
        """Note NOT_SUPPORTED; True when the query used to work (the card's state changed under us)."""
        changed = query in self.answered
        self.answered.discard(query)
        self.retry_at[query] = now + REPROBE_S
        return changed

    def forget(self) -> None:
        """The card changed state (MIG or ECC mode, a reset): ask everything again. What the driver lacks
        stays known until the library is opened again."""
        self.retry_at.clear()
        self.answered.clear()
