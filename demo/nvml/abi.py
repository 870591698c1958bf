"""The C side of NVML as nvml.h declares it: return codes, struct layouts and each symbol's signature.

Written from the header's declarations, apart from nvidia-ml-py's own ctypes classes: the fake library fills
these structs at the addresses nvidia-ml-py passes in, so a layout the bindings got wrong shows up as a wrong
reading in the tests instead of being agreed away.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    Structure,
    Union,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_uint,
    c_uint32,
    c_ulonglong,
    c_void_p,
)

# nvmlReturn_t
SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
DRIVER_NOT_LOADED = 9
TIMEOUT = 10
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
RESET_REQUIRED = 16
LIB_RM_VERSION_MISMATCH = 18
MEMORY = 20
ARGUMENT_VERSION_MISMATCH = 25
UNKNOWN = 999

ERROR_TEXT = {
    SUCCESS: "Success", UNINITIALIZED: "Uninitialized", INVALID_ARGUMENT: "Invalid Argument",
    NOT_SUPPORTED: "Not Supported", NO_PERMISSION: "Insufficient Permissions", NOT_FOUND: "Not Found",
    INSUFFICIENT_SIZE: "Insufficient Size", DRIVER_NOT_LOADED: "Driver Not Loaded", TIMEOUT: "Timeout",
    FUNCTION_NOT_FOUND: "Function Not Found", GPU_IS_LOST: "GPU is lost", RESET_REQUIRED: "GPU requires restart",
    LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.", MEMORY: "Insufficient Memory",
    ARGUMENT_VERSION_MISMATCH: "Argument version mismatch", UNKNOWN: "Unknown Error",
}

# nvmlValueType_t
VALUE_DOUBLE = 0
VALUE_UINT = 1
VALUE_ULONG = 2
VALUE_ULONGLONG = 3
VALUE_SLONGLONG = 4
VALUE_SINT = 5
VALUE_USHORT = 6

NOT_AVAILABLE_ULL = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as unsigned long long
NVLINK_MAX_LINKS = 18


class PciInfo(Structure):
    """nvmlPciInfo_t (the v3 layout nvmlDeviceGetPciInfo_v3 fills)."""

    _fields_ = [("busIdLegacy", c_char * 16), ("domain", c_uint), ("bus", c_uint), ("device", c_uint),
                ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint), ("busId", c_char * 32)]


class Memory(Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class MemoryV2(Structure):
    _fields_ = [("version", c_uint), ("total", c_ulonglong), ("reserved", c_ulonglong), ("free", c_ulonglong),
                ("used", c_ulonglong)]


MEMORY_V2_VERSION = ctypes.sizeof(MemoryV2) | (2 << 24)  # NVML_STRUCT_VERSION(Memory, 2)


class Utilization(Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class ProcessInfoV1(Structure):
    """What the unversioned nvmlDeviceGet*RunningProcesses fill: the only layout R450-era drivers know."""

    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong)]


class ProcessInfoV2(Structure):
    """What the _v2 and _v3 process functions fill (nvml.h: nvmlProcessInfo_v2_t, also named nvmlProcessInfo_t)."""

    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong), ("gpuInstanceId", c_uint),
                ("computeInstanceId", c_uint)]


class Value(Union):
    _fields_ = [("dVal", c_double), ("uiVal", c_uint), ("ulVal", ctypes.c_ulong), ("ullVal", c_ulonglong),
                ("sllVal", ctypes.c_longlong), ("siVal", c_int), ("usVal", ctypes.c_ushort)]


class FieldValue(Structure):
    _fields_ = [("fieldId", c_uint32), ("scopeId", c_uint32), ("timestamp", c_int64), ("latencyUsec", c_int64),
                ("valueType", c_uint), ("nvmlReturn", c_uint), ("value", Value)]


class ProcessUtilizationSample(Structure):
    _fields_ = [("pid", c_uint), ("timeStamp", c_ulonglong), ("smUtil", c_uint), ("memUtil", c_uint),
                ("encUtil", c_uint), ("decUtil", c_uint)]


class EventData(Structure):  # nvmlEventData_t
    _fields_ = [("device", c_void_p), ("eventType", c_ulonglong), ("eventData", c_ulonglong),
                ("gpuInstanceId", c_uint), ("computeInstanceId", c_uint)]


EVENT_XID_CRITICAL = 8  # nvmlEventTypeXidCriticalError
NO_INSTANCE = 0xFFFFFFFF  # an event of the whole GPU, not of one MIG instance


class ViolationTime(Structure):
    """nvmlViolationTime_t: referenceTime is the host's clock in µs, violationTime the time in the policy in ns."""

    _fields_ = [("referenceTime", c_ulonglong), ("violationTime", c_ulonglong)]


