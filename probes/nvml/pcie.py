"""The bytes a GPU moves over PCIe and NVLink, per second.

Every tick one nvmlDeviceGetFieldValues call reads every active NVLink link's byte counter and (R555+) the PCIe
byte counters, as counters (probes/nvml/counters.py). A 32-bit PCIe counter (R580) is widened and, while traffic
is heavy, polled between ticks (probes/nvml/pcie_wide.py, imported on the first such reading). Where the fields do
not answer (drivers before R555), nvmlDeviceGetPcieThroughput, which blocks for 20 ms, runs on the background
thread (probes/nvml/slow.py) every SLOW_TIER_S; its sample also tells a burst on a 32-bit counter from an alias.
"""

from __future__ import annotations

import ctypes
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hwtop.probes.nvml.calls import NOT_SUPPORTED, Verdict, error_code, verdict
from hwtop.probes.nvml.capabilities import Query
from hwtop.probes.nvml.counters import CounterRates, field_number, read_fields
from hwtop.probes.nvml.handle import DeviceHandle
from hwtop.probes.nvml.session import SLOW_TIER_S
from hwtop.probes.nvml.slow import BackgroundCalls

if TYPE_CHECKING:  # imported on the first 32-bit PCIe reading: a CPU-only box's start never needs them
    from hwtop.probes.nvml.pcie_wide import CounterPoller, WideCounters

NVLINK_TX, NVLINK_RX = 138, 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX: KiB, per link (scopeId = link)
PCIE_TX, PCIE_RX = 197, 198  # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES: bytes

Rates = tuple[float | None, float | None, float | None, float | None]  # PCIe TX, RX, NVLink TX, RX (bytes/s)


def _total(rates: list[float | None], scale: float) -> float | None:
    """The sum over links of their rates, or None unless every link that answered has one (a partial sum would
    pass for the whole)."""
    if not rates or any(rate is None for rate in rates):
        return None
    return sum(rate for rate in rates if rate is not None) * scale


