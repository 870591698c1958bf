"""A stand-in for NCCL's RAS service that speaks each release's format, bugs included, ported line by line from
src/ras/client_support.cc at v2.24.3-1, v2.27.5-1, v2.28.7-1 and v2.30.7-1 (rasClientEventLoop's commands,
rasClientRunInit's job summary, rasClientRunComms' text, rasDumpCommsToJSON's JSON, rasClientsNotifyEvent's
events) and checked byte for byte against what NCCL's own code prints (tests/fixtures/nccl-ras/, by
tests/probes/nccl_ras/test_standin_fixtures.py). Written for these tests, not copied.

By release (`version`):
- before 2.28.7 the text format only: `SET FORMAT json` is answered `ERROR: Unknown command set format json`;
- 2.24/2.25: one "collective" count (the sum), UNKNOWN for NOCOMM, "The missing ranks: 6,9";
- 2.28.7 and 2.28.9: no comma after a missing rank's "nvml_dev" (jsonWriteMissingRank; fixed in 2.29.2);
- 2.29+: `MONITOR` answered `OK`, the connection kept, `event()` pushes PEER_NEW / PEER_DEAD to it.
(The text walk past missing-rank arrays of 2.26-2.29.1, nccl#1762, and the zeroed entry of nccl#2346 are
undefined behaviour in NCCL and not played; their real outputs are fixtures.)

It records every connection and every line it was sent, so a test can check hwtop's manners. `cut` cuts the Nth
answer short; `raw` replaces an answer's text; `delay_s` answers STATUS that late (a gathering that waits for
peers); `mute` is how many connections it accepts and never answers (a stopped rank holding the SO_REUSEPORT
socket the kernel chose)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

OPS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
STATUS_WORDS = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")  # 2.24/2.25: UNKNOWN for NOCOMM
ERROR_WORDS = ("OK", "MISMATCH", "ERROR", "ERROR,MISMATCH", "INCOMPLETE", "INCOMPLETE,MISMATCH", "INCOMPLETE,ERROR",
               "INCOMPLETE,ERROR,MISMATCH")
ERROR_NAMES = {1: "Unhandled CUDA error", 2: "System error", 3: "Internal error", 4: "Invalid argument",
               5: "Invalid usage", 6: "Remote process error", 7: "NCCL operation in progress"}
NOCOMM, INIT, RUNNING, FINALIZE, ABORT = 1, 2, 4, 8, 16
MISMATCH, ERROR, INCOMPLETE = 1, 2, 4
DETAIL, FRACTION = 10, 0.25  # RAS_CLIENT_DETAIL_THRESHOLD, RAS_CLIENT_OUTLIER_FRACTION


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])


@dataclass
class StandRank:
    """`missing`: no data from it; with `dead`, its process was declared dead; with `nocomm`, its process
    answered without this communicator; else its process did not answer. `unknown`: its process answered but is
    not in the answering process's peer list ("[process information not found]")."""

    rank: int
    host: str
    pid: int
    gpu: int
    counts: dict[str, int] = field(default_factory=dict)
    init_state: int = 0
    async_error: int = 0
    abort: bool = False
    missing: bool = False
    dead: bool = False
    nocomm: bool = False
    finalize: bool = False
    destroy: bool = False
    unknown: bool = False
    nvml: int | None = None

    @property
    def nvml_dev(self) -> int:
        return self.gpu if self.nvml is None else self.nvml

    def status_bit(self) -> int:
        if self.abort:
            return ABORT
        if self.finalize or self.destroy:
            return FINALIZE
        return RUNNING if self.init_state == 0 else INIT


@dataclass
class StandComm:
    hash: int
    ranks: list[StandRank]
    host_hash: int = 0x1
    pid_hash: int = 0x2


def _outlier(count: int, total: int = -1) -> bool:
    """rasCountIsOutlier, not verbose."""
    return count == 1 or (count <= DETAIL and (total == -1 or count <= total * FRACTION))


