"""The guide's tiers and rules of thumb as checks: each with the measured value beside the guide's figure.
Figures from ../shared/reference/hardware-guide-facts.md; where the guide is wrong, the check says so."""

from __future__ import annotations

from dataclasses import dataclass

from hwtop.report.facts import BoxFacts

GIB = 1 << 30
GB = 1e9


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    measured: str
    guide: str
    status: str  # pass | short | info
    note: str = ""


@dataclass(frozen=True, slots=True)
class Tier:
    name: str  # none | below-entry | entry | professional | enterprise
    label: str
    typical_work: str
    why: str


TIERS = {
    "none": ("No GPU: CPU only", "small models and inference on the CPU; no GPU tier"),
    "below-entry": ("Below the guide's entry tier", "small models only: the guide's entry tier starts at 6 GB"),
    "entry": ("Entry (learning, small models)", "ResNet-18/34 classification, BERT-base fine-tuning, coursework"),
    "professional": ("Professional (production, mid-size)",
                     "YOLOv5 / Faster R-CNN detection, wav2vec 2.0 speech, CLIP"),
    "enterprise": ("Enterprise (large-scale, distributed)", "large-model training, multi-GPU and multi-node"),
}


# The guide, cited by what it says; each check below restates the figure of it that it grades against.
GUIDE = ("a PyTorch hardware guide's tiers and rules of thumb (\"the guide\" below: GPUs from 6 GB for learning, "
         "16 GB for production, A100/H100 for large-scale work; 8 cores to feed them; NVMe for live data)")
# Link rates in GB/s each way, the one direction every rate of the report is given in. PCIe per lane after
# encoding; NVLink 2, 3 and 4 all carry 25 GB/s each way per link (V100 6 links, A100 12, H100/H200 18: 300, 600
# and 900 GB/s counting both directions, as NVIDIA and the guide state them); a GeForce NVLink bridge (8.6) 14.06.
PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
NVLINK_GBS_PER_LINK = 25.0
NVLINK_GBS_PER_LINK_GEFORCE = 14.0625
GUIDE_NVLINK_GBS = 600.0  # the guide's interconnect table: both directions of an A100's 12 links
GUIDE_PCIE_SWITCH_GBS = 16.0  # the guide's interconnect table: a PCIe 3.0 x16 link, one way
GUIDE_PCIE4_X16_GBS = 64.0  # the guide's CPU section: PCIe 4.0 x16, both directions together


def gib(value: float | None) -> str:
    """Memory in the report: GiB with one decimal, the same for every figure (RAM, swap, GPU memory)."""
    return "N/A" if value is None else f"{value / GIB:.1f} GiB"


_gib = gib


def nvlink_gbs(links: int, compute_capability: tuple[int, int] | None) -> float:
    """A GPU's NVLink bandwidth, GB/s each way over all its active links."""
    per_link = NVLINK_GBS_PER_LINK_GEFORCE if compute_capability == (8, 6) else NVLINK_GBS_PER_LINK
    return links * per_link


def tier(facts: BoxFacts) -> Tier:
    """By the best GPU: the guide's cut-offs are 6 GB (entry), 16 GB (professional) and A100/H100-class cards
    with NVLink or MIG (enterprise; 40 GB and up here, so an A100 40 GB counts)."""
    sized = [g for g in facts.gpus if g.memory_bytes]
    if not sized:
        name = "none"
        why = facts.gpu_message or "no GPU found"
    else:
        best = max(sized, key=lambda g: g.memory_bytes or 0)
        memory = best.memory_bytes or 0
        datacenter = bool(best.nvlinks) or bool(best.mig_capable)
        if memory >= 40 * GIB and datacenter:
            name, why = "enterprise", f"GPU{best.index} {best.name}: {_gib(memory)}, " + \
                ("NVLink" if best.nvlinks else "") + (" and " if best.nvlinks and best.mig_capable else "") + \
                ("MIG" if best.mig_capable else "")
        elif memory >= 15.5 * GIB:  # a "16 GB" card reports a little under 16 GiB
            name, why = "professional", f"GPU{best.index} {best.name}: {_gib(memory)} (≥ 16 GB)"
        elif memory >= 5.5 * GIB:
            name, why = "entry", f"GPU{best.index} {best.name}: {_gib(memory)} (≥ 6 GB, < 16 GB)"
        else:
            name, why = "below-entry", f"GPU{best.index} {best.name}: {_gib(memory)} (< 6 GB)"
    label, work = TIERS[name]
    return Tier(name, label, work, why)


