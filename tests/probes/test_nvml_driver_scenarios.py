"""What real drivers do to a monitor, each against the fake NVML library under the real nvidia-ml-py: an R470
driver, a fan that answers UNKNOWN, twelve NVLink links, MIG switched on and off, ECC enabled later, counters
that wrap, GPM buffers that cannot be allocated, C+G processes, PCIe counters by driver branch, per-process
samples in the wrong order, an NVML that starts late. (Each failed on an earlier probe.)"""

from __future__ import annotations

import dataclasses
import threading
import time

import pynvml
import pytest

from hwtop.demo.nvml import FakeNvmlLibrary, abi, demo_library, world
from hwtop.demo.profiles import GIB, DemoProcess, get_profile
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.capabilities import REPROBE_S
from hwtop.probes.nvml.session import INIT_RETRY_S, LOST_RETRY_S, SLOW_TIER_S
from hwtop.probes.nvml.slow import BackgroundCalls


class Clock:
    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def rig(spec, clock: Clock | None = None, inline: bool = True, **kwargs):
    """A fake library (a demo spec, or a profile), the probe on it through the real bindings, and the clock."""
    clock = clock or Clock()
    fake = (demo_library(spec, seed=5, clock=clock) if isinstance(spec, str) and not kwargs
            else FakeNvmlLibrary(spec, seed=5, clock=clock, **kwargs))
    probe = NvmlProbe(fake.pynvml, clock=clock, background=BackgroundCalls(inline=inline))
    return fake, probe, clock


def ticks(probe, clock, count: int, step: float = 1.0):
    """`count` reads `step` apart; the last one's result (the clock left at its time)."""
    out = probe.read()
    for _ in range(count - 1):
        clock.now += step
        out = probe.read()
    return out


# ----- 1. drivers without the _v3 process queries -----

def test_r470_without_v3_shows_every_gpu_and_its_processes() -> None:
    fake, probe, clock = rig("dgx-a100:r470")
    clock.now += 30  # past the job's memory ramp-up
    system, gpus = probe.read()
    assert system.available and system.driver_version == "470.256.02" and system.cuda_driver_version == "11.4"
    assert [g.index for g in gpus] == list(range(8)) and not any(g.lost for g in gpus)
    for gpu in gpus:
        assert [(p.pid, p.kind, p.used_memory_bytes) for p in gpu.processes] == [(41000 + gpu.index, "compute",
                                                                                 61 * GIB)]
        assert gpu.util_percent == fake.truth(gpu.index).util
        assert gpu.memory_reserved_bytes is None and gpu.memory_total_bytes == 80 * GIB  # no v2 memory info
        assert gpu.throttle_reasons == ()  and "R520" in gpu.gpm_status
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v2"] >= 8
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 0  # not exported: never reached
    assert fake.internal_errors == []


def test_a_driver_with_only_the_v1_process_query() -> None:
    fake, probe, clock = rig(get_profile("ws-2x3090"), driver_version="450.80.02")
    fake.remove_symbols("nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses_v2")
    clock.now += 30
    gpus = probe.read()[1]
    assert [[(p.pid, p.used_memory_bytes) for p in g.processes] for g in gpus] == [[(41000, 17 * GIB)],
                                                                                  [(41001, 17 * GIB)]]
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses"] >= 2


def test_a_process_starting_between_the_size_query_and_the_fill_is_asked_again() -> None:
    fake, probe, clock = rig("rtx3090")
    fake.fail("nvmlDeviceGetComputeRunningProcesses", pynvml.NVML_ERROR_INSUFFICIENT_SIZE, phase="fill", times=1)
    gpu = probe.read()[1][0]
    assert [p.pid for p in gpu.processes] == [41000] and "permission" not in (gpu.process_pids_status or "")
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 4  # size, fill (too small), size, fill


# ----- 2. lost means GPU_IS_LOST / RESET_REQUIRED, confirmed -----

