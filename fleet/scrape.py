"""One exporter's /metrics page → a HostView: its GPUs, their utilisation and memory, and its findings. Parsed
with prometheus-client's own text parser; works on dcgm-exporter pages too (no hwtop_* series: the finding column
says N/A there)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from hwtop.fleet.build import GPU_FIELDS, PORT_METRICS, HostBuild, host_of
from hwtop.fleet.http import FetchError, get
from hwtop.fleet.model import FindingRow, HostView

MAX_BYTES = 16 << 20  # a metrics page larger than this is not an exporter's
ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

def parse(address: str, text: str) -> HostView:
    view = HostBuild(address)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            view.hostname = view.hostname or host_of(labels)
            if family.name in GPU_FIELDS:
                view.add_gpu_sample(family.name, labels, float(sample.value))
            elif family.name == "hwtop_finding":
                if sample.value:
                    view.findings.append(FindingRow(labels.get("severity", ""), labels.get("rule", ""),
                                                    labels.get("scope", "")))
            elif family.name == "hwtop_cpu_busy_percent":
                view.cpu_busy = float(sample.value)
            elif family.name in PORT_METRICS:
                view.add_port_sample(family.name, labels, float(sample.value))
        if family.name.startswith("hwtop_"):
            view.hwtop = True
    return view.freeze()


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