@dataclass
class _Process:
    host: str
    pid: int
    order: int  # its port: the order it joined
    cuda: set[int] = field(default_factory=set)
    nvml: set[int] = field(default_factory=set)
    dead: bool = False
    silent: bool = False
    unknown: bool = False

    @property
    def key(self) -> tuple[tuple[int, bytes], int]:  # ncclSocketsCompare: family, address, port
        ip = ipaddress.ip_address(self.host) if _is_ip(self.host) else None
        return ((4 if ip is None else ip.version, ip.packed if ip else self.host.encode()), self.order)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _processes(comms: list[StandComm]) -> dict[tuple[str, int], _Process]:
    out: dict[tuple[str, int], _Process] = {}
    for comm in comms:
        for r in sorted(comm.ranks, key=lambda r: r.rank):
            p = out.setdefault((r.host, r.pid), _Process(r.host, r.pid, len(out)))
            p.cuda.add(r.gpu)
            p.nvml.add(r.nvml_dev)
            p.dead |= r.missing and r.dead
            p.silent |= r.missing and not r.dead and not r.nocomm
            p.unknown |= r.unknown
    return out


def _gpus(cuda: set[int], nvml: set[int]) -> str:
    """rasGpuDevsToString."""
    text = ",".join(str(g) for g in sorted(cuda))
    return text + (f" (NVML {','.join(str(g) for g in sorted(nvml))})" if cuda != nvml else "")


def _gpu(rank: StandRank) -> str:
    """rasGpuToString."""
    return f"{rank.gpu}" + (f" (NVML {rank.nvml_dev})" if rank.gpu != rank.nvml_dev else "")


