"""Figures of one frame checked against each other: what one screen says must not contradict what another says.

`contradictions(frame)` lists every disagreement in a frame (a snapshot and the findings raised on it), each as
one line naming the figures. The demo's stories are checked at every tick (tests/demo/test_consistency.py), so a
new story or profile is checked as soon as it is registered; this machine's live snapshot is checked with `live`,
which allows for what a real machine cannot make exact (figures read a moment apart)."""

from __future__ import annotations

import re

from hwtop.model.frame import Frame
from hwtop.model.snapshot import Snapshot

WORKER = "pt_data_worker"
ODD_RANK = re.compile(r"rank (\d+) \(pid (\d+)\) is running on the CPU, (\d+)% CPU while the others sleep")
CPU_OF_PID = re.compile(r"pid (\d+)\)?[^;]*?, (\d+(?:\.\d+)?)% CPU")
SLEEPING_CPU = 10.0  # a rank said to sleep uses less than this


def contradictions(frame: Frame, live: bool = False) -> list[str]:
    snapshot = frame.snapshot
    out: list[str] = []
    out += _memory(snapshot, live)
    out += _numa(snapshot, live)
    out += _cpus(snapshot, live)
    out += _gpus(snapshot)
    out += _workload(snapshot, live)
    out += _disks(snapshot)
    out += _findings(frame)
    return out


def _memory(s: Snapshot, live: bool) -> list[str]:
    m = s.memory
    if m is None:
        return []
    out = []
    if not 0 <= m.used_bytes <= m.total_bytes or not 0 <= m.available_bytes <= m.total_bytes:
        out.append(f"memory: used {m.used_bytes} / available {m.available_bytes} outside total {m.total_bytes}")
    if m.used_bytes != m.total_bytes - m.available_bytes:
        out.append(f"memory: used {m.used_bytes} is not total − available ({m.total_bytes - m.available_bytes})")
    if m.swap_used_bytes > m.swap_total_bytes:
        out.append(f"swap: used {m.swap_used_bytes} > total {m.swap_total_bytes}")
    return out


def _numa(s: Snapshot, live: bool) -> list[str]:
    numa, memory = s.numa, s.memory
    if numa is None:
        return []
    out = []
    for node in numa.nodes:
        total, used, available = node.memory_total_bytes, node.memory_used_bytes, node.memory_available_bytes
        if total is None:
            continue
        if used is None or available is None:
            out.append(f"node{node.index}: no used/available figure beside its total")
            continue
        if used != total - available or not 0 <= used <= total:
            out.append(f"node{node.index}: used {used} is not total {total} − available {available}")
        if node.memory_free_bytes is not None and node.memory_free_bytes > available:
            out.append(f"node{node.index}: free {node.memory_free_bytes} > available {available}")
    totals = [n.memory_total_bytes for n in numa.nodes]
    if memory is not None and totals and None not in totals:
        slack = memory.total_bytes * 0.02 if live else 0  # a real kernel may keep a node's pages apart
        if abs(sum(t or 0 for t in totals) - memory.total_bytes) > slack:
            out.append(f"NUMA nodes sum to {sum(t or 0 for t in totals)} bytes, the machine has {memory.total_bytes}")
        used = [n.memory_used_bytes for n in numa.nodes]
        if None not in used and abs(sum(u or 0 for u in used) - memory.used_bytes) > max(slack, 4096 * len(used)):
            out.append(f"NUMA nodes use {sum(u or 0 for u in used)} bytes, the machine says {memory.used_bytes} used")
    topology = s.topology.numa if s.topology is not None else None
    if topology is not None:
        if [(n.index, n.cpus, n.memory_total_bytes) for n in topology.nodes] != \
                [(n.index, n.cpus, n.memory_total_bytes) for n in numa.nodes]:
            out.append("the topology's NUMA nodes (CPUs, sizes) differ from the memory panel's")
    return out


