"""A host's row while one round's answers are folded into it: mutable, private to the round that builds it, and
frozen into a HostView when the round is done. The only place a host's row is ever changed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import msgspec

from hwtop.fleet.model import FindingRow, GpuRow, HostView, PortRow

# metric → GpuRow attribute, and a scale into the row's unit
GPU_FIELDS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("util", 1.0),
    "DCGM_FI_DEV_FB_USED": ("fb_used_mib", 1.0),
    "DCGM_FI_DEV_FB_FREE": ("fb_free_mib", 1.0),
    "DCGM_FI_DEV_FB_RESERVED": ("fb_reserved_mib", 1.0),
    "DCGM_FI_DEV_FB_TOTAL": ("fb_total_mib", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active", 1.0),
}
PORT_METRICS = ("hwtop_network_port_bytes_per_second", "hwtop_network_port_line_ratio")
OWNER_LABELS = ("hpc_job", "pod")  # dcgm-exporter's HPC job mapping, and its Kubernetes pod mapping


def host_of(labels: dict[str, str]) -> str | None:
    """dcgm-exporter's host label: `Hostname`, spelt `hostname` since its 2026 releases."""
    return labels.get("Hostname") or labels.get("hostname") or None


def gpu_key(labels: dict[str, str]) -> str | None:
    return labels.get("UUID") or labels.get("gpu") or None


def owner_of(labels: dict[str, str]) -> str:
    """`hpc_job` as it is; a pod as `namespace/pod` (the namespace where there is one)."""
    if job := labels.get("hpc_job"):
        return job
    pod = labels.get("pod", "")
    namespace = labels.get("namespace", "")
    return f"{namespace}/{pod}" if pod and namespace else pod


@dataclass(slots=True)
class HostBuild:
    address: str
    hostname: str | None = None
    gpus: dict[str, GpuRow] = field(default_factory=dict)
    findings: list[FindingRow] = field(default_factory=list)
    hwtop: bool = False
    cpu_busy: float | None = None
    error: str | None = None
    trend: tuple[float, ...] = ()
    notes: list[str] = field(default_factory=list)
    ports: dict[str, PortRow] = field(default_factory=dict)

    def add_gpu_sample(self, name: str, labels: dict[str, str], value: float) -> None:
        """One DCGM series into the GPU rows (keyed by UUID, so a GPU read twice is one row)."""
        spec = GPU_FIELDS.get(name)
        key = gpu_key(labels)
        if spec is None or key is None or value != value:  # NaN: no value
            return
        row = self.gpus.get(key)
        if row is None:
            row = GpuRow(labels.get("gpu", key), labels.get("modelName", ""), labels.get("UUID", ""),
                         owner=owner_of(labels))
        elif not row.model and "modelName" in labels:  # fields asked without the GPU's model came first
            row = msgspec.structs.replace(row, model=labels["modelName"], owner=owner_of(labels))
        attr, scale = spec
        self.gpus[key] = msgspec.structs.replace(row, **{attr: value * scale})

    def add_port_sample(self, name: str, labels: dict[str, str], value: float) -> None:
        """One hwtop_network_port_* series into the port rows."""
        device = labels.get("device")
        if name not in PORT_METRICS or not device or not math.isfinite(value):
            return
        port = labels.get("port", "")
        key = f"{device}/{port}"
        row = self.ports.get(key) or PortRow(device, port, labels.get("kind", ""))
        if name == "hwtop_network_port_line_ratio":
            row = msgspec.structs.replace(row, line_ratio=value)
        elif labels.get("direction") == "rx":
            row = msgspec.structs.replace(row, rx=value)
        elif labels.get("direction") == "tx":
            row = msgspec.structs.replace(row, tx=value)
        self.ports[key] = row

    def freeze(self) -> HostView:
        gpus = sorted(self.gpus.values(), key=lambda g: _index(g.index))
        return HostView(self.address, self.hostname, tuple(gpus), tuple(self.findings), self.hwtop, self.cpu_busy,
                        self.error, self.trend, tuple(self.notes), tuple(self.ports.values()))


def _index(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)