class _Text:
    """rasClientRunInit and rasClientRunComms, text format, for one release."""

    def __init__(self, comms: list[StandComm], version: str, timeouts: int, seconds: float) -> None:
        self.comms, self.version, self.v = comms, version, version_tuple(version)
        self.timeouts, self.seconds = timeouts, seconds
        self.procs = _processes(comms)
        self.peers = sorted((p for p in self.procs.values() if not p.unknown), key=lambda p: p.key)  # rasPeers
        self.answered = [p for p in self.procs.values() if not p.dead and not p.silent]  # coll->peers
        self.dead = [p for p in self.peers if p.dead]
        self.old = self.v < (2, 26)
        self.out: list[str] = []

    def put(self, text: str) -> None:
        self.out.append(text)

    def where(self, r: StandRank) -> str:
        p = self.procs[(r.host, r.pid)]
        return "[process information not found]" if p.unknown else \
            f"GPU {_gpu(r)} managed by process {p.pid} on node {p.host}"

    def render(self) -> str:
        self.put(f"NCCL version {self.version} compiled with CUDA 12.8\n")
        self.put("CUDA runtime version 12080, driver version 12090\n\n")
        self.job_summary()
        decimals = 3 if self.v >= (2, 28, 7) else 2
        self.put(f"\nCommunicators... ({self.seconds:.{decimals}f}s)\n=============\n\n")
        self.communicators()
        return "".join(self.out)

    # ---- rasClientRunInit ----
    def job_summary(self) -> None:
        self.put("Job summary\n===========\n\n")
        nodes: list[list[_Process]] = []
        for p in self.peers:
            if nodes and nodes[-1][0].host == p.host:
                nodes[-1].append(p)
            else:
                nodes.append([p])
        gpus = [len(p.cuda) for p in self.peers]
        total = sum(gpus)
        per_node = {len(n) for n in nodes}
        same_in_node = all(len({len(p.cuda) for p in n}) == 1 for n in nodes)
        if same_in_node and len(set(gpus)) == 1 and len(per_node) == 1:
            self.put("  Nodes  Processes         GPUs  Processes     GPUs\n"
                     "(total)   per node  per process    (total)  (total)\n"
                     f"{len(nodes):7d}  {len(nodes[0]):9d}  {gpus[0]:11d}  {len(self.peers):9d}  {total:7d}\n")
            return
        self.uneven_summary(nodes, gpus, total, same_in_node and len(set(gpus)) == 1)

    def uneven_summary(self, nodes: list[list[_Process]], gpus: list[int], total: int, even_gpus: bool) -> None:
        counts: dict[int, int] = {}
        for n in nodes:
            counts[len(n)] = counts.get(len(n), 0) + 1
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0]))  # rasValCountsCompareRev
        if even_gpus:
            self.put("  Nodes  Processes         GPUs\n          per node  per process\n")
            for size, n in ordered:
                self.put(f"{n:7d}  {size:9d}  {gpus[0]:11d}\n")
        else:
            self.put("  Nodes  Processes\n          per node\n")
            for size, n in ordered:
                self.put(f"{n:7d}  {size:9d}\n")
            per_gpu: dict[int, int] = {}
            for g in gpus:
                per_gpu[g] = per_gpu.get(g, 0) + 1
            self.put("\n         Processes         GPUs\n                    per process\n")
            for g, n in sorted(per_gpu.items(), key=lambda kv: (-kv[1], -kv[0])):
                self.put(f"         {n:9d}  {g:11d}\n")
        self.put("\n  Nodes  Processes         GPUs\n(total)    (total)      (total)\n"
                 f"{len(nodes):7d}  {len(self.peers):9d}  {total:11d}\n")
        if even_gpus:
            self.outlier_nodes(nodes, ordered)

    def outlier_nodes(self, nodes: list[list[_Process]], ordered: list[tuple[int, int]]) -> None:
        by_size = sorted(self.peers, key=lambda p: (sum(len(n) for n in nodes if p in n), p.key[0], p.pid))
        for size, n in ordered[1:]:
            if not _outlier(n, len(nodes)):
                continue
            self.put(f"\nThe outlier node{'s' if n > 1 else ''}:\n")
            for node in (x for x in nodes if len(x) == size):
                # NCCL prints the pids of the first `size` peers of its sorted array, not the node's
                pids = ",".join(str(by_size[j].pid) for j in range(size))
                self.put(f"  Node {node[0].host} running process{'es' if size > 1 else ''} {pids}\n")

    # ---- rasClientRunComms ----
    def aux(self, comm: StandComm) -> dict:
        present = [r for r in comm.ranks if not r.missing]
        gone = [r for r in comm.ranks if r.missing]
        missing_procs = len(self.peers) - len(self.dead) - len(self.answered)
        status = errors = incomplete = 0
        if gone and self.old:
            if missing_procs > 0 or self.dead:
                errors |= INCOMPLETE
            else:
                errors, status = errors | MISMATCH, status | NOCOMM
        elif gone:
            for r in gone:
                if missing_procs == 0 and not self.dead or r.nocomm:
                    errors, status = errors | MISMATCH, status | NOCOMM
                else:
                    errors, incomplete = errors | INCOMPLETE, incomplete + 1
        ordered = sorted(present, key=lambda r: (self.peer_index(r), r.rank))
        first = self.counts(ordered[0]) if ordered else ()
        for r in ordered:
            status |= r.status_bit()
            if self.counts(r) != first:
                errors |= MISMATCH
            if r.init_state not in (0, 7) or r.async_error not in (0, 7):
                errors |= ERROR
        if bin(status).count("1") > 1:
            errors |= MISMATCH
        nodes, per_node = self.nodes_of(ordered)
        return {"comm": comm, "status": status, "errors": errors, "incomplete": incomplete, "nodes": nodes,
                "min": min(per_node, default=0), "max": max(per_node, default=0), "present": present}

    def peer_index(self, r: StandRank) -> int:
        p = self.procs[(r.host, r.pid)]
        return -1 if p.unknown else self.peers.index(p)

    def nodes_of(self, ordered: list[StandRank]) -> tuple[int, list[int]]:
        hosts: list[str | None] = []
        per_node: list[int] = []
        for r in ordered:
            host = None if self.procs[(r.host, r.pid)].unknown else r.host  # an empty address: no node
            if hosts and hosts[-1] == host and host is not None:
                per_node[-1] += 1
            else:
                hosts.append(host)
                per_node.append(1)
        return len(per_node), per_node

    def counts(self, r: StandRank) -> tuple[int, ...]:
        values = tuple(r.counts.get(op, 0) for op in OPS)
        return (sum(values),) if self.old else values

    def communicators(self) -> None:
        key = (lambda c: c.hash) if self.old else (lambda c: (c.hash, c.host_hash, c.pid_hash))
        auxes = [self.aux(c) for c in sorted(self.comms, key=key)]
        auxes.sort(key=lambda a: (-len(a["comm"].ranks), -a["nodes"], -a["status"].bit_length(), -a["errors"],
                                  len(a["present"])))
        groups: list[list[dict]] = []
        for a in auxes:
            g = groups[-1][0] if groups else None
            if g and (len(g["comm"].ranks), g["nodes"], g["status"].bit_length(), g["errors"]) == (
                    len(a["comm"].ranks), a["nodes"], a["status"].bit_length(), a["errors"]):
                groups[-1].append(a)
            else:
                groups.append([a])
        self.put("Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
                 "    #  in group  per comm  per node  per comm  in group\n" if auxes else
                 "No communicator data collected!\n")
        words = ("UNKNOWN",) + STATUS_WORDS[1:] if self.old else STATUS_WORDS
        for gi, group in enumerate(groups):
            low, high = min(a["min"] for a in group), max(a["max"] for a in group)
            unique = {(self.peer_index(r), r.nvml_dev) for a in group for r in a["present"]}
            first = group[0]
            self.put(f"{gi:5d}  {len(group):8d}  {first['nodes']:8d}  {str(low) if low == high else f'{low}-{high}':>8}"
                     f"  {len(first['comm'].ranks):8d}  {len(unique):8d}  "
                     f"{words[first['status'].bit_length() - 1]:>8}  {ERROR_WORDS[first['errors']]:>6}\n")
        self.errors(groups)
        self.warnings(groups)

    def processes(self, procs: list[_Process]) -> None:
        for p in sorted(procs, key=lambda p: (p.key[0], p.pid)):
            self.put(f"  Process {p.pid} on node {p.host} managing GPU{'s' if len(p.cuda) > 1 else ''} "
                     f"{_gpus(p.cuda, p.nvml)}\n")

    def errors(self, groups: list[list[dict]]) -> None:
        self.put("\nErrors\n======\n\n")
        silent = [p for p in self.peers if p.silent]
        missing = len(self.peers) - len(self.dead) - len(self.answered)
        if missing > 0:
            self.put(f"INCOMPLETE\n  Missing communicator data from {missing} job "
                     f"process{'es' if missing > 1 else ''}\n")
            if _outlier(missing):
                self.processes(silent)
            self.put("\n")
        if self.dead:
            n = len(self.dead)
            self.put(f"DEAD\n  {n} job process{'es are' if n > 1 else ' is'} considered dead (unreachable via the "
                     "RAS network)\n")
            if _outlier(n):
                self.processes(self.dead)
            self.put("\n")
        for gi, group in enumerate(groups):
            for ci, a in enumerate(group):
                if a["errors"] & INCOMPLETE:
                    self.incomplete(gi, ci, a)
                if a["errors"] & ERROR:
                    self.error(gi, ci, a)

    def incomplete(self, gi: int, ci: int, a: dict) -> None:
        comm = a["comm"]
        gone = sorted((r for r in comm.ranks if r.missing), key=lambda r: r.rank)
        count = len(gone) if self.old else a["incomplete"]
        self.put(f"#{gi}-{ci} ({comm.hash:016x}) INCOMPLETE\n  Missing communicator data from {count} rank"
                 f"{'s' if count > 1 else ''}\n")
        if _outlier(count):
            if self.old:
                self.put(f"  The missing rank{'s' if count > 1 else ''}: {','.join(str(r.rank) for r in gone)}\n")
            for r in gone if not self.old else ():
                if not r.nocomm:
                    self.put(f"  Rank {r.rank} -- {self.where(r)}\n")
        self.put("\n")

    def error(self, gi: int, ci: int, a: dict) -> None:
        comm = a["comm"]
        self.put(f"#{gi}-{ci} ({comm.hash:016x}) ERROR\n")
        ranks = sorted(a["present"], key=lambda r: r.rank)
        for label, attr in (("Initialization", "init_state"), ("Asynchronous", "async_error")):
            bad = [r for r in ranks if getattr(r, attr) not in (0, 7)]
            if bad:
                n = len(bad)
                self.put(f"  {label} error{'s' if n > 1 else ''} on {n} rank{'s' if n > 1 else ''}\n")
                self.break_down(ranks, attr)
        self.put("\n")

    def break_down(self, ranks: list[StandRank], attr: str) -> None:
        """rasClientBreakDownErrors: the commonest error first (the lowest code on a tie)."""
        tally = {code: sum(1 for r in ranks if getattr(r, attr) == code) for code in range(1, 7)}
        while any(tally.values()):
            code = max(tally, key=lambda c: (tally[c], -c))
            n = tally.pop(code)
            if n > 1:
                self.put(f"  {n} ranks reported {ERROR_NAMES[code]}\n")
            if _outlier(n):
                for r in (r for r in ranks if getattr(r, attr) == code):
                    head = f"  Rank {r.rank} -- " if n > 1 else f"  Rank {r.rank} reported {ERROR_NAMES[code]} -- "
                    self.put(f"{head}{self.where(r)}\n")

    def warnings(self, groups: list[list[dict]]) -> None:
        self.put("Warnings\n========\n\n")
        if self.timeouts:
            self.put(f"TIMEOUT\n  Encountered {self.timeouts} communication timeout{'s' if self.timeouts > 1 else ''}"
                     " while gathering communicator data\n\n")
        for gi, group in enumerate(groups):
            for ci, a in enumerate(group):
                if a["errors"] & MISMATCH:
                    self.put(f"#{gi}-{ci} ({a['comm'].hash:016x}) MISMATCH\n")
                    if bin(a["status"]).count("1") > 1:
                        self.statuses(a)
                    self.count_lines(a)
                    if self.old:
                        self.put("\n")

    def statuses(self, a: dict) -> None:
        self.put("  Communicator ranks have different status\n")
        comm = a["comm"]
        ranks = sorted(a["present"], key=lambda r: (r.status_bit(), r.rank))
        values: list[tuple[int, list[StandRank | None]]] = []
        for r in ranks:
            index = r.status_bit().bit_length() - 1
            if values and values[-1][0] == index:
                values[-1][1].append(r)
            else:
                values.append((index, [r]))
        nocomm = sorted((r for r in comm.ranks if r.missing and (self.old or r.nocomm)), key=lambda r: r.rank)
        if nocomm:
            values.append((0, [None] * len(nocomm)))
        values.sort(key=lambda v: (-len(v[1]), -v[0]))
        for index, members in values:
            self.status_group(index, members, nocomm, len(comm.ranks))

    def status_group(self, index: int, members: list[StandRank | None], nocomm: list[StandRank], size: int) -> None:
        words = ("UNKNOWN",) + STATUS_WORDS[1:] if self.old else STATUS_WORDS
        n = len(members)
        if n > 1:
            self.put(f"  {n} ranks have status {words[index]}\n")
        if not _outlier(n, size):
            return
        if members[0] is None and self.old:
            listed = ",".join(str(r.rank) for r in nocomm)
            self.put(f"  The unknown ranks: {listed}\n" if n > 1 else f"  Rank {listed} has status UNKNOWN\n")
            return
        for r in nocomm if members[0] is None else members:
            assert r is not None
            head = f"  Rank {r.rank} -- " if n > 1 else f"  Rank {r.rank} has status {words[index]} -- "
            self.put(f"{head}{self.where(r)}\n")

    def count_lines(self, a: dict) -> None:
        comm = a["comm"]
        size = len(comm.ranks)
        present = a["present"]
        ops = ("collective",) if self.old else OPS
        for i, op in enumerate(ops):
            values = [self.counts(r)[i] for r in present]
            if len(set(values)) < 2:
                continue
            self.put(f"  Communicator ranks have different {op} operation counts\n")
            by: dict[int, list[StandRank]] = {}
            for r in sorted(present, key=lambda r: (self.counts(r)[i], r.rank)):
                by.setdefault(self.counts(r)[i], []).append(r)
            for value, members in sorted(by.items(), key=lambda kv: (-len(kv[1]), -kv[0])):
                self.count_group(value, members, size)
            if not self.old:
                self.put("\n")

    def count_group(self, value: int, members: list[StandRank], size: int) -> None:
        n = len(members)
        launched = f"launched up to operation {value}" if value > 0 or self.old else "not launched any operations"
        if n > 1:
            self.put(f"  {n} ranks have {launched}\n")
        if _outlier(n, size):
            for r in members:
                head = f"  Rank {r.rank} -- " if n > 1 else f"  Rank {r.rank} has {launched} -- "
                self.put(f"{head}{self.where(r)}\n")


