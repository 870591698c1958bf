"""The fake NVML library itself, seen through the real nvidia-ml-py: its symbols per driver branch, its struct
layouts against the bindings' own, its error injection, its clock, its bookkeeping."""

from __future__ import annotations

import ctypes
import threading

import pynvml
import pytest

from hwtop.demo.nvml import FakeNvmlLibrary, abi, demo_library
from hwtop.demo.nvml.binding import pool_size
from hwtop.demo.profiles import GIB, DemoProcess


def opened(spec: str = "dgx-a100", **kwargs):
    clock = [10.0]
    fake = FakeNvmlLibrary(spec, clock=lambda: clock[0], **kwargs) if kwargs else demo_library(
        spec, clock=lambda: clock[0])
    nvml = fake.pynvml
    nvml.nvmlInit()
    return fake, nvml, clock


@pytest.mark.parametrize(("ours", "theirs"), [
    (abi.PciInfo, "nvmlPciInfo_t"), (abi.Memory, "c_nvmlMemory_t"), (abi.MemoryV2, "c_nvmlMemory_v2_t"),
    (abi.Utilization, "c_nvmlUtilization_t"), (abi.ProcessInfoV2, "c_nvmlProcessInfo_v2_t"),
    (abi.FieldValue, "c_nvmlFieldValue_t"), (abi.ProcessUtilizationSample, "c_nvmlProcessUtilizationSample_t"),
    (abi.GpmSupport, "c_nvmlGpmSupport_t"), (abi.GpmMetric, "c_nvmlGpmMetric_t"),
])
def test_struct_layouts_agree_with_the_bindings(ours: type[ctypes.Structure], theirs: str) -> None:
    binding = getattr(pynvml, theirs)
    assert ctypes.sizeof(ours) == ctypes.sizeof(binding)
    assert [(name, getattr(ours, name).offset) for name, *_ in ours._fields_] == [
        (name, getattr(binding, name).offset) for name, *_ in binding._fields_]
    assert abi.MEMORY_V2_VERSION == pynvml.nvmlMemory_v2
    assert abi.metrics_offset() == pynvml.c_nvmlGpmMetricsGet_t.metrics.offset


def test_calls_before_init_and_after_shutdown_are_uninitialized() -> None:
    fake = FakeNvmlLibrary("h200")
    nvml = fake.pynvml
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()  # no library loaded yet: the bindings' own check
    nvml.nvmlInit()
    assert nvml.nvmlDeviceGetCount() == 1
    nvml.nvmlShutdown()
    with pytest.raises(nvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()  # the library's check
    assert str(nvml.NVMLError(abi.GPU_IS_LOST)) == "GPU is lost"
    assert nvml.nvmlErrorString(abi.TIMEOUT) == "Timeout"  # the one symbol returning a char *


def test_r470_lacks_the_newer_symbols_and_the_bindings_say_so() -> None:
    fake, nvml, _ = opened("dgx-a100:r470")
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(nvml.NVMLLibraryMismatchError):
        nvml.nvmlDeviceGetComputeRunningProcesses(handle)  # the bindings' unversioned call is _v3
    with pytest.raises(nvml.NVMLError_FunctionNotFound):
        nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    with pytest.raises(nvml.NVMLError_FunctionNotFound):
        nvml.nvmlGpmQueryDeviceSupport(handle)
    assert [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses_v2(handle)] == [41000]
    values = nvml.nvmlDeviceGetFieldValues(handle, [(138, 0), 197])
    assert [v.nvmlReturn for v in values] == [abi.NOT_SUPPORTED, abi.NOT_SUPPORTED]
    fake, nvml, _ = opened("dgx-a100")
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)] == [41000]
    assert [v.nvmlReturn for v in nvml.nvmlDeviceGetFieldValues(handle, [(138, 0), 197])] == [0, abi.NOT_SUPPORTED]


def test_faults_by_call_gpu_count_and_phase() -> None:
    fake, nvml, _ = opened("ws-2x3090")
    first, second = nvml.nvmlDeviceGetHandleByIndex(0), nvml.nvmlDeviceGetHandleByIndex(1)
    fake.fail("nvmlDeviceGetPowerUsage", abi.TIMEOUT, gpu=1, times=1)
    assert nvml.nvmlDeviceGetPowerUsage(first) > 0
    with pytest.raises(nvml.NVMLError_Timeout):
        nvml.nvmlDeviceGetPowerUsage(second)
    assert nvml.nvmlDeviceGetPowerUsage(second) > 0
    fake.fail("nvmlDeviceGetComputeRunningProcesses", abi.INSUFFICIENT_SIZE, phase="fill", times=1)
    with pytest.raises(nvml.NVMLError_InsufficientSize):  # a process burst between the size query and the fill
        nvml.nvmlDeviceGetComputeRunningProcesses(first)
    assert [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(first)] == [41000]