# nvmlPerfPolicyType_t: the policies nvmlDeviceGetViolationStatus answers for (6-9 are not defined)
PERF_POLICY_POWER = 0
PERF_POLICY_THERMAL = 1
PERF_POLICIES = frozenset({0, 1, 2, 3, 4, 5, 10, 11})
# nvmlNvLinkErrorCounter_t
NVLINK_ERROR_DL_REPLAY = 0
NVLINK_ERROR_DL_RECOVERY = 1
NVLINK_ERROR_DL_CRC_FLIT = 2
NVLINK_ERROR_DL_CRC_DATA = 3
NVLINK_ERROR_DL_ECC_DATA = 4
NVLINK_ERROR_COUNT = 5


class GpmSupport(Structure):
    _fields_ = [("version", c_uint), ("isSupportedDevice", c_uint)]


GPM_SUPPORT_VERSION = 1
GPM_METRICS_GET_VERSION = 1


class GpmMetricInfo(Structure):
    _fields_ = [("shortName", c_char_p), ("longName", c_char_p), ("unit", c_char_p)]


class GpmMetric(Structure):
    _fields_ = [("metricId", c_uint), ("nvmlReturn", c_uint), ("value", c_double), ("metricInfo", GpmMetricInfo)]


class GpmMetricsGetHead(Structure):
    """nvmlGpmMetricsGet_t up to its metrics array, which follows at `metrics_offset()`."""

    _fields_ = [("version", c_uint), ("numMetrics", c_uint), ("sample1", c_void_p), ("sample2", c_void_p)]


def metrics_offset() -> int:
    """Where nvmlGpmMetricsGet_t.metrics starts: after the head, aligned for a GpmMetric."""
    align = ctypes.alignment(GpmMetric)
    size = ctypes.sizeof(GpmMetricsGetHead)
    return (size + align - 1) // align * align


# GPM metric ids (nvmlGpmMetricId_t)
GPM_SM_UTIL = 2
GPM_SM_OCCUPANCY = 3
GPM_ANY_TENSOR_UTIL = 5
GPM_DRAM_BW_UTIL = 10

# Field ids (nvml.h NVML_FI_DEV_*)
FI_NVLINK_LINK_COUNT = 91
FI_NVLINK_THROUGHPUT_DATA_TX = 138
FI_NVLINK_THROUGHPUT_DATA_RX = 139
FI_PCIE_COUNT_TX_BYTES = 197
FI_PCIE_COUNT_RX_BYTES = 198
# NVML_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL: the counter summed over every link,
# by its nvmlNvLinkErrorCounter_t
FI_NVLINK_ERROR_TOTALS = {38: 2, 45: 3, 52: 0, 59: 1}

U = c_uint
P = c_void_p  # every pointer travels as an address; the fake casts it to the type nvml.h declares

