"""The NVML probe through the real nvidia-ml-py on the fake NVML library: every profile field by field against
what the fake cards hold, and every error path."""

from __future__ import annotations

import _ctypes
import dataclasses
import inspect
import os
import re
import subprocess
import sys

import pynvml
import pytest

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.nvml.symbols import fully_supported, row_remapper
from hwtop.demo.profiles import PROFILES, DemoProcess, get_profile
from hwtop.model.snapshot import ProcessInfo
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml import session as gpu_probe
from hwtop.probes.nvml.device import decode_throttle_reasons
from hwtop.probes.nvml.session import nvml_library_loads
from hwtop.probes.nvml.slow import BackgroundCalls


class Clock:
    def __init__(self, start: float = 50.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def make(profile, clock: Clock | None = None, **kwargs):
    clock = clock or Clock()
    fake = FakeNvmlLibrary(profile, seed=3, clock=clock, **kwargs)
    probe = NvmlProbe(fake.pynvml, clock=clock, background=BackgroundCalls(inline=True))
    return fake, probe, clock


@pytest.mark.parametrize("name", list(PROFILES))
def test_probe_reports_what_the_fake_holds(name: str) -> None:
    fake, probe, clock = make(name)
    probe.read()
    clock.now += 1.0
    system, gpus = probe.read()
    profile = get_profile(name)
    assert system.available and system.driver_version == profile.driver_version
    cuda = profile.cuda_driver_version
    assert system.cuda_driver_version == f"{cuda // 1000}.{cuda % 1000 // 10}"
    assert len(gpus) == profile.gpu_count
    model = profile.gpu
    for gpu in gpus:
        truth = fake.truth(gpu.index)
        assert gpu.name == model.name and gpu.uuid.startswith("GPU-") and gpu.pci_bus_id == profile.bus_id(gpu.index)
        assert gpu.memory_total_bytes == truth.total == model.memory_bytes
        assert gpu.memory_used_bytes == truth.used and gpu.memory_reserved_bytes == truth.reserved
        assert gpu.memory_free_bytes == truth.total - truth.used - truth.reserved
        assert gpu.util_percent == truth.util and gpu.memory_util_percent == truth.mem_util
        assert gpu.temperature_c == truth.temperature
        assert gpu.power_w == truth.power_mw / 1000 and gpu.power_limit_w == model.power_limit_w
        assert gpu.sm_clock_mhz == truth.sm_clock and gpu.sm_clock_max_mhz == model.sm_max_mhz
        assert gpu.mem_clock_mhz == truth.mem_clock and gpu.mem_clock_max_mhz == model.mem_max_mhz
        assert gpu.fan_percent == (truth.fan if model.has_fan else None)
        assert gpu.pstate == truth.pstate
        assert gpu.throttle_reasons == decode_throttle_reasons(truth.event_reasons)
        assert (gpu.pcie.gen, gpu.pcie.width) == (truth.pcie_gen, truth.pcie_width)
        assert (gpu.pcie.max_gen, gpu.pcie.max_width) == (model.pcie_max_gen, model.pcie_max_width)
        assert gpu.pcie.rx_bytes_per_s is not None and gpu.pcie.rx_bytes_per_s >= 0
        assert gpu.compute_capability == model.compute_capability
        assert gpu.ecc_enabled == (model.ecc_enabled if model.ecc else None)
        assert (gpu.ecc is not None) == (model.ecc and model.ecc_enabled)
        assert gpu.mig_enabled == (False if model.mig_capable else None)
        assert (gpu.nvlink_tx_bytes_per_s is not None) == bool(model.nvlinks)
        assert (gpu.nvlink_errors is not None) == bool(model.nvlinks)
        assert (gpu.row_remap is not None) == row_remapper(model)
        assert (gpu.thermal_violation_ns is not None) == (gpu.power_violation_ns is not None) == fully_supported(model)
        if model.gpm:
            assert gpu.gpm is not None and gpu.gpm.sm_activity_percent == truth.sm_activity
            assert gpu.gpm.tensor_activity_percent == truth.tensor_activity and gpu.gpm_status is None
        else:
            assert gpu.gpm is None and "Hopper" in gpu.gpm_status
        listed = {p.pid for p in profile.processes if p.gpu == gpu.index}
        assert {p.pid for p in gpu.processes} == listed
    assert fake.internal_errors == []


def test_demo_facts_as_nvidia_smi_reports_them() -> None:
    mib = 1024**2
    assert get_profile("h200").gpu.memory_bytes == 143771 * mib
    assert get_profile("h100-pcie").gpu.memory_bytes == 81559 * mib
    assert get_profile("a4000").gpu.ecc and not get_profile("a4000").gpu.ecc_enabled
    for name in ("gtx1660s", "rtx3050", "rtx3090"):
        assert get_profile(name).gpu.sm_max_mhz == 2100  # the VBIOS ceiling NVML reports, not the boost clock
    for name in ("dgx-a100", "h100-pcie", "h200"):  # idle data-centre cards stay in P0
        fake, probe, clock = make(dataclasses.replace(get_profile(name), busy_gpus=()))
        assert probe.read()[1][0].pstate == 0
    fake, probe, _ = make(dataclasses.replace(get_profile("rtx3090"), busy_gpus=()))
    assert probe.read()[1][0].pstate == 8


def test_pcie_rate_from_byte_counters_matches_the_counter_delta() -> None:
    fake, probe, clock = make("h200")  # R570: PCIe byte counters are field values
    probe.read()
    before = fake.truth(0).pcie_rx_bytes
    clock.now += 2.0
    gpu = probe.read()[1][0]
    assert gpu.pcie.rx_bytes_per_s == pytest.approx((fake.truth(0).pcie_rx_bytes - before) / 2.0)
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2  # one sample (TX, RX) to unwrap the 32-bit counters


def test_drivers_without_byte_fields_sample_pcie_throughput_off_the_tick() -> None:
    fake, probe, clock = make("gtx1660s")  # R535
    gpu = probe.read()[1][0]
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2
    assert gpu.pcie.rx_bytes_per_s == int(fake.truth(0).pcie_rx_rate / 1000) * 1000
    for _ in range(4):  # the 20 ms call is repeated on the slow tier only
        clock.now += 1.0
        probe.read()
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2
    clock.now += 1.0
    probe.read()
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 4


def test_library_missing_runs_cpu_only() -> None:
    _, probe, _ = make("h200", library_missing=True)
    system, gpus = probe.read()
    assert not system.available and gpus == () and "NVML not found" in system.message


@pytest.mark.skipif(nvml_library_loads(), reason="this machine has an NVIDIA library")
def test_a_box_without_the_library_never_imports_the_bindings() -> None:
    """The real probe, as the monitor makes it, on this CPU-only box: the message, a retry, and no nvidia-ml-py
    import (a 5,000-line module the first frame would wait for)."""
    code = ("import sys; from hwtop.probes.gpu import NvmlProbe; p = NvmlProbe(); s, g = p.read(); "
            "print(s.available, g, 'pynvml' in sys.modules, sorted(m for m in sys.modules if m == 'ctypes' or "
            "m.startswith('hwtop.probes.nvml.'))); print(s.message)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # nor ctypes, nor the readers' modules: only the session and what its errors mean
    assert out.splitlines() == ["False () False ['hwtop.probes.nvml.calls', 'hwtop.probes.nvml.session']",
                                "no NVIDIA driver / NVML not found (libnvidia-ml.so.1): running "
                                "CPU-only; retrying every 10 s"]


def test_the_library_check_asks_the_loader_for_what_the_bindings_open(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    def dlopen(name: str, mode: int) -> int:  # what ctypes.CDLL calls, asked without importing ctypes
        opened.append(name)
        if name != pynvml_library():
            raise OSError(name)
        return 1

    monkeypatch.setattr(_ctypes, "dlopen", dlopen)
    assert nvml_library_loads() and opened == ["libnvidia-ml.so.1"]
    monkeypatch.setattr(gpu_probe, "NVML_LIBRARY", "libnvidia-ml.so.0")
    assert not nvml_library_loads()


def pynvml_library() -> str:
    """The name nvidia-ml-py's own loader passes to CDLL on Linux, read from its source."""
    source = inspect.getsource(pynvml._LoadNvmlLibrary)
    return re.search(r'CDLL\("(libnvidia-ml[^"]*)"\)', source).group(1)  # type: ignore[union-attr]


def test_driver_not_loaded_says_so() -> None:
    _, probe, _ = make("h200", driver_not_loaded=True)
    system, _ = probe.read()
    assert not system.available and "driver not loaded" in system.message


def test_real_pynvml_on_this_machine_is_cpu_only() -> None:
    probe = NvmlProbe()
    system, gpus = probe.read()
    probe.close()
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA driver")
    assert not system.available and gpus == ()


def test_init_failure_with_other_code() -> None:
    fake, probe, _ = make("h200")
    fake.fail("nvmlInit", pynvml.NVML_ERROR_NO_PERMISSION)
    system, _ = probe.read()
    assert not system.available and "Insufficient Permissions" in system.message


def test_temperature_not_supported_is_none_and_not_asked_every_tick() -> None:
    fake, probe, clock = make("a4000")
    fake.fail("nvmlDeviceGetTemperature", pynvml.NVML_ERROR_NOT_SUPPORTED)
    for _ in range(3):
        gpu = probe.read()[1][0]
        clock.now += 1
    assert gpu.temperature_c is None and gpu.util_percent is not None
    assert fake.calls["nvmlDeviceGetTemperature"] == 1


def test_function_missing_from_the_driver_is_not_asked_again() -> None:
    fake, probe, clock = make("a4000")
    fake.fail("nvmlDeviceGetTemperature", pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
    for _ in range(3):
        gpu = probe.read()[1][0]
        clock.now += 100  # long after any re-probe
    assert gpu.temperature_c is None and fake.calls["nvmlDeviceGetTemperature"] == 1


def test_gpu_lost_on_every_call() -> None:
    fake, probe, clock = make("dgx-a100")
    probe.read()
    fake.lose_gpu(0)
    clock.now += 1
    gpus = probe.read()[1]
    assert gpus[0].lost and gpus[0].name == "NVIDIA A100-SXM4-80GB" and gpus[0].util_percent is None
    assert not gpus[1].lost and gpus[1].util_percent == fake.truth(1).util


def test_no_permission_on_processes_is_shown() -> None:
    fake, probe, _ = make("rtx3090")
    fake.fail("nvmlDeviceGetComputeRunningProcesses", pynvml.NVML_ERROR_NO_PERMISSION)
    gpu = probe.read()[1][0]
    assert gpu.processes == () and "no permission" in gpu.process_pids_status


FUNCTIONS = [
    "nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion", "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage", "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetFanSpeed", "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetFieldValues", "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetEccMode",
    "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetMigMode", "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses", "nvmlDeviceGetProcessUtilization", "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetRemappedRows", "nvmlDeviceGetViolationStatus", "nvmlDeviceGetNvLinkErrorCounter",
]
CODES = [pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, pynvml.NVML_ERROR_GPU_IS_LOST,
         pynvml.NVML_ERROR_UNKNOWN, pynvml.NVML_ERROR_NO_PERMISSION, pynvml.NVML_ERROR_TIMEOUT,
         pynvml.NVML_ERROR_UNINITIALIZED, pynvml.NVML_ERROR_INSUFFICIENT_SIZE]


# Every call with one error each (the default run); every call with every error (pytest -m slow).
ROTATING = [(function, CODES[i % len(CODES)]) for i, function in enumerate(FUNCTIONS)]
EVERY = [pytest.param(f, c, marks=pytest.mark.slow) for f in FUNCTIONS for c in CODES if (f, c) not in ROTATING]


@pytest.mark.parametrize(("function", "code"), ROTATING + EVERY)
def test_any_error_at_any_call_never_escapes(function: str, code: int) -> None:
    fake, probe, clock = make("h200")
    fake.fail(function, code)
    for _ in range(3):
        system, gpus = probe.read()  # must not raise
        clock.now += 1
    if system.available and gpus and not gpus[0].lost:
        gpu = gpus[0]
        assert gpu.memory_total_bytes is None or gpu.memory_total_bytes == 143771 * 1024**2
        assert gpu.name in (None, "NVIDIA H200")
    # Only a lookup that agrees makes a GPU lost: a single call's GPU_IS_LOST does not.
    assert not any(g.lost for g in gpus) or function == "nvmlDeviceGetHandleByIndex"
    assert fake.internal_errors == []


def test_mig_instances_with_their_own_memory() -> None:
    profile = dataclasses.replace(get_profile("dgx-a100"), mig_gpus=(7,))
    fake, probe, _ = make(profile)
    gpus = probe.read()[1]
    assert gpus[7].mig_enabled is True and len(gpus[7].mig) == 2
    assert gpus[7].mig[0].memory_total_bytes == 10 * 1024**3 and gpus[7].mig[1].memory_total_bytes == 40 * 1024**3
    assert gpus[7].mig[0].uuid.startswith("MIG-") and gpus[0].mig == ()
    assert gpus[7].util_percent is None and gpus[0].util_percent is not None  # whole-GPU util: per slice in MIG


def test_processes_join_host_data_and_flag_foreign_pids(tmp_path) -> None:
    own = os.getpid()
    _proc_with_fds(tmp_path, own, ["/dev/nvidia0"], "python -m pytest")
    profile = dataclasses.replace(get_profile("rtx3090"), processes=(
        DemoProcess(0, own, "compute", 2 * 1024**3, "pytest"),
        DemoProcess(0, 4_000_000, "compute", 1024**3, "ghost")))  # beyond pid_max: not in this namespace
    clock = Clock()
    fake = FakeNvmlLibrary(profile, seed=3, clock=clock)
    probe = NvmlProbe(fake.pynvml, proc_root=str(tmp_path), clock=clock, background=BackgroundCalls(inline=True))
    clock.now += 25  # past the job's memory ramp-up
    host = (ProcessInfo(own, 1, "alice", "python", "python -m pytest", "R", 12.5, 1000, 3),)
    gpu = probe.read(host)[1][0]
    by_pid = {p.pid: p for p in gpu.processes}
    assert by_pid[own].visible and by_pid[own].user == "alice" and by_pid[own].command == "python -m pytest"
    assert by_pid[own].used_memory_bytes == 2 * 1024**3 and by_pid[own].sm_percent == fake.truth(0).util // 2
    assert not by_pid[4_000_000].visible and by_pid[4_000_000].command is None
    assert "pid mapping unavailable" in gpu.process_pids_status


def test_throttle_reasons_decoded_and_forced() -> None:
    fake, probe, _ = make("rtx3090")
    fake.force_reasons(0, "hw_thermal", "hw_slowdown")
    gpu = probe.read()[1][0]
    assert "HW thermal" in gpu.throttle_reasons and "HW slowdown" in gpu.throttle_reasons
    assert decode_throttle_reasons(0x4 | 0x10) == ("power cap", "sync boost")


def test_slow_tier_is_not_read_every_tick() -> None:
    fake, probe, clock = make("dgx-a100")
    for _ in range(4):
        probe.read()
        clock.now += 1.0
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == 8  # once per GPU in 4 s (tier is 5 s)
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == 32
    assert fake.calls["nvmlDeviceGetMigMode"] == 32  # MIG mode decides what utilization means: every tick
    assert fake.calls["nvmlDeviceGetName"] == 8  # static: once


def test_shutdown_at_close() -> None:
    fake, probe, _ = make("h200")
    probe.read()
    assert fake.initialized == 1
    probe.close()
    assert fake.initialized == 0


def _proc_with_fds(root, pid: int, targets: list[str], cmdline: str) -> None:
    base = root / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())
    for fd, target in enumerate(targets, start=3):
        os.symlink(target, base / "fd" / str(fd))


def test_container_pids_are_not_matched_to_the_wrong_process(tmp_path) -> None:
    """NVML reports host pids 500 and 4000000. Local pid 500 exists but holds no /dev/nvidia0 (another
    process); local pid 77 holds /dev/nvidia0: shown as a holder, and the status says the mapping is gone."""
    _proc_with_fds(tmp_path, 500, ["/dev/null", "pipe:[1234]"], "bash")
    _proc_with_fds(tmp_path, 77, ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"], "python train.py")
    profile = dataclasses.replace(get_profile("rtx3090"), processes=(
        DemoProcess(0, 500, "compute", 3 * 1024**3, "train"), DemoProcess(0, 4_000_000, "compute", 1024**3, "x")))
    clock = Clock()
    fake = FakeNvmlLibrary(profile, clock=clock)
    probe = NvmlProbe(fake.pynvml, proc_root=str(tmp_path), clock=clock, background=BackgroundCalls(inline=True))
    gpu = probe.read()[1][0]
    by_pid = {p.pid: p for p in gpu.processes}
    assert not by_pid[500].visible and by_pid[500].command is None
    assert not by_pid[4_000_000].visible
    assert by_pid[77].kind == "holder" and by_pid[77].command == "python train.py"
    assert "pid mapping unavailable" in gpu.process_pids_status and "/dev/nvidia0: 77" in gpu.process_pids_status


def test_nvlink_rates_from_the_per_link_counters() -> None:
    fake, probe, clock = make("dgx-a100")
    probe.read()
    before = sum(fake.truth(1).nvlink_tx_kib)
    clock.now += 2.0
    gpu = probe.read()[1][1]
    assert gpu.nvlink_tx_bytes_per_s == pytest.approx((sum(fake.truth(1).nvlink_tx_kib) - before) * 1024 / 2.0)


def test_card_without_nvlink_has_none_and_asks_no_nvlink_fields() -> None:
    fake, probe, clock = make("h100-pcie")
    probe.read()
    clock.now += 1.0
    gpu = probe.read()[1][0]
    assert gpu.nvlink_tx_bytes_per_s is None and gpu.pcie.rx_bytes_per_s is not None
    assert not [key for key in fake.field_requests if key[1] in (138, 139)]
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2  # one 20-ms sample (slow tier), watching for bursts


def test_energy_and_pcie_replays_are_read_as_nvml_counts_them() -> None:
    """dcgm-exporter's TOTAL_ENERGY_CONSUMPTION and PCIE_REPLAY_COUNTER: the energy grows by the power drawn
    (mJ = mW x s) between two slow-tier reads; replays are the driver's count."""
    fake, probe, clock = make("h200")
    first = probe.read()[1][0]
    power_mw = fake.truth(0).power_mw
    fake.set_pcie_replays(0, 7)
    clock.now += 10.0  # past the slow tier
    second = probe.read()[1][0]
    assert first.energy_mj is not None and second.energy_mj is not None
    assert second.energy_mj - first.energy_mj == pytest.approx(10.0 * power_mw, rel=0.05)
    assert (first.pcie_replays, second.pcie_replays) == (0, 7)


def test_a_critical_xid_is_read_from_nvml_events_and_kept_as_the_last_one() -> None:
    """nvmlEventSetWait_v2 with no wait, once a tick: the XID of the GPU that reported it, 0 on the others."""
    fake, probe, clock = make("dgx-a100")
    assert [g.xid_last for g in probe.read()[1]] == [0] * 8
    fake.report_xid(3, 48)
    fake.report_xid(3, 79)  # two in one tick: the last one stands
    fake.report_xid(5, 94)
    clock.now += 1.0
    assert [g.xid_last for g in probe.read()[1]] == [0, 0, 0, 79, 0, 94, 0, 0]
    clock.now += 1.0
    assert probe.read()[1][3].xid_last == 79  # kept until another comes
    assert fake.calls["nvmlEventSetCreate"] == 1 and fake.calls["nvmlDeviceRegisterEvents"] == 8
    probe.close()
    assert fake.calls["nvmlEventSetFree"] == 1


def test_a_driver_without_events_leaves_xid_unknown() -> None:
    fake, probe, _ = make("h200")
    fake.fail("nvmlEventSetCreate", 3)  # NOT_SUPPORTED
    gpu = probe.read()[1][0]
    assert gpu.xid_last is None and gpu.util_percent is not None  # the rest of the GPU is read as ever