def test_fan_unknown_leaves_the_gpu_live_with_fan_na() -> None:
    fake, probe, clock = rig("ws-2x3090:fan-unknown")
    gpus = ticks(probe, clock, 3)[1]
    assert not gpus[1].lost and gpus[1].fan_percent is None
    assert gpus[1].util_percent == fake.truth(1).util and gpus[1].temperature_c == fake.truth(1).temperature
    assert gpus[0].fan_percent == fake.truth(0).fan


def test_one_gpu_is_lost_answer_is_not_believed_until_a_lookup_agrees() -> None:
    fake, probe, clock = rig("dgx-a100")
    fake.fail("nvmlDeviceGetPowerUsage", pynvml.NVML_ERROR_GPU_IS_LOST, gpu=3, times=1)
    gpu = probe.read()[1][3]
    assert not gpu.lost and gpu.power_w is None and gpu.util_percent == fake.truth(3).util
    fake.lose_gpu(3)
    clock.now += 1
    assert probe.read()[1][3].lost
    fake.lose_gpu(3, False)  # reset: back on the bus
    clock.now += LOST_RETRY_S
    back = probe.read()[1][3]
    assert not back.lost and back.name == "NVIDIA A100-SXM4-80GB" and back.util_percent == fake.truth(3).util


def test_reset_required_is_lost_too() -> None:
    fake, probe, clock = rig("h200")
    probe.read()
    fake.fail("nvmlDeviceGetUtilizationRates", pynvml.NVML_ERROR_RESET_REQUIRED)
    fake.fail("nvmlDeviceGetHandleByIndex", pynvml.NVML_ERROR_RESET_REQUIRED)
    clock.now += 1
    assert probe.read()[1][0].lost


# ----- 3. NVLink: every link, by scopeId -----

def test_twelve_nvlink_links_each_carrying_traffic_sum_to_the_full_figure() -> None:
    fake, probe, clock = rig("dgx-a100")
    shares = tuple(range(1, 13))
    fake.set_link_shares(0, tuple(s / sum(shares) for s in shares))  # every link busy, none alike
    fake.set_load(0, 1.0)
    probe.read()
    clock.now += 1.0
    gpu = probe.read()[1][0]
    full = 45e6 * 1024  # the fake's NVLink bytes/s over all links at full load
    assert gpu.nvlink_tx_bytes_per_s == pytest.approx(full, rel=1e-6)
    assert gpu.nvlink_rx_bytes_per_s == pytest.approx(full, rel=1e-6)
    scopes = {scope for (index, field, scope) in fake.field_requests if index == 0 and field == 138}
    assert scopes == set(range(12))


def test_a_link_going_down_drops_out_of_the_request() -> None:
    fake, probe, clock = rig("dgx-a100")
    fake.set_link_down(2, 5)
    probe.read()
    fake.field_requests.clear()
    clock.now += 1
    probe.read()
    assert {s for (i, f, s) in fake.field_requests if i == 2 and f == 138} == set(range(12)) - {5}


def test_the_field_values_call_answers_as_the_bindings_own_and_follows_the_request() -> None:
    """The probe's field-values call (its request array copied from one filled when the request was new) gets the
    bytes the bindings' own call gets, and their error; a link going down makes a new request array."""
    fake, probe, clock = rig("dgx-a100")
    probe.read()
    traffic, handle = probe._devices[2].traffic, probe._devices[2].handle
    request = [(138, link) for link in range(12)] + [(197, 0), (198, 0)]
    ours = traffic._field_values(handle, request)
    theirs = fake.pynvml.nvmlDeviceGetFieldValues(handle, request)
    assert bytes(ours) == bytes(theirs) and type(ours) is type(theirs)
    assert traffic._field_values(handle, request[:3])._length_ == 3 and traffic._request == request[:3]
    fake.fail("nvmlDeviceGetFieldValues", abi.NOT_SUPPORTED, gpu=2, times=1)
    with pytest.raises(fake.pynvml.NVMLError_NotSupported):
        traffic._field_values(handle, request)
    fake.set_link_down(2, 5)
    clock.now += SLOW_TIER_S  # the links that are up are read again on the slow tier
    probe.read()
    fake.field_requests.clear()
    clock.now += 1
    probe.read()
    assert {s for (i, f, s) in fake.field_requests if i == 2 and f == 138} == set(range(12)) - {5}
    assert [scope for field, scope in traffic._request if field == 138] == [s for s in range(12) if s != 5]


