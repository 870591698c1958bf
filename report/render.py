"""The report as text (for the terminal and the TUI screen) and as JSON (`hwtop.report/1`). The text is built
line by line and each line made printable: a GPU name, disk or path cannot send a control sequence or start a
line of its own; the TUI shows it as data, so its own `[SHORT]` and `[ok]` marks stay on the screen."""

from __future__ import annotations

from typing import Any

import msgspec

from hwtop.model.safe_text import printable_lines
from hwtop.report.checks import GUIDE, Check, Tier, gib, pcie_theoretical_gbs
from hwtop.report.facts import BoxFacts
from hwtop.report.fit import FitEstimate
from hwtop.report.storage import StorageResult

SCHEMA = "hwtop.report/1"
MARK = {"pass": "ok   ", "short": "SHORT", "info": "info "}
GIB = 1 << 30


def count(params: float) -> str:
    """1.2e8 → "120M", 7e9 → "7.0B"."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if params >= scale:
            return f"{params / scale:.3g}{unit}"
    return f"{params:.0f}"


def _gpu_lines(gpus: tuple[Any, ...]) -> list[str]:
    """Identical GPUs on one line: "GPU0-7 (8x) NVIDIA A100-SXM4-80GB · ..."."""
    groups: dict[str, list[int]] = {}
    for g in gpus:
        groups.setdefault(_gpu_line(g), []).append(g.index)
    out = []
    for line, members in groups.items():
        if len(members) == 1:
            out.append(f"GPU{members[0]} {line}")
        else:
            span = f"{members[0]}-{members[-1]}" if members == list(range(members[0], members[-1] + 1)) \
                else ",".join(map(str, members))
            out.append(f"GPU{span} ({len(members)}x) {line}")
    return out


def _gpu_line(g: Any) -> str:
    caps = g.caps
    parts = [g.name or "N/A", gib(g.memory_bytes)]
    if g.compute_capability:
        parts.append(f"compute {g.compute_capability[0]}.{g.compute_capability[1]}"
                     + (f" ({caps.generation})" if caps else ""))
    if caps:
        features = [name for name, ok in (("Tensor Cores", caps.tensor_cores), ("TF32", caps.tf32),
                                          ("bf16", caps.bf16), ("FP8", caps.fp8)) if ok]
        parts.append(", ".join(features) or "no Tensor Cores")
    parts.append(f"NVLink x{g.nvlinks}" if g.nvlinks else "no NVLink")
    if g.mig_capable:
        parts.append("MIG " + ("on" if g.mig_enabled else "capable"))
    if g.pcie_gen:
        parts.append(f"PCIe Gen{g.pcie_gen} x{g.pcie_width}")
    return " · ".join(parts)


def text(facts: BoxFacts, tier: Tier, checks: list[Check], fit: FitEstimate | None = None,
         storage: StorageResult | None = None, bench: dict[str, Any] | None = None,
         storage_error: str | None = None) -> str:
    out = [f"hwtop report · {facts.source}", f"Graded against {GUIDE}. Rates are GB/s each way; where the guide "
           "is wrong, the check says so.", ""]
    out.append(f"Tier: {tier.label}  ({tier.why})")
    out.append(f"  typical work: {tier.typical_work}")
    out.append("")
    out += _box_lines(facts)
    out.append("")
    out.append("Checks (measured · the guide's figure):")
    for check in checks:
        out.append(f"  [{MARK[check.status]}] {check.name}: {check.measured} · {check.guide}")
        if check.note:
            out.append(f"           {check.note}")
    if storage is not None or storage_error:
        out += ["", "Storage read (page cache bypassed):", *_storage_lines(storage, storage_error)]
    if bench is not None:
        out += _bench_lines(bench, facts)
    if fit is not None:
        out += _fit_lines(fit)
    return printable_lines(out)


def _box_lines(facts: BoxFacts) -> list[str]:
    """The GPUs, CPU, memory and storage the checks below grade."""
    out = ["GPUs:"] if facts.gpus else []  # else the tier's line has said there is none, and why
    out += [f"  {line}" for line in _gpu_lines(facts.gpus)]
    ram, swap = gib(facts.ram_bytes), gib(facts.swap_bytes)
    out.append(f"CPU: {facts.cpu_model or 'N/A'} · {facts.physical_cores or 'N/A'} cores / "
               f"{facts.logical_cores or 'N/A'} threads · L3 "
               + ("N/A" if facts.l3_cache_bytes is None else f"{facts.l3_cache_bytes / (1 << 20):.0f} MiB"))
    out.append(f"Memory: RAM {ram} · swap {swap}")
    disks = facts.disks if len(facts.disks) <= 4 else facts.disks[:3]
    more = f", … {len(facts.disks) - 3} more" if len(facts.disks) > 4 else ""
    out.append("Storage: " + (", ".join(f"{n} ({k})" for n, k in disks) + more or "none found"))
    return out


def _storage_lines(storage: StorageResult | None, storage_error: str | None) -> list[str]:
    """What --storage measured, against its device's class."""
    if storage_error or storage is None:
        return [f"  {storage_error}"]
    out = [f"  {storage.path}: {storage.bytes_read / 1e6:.0f} MB from {storage.files} file(s) in "
           f"{storage.seconds:.2f} s = {storage.bytes_per_s / 1e6:.0f} MB/s"]
    if storage.class_bytes_per_s:
        share = storage.bytes_per_s / storage.class_bytes_per_s
        out.append(f"  device {storage.device} ({storage.kind}): {100 * share:.0f}% of its class's "
                   f"~{storage.class_bytes_per_s / 1e6:.0f} MB/s")
    else:
        out.append(f"  device {storage.device or 'unknown'} ({storage.kind or 'kind unknown'}): no class "
                   "figure to compare with")
    return out


