"""The text answer to STATUS, as rasClientRunComms in src/ras/client_support.cc prints it at every release from
2.24 (the only format before 2.28.7): a summary table of communicator groups, then an Errors section (processes
missing or dead, ranks missing from a communicator, initialisation and asynchronous errors) and a Warnings section
(ranks whose collective counts or status differ). Only outliers are named rank by rank (at most 10 ranks and a
quarter of the communicator: rasCountIsOutlier); past that a line gives a count alone ("14 ranks have launched up
to operation 6649"), kept as a CountGroup so the ranks it counts are not lost. Read from the answers NCCL's own
code prints at v2.24.3-1, v2.27.5-1, v2.28.7-1 and v2.30.7-1 (tests/fixtures/nccl-ras/):
- 2.24/2.25: one "collective" count per rank; a rank whose process answered without the communicator is UNKNOWN
  ("Rank 3 has status UNKNOWN", "The unknown ranks: 3,5"), missing ranks are listed ("The missing ranks: 6,9");
- 2.26+: per-operation counts ("different AllReduce operation counts"), NOCOMM for UNKNOWN, missing ranks named
  ("Rank 6 -- GPU 2 managed by process 4006 on node 10.0.0.2"), "[process information not found]";
- 2.28.7+: the collection time with three decimals.
Two of NCCL's bugs show in the text itself and are said, not believed (RasReply.notes): a communicator of 0 ranks
(the zeroed entry of nccl#2346) and, before 2.29.2, more ranks missing than a communicator has or a hash of
nonsense (the formatter walking past its data, nccl#1762). Host names are copied as printed: hostile text stays
literal, to be shown through safe_text."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hwtop.model.ras import IN_PROGRESS, CountGroup, RasComm, RasProcess, RasRank, RasReply
from hwtop.probes.nccl_ras.client import RasError, unreadable

_WHERE = (r"(?:GPU (?P<gpu>\d+(?: \(NVML \d+\))?) managed by process (?P<pid>\d+) on node (?P<host>.*)"
          r"|(?P<nowhere>\[process information not found\]))")
_GROUP = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")
_COMM = re.compile(r"^#(\d+)-(\d+) \((\w+)\) (\w+)")
_OPS = re.compile(r"^\s+Communicator ranks have different (\S+) operation counts")
_STATUSES = re.compile(r"^\s+Communicator ranks have different status")
_MANY_AT = re.compile(r"^\s+(\d+) ranks have launched up to operation (\d+)")
_MANY_NONE = re.compile(r"^\s+(\d+) ranks have not launched any operations")
_ONE_AT = re.compile(r"^\s+Rank (?P<rank>\d+) has launched up to operation (?P<value>\d+) -- " + _WHERE)
_ONE_NONE = re.compile(r"^\s+Rank (?P<rank>\d+) has not launched any operations -- " + _WHERE)
_MANY_STATUS = re.compile(r"^\s+(\d+) ranks have status (\w+)")
_ONE_STATUS = re.compile(r"^\s+Rank (?P<rank>\d+) has status (?P<value>\w+) -- " + _WHERE)
_BARE_STATUS = re.compile(r"^\s+Rank (?P<rank>\d+) has status (?P<value>\w+)\s*$")  # 2.24: UNKNOWN, no GPU
_UNKNOWN_LIST = re.compile(r"^\s+The unknown ranks: ([\d, ]+)")  # 2.24
_MANY_ERR = re.compile(r"^\s+(\d+) ranks reported (.+)$")
_ONE_ERR = re.compile(r"^\s+Rank (?P<rank>\d+) reported (?P<value>.+?) -- " + _WHERE)
_ERRORS_ON = re.compile(r"^\s+(Initialization|Asynchronous) errors? on")
_MEMBER = re.compile(r"^\s+Rank (?P<rank>\d+) -- " + _WHERE)
_MISSING_RANKS = re.compile(r"^\s+Missing communicator data from (\d+) ranks?\s*$")
_MISSING_LIST = re.compile(r"^\s+The missing ranks?: ([\d, ]+)")  # 2.24/2.25
_PROCESS = re.compile(r"^\s+Process (\d+) on node (.*?) managing GPUs? (.+)$")
_PROCESSES_MISSING = re.compile(r"^\s+Missing communicator data from (\d+) job process")
_PROCESSES_DEAD = re.compile(r"^\s+(\d+) job process(?:es)? (?:is|are) considered dead")
_VERSION = re.compile(r"^NCCL version (\S+)")
_TIMEOUTS = re.compile(r"^\s+Encountered (\d+) communication timeouts?")
ERROR_CODES = {"Unhandled CUDA error": 1, "System error": 2, "Internal error": 3, "Invalid argument": 4,
               "Invalid usage": 5, "Remote process error": 6, "NCCL operation in progress": 7}
NOTE_ZEROED = "a communicator of 0 ranks in the answer: NCCL's zeroed entry (nccl#2346), left out"
NOTE_GARBLED = ("the text answer reads past its own data (more ranks missing than a communicator has: nccl#1762, "
                "fixed in 2.29.2): its figures are not used")


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
    groups: list[list[int | str]] = field(default_factory=list)  # [op, value, ranks, named]
    missing_count: int = 0

    def rank(self, number: int) -> _Rank:
        return self.ranks.setdefault(number, _Rank(number))


def _where(rank: _Rank, match: re.Match[str]) -> None:
    if match["nowhere"]:
        return
    cuda, _, nvml = match["gpu"].partition(" (NVML ")
    rank.cuda = int(cuda)
    rank.nvml = int(nvml.rstrip(")")) if nvml else rank.cuda
    rank.pid, rank.host = int(match["pid"]), match["host"]


def _error(rank: _Rank, kind: str, name: str) -> None:
    code = ERROR_CODES.get(name.strip(), 99)
    if kind == "init":
        rank.init_state = code
    else:
        rank.async_error = code


@dataclass(slots=True)
class _Reader:
    """The answer read line by line; `section` and `kind` say what the lines that follow are about."""

    groups: dict[int, tuple[int, str, str]] = field(default_factory=dict)  # group -> (size, status, errors)
    comms: dict[str, _Comm] = field(default_factory=dict)  # by "#group-index": one hash may name two
    described: set[int] = field(default_factory=set)
    communicators: int = 0  # the summary's "Comms in group", summed
    processes: list[RasProcess] = field(default_factory=list)
    section: str = ""
    comm: _Comm | None = None
    kind: str = ""  # op, status, init, async, missing; or a heading: INCOMPLETE, DEAD, TIMEOUT
    op: str = ""
    value: int | str = 0
    timeouts: int = 0
    processes_missing: int = 0
    processes_dead: int = 0

    def feed(self, line: str) -> None:
        if line in ("Errors", "Warnings", "Job summary") or line.startswith("Communicators"):
            self.section, self.comm = line, None
        elif not line.strip() or set(line) == {"="}:
            return
        elif self.section.startswith("Communicators"):
            self._summary(line)
        elif not line.startswith(" "):
            self._heading(line)
        elif self.comm is None:
            self._job_line(line)
        else:
            self._comm_line(self.comm, line)

    def _summary(self, line: str) -> None:
        m = _GROUP.match(line)
        if m:
            self.groups[int(m[1])] = (int(m[5]), m[7], m[8])
            self.communicators += int(m[2])

    def _heading(self, line: str) -> None:
        m = _COMM.match(line)
        if m is None or self.section not in ("Errors", "Warnings"):
            self.comm, self.kind = None, line.strip()
            return
        group = int(m[1])
        self.described.add(group)
        size, summary, errors = self.groups.get(group, (0, None, None))
        self.comm = self.comms.setdefault(f"#{m[1]}-{m[2]}", _Comm(m[3], size, summary, errors))
        self.kind = "missing" if m[4] == "INCOMPLETE" else ""

    def _job_line(self, line: str) -> None:
        if (p := _PROCESS.match(line)) and self.kind in ("INCOMPLETE", "DEAD"):
            self.processes.append(RasProcess(int(p[1]), p[2], p[3], self.kind == "DEAD"))
        elif t := _TIMEOUTS.match(line):
            self.timeouts = int(t[1])
        elif m := _PROCESSES_MISSING.match(line):
            self.processes_missing = int(m[1])
        elif m := _PROCESSES_DEAD.match(line):
            self.processes_dead = int(m[1])

    def _comm_line(self, comm: _Comm, line: str) -> None:
        for pattern, handle in _HANDLERS:
            m = pattern.match(line)
            if m is not None:
                handle(self, comm, m)
                return

    # ---- the lines under a communicator's heading, one handler each ----
    def _ops(self, comm: _Comm, m: re.Match[str]) -> None:
        self.kind, self.op = "op", m[1]

    def _statuses(self, comm: _Comm, m: re.Match[str]) -> None:
        self.kind = "status"

    def _errors_on(self, comm: _Comm, m: re.Match[str]) -> None:
        self.kind = "init" if m[1] == "Initialization" else "async"

    def _group(self, comm: _Comm, op: str, value: int, ranks: int) -> None:
        comm.groups.append([op, value, ranks, 0])

    def _many_at(self, comm: _Comm, m: re.Match[str]) -> None:
        self.value = int(m[2]) if m.re is _MANY_AT else 0
        comm.rest.setdefault(self.op, self.value)  # the first group is the commonest: the ranks not named
        self._group(comm, self.op, self.value, int(m[1]))

    def _many_status(self, comm: _Comm, m: re.Match[str]) -> None:
        self.value = m[2]
        self._group(comm, f"status:{m[2]}", 0, int(m[1]))

    def _many_error(self, comm: _Comm, m: re.Match[str]) -> None:
        self.value = m[2].strip()

    def _one_at(self, comm: _Comm, m: re.Match[str]) -> None:
        rank = comm.rank(int(m["rank"]))
        _where(rank, m)
        rank.counts[self.op] = int(m["value"]) if m.re is _ONE_AT else 0
        self._group(comm, self.op, rank.counts[self.op], 1)
        comm.groups[-1][3] = 1

    def _one_status(self, comm: _Comm, m: re.Match[str]) -> None:
        rank = comm.rank(int(m["rank"]))
        if m.re is _ONE_STATUS:
            _where(rank, m)
        rank.status = m["value"]
        self._group(comm, f"status:{rank.status}", 0, 1)
        comm.groups[-1][3] = 1

    def _unknown_list(self, comm: _Comm, m: re.Match[str]) -> None:
        for number in re.findall(r"\d+", m[1]):
            comm.rank(int(number)).status = "UNKNOWN"
        if comm.groups:
            comm.groups[-1][3] = len(re.findall(r"\d+", m[1]))

    def _one_error(self, comm: _Comm, m: re.Match[str]) -> None:
        rank = comm.rank(int(m["rank"]))
        _where(rank, m)
        _error(rank, self.kind, m["value"])

    def _member(self, comm: _Comm, m: re.Match[str]) -> None:
        rank = comm.rank(int(m["rank"]))
        _where(rank, m)
        if self.kind == "missing":
            rank.missing = True
            return
        if self.kind == "op":
            rank.counts[self.op] = int(self.value)
        elif self.kind == "status":
            rank.status = str(self.value)
        elif self.kind in ("init", "async"):
            _error(rank, self.kind, str(self.value))
            return
        if comm.groups:
            comm.groups[-1][3] = int(comm.groups[-1][3]) + 1

    def _missing_ranks(self, comm: _Comm, m: re.Match[str]) -> None:
        comm.missing_count = int(m[1])

    def _missing_list(self, comm: _Comm, m: re.Match[str]) -> None:
        if self.kind == "missing":
            for number in re.findall(r"\d+", m[1]):
                comm.rank(int(number)).missing = True

    def reply(self, version: str | None, size: int) -> RasReply:
        for group, (ranks, summary, errors) in self.groups.items():  # groups with nothing to report
            if group not in self.described:
                self.comms[f"group {group}"] = _Comm(f"group {group}", ranks, summary, errors)
        notes: list[str] = []
        comms = []
        hashes = [c.hash for c in self.comms.values()]
        for where, c in self.comms.items():
            if c.size <= 0:
                notes.append(NOTE_ZEROED)
            elif c.missing_count > c.size:
                notes.append(NOTE_GARBLED)
            else:
                comms.append(self._comm(c, where if hashes.count(c.hash) > 1 else ""))
        if _walks_past(version, comms, self.communicators):
            notes.append(NOTE_GARBLED)
        if NOTE_GARBLED in notes:  # the processes NCCL lists come from its peer table, and stay
            comms = []
        return RasReply("text", tuple(comms), version, tuple(self.processes), self.timeouts, None, size,
                        self.processes_missing, self.processes_dead, tuple(dict.fromkeys(notes)))

    def _comm(self, c: _Comm, where: str) -> RasComm:
        dead = {(p.pid, p.host) for p in self.processes if p.dead}
        ranks = []
        for r in sorted(c.ranks.values(), key=lambda r: r.rank):
            is_dead = r.missing and (r.pid, r.host) in dead
            counts = {**c.rest, **r.counts} if not r.missing else {}
            ranks.append(RasRank(r.rank, r.host, r.pid, r.cuda, r.nvml, r.init_state or
                                 (IN_PROGRESS if r.status == "INIT" else 0), r.async_error,
                                 r.status == "FINALIZE", False, r.status == "ABORT",
                                 tuple(counts.items()), r.missing, r.missing and not is_dead, is_dead, r.status))
        groups = tuple(CountGroup(str(op), int(value), int(n), int(named)) for op, value, n, named in c.groups)
        missing = max(c.missing_count, sum(1 for r in ranks if r.missing))
        return RasComm(c.hash, c.size, tuple(ranks), tuple(c.rest.items()), c.status, c.errors, where, groups,
                       missing)


def _walks_past(version: str | None, comms: list[RasComm], communicators: int) -> bool:
    """From 2.26 (missing-rank arrays) to 2.29.2 (nccl#1762's fix) the text formatter steps from one communicator
    to the next without the missing-rank array between them: with a rank missing and more than one communicator,
    what it prints of the others was read from the wrong place."""
    numbers = tuple(int(x) for x in re.findall(r"\d+", version or "")[:3])
    if not (2, 26) <= numbers < (2, 29, 2):
        return False
    return communicators > 1 and any(c.missing_count for c in comms)


_Handler = Callable[[_Reader, _Comm, re.Match[str]], None]
_HANDLERS: tuple[tuple[re.Pattern[str], _Handler], ...] = (
    (_OPS, _Reader._ops), (_STATUSES, _Reader._statuses), (_ERRORS_ON, _Reader._errors_on),
    (_MANY_AT, _Reader._many_at), (_MANY_NONE, _Reader._many_at), (_MANY_STATUS, _Reader._many_status),
    (_MANY_ERR, _Reader._many_error), (_ONE_AT, _Reader._one_at), (_ONE_NONE, _Reader._one_at),
    (_ONE_STATUS, _Reader._one_status), (_BARE_STATUS, _Reader._one_status),
    (_UNKNOWN_LIST, _Reader._unknown_list), (_ONE_ERR, _Reader._one_error), (_MEMBER, _Reader._member),
    (_MISSING_RANKS, _Reader._missing_ranks), (_MISSING_LIST, _Reader._missing_list),
)


@unreadable("text answer")
def parse_text(text: str) -> RasReply:
    lines = text.splitlines()
    if not any(line.startswith(("NCCL version", "Communicators")) for line in lines[:40]):
        raise RasError(f"unknown answer format (begins {text[:40]!r})")
    version = next((m[1] for m in map(_VERSION.match, lines[:5]) if m), None)
    reader = _Reader()
    for line in lines:
        reader.feed(line)
    return reader.reply(version, len(text))