# ----- 4. NOT_SUPPORTED is not forever -----

def test_mig_off_on_off_keeps_utilization_right() -> None:
    fake, probe, clock = rig("dgx-a100")
    gpu = ticks(probe, clock, 2)[1][0]
    assert gpu.mig_enabled is False and gpu.util_percent == fake.truth(0).util
    fake.set_mig(0, True)
    gpu = probe.read()[1][0]
    assert gpu.mig_enabled is True and gpu.util_percent is None and len(gpu.mig) == 2
    clock.now += 1
    fake.set_mig(0, False)
    gpu = probe.read()[1][0]
    assert gpu.mig_enabled is False and gpu.util_percent == fake.truth(0).util and gpu.mig == ()
    assert probe.read()[1][1].util_percent == fake.truth(1).util


def test_the_mig_toggle_scenario_over_time() -> None:
    fake, probe, clock = rig("dgx-a100:mig-toggle", Clock(0.0))
    seen = []
    for _ in range(8):  # half-second ticks over four one-second phases: off, on, off, on
        gpu = probe.read()[1][0]
        seen.append((gpu.mig_enabled, gpu.util_percent is not None))
        if gpu.util_percent is not None:
            assert gpu.util_percent == fake.truth(0).util
        clock.now += 0.5
    assert seen == [(False, True)] * 2 + [(True, False)] * 2 + [(False, True)] * 2 + [(True, False)] * 2


def test_ecc_enabled_later_is_read() -> None:
    fake, probe, clock = rig("a4000")
    gpu = probe.read()[1][0]
    assert gpu.ecc_enabled is False and gpu.ecc is None
    fake.set_ecc_mode(0, True)
    fake.set_ecc(0, 3, 1)
    clock.now += SLOW_TIER_S
    gpu = probe.read()[1][0]
    assert gpu.ecc_enabled is True and gpu.ecc.volatile_corrected == 3 and gpu.ecc.aggregate_uncorrected == 1


def test_not_supported_is_asked_again_on_a_slow_schedule() -> None:
    fake, probe, clock = rig("rtx3090")
    fake.fail("nvmlDeviceGetTemperature", pynvml.NVML_ERROR_NOT_SUPPORTED, times=1)
    assert probe.read()[1][0].temperature_c is None
    clock.now += REPROBE_S / 2
    assert probe.read()[1][0].temperature_c is None  # not asked yet
    clock.now += REPROBE_S / 2
    assert probe.read()[1][0].temperature_c == fake.truth(0).temperature


def test_pcie_throughput_and_gpm_survive_one_transient_error() -> None:
    fake, probe, clock = rig("gtx1660s")
    fake.fail("nvmlDeviceGetPcieThroughput", pynvml.NVML_ERROR_TIMEOUT, times=1)
    assert probe.read()[1][0].pcie.rx_bytes_per_s is None
    clock.now += SLOW_TIER_S
    assert probe.read()[1][0].pcie.rx_bytes_per_s == int(fake.truth(0).pcie_rx_rate / 1000) * 1000
    fake, probe, clock = rig("h200")
    probe.read()
    fake.fail("nvmlGpmSampleGet", pynvml.NVML_ERROR_UNKNOWN, times=1)
    gpus = ticks(probe, clock, 3)[1]
    assert gpus[0].gpm is not None and gpus[0].gpm.sm_activity_percent == fake.truth(0).sm_activity


# ----- 5. counters read as counters -----

@pytest.mark.parametrize(("value_type", "origin"), [(abi.VALUE_ULONGLONG, 2**64 - 10**8),
                                                    (abi.VALUE_UINT, 2**32 - 10**8)])
