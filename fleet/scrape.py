"""Reads one exporter's /metrics and condenses it to a host row: its GPUs, their utilisation and memory, and its
most severe advice finding. Parsed with prometheus-client's own text parser; works on dcgm-exporter output too
(no hwtop_* series: the finding column is N/A there)."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlparse

from prometheus_client.parser import text_string_to_metric_families

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
MAX_BYTES = 8 << 20  # a metrics page larger than this is not an exporter's


@dataclass(slots=True)
class GpuRow:
    index: str
    model: str = ""
    util: float | None = None
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    temperature: float | None = None
    power: float | None = None


@dataclass(slots=True)
class HostView:
    url: str
    hostname: str | None = None
    gpus: dict[str, GpuRow] = field(default_factory=dict)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (severity, id, scope)
    hwtop: bool = False  # the target is an hwtop exporter (not a bare dcgm-exporter)
    cpu_busy: float | None = None
    error: str | None = None

    @property
    def util_mean(self) -> float | None:
        known = [g.util for g in self.gpus.values() if g.util is not None]
        return sum(known) / len(known) if known else None

    @property
    def memory(self) -> tuple[float, float] | None:
        used = [g.fb_used_mib for g in self.gpus.values() if g.fb_used_mib is not None]
        free = [g.fb_free_mib for g in self.gpus.values() if g.fb_free_mib is not None]
        return (sum(used), sum(used) + sum(free)) if used and free else None

    @property
    def top_finding(self) -> tuple[str, str, str] | None:
        return min(self.findings, key=lambda f: SEVERITY_ORDER.get(f[0], 9)) if self.findings else None


def metrics_url(target: str) -> str:
    """host:9400 → http://host:9400/metrics; a URL without a path gets /metrics."""
    url = target if "://" in target else f"http://{target}"
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"not an exporter address: {target!r}")
    return url if parsed.path not in ("", "/") else url.rstrip("/") + "/metrics"


GPU_FIELDS = {"DCGM_FI_DEV_GPU_UTIL": "util", "DCGM_FI_DEV_FB_USED": "fb_used_mib",
              "DCGM_FI_DEV_FB_FREE": "fb_free_mib", "DCGM_FI_DEV_GPU_TEMP": "temperature",
              "DCGM_FI_DEV_POWER_USAGE": "power"}


def parse(url: str, text: str) -> HostView:
    view = HostView(url)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("Hostname"):
                view.hostname = view.hostname or labels["Hostname"]
            attr = GPU_FIELDS.get(sample.name)
            if attr is not None:
                key = labels.get("gpu") or labels.get("UUID") or str(len(view.gpus))
                row = view.gpus.setdefault(key, GpuRow(key))
                row.model = labels.get("modelName", row.model)
                setattr(row, attr, sample.value)
            elif sample.name == "hwtop_advice_finding" and sample.value:
                view.findings.append((labels.get("severity", ""), labels.get("id", ""), labels.get("scope", "")))
            elif sample.name == "hwtop_cpu_busy_percent":
                view.cpu_busy = sample.value
            elif sample.name.startswith("hwtop_"):
                view.hwtop = True
    view.hwtop = view.hwtop or bool(view.findings) or view.cpu_busy is not None
    return view


def fetch(target: str, timeout: float = 3.0) -> HostView:
    """One scrape; a dead or wrong address is a HostView with `error` set, never an exception."""
    try:
        url = metrics_url(target)
    except ValueError as error:
        return HostView(target, error=str(error))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http(s) checked above
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as error:
        return HostView(url, error=f"HTTP {error.code}")
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return HostView(url, error=f"unreachable: {getattr(reason, 'strerror', None) or reason}")
    if len(body) > MAX_BYTES:
        return HostView(url, error="not an exporter: the page is larger than 8 MiB")
    try:
        return parse(url, body.decode("utf-8", "replace"))
    except (ValueError, IndexError, TypeError) as error:
        return HostView(url, error=f"not Prometheus text: {error}")
