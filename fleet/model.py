"""What the fleet view shows, whichever way it was read (exporters polled directly, or Prometheus): one
HostView per host with its GPUs and findings, its state, and the fleet's totals. Frozen values, no I/O: they are
built on the fleet session's worker (fleet/build.py) and handed to the UI whole."""

from __future__ import annotations

from urllib.parse import urlsplit

from hwtop.model.record import Record

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


class GpuRow(Record, frozen=True):
    """One GPU as its exporter reports it, memory in MiB (dcgm-exporter's unit). `owner` is who runs on it where
    the exporter says (a `hpc_job`, or a `namespace/pod` label), else empty."""

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
    owner: str = ""

    @property
    def memory_total_mib(self) -> float | None:
        """FB_TOTAL where exported; else used + free + reserved (used + free alone misses the reserved part)."""
        if self.fb_total_mib is not None:
            return self.fb_total_mib
        if self.fb_used_mib is None or self.fb_free_mib is None:
            return None
        return self.fb_used_mib + self.fb_free_mib + (self.fb_reserved_mib or 0.0)


class PortRow(Record, frozen=True):
    """One physical network port as the exporter reports it (hwtop_network_port_*)."""

    device: str
    port: str = ""
    kind: str = ""
    rx: float | None = None  # bytes/s
    tx: float | None = None
    line_ratio: float | None = None  # the busier direction over the line rate, 0-1

    @property
    def busiest(self) -> float:
        return max(self.rx or 0.0, self.tx or 0.0)

    @property
    def label(self) -> str:
        return self.device if self.port in ("", "1") else f"{self.device}/{self.port}"


class FindingRow(Record, frozen=True):
    severity: str
    rule: str
    scope: str = ""


class HostView(Record, frozen=True):
    """One host's row: a value, made once a round and never changed (a merge or a note makes a new one).
    `address` is where it was read (an exporter URL, or the Prometheus targets that carry it); `error` says
    why it is not answering now."""

    address: str
    hostname: str | None = None
    gpus: tuple[GpuRow, ...] = ()
    findings: tuple[FindingRow, ...] = ()
    hwtop: bool = False  # an hwtop exporter (findings known), not a bare dcgm-exporter
    cpu_busy: float | None = None
    error: str | None = None
    trend: tuple[float, ...] = ()  # mean GPU utilisation over the recent past, oldest first
    notes: tuple[str, ...] = ()  # e.g. "also read from ..."
    ports: tuple[PortRow, ...] = ()  # physical network ports

    def gpu(self, uuid: str) -> GpuRow | None:
        return next((g for g in self.gpus if g.uuid == uuid), None)

    @property
    def owners(self) -> tuple[str, ...]:
        """Who runs on its GPUs, where the exporter labels them (hpc_job, namespace/pod), each once."""
        return tuple(dict.fromkeys(g.owner for g in self.gpus if g.owner))

    @property
    def busiest_port(self) -> PortRow | None:
        """The port moving the most bytes either way, where any port reports a rate."""
        known = [p for p in self.ports if p.rx is not None or p.tx is not None]
        return max(known, key=lambda p: p.busiest) if known else None

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
        known = [g.util for g in self.gpus if g.util is not None]
        return sum(known) / len(known) if known else None

    @property
    def memory(self) -> tuple[float, float] | None:
        """(used, total) MiB over the GPUs that report both."""
        pairs = [(g.fb_used_mib, g.memory_total_mib) for g in self.gpus]
        known = [(u, t) for u, t in pairs if u is not None and t is not None]
        return (sum(u for u, _ in known), sum(t for _, t in known)) if known else None

    @property
    def gpu_models(self) -> str:
        """`8x A100-SXM4-80GB` from dcgm-exporter's modelName labels (mixed: `4x A100-SXM4-80GB, 2x L4`), most
        numerous first; the vendor's `NVIDIA ` prefix dropped, as nvidia-smi's own table does not need it."""
        counts: dict[str, int] = {}
        for gpu in self.gpus:
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
