"""The GPU faults operators alert on, read on the slow tier: the row remapper (nvmlDeviceGetRemappedRows: rows
remapped, a remap waiting for a reset, a remap that failed), NVLink errors (CRC flit and data, replays, recoveries:
each summed over the GPU's links) and the time clocks were held back by the power limit and by heat
(nvmlDeviceGetViolationStatus, in ns). Every question goes through the GPU's handle: what a card or driver does not
answer is N/A, asked again only when its Capabilities say so, never a traceback.

NVLink errors are read as DCGM reads its DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL fields: NVML's own totals over the
links (NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL), the four in one nvmlDeviceGetFieldValues call. A total the driver
does not give is summed from nvmlDeviceGetNvLinkErrorCounter on each active link instead (18 links, 4 counters:
72 calls a GPU). Such a sum is a counter only if it never goes back while the driver's counts do not: a link that
goes down keeps the count it last had, a link that fails one read keeps its last count, and a link never read makes
the sum unknown rather than short; a count lower than the last one is the driver's reset (a reload, a GPU reset),
from which the sum starts again."""

from __future__ import annotations

import msgspec

from hwtop.model.snapshot import NvlinkErrors, RowRemap
from hwtop.probes.nvml.calls import NOT_SUPPORTED
from hwtop.probes.nvml.capabilities import Query
from hwtop.probes.nvml.counters import read_fields
from hwtop.probes.nvml.handle import DeviceHandle

# Values fixed by the NVML ABI. Each NVLink counter: (NvlinkErrors field, its NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL
# field id, its nvmlNvLinkErrorCounter_t, the query of its per-link reads)
NVLINK_COUNTERS: tuple[tuple[str, int, int, Query], ...] = (
    ("crc_flit", 38, 2, Query.NVLINK_CRC_FLIT),  # ..._CRC_FLIT_ERROR_COUNT_TOTAL, NVML_NVLINK_ERROR_DL_CRC_FLIT
    ("crc_data", 45, 3, Query.NVLINK_CRC_DATA),  # ..._CRC_DATA_ERROR_COUNT_TOTAL, NVML_NVLINK_ERROR_DL_CRC_DATA
    ("replay", 52, 0, Query.NVLINK_REPLAY),  # ..._REPLAY_ERROR_COUNT_TOTAL, NVML_NVLINK_ERROR_DL_REPLAY
    ("recovery", 59, 1, Query.NVLINK_RECOVERY),  # ..._RECOVERY_ERROR_COUNT_TOTAL, NVML_NVLINK_ERROR_DL_RECOVERY
)
TOTALS_REQUEST = [(field, 0) for _, field, _, _ in NVLINK_COUNTERS]
PERF_POLICY_POWER = 0  # NVML_PERF_POLICY_POWER
PERF_POLICY_THERMAL = 1  # NVML_PERF_POLICY_THERMAL


class GpuFaults(msgspec.Struct, frozen=True):
    """One slow-tier reading of a GPU's faults (the GpuSnapshot fields of the same names)."""

    row_remap: RowRemap | None = None
    nvlink_errors: NvlinkErrors | None = None
    power_violation_ns: int | None = None
    thermal_violation_ns: int | None = None


class FaultReader:
    """One GPU's fault counters. It keeps the NVLink counters whose totals the driver does not give (summed per
    link instead) and, for those, each link's last count (18 links x 4 at most)."""

    def __init__(self, gpu: DeviceHandle) -> None:
        self._gpu = gpu
        self._per_link: set[str] = set()  # NvlinkErrors fields whose total field answered NOT_SUPPORTED
        self._link_counts: dict[int, dict[int, int]] = {}  # NVLink counter -> link -> its last count

    def read(self, links: tuple[int, ...]) -> GpuFaults:
        """This slow tier's faults; `links` are the GPU's active NVLinks. Raises what DeviceHandle.call raises."""
        return GpuFaults(self._row_remap(), self._nvlink(links),
                         self._violation(Query.VIOLATION_POWER, PERF_POLICY_POWER),
                         self._violation(Query.VIOLATION_THERMAL, PERF_POLICY_THERMAL))

    def _row_remap(self) -> RowRemap | None:
        answer = self._gpu.call(Query.REMAPPED_ROWS, "nvmlDeviceGetRemappedRows")
        if answer is None:
            return None
        correctable, uncorrectable, pending, failed = answer
        return RowRemap(int(correctable), int(uncorrectable), bool(pending), bool(failed))

    def _violation(self, query: Query, policy: int) -> int | None:
        answer = self._gpu.call(query, "nvmlDeviceGetViolationStatus", policy)
        return None if answer is None else int(answer.violationTime)

    def _nvlink(self, links: tuple[int, ...]) -> NvlinkErrors | None:
        if not links:
            return None
        sums = self._totals()
        for name, _, counter, query in NVLINK_COUNTERS:
            if name in self._per_link:
                sums[name] = self._summed(counter, query, links)
        if all(value is None for value in sums.values()):
            return None
        return NvlinkErrors(**sums)

    def _totals(self) -> dict[str, int | None]:
        """The driver's totals over the links, in one call: None for one it could not give now. A total it does not
        give at all (or a driver without the call) is summed per link from now on."""
        gpu = self._gpu
        totals: dict[str, int | None] = dict.fromkeys((name for name, *_ in NVLINK_COUNTERS))
        values = gpu.call(Query.NVLINK_ERROR_FIELDS, "nvmlDeviceGetFieldValues", TOTALS_REQUEST)
        if values is None:
            if gpu.caps.skip(Query.NVLINK_ERROR_FIELDS, gpu.session.now):
                self._per_link.update(totals)
            return totals
        for (name, *_), (code, number, _, _) in zip(NVLINK_COUNTERS, read_fields(values), strict=False):
            if code == NOT_SUPPORTED:
                self._per_link.add(name)
            elif code == 0 and number is not None:
                totals[name] = int(number)
        return totals

    def _summed(self, counter: int, query: Query, links: tuple[int, ...]) -> int | None:
        """The counter summed over every link it was read on; None where the card does not count it, or an
        active link has never answered."""
        gpu = self._gpu
        read: dict[int, int] = {}
        for link in links:
            value = gpu.call(query, "nvmlDeviceGetNvLinkErrorCounter", link, counter)
            if value is not None:
                read[link] = int(value)
            elif gpu.caps.skip(query, gpu.session.now):  # NOT_SUPPORTED or absent: N/A until asked again
                self._link_counts.pop(counter, None)
                return None
        last = self._link_counts.setdefault(counter, {})
        if any(count < last.get(link, 0) for link, count in read.items()):
            last.clear()  # the driver's counts went back: a reload or a GPU reset
        last.update(read)
        if any(link not in last for link in links):
            return None
        return sum(last.values())