class LinkTraffic:
    """One GPU's PCIe and NVLink counters, their last readings, and its PCIe poller while one runs."""

    def __init__(self, gpu: DeviceHandle, background: BackgroundCalls) -> None:
        self._gpu = gpu
        self._background = background
        self._rates = CounterRates()
        self.wide: WideCounters | None = None  # 32-bit PCIe byte counters, widened
        self.poller: CounterPoller | None = None
        self._request: list[tuple[int, int]] = []  # the last field-values request, and its array's bytes
        self._request_array: Any = None
        self._request_bytes = b""

    def read(self, nvlinks: tuple[int, ...], now: float) -> Rates:
        """(PCIe TX, RX, NVLink TX, RX) in bytes/s over the active `nvlinks`; older drivers' PCIe figure comes
        from the background thread."""
        caps = self._gpu.caps
        request, pcie_fields = self._request_for(nvlinks, now)
        rates, unsupported = self._rates_of(request, now)
        if unsupported & {NVLINK_TX, NVLINK_RX} and not rates[NVLINK_TX] and not rates[NVLINK_RX]:
            caps.unsupported(Query.NVLINK_FIELDS, now)
        if unsupported & {PCIE_TX, PCIE_RX}:
            caps.unsupported(Query.PCIE_FIELDS, now)
            pcie_fields = False
        nvlink_tx = _total(rates[NVLINK_TX], 1024.0)
        nvlink_rx = _total(rates[NVLINK_RX], 1024.0)
        if pcie_fields:
            pcie_tx, pcie_rx = _total(rates[PCIE_TX], 1.0), _total(rates[PCIE_RX], 1.0)
            if self.poller is not None:
                self._watch(now, pcie_tx, pcie_rx)
            return pcie_tx, pcie_rx, nvlink_tx, nvlink_rx
        pcie_tx, pcie_rx = self._throughput(now)
        return pcie_tx, pcie_rx, nvlink_tx, nvlink_rx

    def _request_for(self, nvlinks: tuple[int, ...], now: float) -> tuple[list[tuple[int, int]], bool]:
        """The fields to ask this tick: each active NVLink's two counters, the two PCIe ones where the driver has
        them; and whether the PCIe ones are asked."""
        gpu = self._gpu
        caps = gpu.caps
        request: list[tuple[int, int]] = []
        if nvlinks and not caps.skip(Query.NVLINK_FIELDS, now):
            for link in nvlinks:
                request += [(NVLINK_TX, link), (NVLINK_RX, link)]
        pcie_fields = (gpu.session.pcie_fields and not caps.skip(Query.PCIE_FIELDS, now)
                       and not caps.skip(Query.FIELDS, now))
        if pcie_fields:
            request += [(PCIE_TX, 0), (PCIE_RX, 0)]
        return request, pcie_fields

    def _rates_of(self, request: list[tuple[int, int]],
                  now: float) -> tuple[dict[int, list[float | None]], set[int]]:
        """The rate of each field asked, by field (a link's each); the fields the driver does not support."""
        gpu = self._gpu
        rates: dict[int, list[float | None]] = {NVLINK_TX: [], NVLINK_RX: [], PCIE_TX: [], PCIE_RX: []}
        unsupported: set[int] = set()
        values = gpu.call(Query.FIELDS, "nvmlDeviceGetFieldValues", request, how=self._field_values) \
            if request else None
        # each value answers the request at its place (the caller fills fieldId and scopeId in): read from the
        # request; the rest of each value from the answer's bytes (read_fields), not through the bindings' members
        for (field_id, scope), (code, number, bits, stamp) in zip(request, read_fields(values or ()), strict=False):
            if code != 0:
                if code == NOT_SUPPORTED:
                    unsupported.add(field_id)
                continue
            if number is None or bits is None:
                continue
            stamp = stamp or int(now * 1e6)
            number = int(number)
            if field_id in (PCIE_TX, PCIE_RX) and bits < 64:
                number, stamp = self._widened().feed(field_id, number, stamp, bits)
                bits = 64
            rates[field_id].append(self._rates.rate((gpu.index, field_id, scope), number, stamp, bits))
        return rates, unsupported

    def _field_values(self, handle: Any, request: list[tuple[int, int]]) -> Any:
        """nvmlDeviceGetFieldValues as the bindings make it (their array, their error), its request array copied
        from one filled when the request was new: the bindings fill it member by member through their structure's
        decoding setattr, two dozen values a card each tick, for the same request tick after tick."""
        nvml = self._gpu.session.nvml
        kind = getattr(nvml, "c_nvmlFieldValue_t", None)
        find, check = getattr(nvml, "_nvmlGetFunctionPointer", None), getattr(nvml, "_nvmlCheckReturn", None)
        if type(nvml) is not types.ModuleType or kind is None or find is None or check is None:
            # a view of the bindings (record.py's, which records their calls) or bindings without these parts
            return nvml.nvmlDeviceGetFieldValues(handle, request)
        if self._request != request:  # the array type follows from the request: ctypes makes `kind * n` once
            array = kind * len(request)
            values = array()
            for value, (field_id, scope) in zip(values, request, strict=True):
                value.fieldId, value.scopeId = field_id, scope
            self._request, self._request_array, self._request_bytes = list(request), array, bytes(values)
        values = self._request_array.from_buffer_copy(self._request_bytes)
        check(find("nvmlDeviceGetFieldValues")(handle, ctypes.c_int32(len(request)), ctypes.byref(values)))
        return values

    def stop(self) -> None:
        """Stop the poller (the GPU is lost or reset, or hwtop is closing)."""
        if self.poller is not None:
            self.poller.close()
        self.wide = self.poller = None

    def _widened(self) -> WideCounters:
        """The first 32-bit PCIe reading of a GPU sets up its widened counters and their poller."""
        if self.wide is None:
            from hwtop.probes.nvml.pcie_wide import CounterPoller, WideCounters

            self.wide = WideCounters()
            self.poller = CounterPoller(self._reader(self.wide), clock=self._gpu.session.clock,
                                        threaded=not self._background.inline)
        return self.wide

    def _reader(self, counters: WideCounters) -> Callable[[], bool]:
        session = self._gpu.session
        nvml, handle, calls, clock = session.nvml, self._gpu.handle, session.calls, session.clock

        def read() -> bool:
            calls["nvmlDeviceGetFieldValues"] += 1
            try:
                values = nvml.nvmlDeviceGetFieldValues(handle, [(PCIE_TX, 0), (PCIE_RX, 0)])
            except Exception:  # noqa: BLE001 - the poller stops; the tick's own reading tells what is wrong
                return False
            for value in values:
                number, bits = field_number(value)
                if int(value.nvmlReturn) == 0 and number is not None and bits is not None:
                    counters.feed(int(value.fieldId), int(number), int(value.timestamp) or int(clock() * 1e6), bits)
            return True

        return read

    def _watch(self, now: float, tx: float | None, rx: float | None) -> None:
        """Poll a 32-bit PCIe counter while its traffic is heavy: by the tick's own rate, or by the slow tier's
        20-ms throughput sample (a burst that the tick's readings alone could take for an alias)."""
        from hwtop.probes.nvml.pcie_wide import HEAVY_BYTES_PER_S

        sampled = self._throughput(now)
        heavy = max((r for r in (tx, rx, *sampled) if r is not None), default=0.0) >= HEAVY_BYTES_PER_S
        if heavy and self.poller is not None:
            self.poller.keep_alive()

    def _throughput(self, now: float) -> tuple[float | None, float | None]:
        """nvmlDeviceGetPcieThroughput (KB/s over 20 ms, blocking) on the background thread, every SLOW_TIER_S;
        the tick reports the latest result."""
        caps = self._gpu.caps
        if caps.skip(Query.PCIE_THROUGHPUT, now):
            return None, None
        key = f"pcie_tp:{self._gpu.index}"
        result = self._background.result(key)
        if result is not None and result.error is not None:
            kind = verdict(result.error)
            if kind is Verdict.ABSENT:
                caps.missing(Query.PCIE_THROUGHPUT)
            elif kind is Verdict.UNSUPPORTED:
                caps.unsupported(Query.PCIE_THROUGHPUT, now)
        if result is None or now - result.at >= SLOW_TIER_S:
            self._background.request(key, now, self._sampler())
            result = self._background.result(key)  # inline runs have it already
        if result is None or result.value is None or now - result.at > 2 * SLOW_TIER_S:
            return None, None
        return result.value

    def _sampler(self) -> Callable[[], tuple[Any, int | None]]:
        session = self._gpu.session
        nvml, handle, calls = session.nvml, self._gpu.handle, session.calls

        def sample() -> tuple[Any, int | None]:
            try:
                calls["nvmlDeviceGetPcieThroughput"] += 2
                tx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_TX_BYTES)
                rx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_RX_BYTES)
            except Exception as error:  # noqa: BLE001
                return None, error_code(error)
            # its "KB" is 1000 bytes: on the real H200 the samples times 1000 matched the byte counters within
            # 0.3 % (5.185 against 5.184 GB/s), times 1024 were 2.4 % over (tests/fixtures/gpu-capture/h200-r580)
            return (tx * 1000.0, rx * 1000.0), None

        return sample
