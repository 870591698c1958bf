"""A stand-in for NCCL's RAS service, built from NVIDIA/nccl at 5067397c2676d5aed50042fc39e5c8ee96eb0027:
src/ras/client_support.cc (rasClientEventLoop's command handling: `CLIENT PROTOCOL` answered `SERVER PROTOCOL 2`,
`TIMEOUT n` and `SET FORMAT json|text` answered `OK` or `ERROR: ...`, anything else `ERROR: Unknown command`,
`STATUS` answered and the connection closed; jsonWriteHeader/jsonWriteRankData/jsonWriteMissingRank for the JSON
layout, host names printed with "%s", unescaped; rasClientRunComms for the text layout) and
docs/userguide/source/troubleshooting/ras.rst (its sample outputs). Written for these tests, not copied.

It records every connection and every line it was sent, so a test can check hwtop's manners. `json=False`
plays NCCL 2.24-2.28.6 (no SET FORMAT). `cut` cuts the Nth answer short; `raw` replaces an answer's text."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

OPS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")


@dataclass
class StandRank:
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


@dataclass
class StandComm:
    hash: int
    ranks: list[StandRank]


def json_reply(comms: list[StandComm], version: str = "2.30.3") -> str:
    """As rasDumpCommsToJSON writes it: printf, host names unescaped."""
    out = ['{\n', f'  "nccl_version": "{version}",\n', '  "cuda_runtime_version": 13000,\n',
           '  "cuda_driver_version": 13000,\n', '  "timestamp": "2026-12-06 01:00:00",\n',
           f'  "communicators_count": {len(comms)},\n', '  "communicators": [\n']
    for ci, comm in enumerate(comms):
        present = [r for r in comm.ranks if not r.missing]
        gone = [r for r in comm.ranks if r.missing]
        out.append((",\n" if ci else "") + "    {\n")
        out.append(f'      "hash": "0x{comm.hash:x}",\n      "secondary_hash": "0x1:0x2",\n'
                   f'      "size": {len(comm.ranks)},\n      "ranks_count": {len(present)},\n'
                   f'      "missing_ranks_count": {len(gone)},\n      "ranks": [\n')
        for i, r in enumerate(present):
            counts = ",\n".join(f'            "{op}": {r.counts.get(op, 0)}' for op in OPS)
            out.append((",\n" if i else "") +
                       f'        {{\n          "rank": {r.rank},\n          "host": "{r.host}",\n'
                       f'          "pid": {r.pid},\n          "cuda_dev": {r.gpu},\n          "nvml_dev": {r.gpu},\n'
                       f'          "status": {{\n            "init_state": {r.init_state},\n'
                       f'            "async_error": {r.async_error},\n            "finalize_called": false,\n'
                       f'            "destroy_flag": false,\n            "abort_flag": {str(r.abort).lower()}\n'
                       f'          }},\n          "collective_counts": {{\n{counts}\n          }}\n        }}')
        out.append("\n      ],\n      \"missing_ranks\": [\n")
        for i, r in enumerate(gone):
            out.append((",\n" if i else "") +
                       f'        {{\n          "rank": {r.rank},\n          "host": "{r.host}",\n'
                       f'          "pid": {r.pid},\n          "cuda_dev": {r.gpu},\n          "nvml_dev": {r.gpu},\n'
                       f'          "status": {{\n            "unresponsive": true,\n'
                       f'            "considered_dead": {str(r.dead).lower()}\n          }}\n        }}')
        out.append("\n      ]\n    }")
    out.append('\n  ],\n  "ras": {\n    "collection_time_sec": 0.001,\n    "timeouts_count": 0\n  }\n}\n')
    return "".join(out)


def text_reply(comms: list[StandComm], version: str = "2.26.2") -> str:
    """As rasClientRunComms prints it (outliers: at most 10 ranks and a quarter of the communicator)."""
    out = [f"NCCL version {version} compiled with CUDA 12.4\nCUDA runtime version 12040, driver version 12040\n\n",
           "Job summary\n===========\n\n  Nodes  Processes         GPUs  Processes     GPUs\n"
           "(total)   per node  per process    (total)  (total)\n      1          8            1          8        8\n",
           "\nCommunicators... (0.00s)\n=============\n\n",
           "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
           "    #  in group  per comm  per node  per comm  in group\n"]
    for gi, comm in enumerate(comms):
        present = [r for r in comm.ranks if not r.missing]
        mismatch = any(len({r.counts.get(op, 0) for r in present}) > 1 for op in OPS)
        errors = ",".join(e for e, on in (("INCOMPLETE", any(r.missing for r in comm.ranks)),
                                          ("MISMATCH", mismatch)) if on) or "OK"
        out.append(f"{gi:5d}  {1:8d}  {4:8d}  {'2':>8}  {len(comm.ranks):8d}  {len(comm.ranks):8d}  "
                   f"{'RUNNING':>8}  {errors:>6}\n")
    out.append("\nErrors\n======\n\n")
    dead = [r for c in comms for r in c.ranks if r.dead]
    if dead:
        out.append(f"DEAD\n  {len(dead)} job process{'es are' if len(dead) > 1 else ' is'} considered dead "
                   "(unreachable via the RAS network)\n")
        out += [f"  Process {r.pid} on node {r.host} managing GPU {r.gpu}\n" for r in dead]
        out.append("\n")
    for gi, comm in enumerate(comms):
        gone = [r for r in comm.ranks if r.missing]
        if gone:
            out.append(f"#{gi}-0 ({comm.hash:016x}) INCOMPLETE\n  Missing communicator data from {len(gone)} rank"
                       f"{'s' if len(gone) > 1 else ''}\n")
            out += [f"  Rank {r.rank} -- GPU {r.gpu} managed by process {r.pid} on node {r.host}\n" for r in gone]
            out.append("\n")
    out.append("Warnings\n========\n\n")
    for gi, comm in enumerate(comms):
        present = [r for r in comm.ranks if not r.missing]
        lines = []
        for op in OPS:
            values: dict[int, list[StandRank]] = {}
            for r in present:
                values.setdefault(r.counts.get(op, 0), []).append(r)
            if len(values) < 2:
                continue
            lines.append(f"  Communicator ranks have different {op} operation counts\n")
            for value, members in sorted(values.items(), key=lambda kv: -len(kv[1])):
                if len(members) > 1:
                    lines.append(f"  {len(members)} ranks have launched up to operation {value}\n")
                if len(members) == 1 or len(members) <= min(10, len(comm.ranks) // 4):
                    for r in members:
                        head = f"  Rank {r.rank} has launched up to operation {value} -- " if len(members) == 1 \
                            else f"  Rank {r.rank} -- "
                        lines.append(f"{head}GPU {r.gpu} managed by process {r.pid} on node {r.host}\n")
            lines.append("\n")
        if lines:
            out.append(f"#{gi}-0 ({comm.hash:016x}) MISMATCH\n")
            out += lines
    return "".join(out)


@dataclass
class Conn:
    opened: float
    closed: float | None = None
    lines: list[str] = field(default_factory=list)


class RasStandIn:
    """Listens on 127.0.0.1 (a free port); `state(n)` gives the communicators for the nth STATUS (from 0)."""

    def __init__(self, state: Callable[[int], list[StandComm]], json: bool = True,
                 raw: Callable[[int, str], str] | None = None, cut: set[int] | None = None) -> None:
        self.state, self.json, self.raw, self.cut = state, json, raw, cut or set()
        self.conns: list[Conn] = []
        self.statuses = 0
        self.active = 0
        self.max_active = 0
        self.answered = threading.Condition()
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
        fmt, buffer = "text", b""
        try:
            while True:
                chunk = client.recv(4096)
                if not chunk:
                    return
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
                        return
                    else:
                        client.sendall(f"ERROR: Unknown command {line}\n".encode())
        finally:
            client.close()
            with self.answered:
                conn.closed = time.monotonic()
                self.active -= 1
                self.answered.notify_all()

    def _status(self, client: socket.socket, fmt: str) -> None:
        n = self.statuses
        comms = self.state(n)
        text = json_reply(comms) if fmt == "json" else text_reply(comms)
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

    def close(self) -> None:
        self._stop = True
        self.sock.close()