def checks(facts: BoxFacts) -> list[Check]:
    """Every check of the box, in the report's order: the GPUs' (when there are any), then the host's."""
    gpu_checks = (_gpu_memory, _tensor_cores, _tf32, _nvlink, _mig, _pcie_links) if facts.gpus else ()
    return [check for judge in (*gpu_checks, *HOST_CHECKS) for check in judge(facts)]


def _gpu_memory(facts: BoxFacts) -> list[Check]:
    gpus = facts.gpus
    smallest = min((g.memory_bytes for g in gpus if g.memory_bytes), default=None)
    return [Check("GPU memory", _gib(smallest) + (" (smallest GPU)" if len(gpus) > 1 else ""),
                  "≥ 6 GB entry, ≥ 16 GB professional, 80 GB enterprise",
                  "pass" if smallest and smallest >= 5.5 * GIB else "short")]


def _tensor_cores(facts: BoxFacts) -> list[Check]:
    tensor = [g for g in facts.gpus if g.caps and g.caps.tensor_cores]
    return [Check("Tensor Cores (AMP speed-up)", f"{len(tensor)} of {len(facts.gpus)} GPU(s)",
                  "Tensor Cores for fp16/bf16 (the guide: FP16 3-5x)", "pass" if tensor else "short",
                  "" if tensor else "fp16 autocast still halves activation memory, without the speed-up")]


def _tf32(facts: BoxFacts) -> list[Check]:
    ampere = [g for g in facts.gpus if g.caps and g.caps.tf32]
    return [Check("TF32 and bf16", f"{len(ampere)} of {len(facts.gpus)} GPU(s) (compute capability ≥ 8.0)",
                  "3rd-gen Tensor Cores (A100): TF32 for fp32 matmuls", "pass" if ampere else "info")]


def _nvlink(facts: BoxFacts) -> list[Check]:
    gpus = facts.gpus
    if len(gpus) < 2:
        return []
    linked = [g for g in gpus if g.nvlinks]
    first = linked[0] if linked else None
    each = "" if first is None else (
        f" ({first.nvlinks} links each: ≈ {nvlink_gbs(first.nvlinks or 0, first.compute_capability):.0f} GB/s "
        "each way)")
    return [Check("NVLink between GPUs", f"{len(linked)} of {len(gpus)} GPU(s) with active NVLinks" + each,
                  f"NVLink {GUIDE_NVLINK_GBS:.0f} GB/s (both directions: ≈ {GUIDE_NVLINK_GBS / 2:.0f} each "
                  f"way) against a PCIe switch's {GUIDE_PCIE_SWITCH_GBS:.0f} GB/s (a Gen3 x16 link, "
                  "each way)",
                  "pass" if len(linked) == len(gpus) else "short",
                  "" if linked else "all-reduce goes over PCIe (or across sockets): see hwtop topo")]


def _mig(facts: BoxFacts) -> list[Check]:
    mig = [g for g in facts.gpus if g.mig_capable]
    return [Check("MIG", f"{len(mig)} of {len(facts.gpus)} GPU(s) MIG-capable" +
                  (f", {sum(1 for g in mig if g.mig_enabled)} enabled" if mig else ""),
                  "enterprise: up to 7 instances per A100/H100", "pass" if mig else "info")]


