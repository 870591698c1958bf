"""numa-misplaced, pcie-degraded and topology-slow-p2p: where the job runs against how the machine is wired."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import lru_cache

import msgspec

from hwtop.advice.judge import link_degraded, memory_far
from hwtop.advice.registry import rule
from hwtop.advice.text import command, cpus, job_name
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, gpu_numa_node, gpus_in_use, node_cpus
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, NumaSnapshot, Snapshot

SPAN_S = 10.0


class _Placed(msgspec.Struct, frozen=True):
    pid: int
    label: str
    gpu: int
    affinity: tuple[int, ...] | None
    numa_pages: tuple[tuple[int, int], ...] | None


def _placed(snapshot: Snapshot) -> list[_Placed]:
    """Every process computing on a GPU with what is known of its placement: the focused job's ranks first
    (their affinity and numa_maps), then the GPU processes the process list shows."""
    out: dict[tuple[int, int], _Placed] = {}
    job = snapshot.job
    for p in job.processes if job is not None else ():
        for index, _used in p.gpus:
            if p.alive:
                label = (p.role if p.rank is not None else "pid") + f" (pid {p.pid})"
                out[(p.pid, index)] = _Placed(p.pid, label, index, p.cpu_affinity, p.numa_pages)
    processes = {p.pid: p for p in snapshot.processes}
    for gpu in gpus_in_use(snapshot):
        for pid in compute_pids(gpu):
            process = processes.get(pid)
            if process is not None and (pid, gpu.index) not in out:
                out[(pid, gpu.index)] = _Placed(pid, f"pid {pid} {command(process.name, process.cmdline, 40)}",
                                                gpu.index, process.cpu_affinity, None)
    return list(out.values())


@rule("numa-misplaced", hold_s=2, clear_s=5, order=40, watches="GPU processes' CPU affinity against their GPU's node",
      reads=("numa_local_memory_share",))
def numa_misplaced(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    nodes = node_cpus(latest)
    if len(nodes) < 2:
        return
    node_of = {cpu: node for node, members in nodes.items() for cpu in members}
    numa = latest.numa or (latest.topology.numa if latest.topology else None)
    for placed in _placed(latest):
        home = gpu_numa_node(latest, placed.gpu)
        if home is None or home not in nodes:
            continue
        evidence = _far_lines(placed, home, node_of, t)
        if not evidence:
            continue
        evidence.append(f"GPU{placed.gpu} is attached to node {home} (CPUs {cpus(nodes[home])})")
        evidence += _distance_lines(numa, sorted(set(nodes) - {home}), home)
        yield numa_misplaced.finding(
            "warning", "Process on the far NUMA node from its GPU", tuple(evidence),
            (f"numactl --cpunodebind={home} --membind={home} <your command>, so its threads and host memory "
             "sit beside its GPU.",
             f"Or per rank: os.sched_setaffinity(0, <CPUs of node {home}>) before the DataLoader starts, "
             "or torchrun with a numactl wrapper per local rank.",
             "nvidia-smi topo -m lists each GPU's CPU and NUMA affinity."),
            scope=f"GPU{placed.gpu} pid {placed.pid}", gpus=(placed.gpu,), pids=(placed.pid,),
            cause=f"far from node {home}")


def _far_lines(placed: _Placed, home: int, node_of: dict[int, int], t: Thresholds) -> list[str]:
    """What places the process away from its GPU's node `home`: its CPU affinity, its resident pages (empty:
    neither does)."""
    lines = []
    allowed = {node_of[c] for c in placed.affinity or () if c in node_of}
    if allowed and home not in allowed:
        lines.append(f"{placed.label} may run only on CPUs {cpus(placed.affinity or ())} "
                     f"(node {', '.join(map(str, sorted(allowed)))})")
    share = memory_far(placed.numa_pages, home, t)  # the job panel marks the rank with the same judgement
    if share is not None and placed.numa_pages:
        far = max(placed.numa_pages, key=lambda nc: nc[1])[0]
        lines.append(f"{placed.label} keeps {100 * (1 - share):.0f}% of its resident pages off "
                     f"node {home} (mostly on node {far}, /proc/{placed.pid}/numa_maps)")
    return lines


def _distance_lines(numa: NumaSnapshot | None, others: list[int], home: int) -> list[str]:
    """numactl's distance from `home` to the first other node, beside the local one."""
    if numa is None:
        return []
    row = next((n.distances for n in numa.nodes if n.index == home), ())
    if others and len(row) > others[0]:
        return [f"numactl --hardware: distance node {home}→{others[0]} is {row[others[0]]}, local {row[home]}"]
    return []