def test_counters_wrap_at_the_width_of_their_value_type(value_type: int, origin: int) -> None:
    fake, probe, clock = rig("h200")
    fake.counter_origin = origin  # the counters start just below their wrap
    fake.value_types[abi.FI_PCIE_COUNT_RX_BYTES] = value_type
    fake.set_load(0, 1.0)
    probe.read()
    clock.now += 1.0
    gpu = probe.read()[1][0]
    assert gpu.pcie.rx_bytes_per_s == pytest.approx(0.6e9, rel=1e-6)  # 0.6 GB/s: past the wrap, not negative
    assert gpu.nvlink_tx_bytes_per_s == pytest.approx(45e6 * 1024, rel=1e-6)


def poll(probe: NvmlProbe, clock: Clock, seconds: float, step: float = 0.05) -> None:
    """What the PCIe poller's thread does, by hand: a reading of GPU 0's 32-bit counters every `step`."""
    poller = probe._devices[0].pcie_poller
    assert poller is not None and poller.active
    for _ in range(round(seconds / step)):
        clock.now += step
        assert poller.poll_once()


def test_heavy_traffic_on_32_bit_pcie_counters_is_polled_and_exact(monkeypatch) -> None:
    """As measured on the real H200 (R580, 32-bit fields 197/198): copies at 52 GB/s wrap the RX counter twelve
    times a second. The slow tier's 20-ms sample says the traffic is heavy; readings 50 ms apart keep every wrap."""
    monkeypatch.setattr(world, "PCIE_RX_PER_LOAD", 52e9)
    fake, probe, clock = rig("h200-vm")
    fake.set_load(0, 1.0)
    probe.read()
    for _ in range(3):
        poll(probe, clock, 1.0)
        gpu = probe.read()[1][0]
        assert gpu.pcie.rx_bytes_per_s == pytest.approx(52e9, rel=1e-6)
        assert gpu.pcie.tx_bytes_per_s == pytest.approx(0.3 * 52e9, rel=1e-6)


def test_a_burst_after_idle_is_polled_once_the_tick_or_the_sample_sees_it(monkeypatch) -> None:
    """From idle to 52 GB/s: the first tick's readings are a second apart, so what it shows is the traffic modulo
    4 GiB (the limit that remains); the poller starts on that tick or at the next 20-ms sample (slow tier)."""
    monkeypatch.setattr(world, "PCIE_RX_PER_LOAD", 52e9)
    fake, probe, clock = rig("h200-vm")
    fake.set_load(0, 0.0)
    ticks(probe, clock, 2)
    assert probe._devices[0].pcie_poller is not None and not probe._devices[0].pcie_poller.active
    fake.set_load(0, 1.0)
    seen = []
    for _ in range(int(SLOW_TIER_S) + 1):
        poller = probe._devices[0].pcie_poller
        if poller is not None and poller.active:
            poll(probe, clock, 1.0)
        else:
            clock.now += 1.0
        seen.append(probe.read()[1][0].pcie.rx_bytes_per_s)
    assert seen[0] == pytest.approx(52e9 % 2**32, rel=1e-6)  # the alias, before anything says "heavy"
    assert seen[-1] == pytest.approx(52e9, rel=1e-6)


def test_light_pcie_traffic_is_neither_polled_nor_sampled_each_tick() -> None:
    fake, probe, clock = rig("h200-vm")
    fake.set_load(0, 1.0)  # 0.6 GB/s: under a quarter of a wrap per second
    gpu = ticks(probe, clock, 11)[1][0]
    assert gpu.pcie.rx_bytes_per_s == pytest.approx(0.6e9, rel=1e-6)
    assert probe.calls["nvmlDeviceGetPcieThroughput"] == 2 * 3  # at 0, 5 and 10 s
    assert probe.calls["nvmlDeviceGetFieldValues"] == 11 and not probe._devices[0].pcie_poller.active