def _bench_lines(bench: dict[str, Any], facts: BoxFacts) -> list[str]:
    out = [""]
    if "error" in bench:
        return out + [f"Measurements: {bench['error']}"]
    if "compute" in bench:
        out.append("Matmul throughput" + (f" ({bench['compute_note']})" if bench.get("compute_note") else "") + ":")
        out += [f"  {row['device']} {row['dtype']:<5} {row['tflops']:.2f} TFLOP/s (n={row['n']})"
                for row in bench["compute"]]
    if "pcie_error" in bench:
        out.append(f"PCIe: {bench['pcie_error']}")
    if "pcie" in bench:
        out.append("Host↔device copies:")
        links = {g.index: pcie_theoretical_gbs(g.pcie_gen, g.pcie_width) for g in facts.gpus}
        for row in bench["pcie"]:
            ceiling = links.get(row["gpu"])
            share = f" ({100 * row['gb_per_s'] / ceiling:.0f}% of the link's {ceiling:.0f} GB/s)" if ceiling else ""
            out.append(f"  GPU{row['gpu']} {row['direction']:<15} {row['memory']:<8} {row['gb_per_s']:6.1f} GB/s"
                       + share)
    return out


def _fit_lines(fit: FitEstimate) -> list[str]:
    out = ["", f"Fit: {count(fit.params)} parameters, {fit.optimizer}" + (", AMP" if fit.amp else ", fp32")
           + f", plain DDP: every GPU holds a full replica ({fit.bytes_per_param} B/parameter of state)"]
    out += [f"  {line.label:<40} {line.bytes / GIB:9.2f} GiB   {line.arithmetic}" for line in fit.lines]
    out.append(f"  {'per GPU':<40} {fit.total_bytes / GIB:9.2f} GiB")
    if fit.activation_gb is None:
        out.append("  activations: not estimated (give --activation-gb measured at --batch B)")
    if fit.gpu_memory_bytes:
        verdict = "fits" if fit.fits else "does NOT fit"
        out.append(f"  → {verdict} in the smallest GPU's {fit.gpu_memory_bytes / GIB:.1f} GiB")
    else:
        out.append("  → no GPU to compare with")
    for change in fit.changes:
        out.append(f"    - {change}")
    if fit.ram_bytes:
        out.append(f"  host RAM: {fit.gpu_count} rank(s) x {count(fit.params)} x 4 B (fp32 checkpoint load) = "
                   f"{fit.ram_need_bytes / GIB:.1f} GiB of {fit.ram_bytes / GIB:.0f} GiB")
    guide = fit.params / 1e8 * 80
    out.append(f"  (the guide's rule would ask {guide:.0f} GB of RAM for this model; its weights are "
               f"{fit.params * 4 / GIB:.2f} GiB in fp32)")
    return out


def as_json(facts: BoxFacts, tier: Tier, checks: list[Check], fit: FitEstimate | None = None,
            storage: StorageResult | None = None, bench: dict[str, Any] | None = None,
            storage_error: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"schema": SCHEMA, "facts": msgspec.to_builtins(facts), "tier": msgspec.to_builtins(tier),
                              "checks": [msgspec.to_builtins(c) for c in checks]}
    if fit is not None:
        result["fit"] = {**{k: getattr(fit, k) for k in ("params", "optimizer", "amp", "batch", "activation_gb",
                                                          "gpu_count", "gpu_memory_bytes", "ram_bytes", "total_bytes",
                                                          "fits", "ram_need_bytes", "changes")},
                         "bytes_per_param": fit.bytes_per_param,
                         "lines": [msgspec.to_builtins(line) for line in fit.lines]}
    if storage is not None:
        result["storage"] = {**msgspec.to_builtins(storage), "bytes_per_s": storage.bytes_per_s}
    if storage_error:
        result["storage"] = {"error": storage_error}
    if bench is not None:
        result["measurements"] = bench
    return result
