"""The fake remembers a card's state within a simulated second (World.truth): every change a test or a story makes
shows in the very next read through the real nvidia-ml-py, at the same instant, as the uncached truth says."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.nvml.world import GpuTruth
from hwtop.demo.profiles import GIB, DemoProcess

Change = Callable[[FakeNvmlLibrary], object]

CHANGES: dict[str, Change] = {
    "reasons": lambda lib: lib.force_reasons(0, "hw_thermal"),
    "temperature": lambda lib: lib.set_temperature_offset(0, 9.0),
    "pcie link": lambda lib: lib.set_pcie_link(0, 3, 8),
    "spin power": lambda lib: lib.set_spin_power(0, 150.0),
    "forced load": lambda lib: lib.set_load(0, 0.25),
    "idle": lambda lib: lib.set_load(0, 0.0),
    "process": lambda lib: lib.add_process(DemoProcess(0, 999, "compute", 7 * GIB, "python3")),
    "process gone": lambda lib: lib.remove_process(lib.world.cards[0].processes[0].pid),
    "ecc": lambda lib: (lib.set_ecc_mode(0, True), lib.set_ecc(0, 5, 2)),
    "links down": lambda lib: [lib.set_link_down(0, link) for link in range(lib.world.cards[0].model.nvlinks)],
}


def read(nvml, handle) -> tuple[int, ...]:  # noqa: ANN001 - the bindings' own untyped objects
    return (nvml.nvmlDeviceGetUtilizationRates(handle).gpu, nvml.nvmlDeviceGetMemoryInfo(handle).used,
            nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU), nvml.nvmlDeviceGetPowerUsage(handle),
            nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
            nvml.nvmlDeviceGetCurrentClocksEventReasons(handle), nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle),
            nvml.nvmlDeviceGetCurrPcieLinkWidth(handle), nvml.nvmlDeviceGetPcieThroughput(handle, 1))


def expected(lib: FakeNvmlLibrary) -> tuple[int, ...]:
    truth = lib.truth(0)  # with its counters: computed afresh every time
    return (truth.util, truth.used + truth.reserved, truth.temperature, truth.power_mw, truth.sm_clock,
            truth.event_reasons, truth.pcie_gen, truth.pcie_width, int(truth.pcie_rx_rate / 1000))


def remembered(lib: FakeNvmlLibrary) -> GpuTruth:
    """The card's state as the NVML calls get it (without its counters, remembered within the second)."""
    return lib.world.truth(lib.world.cards[0], lib.now(), counters=False)


def fresh(lib: FakeNvmlLibrary) -> GpuTruth:
    """The same, computed afresh: the full truth with its counters zeroed."""
    links = lib.world.cards[0].model.nvlinks
    return dataclasses.replace(lib.truth(0), pcie_tx_bytes=0, pcie_rx_bytes=0, nvlink_tx_kib=(0,) * links,
                               nvlink_rx_kib=(0,) * links)


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_shows_in_the_next_read_at_the_same_instant(change: str) -> None:
    clock = [0.0]
    lib = FakeNvmlLibrary("dgx-a100", seed=3, clock=lambda: clock[0])
    clock[0] = 42.5  # past the memory ramp: reads within this second share one remembered state
    nvml = lib.pynvml
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    before = read(nvml, handle), remembered(lib)
    assert before == (expected(lib), fresh(lib))
    CHANGES[change](lib)
    after = read(nvml, handle), remembered(lib)
    assert after == (expected(lib), fresh(lib))
    assert after[1] != before[1]  # each change moves the card's state
    nvml.nvmlShutdown()


SAMPLE_CHANGES = ("forced load", "idle", "process", "process gone")


def samples_read(nvml, handle) -> list[tuple[int, int, int, int]]:  # noqa: ANN001 - the bindings' own objects
    try:
        got = nvml.nvmlDeviceGetProcessUtilization(handle, 0)
    except nvml.NVMLError_NotFound:  # no sample (its last process gone)
        return []
    return [(s.pid, s.timeStamp, s.smUtil, s.memUtil) for s in got]


@pytest.mark.parametrize("change", SAMPLE_CHANGES)
def test_a_change_shows_in_the_next_utilization_samples_at_the_same_instant(change: str) -> None:
    """The per-process samples are remembered within a second too (pynvml asks twice a read): a change to the
    load or the processes shows at once, as the samples computed afresh say."""
    clock = [0.0]
    lib = FakeNvmlLibrary("dgx-a100", seed=3, clock=lambda: clock[0])
    clock[0] = 42.0  # on a whole second: a load forced now is that second's, whose sample is the newest
    nvml = lib.pynvml
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    card = lib.world.cards[0]

    def fresh() -> list[tuple[int, int, int, int]]:
        return list(reversed(lib._symbols.samples(card, lib.now())))  # noqa: SLF001 - the uncached computation

    before = samples_read(nvml, handle)
    assert before == fresh() and before
    CHANGES[change](lib)
    after = samples_read(nvml, handle)
    assert after == fresh()
    assert after != before
    nvml.nvmlShutdown()