def test_the_poller_thread_reads_while_heavy_and_stops_with_the_probe(monkeypatch) -> None:
    monkeypatch.setattr(world, "PCIE_RX_PER_LOAD", 52e9)
    clock = Clock()
    fake, probe, _ = rig("h200-vm", clock=clock, inline=False)
    fake.set_load(0, 1.0)
    probe.read()
    probe._background.drain()  # the 20-ms sample: heavy
    clock.now += 1.0
    probe.read()
    poller = probe._devices[0].pcie_poller
    assert poller is not None and poller.active
    before = probe.calls["nvmlDeviceGetFieldValues"]
    deadline = time.monotonic() + 5
    while probe.calls["nvmlDeviceGetFieldValues"] < before + 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert probe.calls["nvmlDeviceGetFieldValues"] >= before + 3  # its own readings, every 50 ms
    probe.close()
    assert not [t for t in threading.enumerate() if t.name == "hwtop-pcie-poller"]


def test_rates_use_the_field_values_own_timestamps() -> None:
    fake, probe, clock = rig("h200")
    fake.set_load(0, 1.0)
    probe.read()
    clock.now += 1.0
    fake.set_field_lag(0, 0.5)  # the driver's cached value is half a second old when read
    gpu = probe.read()[1][0]
    assert gpu.pcie.rx_bytes_per_s == pytest.approx(0.6e9, rel=1e-6)  # the host's 1 s would say 0.3e9


# ----- 6. GPM -----

def test_gpm_allocation_failure_is_not_a_lost_gpu_and_leaks_nothing() -> None:
    fake, probe, clock = rig("h200")
    fake.fail("nvmlGpmSampleAlloc", pynvml.NVML_ERROR_MEMORY, times=1, after=1)  # the second buffer fails
    gpu = probe.read()[1][0]
    assert not gpu.lost and gpu.gpm is None and "could not be allocated" in gpu.gpm_status
    assert gpu.util_percent == fake.truth(0).util
    assert fake.gpm_samples == {}  # the first buffer was given back
    clock.now += SLOW_TIER_S
    gpu = ticks(probe, clock, 2)[1][0]
    assert gpu.gpm is not None and gpu.gpm_status is None and len(fake.gpm_samples) == 2
    fake.lose_gpu(0)
    assert probe.read()[1][0].lost and fake.gpm_samples == {}
    probe.close()
    assert fake.gpm_samples == {} and fake.initialized == 0


# ----- 7. C+G -----

def test_a_compute_and_graphics_process_is_counted_once() -> None:
    profile = dataclasses.replace(get_profile("gtx1660s"), processes=(
        DemoProcess(0, 3120, "graphics", 200 * 1024**2, "Xorg"),
        DemoProcess(0, 5000, "compute+graphics", 2 * GIB, "blender")))
    fake, probe, clock = rig(profile)
    clock.now += 30
    gpu = probe.read()[1][0]
    by_pid = {p.pid: p for p in gpu.processes}
    assert sorted(by_pid) == [3120, 5000] and len(gpu.processes) == 2
    assert by_pid[5000].kinds == ("compute", "graphics") and by_pid[5000].kind == "compute"
    assert sum(p.used_memory_bytes or 0 for p in gpu.processes) == 2 * GIB + 200 * 1024**2


# ----- 8. PCIe: byte counters from R555, the 20 ms call off the tick -----

def test_driver_550_never_asks_for_pcie_byte_fields() -> None:
    fake, probe, clock = rig("dgx-a100")
    gpus = ticks(probe, clock, 7)[1]
    assert fake.driver_version.startswith("550.")
    assert not [key for key in fake.field_requests if key[1] in (abi.FI_PCIE_COUNT_TX_BYTES,
                                                                  abi.FI_PCIE_COUNT_RX_BYTES)]
    assert all(g.pcie.rx_bytes_per_s is not None for g in gpus)  # from nvmlDeviceGetPcieThroughput


