"""Hopper's GPU Performance Monitoring (GPM): SM activity and occupancy, tensor and DRAM activity, which
utilization alone cannot tell. Two sample buffers per GPU; each tick's sample is diffed against the last one."""

from __future__ import annotations

from typing import Any

from hwtop.model.snapshot import GpmMetrics
from hwtop.probes.nvml.calls import SessionGone, Verdict, error_code, verdict
from hwtop.probes.nvml.capabilities import Query
from hwtop.probes.nvml.handle import DeviceHandle
from hwtop.probes.nvml.session import SLOW_TIER_S

GPM_METRICS = (2, 3, 5, 10)  # SM util, SM occupancy, any tensor util, DRAM bandwidth util (nvmlGpmMetricId_t)


class GpmReader:
    def __init__(self, gpu: DeviceHandle) -> None:
        self._gpu = gpu
        self.samples: list[Any] = []  # two nvmlGpmSample_t buffers while allocated
        self.primed = False  # samples[0] holds a reading to diff against
        self.retry_at = float("-inf")
        self.status: str | None = None

    def read(self, now: float) -> GpmMetrics | None:
        """This tick's metrics (None on the first sample, or when they cannot be read: `status` says why)."""
        gpu = self._gpu
        if not self.samples and not self._allocate(now):
            return None
        previous, current = self.samples
        if gpu.call(Query.GPM_SAMPLE, "nvmlGpmSampleGet", current) is None:
            self.primed = False
            if gpu.caps.skip(Query.GPM_SAMPLE, now):
                self.status = "GPM sampling not supported in this state (MIG mode?); asked again later"
            return None
        self.samples = [current, previous]  # the next tick overwrites the older sample
        if not self.primed:
            self.primed = True
            return None
        session = gpu.session
        nvml = session.nvml
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.sample1, request.sample2 = previous, current
        request.numMetrics = len(GPM_METRICS)
        for i, metric_id in enumerate(GPM_METRICS):
            request.metrics[i].metricId = metric_id
        session.calls["nvmlGpmMetricsGet"] += 1
        try:
            result = nvml.nvmlGpmMetricsGet(request)
        except Exception as error:  # noqa: BLE001
            self.status = f"GPM metrics unavailable ({error})"
            if verdict(error_code(error)) is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            return None
        self.status = None
        values = [result.metrics[i].value if result.metrics[i].nvmlReturn == 0 else None
                  for i in range(len(GPM_METRICS))]
        return GpmMetrics(*(None if v is None else round(float(v), 2) for v in values))

    def _allocate(self, now: float) -> bool:
        """Two sample buffers, or none: a failed allocation frees what it got and is retried later (the GPU
        is not lost for it)."""
        if now < self.retry_at:
            return False
        session = self._gpu.session
        allocated: list[Any] = []
        for _ in range(2):
            session.calls["nvmlGpmSampleAlloc"] += 1
            try:
                allocated.append(session.nvml.nvmlGpmSampleAlloc())
            except Exception as error:  # noqa: BLE001
                for sample in allocated:
                    self._free_sample(sample)
                self.retry_at = now + SLOW_TIER_S
                self.status = f"GPM sample buffers could not be allocated ({error}); retrying"
                if verdict(error_code(error)) is Verdict.SESSION:
                    raise SessionGone(str(error)) from error
                return False
        self.samples, self.primed = allocated, False
        return True

    def _free_sample(self, sample: Any) -> None:
        session = self._gpu.session
        session.calls["nvmlGpmSampleFree"] += 1
        session.optional(lambda: session.nvml.nvmlGpmSampleFree(sample))

    def free(self) -> None:
        for sample in self.samples:
            self._free_sample(sample)
        self.samples, self.primed = [], False