def test_state_changes_between_calls() -> None:
    fake, nvml, clock = opened("dgx-a100")
    handle = nvml.nvmlDeviceGetHandleByIndex(2)
    fake.add_process(DemoProcess(2, 777, "compute", 2 * GIB, "python eval.py"))
    assert sorted(p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)) == [777, 41002]
    fake.remove_process(41002)
    assert [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)] == [777]
    fake.set_mig(2, True)
    assert nvml.nvmlDeviceGetMigMode(handle) == [1, 1]
    with pytest.raises(nvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetUtilizationRates(handle)
    fake.lose_gpu(2)
    with pytest.raises(nvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetHandleByIndex(2)
    fake.unload_driver()
    with pytest.raises(nvml.NVMLError_DriverNotLoaded):
        nvml.nvmlDeviceGetCount()


def test_field_values_per_link_with_timestamps_types_and_wrap() -> None:
    fake, nvml, clock = opened("dgx-a100")
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    fake.set_load(0, 1.0)
    fake.counter_origin = 2**64 - 1
    first = [int(v.value.ullVal) for v in nvml.nvmlDeviceGetFieldValues(handle, [(138, link) for link in range(12)])]
    clock[0] += 2.0
    values = nvml.nvmlDeviceGetFieldValues(handle, [(138, link) for link in range(12)] + [(138, 12), 91])
    deltas = [(int(v.value.ullVal) - f) % 2**64 for v, f in zip(values, first, strict=False)]
    assert sum(deltas) == pytest.approx(2 * 45e6, abs=12)  # KiB over 2 s, all 12 links, across the wrap
    assert values[12].nvmlReturn == abi.INVALID_ARGUMENT  # there is no 13th link
    assert (values[13].valueType, values[13].value.uiVal) == (abi.VALUE_UINT, 12)
    assert values[0].timestamp == int((1_700_000_000 + 2.0) * 1e6)  # µs since 1970, on the fake's clock


def test_each_call_costs_its_thread_its_modelled_time() -> None:
    fake, nvml, _ = opened("gtx1660s")
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    fake.reset_accounting()
    nvml.nvmlDeviceGetTemperature(handle, 0)
    worker = threading.Thread(target=lambda: nvml.nvmlDeviceGetPcieThroughput(handle, 0))
    worker.start()
    worker.join()
    assert fake.spent_s(threading.get_ident()) == pytest.approx(10e-6)
    assert fake.spent_s() == pytest.approx(10e-6 + 20e-3)  # the 20 ms window nvmlDeviceGetPcieThroughput samples
    assert [r.symbol for r in fake.log] == ["nvmlDeviceGetTemperature", "nvmlDeviceGetPcieThroughput"]


def test_a_bug_in_the_fake_answers_unknown_and_is_recorded(monkeypatch) -> None:
    fake, nvml, _ = opened("h200")
    handle = nvml.nvmlDeviceGetHandleByIndex(0)

    def broken(*_args: object) -> int:
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(fake._symbols, "nvmlDeviceGetFanSpeed", broken)
    fake._pointers.pop("nvmlDeviceGetFanSpeed", None)
    nvml._nvmlGetFunctionPointer_cache.pop("nvmlDeviceGetFanSpeed", None)
    with pytest.raises(nvml.NVMLError_Unknown):
        nvml.nvmlDeviceGetFanSpeed(handle)
    assert fake.internal_errors == ["nvmlDeviceGetFanSpeed: ZeroDivisionError: oops"]


def test_bindings_are_private_per_fake_and_pooled() -> None:
    a, nvml_a, _ = opened("h200")
    b, nvml_b, _ = opened("rtx3090")
    assert nvml_a is not nvml_b and nvml_a.nvmlLib is not nvml_b.nvmlLib
    assert nvml_a.nvmlDeviceGetName(nvml_a.nvmlDeviceGetHandleByIndex(0)) == "NVIDIA H200"
    assert nvml_b.nvmlDeviceGetName(nvml_b.nvmlDeviceGetHandleByIndex(0)) == "NVIDIA GeForce RTX 3090"
    del a, b, nvml_a, nvml_b
    before = pool_size()
    for _ in range(20):
        opened("h200")
    assert pool_size() <= before + 1  # idle copies are reused, not re-executed (ctypes would keep each forever)


def test_the_bindings_are_the_installed_nvidia_ml_py_not_a_stand_in() -> None:
    fake, nvml, _ = opened("h200")
    assert nvml.__file__ == pynvml.__file__
    for name in ("nvmlInit", "nvmlDeviceGetFieldValues", "nvmlDeviceGetComputeRunningProcesses_v3"):
        assert getattr(nvml, name).__code__.co_filename == pynvml.__file__  # their code, not ours
    assert type(nvml.nvmlLib).__name__ == "SharedObject"  # what is ours: the library they loaded