# Each exported symbol: its argument types (the return type is always nvmlReturn_t, an int, except where noted).
SIGNATURES: dict[str, tuple[type, ...]] = {
    "nvmlInitWithFlags": (U,),
    "nvmlInit_v2": (),
    "nvmlShutdown": (),
    "nvmlSystemGetDriverVersion": (P, U),
    "nvmlSystemGetCudaDriverVersion": (P,),
    "nvmlDeviceGetCount_v2": (P,),
    "nvmlDeviceGetHandleByIndex_v2": (U, P),
    "nvmlDeviceGetName": (P, P, U),
    "nvmlDeviceGetUUID": (P, P, U),
    "nvmlDeviceGetPciInfo_v3": (P, P),
    "nvmlDeviceGetMinorNumber": (P, P),
    "nvmlDeviceGetCudaComputeCapability": (P, P, P),
    "nvmlDeviceGetMaxClockInfo": (P, U, P),
    "nvmlDeviceGetClockInfo": (P, U, P),
    "nvmlDeviceGetMaxPcieLinkGeneration": (P, P),
    "nvmlDeviceGetMaxPcieLinkWidth": (P, P),
    "nvmlDeviceGetCurrPcieLinkGeneration": (P, P),
    "nvmlDeviceGetCurrPcieLinkWidth": (P, P),
    "nvmlDeviceGetEnforcedPowerLimit": (P, P),
    "nvmlDeviceGetPowerUsage": (P, P),
    "nvmlDeviceGetTemperature": (P, U, P),
    "nvmlDeviceGetFanSpeed": (P, P),
    "nvmlDeviceGetPerformanceState": (P, P),
    "nvmlDeviceGetCurrentClocksEventReasons": (P, P),
    "nvmlDeviceGetCurrentClocksThrottleReasons": (P, P),
    "nvmlDeviceGetMemoryInfo": (P, P),
    "nvmlDeviceGetMemoryInfo_v2": (P, P),
    "nvmlDeviceGetUtilizationRates": (P, P),
    "nvmlDeviceGetPcieThroughput": (P, U, P),
    "nvmlDeviceGetFieldValues": (P, c_int, P),
    "nvmlDeviceGetEccMode": (P, P, P),
    "nvmlDeviceGetTotalEccErrors": (P, U, U, P),
    "nvmlDeviceGetTotalEnergyConsumption": (P, P),
    "nvmlDeviceGetPcieReplayCounter": (P, P),
    "nvmlDeviceGetRemappedRows": (P, P, P, P, P),
    "nvmlDeviceGetViolationStatus": (P, U, P),
    "nvmlEventSetCreate": (P,),
    "nvmlDeviceRegisterEvents": (P, c_ulonglong, P),
    "nvmlEventSetWait_v2": (P, P, U),
    "nvmlEventSetFree": (P,),
    "nvmlDeviceGetMigMode": (P, P, P),
    "nvmlDeviceGetMaxMigDeviceCount": (P, P),
    "nvmlDeviceGetMigDeviceHandleByIndex": (P, U, P),
    "nvmlDeviceGetComputeRunningProcesses": (P, P, P),
    "nvmlDeviceGetComputeRunningProcesses_v2": (P, P, P),
    "nvmlDeviceGetComputeRunningProcesses_v3": (P, P, P),
    "nvmlDeviceGetGraphicsRunningProcesses": (P, P, P),
    "nvmlDeviceGetGraphicsRunningProcesses_v2": (P, P, P),
    "nvmlDeviceGetGraphicsRunningProcesses_v3": (P, P, P),
    "nvmlDeviceGetProcessUtilization": (P, P, P, c_ulonglong),
    "nvmlGpmQueryDeviceSupport": (P, P),
    "nvmlGpmSampleAlloc": (P,),
    "nvmlGpmSampleFree": (P,),
    "nvmlGpmSampleGet": (P, P),
    "nvmlGpmMetricsGet": (P,),
    "nvmlDeviceGetNvLinkState": (P, U, P),
    "nvmlDeviceGetNvLinkRemotePciInfo_v2": (P, U, P),
    "nvmlDeviceGetNvLinkErrorCounter": (P, U, U, P),
    "nvmlDeviceGetTopologyCommonAncestor": (P, P, P),
}

# const char *nvmlErrorString(nvmlReturn_t): the one symbol that returns a pointer.
ERROR_STRING = "nvmlErrorString"


def prototype(symbol: str) -> type:
    """The C function type of `symbol`, for wrapping a Python implementation as a callable function pointer."""
    if symbol == ERROR_STRING:
        return ctypes.CFUNCTYPE(c_void_p, c_int)
    return ctypes.CFUNCTYPE(c_int, *SIGNATURES[symbol])


def write(address: int | None, ctype: type, value: object) -> None:
    """*(ctype *)address = value, as the C library writes an out-parameter."""
    if not address:
        raise ValueError("NULL out-parameter")
    ctype.from_address(address).value = value  # type: ignore[attr-defined] - a ctypes simple type


def struct_at(address: int | None, ctype: type[Structure]) -> Structure:
    if not address:
        raise ValueError("NULL struct pointer")
    return ctype.from_address(address)


def write_string(address: int | None, length: int, text: str) -> int:
    """Copy `text` with its NUL into a caller's char buffer of `length`; INSUFFICIENT_SIZE if it does not fit."""
    data = text.encode()
    if len(data) + 1 > length:
        return INSUFFICIENT_SIZE
    if not address:
        return INVALID_ARGUMENT
    ctypes.memmove(address, data + b"\0", len(data) + 1)
    return SUCCESS