def text_reply(comms: list[StandComm], version: str = "2.27.5", timeouts: int = 0, seconds: float = 0.004) -> str:
    """As rasClientRunInit and rasClientRunComms print it at `version`."""
    return _Text(comms, version, timeouts, seconds).render()


def json_reply(comms: list[StandComm], version: str = "2.30.7", timeouts: int = 0, seconds: float = 0.004,
               stamp: str = "2026-12-06 01:00:00") -> str:
    """As rasDumpCommsToJSON writes it: printf, host names unescaped, communicators in id order; at 2.28.7 and
    2.28.9 without the comma after a missing rank's nvml_dev."""
    procs = _processes(comms)
    comma = "," if version_tuple(version) >= (2, 29, 2) else ""
    out = ["{\n", f'  "nccl_version": "{version}",\n', '  "cuda_runtime_version": 12080,\n',
           '  "cuda_driver_version": 12090,\n', f'  "timestamp": "{stamp}",\n',
           f'  "communicators_count": {len(comms)},\n', '  "communicators": [\n']
    for ci, comm in enumerate(sorted(comms, key=lambda c: (c.hash, c.host_hash, c.pid_hash))):
        present = sorted((r for r in comm.ranks if not r.missing), key=lambda r: r.rank)
        gone = sorted((r for r in comm.ranks if r.missing), key=lambda r: r.rank)
        out.append((",\n" if ci else "") + "    {\n")
        out.append(f'      "hash": "0x{comm.hash:x}",\n'
                   f'      "secondary_hash": "0x{comm.host_hash:x}:0x{comm.pid_hash:x}",\n'
                   f'      "size": {len(comm.ranks)},\n      "ranks_count": {len(present)},\n'
                   f'      "missing_ranks_count": {len(gone)},\n      "ranks": [\n')
        for i, r in enumerate(present):
            host, pid = ("unknown", -1) if procs[(r.host, r.pid)].unknown else (r.host, r.pid)
            counts = ",\n".join(f'            "{op}": {r.counts.get(op, 0)}' for op in OPS)
            out.append((",\n" if i else "") +
                       f'        {{\n          "rank": {r.rank},\n          "host": "{host}",\n'
                       f'          "pid": {pid},\n          "cuda_dev": {r.gpu},\n          "nvml_dev": {r.nvml_dev},\n'
                       f'          "status": {{\n            "init_state": {r.init_state},\n'
                       f'            "async_error": {r.async_error},\n'
                       f'            "finalize_called": {str(r.finalize).lower()},\n'
                       f'            "destroy_flag": {str(r.destroy).lower()},\n'
                       f'            "abort_flag": {str(r.abort).lower()}\n'
                       f'          }},\n          "collective_counts": {{\n{counts}\n          }}\n        }}')
        out.append("\n      ],\n      \"missing_ranks\": [\n")
        for i, r in enumerate(gone):
            out.append((",\n" if i else "") +
                       f'        {{\n          "rank": {r.rank},\n          "host": "{r.host}",\n'
                       f'          "pid": {r.pid},\n          "cuda_dev": {r.gpu},\n'
                       f'          "nvml_dev": {r.nvml_dev}{comma}\n'
                       f'          "status": {{\n            "unresponsive": {str(not r.nocomm).lower()},\n'
                       f'            "considered_dead": {str(r.dead).lower()}\n          }}\n        }}')
        out.append("\n      ]\n    }")
    out.append(f'\n  ],\n  "ras": {{\n    "collection_time_sec": {seconds:.3f},\n    "timeouts_count": {timeouts}\n'
               '  }\n}\n')
    return "".join(out)