@pytest.mark.parametrize(("value_type", "sampled"), [(abi.VALUE_ULONGLONG, 0), (abi.VALUE_UINT, 8 * 2 * 2)])
def test_r555_reads_pcie_counters_and_the_20ms_call_only_to_watch_32_bit_ones(value_type: int,
                                                                              sampled: int) -> None:
    """64-bit counters need nothing else; for 32-bit ones (as R580 answers) the 20-ms sample watches for a burst
    that needs the poller, on the slow tier (here at 0 and 5 s, on each of 8 GPUs, TX and RX)."""
    fake, probe, clock = rig("dgx-a100:r555")
    for field in (abi.FI_PCIE_COUNT_TX_BYTES, abi.FI_PCIE_COUNT_RX_BYTES):
        fake.value_types[field] = value_type
    gpus = ticks(probe, clock, 7)[1]
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == sampled
    assert {key[2] for key in fake.field_requests if key[1] == abi.FI_PCIE_COUNT_RX_BYTES} == {0}
    assert all(g.pcie.rx_bytes_per_s is not None for g in gpus)


def test_a_tick_over_eight_gpus_spends_under_5ms_in_nvml_outside_the_slow_tier() -> None:
    """R550 (no PCIe byte fields): the 20 ms nvmlDeviceGetPcieThroughput runs on the background thread."""
    fake, probe, clock = rig("dgx-a100", inline=False)
    probe.read()  # static facts, slow tier, first samples
    probe._background.drain()
    clock.now += 1.0
    fake.reset_accounting()
    _, gpus = probe.read()  # a tick between slow tiers
    probe._background.drain()
    main = fake.spent_s(threading.get_ident())
    assert len(gpus) == 8 and all(g.pcie.rx_bytes_per_s is not None for g in gpus)
    assert main < 0.005, f"{main * 1000:.2f} ms of modelled NVML time on the tick's thread"
    assert "nvmlDeviceGetPcieThroughput" not in {r.symbol for r in fake.log if r.thread == threading.get_ident()}
    probe.close()


# ----- 9. per-process utilization samples -----

def test_process_samples_newest_first_and_stale_are_sorted_filtered_and_clamped() -> None:
    fake, probe, clock = rig("rtx3090")
    fake.set_sample_quirk(0, "stale")  # the whole 20 s buffer, newest first, whatever was asked
    clock.now += 30
    gpu = probe.read()[1][0]
    assert gpu.processes[0].sm_percent == fake.truth(0).util  # the newest sample, not the oldest
    clock.now += 1
    gpu = probe.read()[1][0]
    assert gpu.processes[0].sm_percent == fake.truth(0).util
    fake.set_sample_quirk(0, "overshoot")
    clock.now += 1
    assert probe.read()[1][0].processes[0].sm_percent == 100.0  # 104 from the driver, clamped


# ----- 10. NVML that starts late; guards; the pinned bindings -----

def test_nvml_init_is_retried_after_the_driver_loads() -> None:
    fake, probe, clock = rig(get_profile("h200"), driver_not_loaded=True)
    system, gpus = probe.read()
    assert not system.available and "retrying" in system.message
    fake.load_driver()
    clock.now += INIT_RETRY_S
    system, gpus = probe.read()
    assert system.available and gpus[0].name == "NVIDIA H200"


def test_a_library_mounted_after_start_is_found() -> None:
    fake, probe, clock = rig(get_profile("h200"), library_missing=True)
    assert "NVML not found" in probe.read()[0].message
    fake.install_library()
    clock.now += INIT_RETRY_S
    assert probe.read()[0].available


def test_the_driver_going_away_mid_run_is_reopened_later() -> None:
    fake, probe, clock = rig("h200")
    probe.read()
    fake.unload_driver()
    clock.now += 1
    system, gpus = probe.read()
    assert not system.available and gpus == () and "stopped answering" in system.message
    fake.load_driver()
    clock.now += INIT_RETRY_S
    system, gpus = probe.read()
    assert system.available and gpus[0].util_percent == fake.truth(0).util
    assert fake.initialized == 1  # the old session was shut down before the new one


def test_bindings_without_memory_v2_fall_back_inside_the_guard(monkeypatch) -> None:
    fake, probe, clock = rig("h200")
    monkeypatch.delattr(fake.pynvml, "nvmlMemory_v2")  # older nvidia-ml-py
    gpu = probe.read()[1][0]
    assert gpu.memory_total_bytes == 143771 * 1024**2 and gpu.memory_reserved_bytes is None