def _pcie_links(facts: BoxFacts) -> list[Check]:
    """One check per kind of link (generation and width), naming the GPUs on it."""
    links: dict[tuple[int | None, int | None], list[int]] = {}
    for gpu in facts.gpus:
        links.setdefault((gpu.pcie_gen, gpu.pcie_width), []).append(gpu.index)
    out = []
    for (gen, width), members in links.items():
        ok = gen is not None and width is not None and gen >= 4 and width >= 16
        who = f"GPU{members[0]}" if len(members) == 1 else f"GPU{','.join(map(str, members))}"
        measured = "N/A" if gen is None else f"Gen{gen} x{width} (≈ {_pcie_gbs(gen, width):.0f} GB/s each way)"
        out.append(Check(f"{who} PCIe link", measured,
                         f"PCIe 4.0 x16, ≈ {_pcie_gbs(4, 16):.0f} GB/s each way (the guide's "
                         f"{GUIDE_PCIE4_X16_GBS:.0f} GB/s counts both directions)",
                         "info" if gen is None else "pass" if ok else "short"))
    return out


def _cpu(facts: BoxFacts) -> list[Check]:
    cores, threads = facts.physical_cores, facts.logical_cores
    return [Check("CPU cores / threads", f"{cores or 'N/A'} / {threads or 'N/A'}",
                  "≥ 8 cores / 16 threads for preprocessing (4 / 8 for inference)",
                  "pass" if (cores or 0) >= 8 and (threads or 0) >= 16 else "short")]


def _l3(facts: BoxFacts) -> list[Check]:
    l3 = facts.l3_cache_bytes
    return [Check("L3 cache", "N/A" if l3 is None else f"{l3 / (1 << 20):.0f} MiB", "≥ 32 MB helps small batches",
                  "info" if l3 is None else "pass" if l3 >= 30 * (1 << 20) else "short")]


def _storage(facts: BoxFacts) -> list[Check]:
    from hwtop.report.storage import CLASS_BYTES_PER_S as CLASS

    nvme = [n for n, kind in facts.disks if kind == "nvme"]
    counts: dict[str, int] = {}
    for _name, kind in facts.disks:
        counts[kind] = counts.get(kind, 0) + 1
    kinds = ", ".join(f"{n} {kind}" + (" (md arrays of the disks beside)" if kind == "raid" else "")
                      for kind, n in counts.items()) or "none found"
    guide = (f"NVMe (~{CLASS['nvme'] / 1e9:.0f} GB/s) for live data loading; SATA SSD ~{CLASS['ssd'] / 1e6:.0f} "
             f"MB/s, HDD ~{CLASS['hdd'] / 1e6:.0f} MB/s")
    return [Check("Dataset storage", kinds, guide, "pass" if nvme else "short",
                  "" if nvme else "measure it: hwtop report --storage /path/to/dataset")]


def _ram(facts: BoxFacts) -> list[Check]:
    total_gpu = sum(g.memory_bytes or 0 for g in facts.gpus)
    ram = facts.ram_bytes
    return [Check("Host RAM", _gib(ram) + (f" against {_gib(total_gpu)} of GPU memory" if total_gpu else ""),
                  "the guide's '2x the parameters, 100M need 80 GB' is wrong (100M fp32 parameters are 0.4 GB): "
                  "--params computes the real need",
                  "info" if not total_gpu or ram is None else "pass" if ram >= total_gpu else "short",
                  "hwtop's rule of thumb, not the guide's: RAM at least the GPUs' memory (checkpoint load per "
                  "rank, pinned buffers, page cache)")]


def _swap(facts: BoxFacts) -> list[Check]:
    if not facts.swap_bytes:
        return []
    return [Check("Swap", _gib(facts.swap_bytes), "swap does not add GPU memory (the guide suggests it does)", "info")]


HOST_CHECKS = (_cpu, _l3, _storage, _ram, _swap)


def _pcie_gbs(gen: int, width: int | None) -> float:
    return PCIE_GBS_PER_LANE.get(gen, 0.0) * (width or 0)


def pcie_theoretical_gbs(gen: int | None, width: int | None) -> float | None:
    return None if gen is None or width is None else _pcie_gbs(gen, width)
