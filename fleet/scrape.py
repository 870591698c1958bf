"""One exporter's /metrics page → a HostView: its GPUs, their utilisation and memory, and its findings. Parsed
with prometheus-client's own text parser; works on dcgm-exporter pages too (no hwtop_* series: the finding column
says N/A there)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from hwtop.fleet.http import FetchError, get
from hwtop.fleet.model import FindingRow, GpuRow, HostView, PortRow

MAX_BYTES = 16 << 20  # a metrics page larger than this is not an exporter's
ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

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


def host_of(labels: dict[str, str]) -> str | None:
    """dcgm-exporter's host label: `Hostname`, spelt `hostname` since its 2026 releases."""
    return labels.get("Hostname") or labels.get("hostname") or None


def gpu_key(labels: dict[str, str]) -> str | None:
    return labels.get("UUID") or labels.get("gpu") or None


def add_gpu_sample(view: HostView, name: str, labels: dict[str, str], value: float) -> None:
    """One DCGM series into the view's GPU rows (keyed by UUID, so a GPU read twice is one row)."""
    field = GPU_FIELDS.get(name)
    key = gpu_key(labels)
    if field is None or key is None or value != value:  # NaN: no value
        return
    row = view.gpus.get(key)
    if row is None:
        row = view.gpus[key] = GpuRow(labels.get("gpu", key), labels.get("modelName", ""), labels.get("UUID", ""))
    attr, scale = field
    setattr(row, attr, value * scale)


PORT_METRICS = ("hwtop_network_port_bytes_per_second", "hwtop_network_port_line_ratio")


def add_port_sample(view: HostView, name: str, labels: dict[str, str], value: float) -> None:
    """One hwtop_network_port_* series into the view's port rows."""
    device = labels.get("device")
    if name not in PORT_METRICS or not device or value != value or value in (float("inf"), float("-inf")):
        return
    port = labels.get("port", "")
    row = view.ports.get(f"{device}/{port}")
    if row is None:
        row = view.ports[f"{device}/{port}"] = PortRow(device, port, labels.get("kind", ""))
    if name == "hwtop_network_port_line_ratio":
        row.line_ratio = value
    elif labels.get("direction") == "rx":
        row.rx = value
    elif labels.get("direction") == "tx":
        row.tx = value


def parse(address: str, text: str) -> HostView:
    view = HostView(address)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            view.hostname = view.hostname or host_of(labels)
            if family.name in GPU_FIELDS:
                add_gpu_sample(view, family.name, labels, float(sample.value))
            elif family.name == "hwtop_finding":
                if sample.value:
                    view.findings.append(FindingRow(labels.get("severity", ""), labels.get("rule", ""),
                                                    labels.get("scope", "")))
            elif family.name == "hwtop_cpu_busy_percent":
                view.cpu_busy = float(sample.value)
            elif family.name in PORT_METRICS:
                add_port_sample(view, family.name, labels, float(sample.value))
        if family.name.startswith("hwtop_"):
            view.hwtop = True
    view.gpus = dict(sorted(view.gpus.items(), key=lambda item: _index(item[1].index)))
    return view


def _index(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def fetch(url: str, timeout: float = 3.0) -> HostView:
    """One scrape of a checked exporter URL; a dead or wrong address is a HostView with `error` set."""
    try:
        body = get(url, timeout, MAX_BYTES, ACCEPT)
    except FetchError as error:
        return HostView(url, error=str(error))
    try:
        return parse(url, body.decode("utf-8", "replace"))
    except (ValueError, IndexError, TypeError, KeyError) as error:
        return HostView(url, error=f"not Prometheus text: {str(error)[:120]}")
