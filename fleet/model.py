"""What the fleet view shows, whichever way it was read (exporters polled directly, or Prometheus): one
HostView per host with its GPUs and findings, its state, and the fleet's totals. Plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(slots=True)
class GpuRow:
    """One GPU as its exporter reports it, memory in MiB (dcgm-exporter's unit)."""

    index: str
    model: str = ""
    uuid: str = ""
    util: float | None = None
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    fb_reserved_mib: float | None = None
    fb_total_mib: float | None = None
    temperature: float | None = None
    power: float | None = None
    tensor_active: float | None = None  # ratio 0-1 (GPM / DCGM profiling), where the GPU has it

    @property
    def memory_total_mib(self) -> float | None:
        """FB_TOTAL where exported; else used + free + reserved (used + free alone misses the reserved part)."""
        if self.fb_total_mib is not None:
            return self.fb_total_mib
        if self.fb_used_mib is None or self.fb_free_mib is None:
            return None
        return self.fb_used_mib + self.fb_free_mib + (self.fb_reserved_mib or 0.0)


@dataclass(frozen=True, slots=True)
class FindingRow:
    severity: str
    rule: str
    scope: str = ""


@dataclass(slots=True)
class HostView:
    """`address` is where it was read (an exporter URL, or the Prometheus targets that carry it); `error` says
    why it is not answering now; `stale_s` how old the values shown are when the last read failed."""

    address: str
    hostname: str | None = None
    gpus: dict[str, GpuRow] = field(default_factory=dict)
    findings: list[FindingRow] = field(default_factory=list)
    hwtop: bool = False  # an hwtop exporter (findings known), not a bare dcgm-exporter
    cpu_busy: float | None = None
    error: str | None = None
    trend: list[float] = field(default_factory=list)  # mean GPU utilisation over the recent past, oldest first
    notes: list[str] = field(default_factory=list)  # e.g. "also scraped as ..."

    @property
    def name(self) -> str:
        """The Hostname label; before one is known, the host part of the address."""
        if self.hostname:
            return self.hostname
        first = self.address.split(",")[0].strip()
        try:
            return urlsplit(first if "://" in first else f"//{first}").hostname or self.address
        except ValueError:
            return self.address

    @property
    def up(self) -> bool:
        return self.error is None

    @property
    def util_mean(self) -> float | None:
        known = [g.util for g in self.gpus.values() if g.util is not None]
        return sum(known) / len(known) if known else None

    @property
    def memory(self) -> tuple[float, float] | None:
        """(used, total) MiB over the GPUs that report both."""
        pairs = [(g.fb_used_mib, g.memory_total_mib) for g in self.gpus.values()]
        known = [(u, t) for u, t in pairs if u is not None and t is not None]
        return (sum(u for u, _ in known), sum(t for _, t in known)) if known else None

    @property
    def gpu_models(self) -> str:
        """`8x A100-SXM4-80GB` from dcgm-exporter's modelName labels (mixed: `4x A100-SXM4-80GB, 2x L4`), most
        numerous first; the vendor's `NVIDIA ` prefix dropped, as nvidia-smi's own table does not need it."""
        counts: dict[str, int] = {}
        for gpu in self.gpus.values():
            model = gpu.model.removeprefix("NVIDIA ").strip() or "unknown model"
            counts[model] = counts.get(model, 0) + 1
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return ", ".join(f"{count}x {model}" for model, count in ordered)

    @property
    def top_finding(self) -> FindingRow | None:
        return min(self.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9)) if self.findings else None

    def badness(self) -> int:
        """Sort key, worst first: critical findings, then hosts not answering, warnings, info, healthy."""
        top = self.top_finding
        if top is not None and top.severity == "critical":
            return 0
        if not self.up:
            return 1
        if top is None:
            return 4
        return 2 if top.severity == "warning" else 3


def worst_first(hosts: list[HostView]) -> list[HostView]:
    return sorted(hosts, key=lambda h: (h.badness(), h.name, h.address))


@dataclass(frozen=True, slots=True)
class Totals:
    hosts: int
    answering: int
    gpus: int
    used_mib: float
    total_mib: float
    util_mean: float | None


def totals(hosts: list[HostView]) -> Totals:
    """Each GPU once, memory as used of total (total = FB_TOTAL or used + free + reserved)."""
    gpus = [g for h in hosts for g in h.gpus.values()]
    used = [g.fb_used_mib for g in gpus if g.fb_used_mib is not None and g.memory_total_mib is not None]
    total = [g.memory_total_mib for g in gpus if g.fb_used_mib is not None and g.memory_total_mib is not None]
    utils = [g.util for g in gpus if g.util is not None]
    return Totals(len(hosts), sum(1 for h in hosts if h.up), len(gpus), float(sum(used)),
                  float(sum(t for t in total if t is not None)), sum(utils) / len(utils) if utils else None)