@rule("pcie-degraded", hold_s=5, clear_s=10, order=50, watches="PCIe gen and width of busy GPUs",
      reads=("gpu_busy_util_percent",))
def pcie_degraded(window: Window, t: Thresholds) -> Iterator[Finding]:
    for gpu in window.latest.gpus:
        link = gpu.pcie
        if gpu.lost or link is None:
            continue
        util = window.gpu_mean(gpu.index, lambda g: g.util_percent, 5.0)
        if not link_degraded(link, util, t):  # the judgement the GPU panel and the topology view mark links by
            continue
        yield pcie_degraded.finding(
            "warning", f"GPU{gpu.index} PCIe link below its maximum",
            (f"GPU{gpu.index} link Gen{link.gen} x{link.width} while {util:.0f}% busy; it can train at "
             f"Gen{link.max_gen} x{link.max_width}",
             "idle GPUs lower their link speed on purpose; this one is busy"),
            ("Move the card to a CPU-attached x16 slot, or reseat it; check the riser or cable.",
             "Check the BIOS PCIe speed setting (Auto / Gen4 / Gen5) for that slot.",
             f"lspci -vv -s {_lspci_address(gpu.pci_bus_id)} | grep -E 'LnkCap|LnkSta' shows what the link "
             "trained to."),
            scope=f"GPU{gpu.index}", gpus=(gpu.index,))


def _lspci_address(bus_id: str | None) -> str:
    """NVML's 00000000:3b:00.0 as lspci writes it: 0000:3b:00.0."""
    if not bus_id:
        return "<bus id>"
    domain, _, rest = bus_id.partition(":")
    return f"{domain[-4:]}:{rest}".lower() if rest else bus_id.lower()


LINK_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")  # after NVLink, closest first (nvidia-smi topo -m legend)
SLOW = {"PHB", "NODE", "SYS"}


def link_cost(kind: str) -> int:
    """Lower is closer: NV12 < NV1 < PIX < PXB < PHB < NODE < SYS."""
    if kind.startswith("NV") and kind[2:].isdigit():
        return 100 - int(kind[2:])
    return 200 + LINK_ORDER.index(kind) if kind in LINK_ORDER else 300


@lru_cache(maxsize=64)
def best_worst_link(links: tuple[tuple[str, ...], ...], size: int) -> tuple[int, tuple[int, ...]]:
    """The set of `size` GPUs whose slowest pair is the fastest possible (exhaustive: at most C(16, 8) sets)."""
    best: tuple[int, tuple[int, ...]] = (10**6, ())
    for group in itertools.combinations(range(len(links)), size):
        worst = max((link_cost(links[a][b]) for a, b in itertools.combinations(group, 2)), default=0)
        if worst < best[0]:
            best = (worst, group)
    return best


def job_groups(snapshot: Snapshot) -> list[tuple[str, list[GpuSnapshot]]]:
    """GPUs of each multi-GPU job: the embedded workload's, else the GPU processes that share a parent
    (torchrun's agent or mp.spawn's launcher)."""
    used = gpus_in_use(snapshot)
    workload = snapshot.workload
    if workload is not None and workload.status in ("running", "stalled"):
        mine = [g for g in used if set(compute_pids(g)) & set(workload.pids)]
        if len(mine) >= 2:
            return [(job_name(snapshot), mine)]
    parent = {p.pid: p.ppid for p in snapshot.processes}
    groups: dict[int, list[GpuSnapshot]] = {}
    for gpu in used:
        for pid in compute_pids(gpu):
            ppid = parent.get(pid)
            if ppid is not None and ppid > 1 and gpu not in groups.setdefault(ppid, []):
                groups[ppid].append(gpu)
    return [(f"the job under pid {ppid}", gpus) for ppid, gpus in groups.items() if len(gpus) >= 2]