def event_reply(event: str, rank: StandRank, fmt: str = "json", stamp: str = "2026-12-06 01:00:00") -> str:
    """One event as rasClientsNotifyEvent writes it to a MONITOR connection (2.29+)."""
    if fmt == "text":
        return (f"[{stamp}] {event}: Process {rank.pid} on node {rank.host} managing GPU {rank.gpu} \n")
    return ("{\n"
            f'  "timestamp": "{stamp}",\n  "group": "LIFECYCLE",\n  "event": "{event}",\n  "peer": {{\n'
            f'    "host": "{rank.host}",\n    "pid": {rank.pid},\n    "cuda_devs": [{rank.gpu}],\n'
            f'    "nvml_devs": [{rank.nvml_dev}]\n  }},\n  "details": ""\n}}\n')


@dataclass
class Conn:
    opened: float
    closed: float | None = None
    lines: list[str] = field(default_factory=list)


class RasStandIn:
    """Listens on 127.0.0.1 (a free port); `state(n)` gives the communicators for the nth STATUS (from 0).
    `json=False` without a `version` plays 2.27.5 (the text format only)."""

    def __init__(self, state: Callable[[int], list[StandComm]], json: bool = True,
                 raw: Callable[[int, str], str] | None = None, cut: set[int] | None = None,
                 version: str | None = None, delay_s: float = 0.0, mute: int = 0) -> None:
        self.version = version or ("2.30.7" if json else "2.27.5")
        self.json = version_tuple(self.version) >= (2, 28, 7)
        self.monitor = version_tuple(self.version) >= (2, 29)
        self.state, self.raw, self.cut, self.delay_s, self.mute = state, raw, cut or set(), delay_s, mute
        self.conns: list[Conn] = []
        self.statuses = 0
        self.active = 0
        self.max_active = 0
        self.answered = threading.Condition()
        self.watchers: list[tuple[socket.socket, str]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(client,), daemon=True).start()

    def _client(self, client: socket.socket) -> None:
        conn = Conn(time.monotonic())
        with self.answered:
            self.conns.append(conn)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            muted = len(self.conns) <= self.mute
        keep = False
        try:
            if muted:  # a stopped rank: the kernel queued the connection, nobody answers (its bytes recorded)
                data = b""
                while chunk := client.recv(4096):
                    data += chunk
                    conn.lines = [line.decode() for line in data.split(b"\n")[:-1]]
                return
            keep = self._talk(client, conn)
        except OSError:
            return
        finally:
            if not keep:
                self._closed(client, conn)

    def _closed(self, client: socket.socket, conn: Conn) -> None:
        client.close()
        with self.answered:
            conn.closed = time.monotonic()
            self.active -= 1
            self.answered.notify_all()

    def _talk(self, client: socket.socket, conn: Conn) -> bool:
        """The command loop; True when the connection stays open (MONITOR)."""
        fmt, buffer = "text", b""
        while True:
            chunk = client.recv(4096)
            if not chunk:
                return False
            buffer += chunk
            while b"\n" in buffer:
                raw_line, _, buffer = buffer.partition(b"\n")
                line = raw_line.decode().rstrip("\r")
                conn.lines.append(line)
                low = line.lower()
                if low.startswith("client protocol "):
                    client.sendall(b"SERVER PROTOCOL 2\n")
                elif low.startswith("timeout "):
                    client.sendall(b"OK\n" if line[8:].isdigit() else b"ERROR: Invalid timeout value\n")
                elif low.startswith("set format ") and self.json:
                    fmt = low[11:].strip()
                    client.sendall(b"OK\n" if fmt in ("json", "text") else b"ERROR: Invalid format\n")
                elif low in ("status", "verbose status"):
                    self._status(client, fmt)
                    return False
                elif (low == "monitor" or low.startswith("monitor ")) and self.monitor:
                    client.sendall(b"OK\n")
                    with self.answered:
                        self.watchers.append((client, fmt))
                        self.answered.notify_all()
                    threading.Thread(target=self._watch, args=(client, conn), daemon=True).start()
                    return True
                else:
                    client.sendall(f"ERROR: Unknown command {line}\n".encode())

    def _watch(self, client: socket.socket, conn: Conn) -> None:
        try:
            while client.recv(4096):
                pass
        except OSError:
            pass
        with self.answered:
            self.watchers = [w for w in self.watchers if w[0] is not client]
        self._closed(client, conn)

    def event(self, event: str, rank: StandRank) -> None:
        """Push an event to every MONITOR connection, as rasClientsNotifyEvent does."""
        with self.answered:
            watchers = list(self.watchers)
        for client, fmt in watchers:
            client.sendall(event_reply(event, rank, fmt).encode())

    def _status(self, client: socket.socket, fmt: str) -> None:
        n = self.statuses
        comms = self.state(n)
        if self.delay_s:
            time.sleep(self.delay_s)
        text = json_reply(comms, self.version) if fmt == "json" else text_reply(comms, self.version)
        if self.raw is not None:
            text = self.raw(n, text)
        data = text.encode()
        if n in self.cut:
            data = data[: len(data) // 2]  # then closed: the answer ends mid-document
        client.sendall(data)
        with self.answered:
            self.statuses += 1

    def wait_statuses(self, count: int, timeout: float = 120.0) -> bool:
        with self.answered:
            return self.answered.wait_for(lambda: self.statuses >= count and self.active == 0, timeout)

    def wait_watchers(self, count: int = 1, timeout: float = 20.0) -> bool:
        with self.answered:
            return self.answered.wait_for(lambda: len(self.watchers) >= count, timeout)

    def sent(self) -> list[str]:
        """Every line every connection sent, in order."""
        return [line for conn in self.conns for line in conn.lines]

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        for client, _ in list(self.watchers):
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
