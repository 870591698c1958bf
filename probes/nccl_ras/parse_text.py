"""The text answer to STATUS, for NCCL 2.24-2.28.6 (no JSON), as rasClientRunComms in src/ras/client_support.cc
prints it: a summary table of communicator groups, then an Errors section (processes missing or dead, ranks
missing from a communicator, initialisation and asynchronous errors) and a Warnings section (ranks whose
collective counts or status differ). Only outliers are named rank by rank (at most 10 ranks and a quarter of
the communicator): the others' counts become `rest_counts`. Host names are copied as printed: hostile text
stays literal, to be shown through safe_text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hwtop.model.ras import RasComm, RasProcess, RasRank, RasReply
from hwtop.probes.nccl_ras.client import RasError

_GPU = r"GPU (?P<gpu>\d+(?: \(NVML \d+\))?) managed by process (?P<pid>\d+) on node (?P<host>.*)"
_GROUP = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")
_COMM = re.compile(r"^#(\d+)-(\d+) \((\w+)\) (\w+)")
_OPS = re.compile(r"^\s+Communicator ranks have different (\S+) operation counts")
_STATUSES = re.compile(r"^\s+Communicator ranks have different status")
_MANY_AT = re.compile(r"^\s+(\d+) ranks have launched up to operation (\d+)")
_MANY_NONE = re.compile(r"^\s+(\d+) ranks have not launched any operations")
_ONE_AT = re.compile(r"^\s+Rank (?P<rank>\d+) has launched up to operation (?P<value>\d+) -- " + _GPU)
_ONE_NONE = re.compile(r"^\s+Rank (?P<rank>\d+) has not launched any operations -- " + _GPU)
_MANY_STATUS = re.compile(r"^\s+(\d+) ranks have status (\w+)")
_ONE_STATUS = re.compile(r"^\s+Rank (?P<rank>\d+) has status (?P<value>\w+) -- " + _GPU)
_MANY_ERR = re.compile(r"^\s+(\d+) ranks reported (.+)$")
_ONE_ERR = re.compile(r"^\s+Rank (?P<rank>\d+) reported (?P<value>.+?) -- " + _GPU)
_ERRORS_ON = re.compile(r"^\s+(Initialization|Asynchronous) errors? on")
_MEMBER = re.compile(r"^\s+Rank (?P<rank>\d+) -- " + _GPU)
_MISSING_LIST = re.compile(r"^\s+The missing ranks?: ([\d, ]+)")
_PROCESS = re.compile(r"^\s+Process (\d+) on node (.*?) managing GPUs? (.+)$")
_VERSION = re.compile(r"^NCCL version (\S+)")
_TIMEOUTS = re.compile(r"^\s+Encountered (\d+) communication timeouts?")
ERROR_CODES = {"Unhandled CUDA error": 1, "System error": 2, "Internal error": 3, "Invalid argument": 4,
               "Invalid usage": 5, "Remote process error": 6, "NCCL operation in progress": 7}


@dataclass(slots=True)
class _Rank:
    rank: int
    host: str = "unknown"
    pid: int | None = None
    cuda: int | None = None
    nvml: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    status: str | None = None
    init_state: int = 0
    async_error: int = 0
    missing: bool = False


@dataclass(slots=True)
class _Comm:
    hash: str
    size: int
    status: str | None
    errors: str | None
    ranks: dict[int, _Rank] = field(default_factory=dict)
    rest: dict[str, int] = field(default_factory=dict)

    def rank(self, number: int) -> _Rank:
        return self.ranks.setdefault(number, _Rank(number))


def _where(rank: _Rank, match: re.Match[str]) -> None:
    gpu = match["gpu"]
    cuda, _, nvml = gpu.partition(" (NVML ")
    rank.cuda = int(cuda)
    rank.nvml = int(nvml.rstrip(")")) if nvml else rank.cuda
    rank.pid, rank.host = int(match["pid"]), match["host"]


def parse_text(text: str) -> RasReply:
    lines = text.splitlines()
    if not any(line.startswith(("NCCL version", "Communicators")) for line in lines[:40]):
        raise RasError(f"unknown answer format (begins {text[:40]!r})")
    version = next((m[1] for m in map(_VERSION.match, lines[:5]) if m), None)
    groups: dict[int, tuple[int, str, str]] = {}  # group -> (ranks per comm, status, errors)
    comms: dict[str, _Comm] = {}
    processes: list[RasProcess] = []
    section, comm, timeouts = "", None, 0
    kind = ""  # what the lines that follow are about: op, status, init, async, missing
    op, at, status, error = "", 0, "", ""  # the current operation and group value the member lines belong to
    for line in lines:
        if line in ("Errors", "Warnings", "Job summary") or line.startswith("Communicators"):
            section, comm = line, None
            continue
        if not line.strip() or set(line) == {"="}:
            continue
        if section.startswith("Communicators"):
            m = _GROUP.match(line)
            if m:
                groups[int(m[1])] = (int(m[5]), m[7], m[8])
            continue
        if not line.startswith(" "):  # a heading: a communicator, or INCOMPLETE / DEAD / TIMEOUT
            m = _COMM.match(line)
            if m:
                size, summary, errors = groups.get(int(m[1]), (0, None, None))
                comm = comms.setdefault(m[3], _Comm(m[3], size, summary, errors))
                kind = "missing" if m[4] == "INCOMPLETE" else ""
            else:
                comm, kind = None, line.strip()
            continue
        if comm is None:
            p = _PROCESS.match(line)
            if p and kind in ("INCOMPLETE", "DEAD"):
                processes.append(RasProcess(int(p[1]), p[2], p[3], kind == "DEAD"))
            t = _TIMEOUTS.match(line)
            if t:
                timeouts = int(t[1])
            continue
        if m := _OPS.match(line):
            kind, op = "op", m[1]
        elif _STATUSES.match(line):
            kind = "status"
        elif m := _ERRORS_ON.match(line):
            kind = "init" if m[1] == "Initialization" else "async"
        elif m := _MANY_AT.match(line):
            at = int(m[2])
            comm.rest.setdefault(op, at)  # the first group is the commonest: the ranks not named
        elif _MANY_NONE.match(line):
            at = 0
            comm.rest.setdefault(op, at)
        elif m := _MANY_STATUS.match(line):
            status = m[2]
        elif m := _MANY_ERR.match(line):
            error = m[2].strip()
        elif m := _ONE_AT.match(line) or _ONE_NONE.match(line):
            rank = comm.rank(int(m["rank"]))
            _where(rank, m)
            rank.counts[op] = int(m["value"]) if m.re is _ONE_AT else 0
        elif m := _ONE_STATUS.match(line):
            rank = comm.rank(int(m["rank"]))
            _where(rank, m)
            rank.status = m["value"]
        elif m := _ONE_ERR.match(line):
            rank = comm.rank(int(m["rank"]))
            _where(rank, m)
            _error(rank, kind, m["value"])
        elif m := _MEMBER.match(line):
            rank = comm.rank(int(m["rank"]))
            _where(rank, m)
            if kind == "missing":
                rank.missing = True
            elif kind == "op":
                rank.counts[op] = at
            elif kind == "status":
                rank.status = status
            elif kind in ("init", "async"):
                _error(rank, kind, error)
        elif (m := _MISSING_LIST.match(line)) and kind == "missing":
            for number in re.findall(r"\d+", m[1]):
                comm.rank(int(number)).missing = True
    described = {int(m[1]) for m in (_COMM.match(line) for line in lines) if m}
    for group, (size, summary, errors) in groups.items():  # groups with nothing to report: their size and status
        if group not in described:
            comms[f"group {group}"] = _Comm(f"group {group}", size, summary, errors)
    dead = {(p.pid, p.host) for p in processes if p.dead}
    out = []
    for c in comms.values():
        ranks = []
        for r in sorted(c.ranks.values(), key=lambda r: r.rank):
            is_dead = r.missing and (r.pid, r.host) in dead
            counts = {**c.rest, **r.counts} if not r.missing else {}
            ranks.append(RasRank(r.rank, r.host, r.pid, r.cuda, r.nvml, r.init_state or
                                 (7 if r.status == "INIT" else 0), r.async_error,
                                 r.status == "FINALIZE", False, r.status == "ABORT",
                                 tuple(counts.items()), r.missing, r.missing and not is_dead, is_dead))
        out.append(RasComm(c.hash, c.size, tuple(ranks), tuple(c.rest.items()), c.status, c.errors))
    return RasReply("text", tuple(out), version, tuple(processes), timeouts, None, len(text))


def _error(rank: _Rank, kind: str, name: str) -> None:
    code = ERROR_CODES.get(name.strip(), 99)
    if kind == "init":
        rank.init_state = code
    else:
        rank.async_error = code