def _cpus(s: Snapshot, live: bool) -> list[str]:
    cpu, numa = s.cpu, s.numa
    if cpu is None:
        return []
    out = []
    for core in cpu.cores:
        if not 0 <= core.percent <= 100.0001:
            out.append(f"cpu{core.index}: {core.percent}% busy")
    if numa is not None and numa.source != "fallback":
        listed = sorted(c for n in numa.nodes for c in n.cpus)
        if listed != sorted(c.index for c in cpu.cores):
            out.append("the NUMA nodes list other CPUs than the CPU panel")
        node_of = {c: n.index for n in numa.nodes for c in n.cpus}
        wrong = [c.index for c in cpu.cores if node_of.get(c.index, c.numa_node) != c.numa_node]
        if wrong:
            out.append(f"cores {wrong[:5]} drawn under another node than NUMA says")
    if cpu.logical_cores is not None and cpu.logical_cores != len(cpu.cores) and not live:
        out.append(f"{cpu.logical_cores} logical CPUs said, {len(cpu.cores)} cores drawn")
    if cpu.physical_cores and cpu.logical_cores and cpu.physical_cores > cpu.logical_cores:
        out.append(f"{cpu.physical_cores} cores but {cpu.logical_cores} threads")
    if not live:  # a real machine reads its processes and its cores over different intervals
        processes = sum(p.cpu_percent or 0.0 for p in s.processes)
        cores = sum(c.percent for c in cpu.cores)
        if processes > cores * 1.01 + 1.0:
            out.append(f"processes use {processes:.0f}% CPU, the cores are busy {cores:.0f}% in all")
    return out


def _gpus(s: Snapshot) -> list[str]:
    out = []
    for gpu in s.gpus:
        used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
        if used is not None and total is not None and used > total:
            out.append(f"GPU{gpu.index}: {used} bytes used of {total}")
        for process in gpu.processes:
            held = process.used_memory_bytes
            if held is not None and used is not None and held > used:
                out.append(f"GPU{gpu.index}: pid {process.pid} holds {held} bytes, the GPU has {used} in use")
    return out


def _workload(s: Snapshot, live: bool) -> list[str]:
    workload = s.workload
    if workload is None:
        return []
    out = []
    config = workload.config
    by_pid = {p.pid: p for p in s.processes}
    gpus_of = {proc.pid: gpu for gpu in s.gpus for proc in gpu.processes}
    for rank in workload.ranks:
        workers = config.num_workers if config else None
        cost = config.transform_cost_ms if config else None
        if rank.samples_per_s and workers and cost:
            supply = workers * 1000.0 / cost
            if rank.samples_per_s > supply * 1.001:
                out.append(f"rank {rank.rank}: {rank.samples_per_s} samples/s, its {workers} worker(s) at {cost} ms "
                           f"a sample supply at most {supply:.1f}")
            listed = [p for p in s.processes if p.ppid == rank.pid and p.name == WORKER]
            if len(listed) == workers and not live:
                made = sum(p.cpu_percent or 0.0 for p in listed) / 100.0 * 1000.0 / cost
                if made < rank.samples_per_s * 0.9:
                    out.append(f"rank {rank.rank}: trains {rank.samples_per_s} samples/s, its workers' CPU "
                               f"({sum(p.cpu_percent or 0 for p in listed):.0f}%) makes {made:.0f}")
        if rank.data_wait_fraction is not None and rank.step_time_s and rank.samples_per_s and rank.batch_size:
            if abs(rank.batch_size / rank.step_time_s - rank.samples_per_s) > 0.01 * rank.samples_per_s + 0.1:
                out.append(f"rank {rank.rank}: batch {rank.batch_size} / step {rank.step_time_s} s is not "
                           f"{rank.samples_per_s} samples/s")
        gpu = gpus_of.get(rank.pid) if rank.pid is not None else None
        if gpu is not None and gpu.util_percent is not None and rank.data_wait_fraction is not None and \
                workload.status == "running":
            ceiling = 100.0 * (1.0 - rank.data_wait_fraction) + 10.0
            if gpu.util_percent > ceiling:
                out.append(f"rank {rank.rank}: waits for data {100 * rank.data_wait_fraction:.0f}% of each step, "
                           f"yet GPU{gpu.index} is {gpu.util_percent:.0f}% busy")
        process = by_pid.get(rank.pid) if rank.pid is not None else None
        if process is not None and rank.rss_bytes and process.rss_bytes and not live:
            if abs(rank.rss_bytes - process.rss_bytes) > 0.1 * process.rss_bytes:
                out.append(f"rank {rank.rank}: RSS {rank.rss_bytes} in its telemetry, {process.rss_bytes} in the table")
        if gpu is not None and rank.cuda_reserved_bytes:
            held = next((p.used_memory_bytes for p in gpu.processes if p.pid == rank.pid), None)
            if held is not None and rank.cuda_reserved_bytes > held + (1 << 30):
                out.append(f"rank {rank.rank}: reserves {rank.cuda_reserved_bytes} bytes, NVML lists {held} for it")
    if workload.status in ("running", "stalled") and config is not None and config.world_size:
        # this host's share of a job over several nodes: LOCAL_WORLD_SIZE in its ranks' environment (the job model)
        local = next((p.local_world_size for p in s.job.processes if p.local_world_size), None) if s.job else None
        here = local or config.world_size
        if len(workload.ranks) != here:
            out.append(f"{len(workload.ranks)} ranks report, the job was started with {here} on this host")
    return out


