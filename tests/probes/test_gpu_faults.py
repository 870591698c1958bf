"""GPU faults through the real nvidia-ml-py over the fake NVML library: the row remapper, NVLink errors and the
power and thermal violation times, each where the card answers, where it says NOT_SUPPORTED, where the driver lacks
the function, and where a call fails once."""

from __future__ import annotations

import dataclasses

import pynvml
import pytest

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.model.snapshot import NvlinkErrors, RowRemap
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.session import SLOW_TIER_S
from hwtop.probes.nvml.slow import BackgroundCalls

NVLINK_TOTALS = frozenset({38, 45, 52, 59})  # NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL


class Clock:
    def __init__(self, start: float = 50.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def make(profile: str) -> tuple[FakeNvmlLibrary, NvmlProbe, Clock]:
    clock = Clock()
    fake = FakeNvmlLibrary(profile, seed=3, clock=clock)
    return fake, NvmlProbe(fake.pynvml, clock=clock, background=BackgroundCalls(inline=True)), clock


def slow_read(probe: NvmlProbe, clock: Clock):
    """The GPUs one slow tier later (the faults are read there)."""
    clock.now += SLOW_TIER_S
    return probe.read()[1]


def test_a_pending_remap_a_failed_one_and_the_rows_are_read_as_the_card_holds_them() -> None:
    fake, probe, clock = make("dgx-a100")
    assert {g.row_remap for g in probe.read()[1]} == {RowRemap(0, 0, False, False)}
    fake.set_row_remap(2, correctable=3, uncorrectable=1, pending=True)
    fake.set_row_remap(6, uncorrectable=8, failed=True)
    gpus = slow_read(probe, clock)
    assert gpus[2].row_remap == RowRemap(3, 1, True, False)
    assert gpus[6].row_remap == RowRemap(0, 8, False, True)
    assert gpus[0].row_remap == RowRemap(0, 0, False, False)
    assert fake.calls["nvmlDeviceGetRemappedRows"] == 16  # once a GPU a slow tier
    assert fake.internal_errors == []


def test_nvlink_errors_are_the_driver_s_totals_over_the_links_in_one_call_a_gpu() -> None:
    fake, probe, clock = make("dgx-a100")
    probe.read()
    fake.add_nvlink_errors(3, 4, "replay", 5)
    fake.add_nvlink_errors(3, 9, "replay", 2)
    fake.add_nvlink_errors(3, 9, "crc_flit", 40)
    fake.add_nvlink_errors(3, 0, "recovery", 1)
    fake.reset_accounting()
    gpus = slow_read(probe, clock)
    assert gpus[3].nvlink_errors == NvlinkErrors(crc_flit=40, crc_data=0, replay=7, recovery=1)
    assert gpus[2].nvlink_errors == NvlinkErrors(0, 0, 0, 0)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 0
    assert sum(n for (_, field, _), n in fake.field_requests.items() if field in NVLINK_TOTALS) == 8 * 4


def test_without_the_totals_each_link_is_asked_and_a_link_gone_down_keeps_its_count() -> None:
    """A driver that gives no total: the counters are summed over the active links; a link that goes down keeps
    its count in the sum (which would otherwise fall, and read as a reset to Prometheus), a link that fails one read
    keeps its last count, and the driver's own reset starts the sum again."""
    fake, probe, clock = make("dgx-a100")
    fake.branch = dataclasses.replace(fake.branch, missing_fields=fake.branch.missing_fields | NVLINK_TOTALS)
    probe.read()
    fake.add_nvlink_errors(1, 2, "replay", 6)
    fake.add_nvlink_errors(1, 7, "replay", 4)
    fake.reset_accounting()
    assert slow_read(probe, clock)[1].nvlink_errors == NvlinkErrors(0, 0, 10, 0)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 8 * 12 * 4  # every active link, every counter
    fake.set_link_down(1, 7)
    fake.add_nvlink_errors(1, 2, "replay", 1)
    assert slow_read(probe, clock)[1].nvlink_errors.replay == 11  # link 7's 4 still counted
    fake.fail("nvmlDeviceGetNvLinkErrorCounter", pynvml.NVML_ERROR_UNKNOWN, gpu=1, times=1)  # link 0's replays
    assert slow_read(probe, clock)[1].nvlink_errors.replay == 11
    fake.reset_nvlink_errors(1)
    fake.add_nvlink_errors(1, 3, "replay", 2)
    assert slow_read(probe, clock)[1].nvlink_errors.replay == 2
    assert fake.internal_errors == []


def test_violation_time_is_the_ns_the_clocks_were_held_back() -> None:
    fake, probe, clock = make("h200")
    first = probe.read()[1][0]
    assert (first.power_violation_ns, first.thermal_violation_ns) == (fake.truth(0).power_violation_ns, 0)
    fake.force_reasons(0, "sw_thermal", "sw_power_cap")
    gpu = slow_read(probe, clock)[0]
    assert gpu.thermal_violation_ns == fake.truth(0).thermal_violation_ns == int(SLOW_TIER_S * 1e9)
    assert gpu.power_violation_ns == fake.truth(0).power_violation_ns >= int(SLOW_TIER_S * 1e9)


@pytest.mark.parametrize("profile", ["rtx3090", "h100-pcie"])
def test_what_the_card_does_not_answer_is_none_and_not_asked_every_slow_tier(profile: str) -> None:
    """GeForce: no row remapper, no violation times, no NVLink; H100 PCIe: all but NVLink. NOT_SUPPORTED is asked
    again a minute later (Capabilities), not every slow tier; the rest of the GPU reads as ever."""
    fake, probe, clock = make(profile)
    for _ in range(4):
        gpu = slow_read(probe, clock)[0]
    geforce = profile == "rtx3090"
    assert (gpu.row_remap is None, gpu.power_violation_ns is None, gpu.thermal_violation_ns is None) == (geforce,) * 3
    assert gpu.nvlink_errors is None and gpu.util_percent is not None
    assert fake.calls["nvmlDeviceGetRemappedRows"] == (1 if geforce else 4)
    assert fake.calls["nvmlDeviceGetViolationStatus"] == (2 if geforce else 8)
    assert fake.calls["nvmlDeviceGetNvLinkErrorCounter"] == 0
    assert not [key for key in fake.field_requests if key[1] in NVLINK_TOTALS]


def test_a_driver_without_the_functions_is_never_asked_again() -> None:
    fake, probe, clock = make("dgx-a100")
    fake.remove_symbols("nvmlDeviceGetRemappedRows", "nvmlDeviceGetViolationStatus")
    for _ in range(3):
        gpu = slow_read(probe, clock)[0]
        clock.now += 100  # past any re-probe
    assert (gpu.row_remap, gpu.power_violation_ns, gpu.thermal_violation_ns) == (None, None, None)
    assert gpu.nvlink_errors == NvlinkErrors(0, 0, 0, 0)
    assert probe.calls["nvmlDeviceGetRemappedRows"] == 8  # one failed lookup a GPU
    assert probe.calls["nvmlDeviceGetViolationStatus"] == 16


@pytest.mark.parametrize("function", ["nvmlDeviceGetRemappedRows", "nvmlDeviceGetViolationStatus",
                                      "nvmlDeviceGetFieldValues"])
def test_a_call_that_fails_once_costs_that_reading_only(function: str) -> None:
    fake, probe, clock = make("h200")
    probe.read()
    fake.set_row_remap(0, uncorrectable=2, pending=True)
    fake.add_nvlink_errors(0, 5, "recovery", 3)
    fake.fail(function, pynvml.NVML_ERROR_UNKNOWN, times=1)
    failed = slow_read(probe, clock)[0]
    again = slow_read(probe, clock)[0]
    assert (failed.row_remap is None) == (function == "nvmlDeviceGetRemappedRows")
    assert (failed.power_violation_ns is None) == (function == "nvmlDeviceGetViolationStatus")  # the first asked
    assert again.row_remap == RowRemap(0, 2, True, False) and again.nvlink_errors.recovery == 3
    assert again.power_violation_ns is not None and again.thermal_violation_ns is not None
    assert not failed.lost and failed.util_percent is not None
