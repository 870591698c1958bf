"""network-saturated, nccl-wrong-transport, nic-far-from-gpu and data-from-network: what the network ports say about
a multi-node job. A job's facts come from the job model (its ranks' figures, stack samples and environment, as the
job probe reads them from /proc and py-spy, for an attached job and the embedded one alike); a rule that lacks what
it needs (no port with a known line rate, no collective figures, no topology) stays silent rather than guess."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from hwtop.advice.job_facts import SPAN_S, running_job, sampled
from hwtop.advice.last_answer import LastAnswer
from hwtop.advice.registry import rule
from hwtop.advice.text import rate
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, gpu_numa_nodes, mean
from hwtop.model.finding import Finding
from hwtop.model.snapshot import NicSnapshot, Snapshot
from hwtop.probes.procfiles import network_filesystem

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot, RankStacks

FABRIC = ("infiniband", "roce")
UP_STATES = ("up", "active", "unknown")  # unknown: loopback-like drivers that do not report; never a fabric port


class JobNetwork(msgspec.Struct, frozen=True):
    """The facts of the job the network rules need, from wherever they can be seen (see the module docstring)."""

    source: str  # where they come from, for the evidence: "/proc/PID/environ of its ranks"
    nccl_env: dict[str, str]
    spans_hosts: bool | None  # None: cannot be told
    collective_share: float | None
    collective_source: str
    gpus: tuple[int, ...]
    pids: tuple[int, ...]
    data_wait: float | None


def port_name(nic: NicSnapshot) -> str:
    return nic.name if nic.port in (None, 1) else f"{nic.name}/{nic.port}"


def kind_name(nic: NicSnapshot) -> str:
    return {"infiniband": "InfiniBand", "roce": "RoCE", "ethernet": "Ethernet"}.get(nic.kind, nic.kind)


PortMeans = dict[tuple[str, int | None], tuple[float, float]]
_MEANS: LastAnswer[PortMeans] = LastAnswer()


def port_means(window: Window, seconds: float = SPAN_S) -> PortMeans:
    """(rx, tx) bytes/s of each physical port averaged over the recent past (ports with no rate yet left out); the
    four network rules ask it of one window: worked out once (the answer is theirs to read, not to change)."""
    return _MEANS.ask(window, seconds, lambda: _port_means(window, seconds))


def _port_means(window: Window, seconds: float) -> PortMeans:
    sums: dict[tuple[str, int | None], list[tuple[float | None, float | None]]] = {}
    for snapshot in window.recent(seconds):
        for nic in snapshot.nics:
            if nic.physical:
                sums.setdefault((nic.name, nic.port), []).append((nic.rx_bytes_per_s, nic.tx_bytes_per_s))
    out = {}
    for key, values in sums.items():
        rx, tx = mean(v[0] for v in values), mean(v[1] for v in values)
        if rx is not None and tx is not None:
            out[key] = (rx, tx)
    return out


def line_share(nic: NicSnapshot, rates: tuple[float, float]) -> float | None:
    """The busier direction as a share of the line rate (full duplex: each direction has the whole line)."""
    if not nic.speed_gbps:
        return None
    return max(rates) * 8 / (nic.speed_gbps * 1e9)


def job_network(window: Window, t: Thresholds) -> JobNetwork | None:
    """The focused job's network facts; four rules ask them of each tick's job (256 ranks in a big one), so the
    last answer is kept for the same job snapshot under the same stack_min_samples."""
    job = running_job(window)
    if job is None:
        return None
    return _FACTS.ask(job, t["stack_min_samples"], lambda: _focused(job, t))


_FACTS: LastAnswer[JobNetwork] = LastAnswer()


def _focused(job: JobSnapshot, t: Thresholds) -> JobNetwork:
    ranks = [p for p in job.processes if p.alive and p.rank is not None]
    stacks = sampled(job, t)
    share, source = _collective_share(job, t, stacks)
    return JobNetwork("/proc/PID/environ of its ranks", _nccl_env(job, ranks), _spans_hosts(job, ranks), share,
                      source, _job_gpus(job), tuple(p.pid for p in ranks) or job.roots,
                      mean(s.fraction("data") for s in stacks) if stacks else None)


def _nccl_env(job: JobSnapshot, ranks: list[JobProcess]) -> dict[str, str]:
    """NCCL's variables as the ranks have them (the first rank that sets one), else the job's other processes."""
    env: dict[str, str] = {}
    for process in ranks or [p for p in job.processes if p.alive]:
        for key, value in process.nccl_env:
            env.setdefault(key, value)
    return env


def _spans_hosts(job: JobSnapshot, ranks: list[JobProcess]) -> bool | None:
    """Ranks of several hosts (the fleet's), or torchrun's WORLD_SIZE above LOCAL_WORLD_SIZE; this host's ranks
    alone say nothing of the others: None, not False."""
    if len({r.host for r in job.ranks}) > 1:
        return True
    sizes = [(p.world_size, p.local_world_size) for p in ranks if p.world_size and p.local_world_size]
    return any(world > local for world, local in sizes) if sizes else None


def _collective_share(job: JobSnapshot, t: Thresholds, stacks: list[RankStacks]) -> tuple[float | None, str]:
    """The share of time the ranks wait in collectives, and where it is from: the ranks' figures with enough
    samples, else their stacks."""
    figures = [r for r in job.ranks if r.samples >= t["stack_min_samples"]]
    if figures:
        return mean(r.collective_share for r in figures), f"{len(figures)} ranks' stack samples"
    if stacks:
        return mean(s.fraction("collective") for s in stacks), f"{len(stacks)} ranks' stack samples"
    return None, ""


def _job_gpus(job: JobSnapshot) -> tuple[int, ...]:
    return tuple(sorted({g for p in job.processes if p.alive for g, _ in p.gpus}
                        | {r.gpu for r in job.ranks if r.gpu is not None}))


def _ports(snapshot: Snapshot) -> dict[tuple[str, int | None], NicSnapshot]:
    return {(n.name, n.port): n for n in snapshot.nics if n.physical}


def _fabric_up(nic: NicSnapshot) -> bool:
    return nic.kind in FABRIC and nic.state in ("active", "up")


# ----- network-saturated -----

SATURATED_FIXES = (
    "Move fewer bytes per step: accumulate gradients over K micro-batches and all-reduce once (DDP's no_sync() on "
    "the first K-1), or compress them: model.register_comm_hook(None, torch.distributed.algorithms.ddp_comm_hooks."
    "default_hooks.bf16_compress_hook) halves fp32 gradient traffic.",
    "Overlap the all-reduce with the backward pass: DDP(bucket_cap_mb=100) sends fewer, larger buckets; with FSDP, "
    "backward_prefetch=BackwardPrefetch.BACKWARD_PRE.",
    "Or more bandwidth: every HCA in use (NCCL_IB_HCA lists them; `ibstat` shows their state), a faster fabric, or "
    "fewer nodes with more GPUs each.",
)


# The network: port rates are averaged over 10 s already.
@rule("network-saturated", hold_s=5, clear_s=10, order=230,
      watches="ports near their line rate while ranks wait in collectives",
      reads=("collective_wait_fraction", "network_saturated_share", "stack_min_samples"))
def network_saturated(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = job_network(window, t)
    if job is None or job.collective_share is None or job.collective_share < t["collective_wait_fraction"]:
        return
    ports = _ports(window.latest)
    for key, rates in sorted(port_means(window).items()):
        nic = ports.get(key)
        share = None if nic is None else line_share(nic, rates)
        if nic is None or share is None or share < t["network_saturated_share"]:
            continue
        name = port_name(nic)
        evidence = (
            f"{name} ({kind_name(nic)}, {nic.speed_gbps:g} Gb/s) receives {rate(rates[0])} and sends {rate(rates[1])}: "
            f"{100 * share:.0f}% of its line rate over the last {SPAN_S:.0f} s (limit "
            f"{100 * t['network_saturated_share']:.0f}%)",
            f"the job's ranks wait in collectives {100 * job.collective_share:.0f}% of the time (limit "
            f"{100 * t['collective_wait_fraction']:.0f}%; from {job.collective_source})",
        )
        if nic.kind == "ethernet" and any(_fabric_up(n) for n in ports.values()):
            continue  # an Ethernet port full while the fabric is up: the transport is wrong (nccl-wrong-transport)
        yield network_saturated.finding("warning", f"{name} is at its line rate while the ranks wait on it",
                                        evidence, SATURATED_FIXES, scope=name, gpus=job.gpus, pids=job.pids)


# ----- nccl-wrong-transport -----

TRANSPORT_FIXES = (
    "Remove NCCL_IB_DISABLE=1 (and NCCL_P2P_DISABLE=1) from the launch script or the environment it inherits "
    "(`env | grep NCCL` in the job's shell, /etc/nccl.conf, ~/.nccl.conf).",
    "Check what NCCL picked: NCCL_DEBUG=INFO prints `NET/IB` for InfiniBand/RoCE and `NET/Socket` for TCP at "
    "start-up; `ibstat` should show the HCAs Active.",
    "NCCL_SOCKET_IFNAME only needs to name the interface for bootstrap when IB is used; when sockets carry the "
    "data it must name the fastest port that is up.",
)


def socket_interfaces(spec: str, names: list[str]) -> list[str] | None:
    """The interfaces NCCL_SOCKET_IFNAME selects among `names`: a comma list of prefixes, `=name` for an exact
    name; None for an exclusion list (`^docker,lo`), which selects whatever else there is."""
    spec = spec.strip()
    if not spec or spec.startswith("^"):
        return None
    chosen = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        exact = part.startswith("=")
        chosen += [n for n in names if (n == part[1:] if exact else n.startswith(part)) and n not in chosen]
    return chosen


def _socket_evidence(spec: str, snapshot: Snapshot, t: Thresholds) -> str | None:
    netdevs = {n.name: n for n in snapshot.nics if n.port is None and n.kind != "loopback"}
    chosen = socket_interfaces(spec, list(netdevs))
    if chosen is None:
        return None
    fastest = max((n.speed_gbps or 0.0 for n in netdevs.values() if n.physical and n.state in UP_STATES),
                  default=0.0)
    if not chosen:
        return f"NCCL_SOCKET_IFNAME={spec} names no interface of this host: NCCL cannot start its sockets"
    up = [netdevs[n] for n in chosen if netdevs[n].state in UP_STATES]
    if not up:
        return f"NCCL_SOCKET_IFNAME={spec} names only interfaces that are down ({', '.join(chosen)})"
    best = max((n.speed_gbps or 0.0 for n in up), default=0.0)
    if best and fastest and best < t["slow_link_share"] * fastest:
        return (f"NCCL_SOCKET_IFNAME={spec} selects {', '.join(n.name for n in up)} at {best:g} Gb/s while a "
                f"{fastest:g} Gb/s port is up")
    return None


@rule("nccl-wrong-transport", hold_s=5, clear_s=10, order=240,
      watches="NCCL's environment and which ports carry a multi-node job",
      reads=("network_busy_share", "network_idle_bytes_per_s", "slow_link_share", "stack_min_samples"))
def nccl_wrong_transport(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = job_network(window, t)
    latest = window.latest
    if job is None or not latest.nics:
        return
    ports = _ports(latest)
    fabric_up = [n for n in ports.values() if _fabric_up(n)]
    evidence = _environment_lines(job, latest, fabric_up, t) + _ethernet_lines(window, t, job, ports, fabric_up)
    if not evidence:
        return
    yield nccl_wrong_transport.finding("warning", "NCCL is not using the fast transport", tuple(evidence),
                                       TRANSPORT_FIXES, scope="job", gpus=job.gpus, pids=job.pids)


def _environment_lines(job: JobNetwork, snapshot: Snapshot, fabric_up: list[NicSnapshot],
                       t: Thresholds) -> list[str]:
    """What the ranks' NCCL variables turn off or point at: InfiniBand off while a fabric port is up, peer-to-peer
    off between GPUs, a socket interface that is missing, down or slow."""
    lines = []
    ib_off = job.nccl_env.get("NCCL_IB_DISABLE", "").strip() == "1"
    if ib_off and fabric_up and job.spans_hosts is not False:
        lines.append(f"NCCL_IB_DISABLE=1 in the ranks' environment ({job.source}) while {len(fabric_up)} "
                     "InfiniBand/RoCE port(s) are up: NCCL sends over TCP sockets")
    if job.nccl_env.get("NCCL_P2P_DISABLE", "").strip() == "1" and len(job.gpus) > 1:
        lines.append(f"NCCL_P2P_DISABLE=1 with {len(job.gpus)} GPUs: transfers between them go through host "
                     "memory instead of NVLink/PCIe peer-to-peer")
    spec = job.nccl_env.get("NCCL_SOCKET_IFNAME")
    if spec and (ib_off or not fabric_up) and job.spans_hosts is not False:
        found = _socket_evidence(spec, snapshot, t)
        if found:
            lines.append(found)
    return lines


def _ethernet_lines(window: Window, t: Thresholds, job: JobNetwork, ports: dict[tuple[str, int | None], NicSnapshot],
                    fabric_up: list[NicSnapshot]) -> list[str]:
    """A job across hosts whose fabric ports idle while an Ethernet port is busy: each such port."""
    means = port_means(window)
    fabric_idle = all(max(means.get((n.name, n.port), (0.0, 0.0))) < t["network_idle_bytes_per_s"] for n in fabric_up)
    if not (job.spans_hosts and fabric_up and fabric_idle):
        return []
    lines = []
    for key, rates in sorted(means.items()):
        nic = ports.get(key)
        share = None if nic is None or nic.kind != "ethernet" else line_share(nic, rates)
        if nic is not None and share is not None and share >= t["network_busy_share"]:
            lines.append(f"the job spans hosts, its InfiniBand/RoCE ports idle (under "
                         f"{rate(t['network_idle_bytes_per_s'])}), while Ethernet port {nic.name} carries "
                         f"{rate(max(rates))} ({100 * share:.0f}% of {nic.speed_gbps:g} Gb/s)")
    return lines


# ----- nic-far-from-gpu -----

FAR_FIXES = (
    "Have each rank use a port on its GPU's NUMA node: NCCL picks the nearest HCA by itself unless NCCL_IB_HCA or "
    "NCCL_SOCKET_IFNAME forces one (`hwtop topo` or `nvidia-smi topo -m` shows which ports sit beside which "
    "GPUs).",
    "With one port only, run the job's ranks on the GPUs of that port's node, or add a NIC on the other node.",
)


@rule("nic-far-from-gpu", hold_s=5, clear_s=10, order=250, watches="the NUMA node of busy ports against the job's GPUs",
      reads=("network_busy_share", "stack_min_samples"))
def nic_far_from_gpu(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = job_network(window, t)
    latest = window.latest
    if job is None or not job.spans_hosts or latest.topology is None or not job.gpus:
        return
    gpu_nodes = gpu_numa_nodes(latest)
    busy = _busy_ports(window, t)
    nodes = {n.numa_node for n in busy}
    far = [g for g in job.gpus if g in gpu_nodes and gpu_nodes[g] not in nodes]
    if not busy or not far:
        return
    yield nic_far_from_gpu.finding("warning", "Ranks send through a port on another NUMA node",
                                   _far_lines(busy, far, gpu_nodes), FAR_FIXES, scope="job", gpus=tuple(far),
                                   pids=job.pids)


def _busy_ports(window: Window, t: Thresholds) -> list[NicSnapshot]:
    """The ports the job's traffic leaves through: busy ones whose NUMA node is known, only the fabric's while a
    fabric port is up."""
    ports = _ports(window.latest)
    if any(_fabric_up(n) for n in ports.values()):
        # with a fabric up, a rank's traffic should leave through it; an Ethernet port busy instead is the wrong
        # transport (nccl-wrong-transport), not a placement
        ports = {key: n for key, n in ports.items() if n.kind in FABRIC}
    busy = []
    for key, rates in port_means(window).items():
        nic = ports.get(key)
        share = None if nic is None else line_share(nic, rates)
        if nic is not None and nic.numa_node is not None and share is not None and share >= t["network_busy_share"]:
            busy.append(nic)
    return busy


def _far_lines(busy: list[NicSnapshot], far: list[int], gpu_nodes: dict[int, int]) -> tuple[str, ...]:
    by_node: dict[int, list[int]] = {}
    for gpu in far:
        by_node.setdefault(gpu_nodes[gpu], []).append(gpu)
    ports_text = ", ".join(f"{port_name(n)} (node {n.numa_node})" for n in sorted(busy, key=port_name))
    return (f"the job's traffic leaves through {ports_text}",
            *(f"GPU{', GPU'.join(map(str, gpus))} sit on NUMA node {node}: their ranks' traffic crosses the CPU "
              "interconnect to reach the port" for node, gpus in sorted(by_node.items())))


# ----- data-from-network -----

DATA_FIXES = (
    "Copy the dataset to local NVMe before training (rsync or fpsync to the local RAID, e.g. /raid on a DGX) or "
    "stage each epoch's shards ahead of the loader.",
    "Read few large files instead of one file per sample: WebDataset/tar shards or one record file per worker; "
    "raise num_workers and prefetch_factor to keep more reads in flight.",
    "For NFS: mount with nconnect=8 and rsize=1048576; for a FUSE mount (s3fs, gcsfuse), its cache options.",
)


@rule("data-from-network", hold_s=5, clear_s=10, order=260,
      watches="the mounts of the job's open files while it waits for data",
      reads=("data_wait_fraction", "network_idle_bytes_per_s", "stack_min_samples"))
def data_from_network(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    facts = job_network(window, t)
    if job is None or facts is None or facts.data_wait is None or facts.data_wait < t["data_wait_fraction"]:
        return
    mounts = [(device, files) for device, files in job.dataset_devices if network_filesystem(device)]
    if not mounts:
        return
    evidence = [f"the job has {files} file(s) open on {network_filesystem(device)} mount {device.partition(' ')[2]}"
                for device, files in mounts]
    evidence.append(f"its ranks wait for data {100 * facts.data_wait:.0f}% of the time (limit "
                    f"{100 * t['data_wait_fraction']:.0f}%)")
    means = port_means(window)
    ports = _ports(window.latest)
    busiest = max(((rates[0], ports[key]) for key, rates in means.items() if key in ports), default=None,
                  key=lambda item: item[0])
    if busiest is not None and busiest[0] >= t["network_idle_bytes_per_s"]:
        evidence.append(f"{port_name(busiest[1])} receives {rate(busiest[0])}")
    yield data_from_network.finding("warning", "The dataset is read over the network", tuple(evidence),
                                    DATA_FIXES, scope="job", pids=facts.pids)