def _disks(s: Snapshot) -> list[str]:
    out = [f"{d.name} is an md array, shown as {d.kind}" for d in s.disks
           if re.fullmatch(r"md\d+", d.name) and d.kind != "raid"]
    by_name = {d.name: d for d in s.disks}
    for array in {d.held_by for d in s.disks if d.held_by is not None}:
        members = [d for d in s.disks if d.held_by == array]
        carried = sum(d.read_bytes_per_s or 0.0 for d in members)
        read = by_name[array].read_bytes_per_s if array in by_name else None
        if read is None or abs(carried - read) > 0.01 * read + len(members):  # each rounded to 0.1 B/s
            out.append(f"{array} reads {read} B/s, its {len(members)} members {carried:.1f}")
    return out


def _findings(frame: Frame) -> list[str]:
    s = frame.snapshot
    by_pid = {p.pid: p for p in s.processes}
    rank_pids = {r.pid for r in s.workload.ranks if r.pid} if s.workload else set()
    gpus = {g.index for g in s.gpus}
    out = []
    for finding in frame.findings:
        missing = [g for g in finding.gpus if g not in gpus]
        if missing:
            out.append(f"{finding.id}: names GPU{missing} the snapshot lacks")
        for line in finding.evidence:
            for match in ODD_RANK.finditer(line):
                pid, said = int(match.group(2)), float(match.group(3))
                process = by_pid.get(pid)
                if process is None or process.state != "R" or abs((process.cpu_percent or 0.0) - said) > 1.0:
                    out.append(f"{finding.id}: says pid {pid} runs at {said:.0f}% CPU; the table: "
                               f"{process and (process.state, process.cpu_percent)}")
                awake = [p.pid for p in s.processes if p.pid in rank_pids and p.pid != pid and
                         (p.state == "R" or (p.cpu_percent or 0.0) >= SLEEPING_CPU)]
                if awake:
                    out.append(f"{finding.id}: says the other ranks sleep; awake in the table: {awake}")
            for match in CPU_OF_PID.finditer(line):
                pid, said = int(match.group(1)), float(match.group(2))
                process = by_pid.get(pid)
                if process is not None and process.cpu_percent is not None and abs(process.cpu_percent - said) > 1.0:
                    out.append(f"{finding.id}: says pid {pid} at {said:.0f}% CPU, the table {process.cpu_percent}")
    return out