P2P_FIXES = ("NCCL_DEBUG=INFO prints the transport NCCL chose for each pair (P2P/NVL, P2P/PCI, SHM, NET).",
             "nvidia-smi topo -m shows how every pair is connected.")


@rule("topology-slow-p2p", hold_s=5, clear_s=10, order=60, watches="links, models and balance of multi-GPU jobs",
      reads=("gpu_waiting_util_percent", "straggler_ratio"))
def topology_slow_p2p(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    links = latest.topology.gpu_links if latest.topology else ()
    for label, gpus in job_groups(latest):
        indices = sorted(g.index for g in gpus)
        scope = "GPUs " + ",".join(map(str, indices))
        found = (_slow_path(links, label, indices, scope), _mixed_models(label, gpus, indices, scope),
                 _lagging_rank(window, t, gpus, scope))
        yield from (finding for finding in found if finding is not None)


def _slow_path(links: tuple[tuple[str, ...], ...], label: str, indices: list[int], scope: str) -> Finding | None:
    """The job's slowest pair of GPUs talks over the host while a set as large is connected better."""
    if not links or not all(i < len(links) for i in indices):
        return None
    pairs = [(links[a][b], a, b) for a, b in itertools.combinations(indices, 2)]
    kind, a, b = max(pairs, key=lambda p: link_cost(p[0]))
    best, better = best_worst_link(tuple(tuple(row) for row in links), len(indices))
    if kind not in SLOW or best >= link_cost(kind):
        return None
    return topology_slow_p2p.finding(
        "warning", "Ranks talk over a slow path",
        (f"{label} uses GPUs {','.join(map(str, indices))}; GPU{a}↔GPU{b} connect through {kind}",
         f"GPUs {','.join(map(str, better))} are connected no worse than {_kind_name(links, better)}"),
        (f"Run on the connected set: CUDA_VISIBLE_DEVICES={','.join(map(str, better))}.",) + P2P_FIXES,
        scope=f"{scope} links", gpus=tuple(indices))


def _mixed_models(label: str, gpus: list[GpuSnapshot], indices: list[int], scope: str) -> Finding | None:
    if len({g.name or "?" for g in gpus}) <= 1:
        return None
    return topology_slow_p2p.finding(
        "warning", "Mixed GPU models in one job",
        (f"{label} runs on " + "; ".join(f"GPU{g.index} {g.name}" for g in gpus),
         "DDP steps at the pace of the slowest rank"),
        ("Use the same GPU model on every rank (CUDA_VISIBLE_DEVICES to pick them).",) + P2P_FIXES,
        scope=f"{scope} models", gpus=tuple(indices))


def _lagging_rank(window: Window, t: Thresholds, gpus: list[GpuSnapshot], scope: str) -> Finding | None:
    """A GPU of the job much less busy than its busiest one, which is busy: its rank lags."""
    utils = {g.index: window.gpu_mean(g.index, lambda x: x.util_percent, SPAN_S) for g in gpus}
    known = {i: u for i, u in utils.items() if u is not None}
    if len(known) < 2:
        return None
    top = max(known.values())
    laggards = [i for i, u in known.items() if u < t["straggler_ratio"] * top]
    if top < t["gpu_waiting_util_percent"] or not laggards:
        return None
    return topology_slow_p2p.finding(
        "warning", "A rank lags the others",
        tuple(f"GPU{i} busy {known[i]:.0f}% against {top:.0f}% on the busiest rank's GPU "
              f"(limit {100 * t['straggler_ratio']:.0f}% of it)" for i in laggards),
        ("That rank is waiting: compare its input pipeline, CPU/NUMA placement, clocks and link with "
         "the others (a throttled or differently placed GPU shows here).",) + P2P_FIXES,
        scope=f"{scope} straggler", gpus=tuple(laggards))


def _kind_name(links: tuple[tuple[str, ...], ...], group: tuple[int, ...]) -> str:
    return max((links[a][b] for a, b in itertools.combinations(group, 2)), key=link_cost, default="X")
