"""NCCL's own view of a job, from its RAS service (NCCL >= 2.24; docs/userguide/source/troubleshooting/ras.rst):
every communicator, each rank's host, pid, GPU, init/abort state and how many collectives of each kind it has
*launched* (comm->seqNumber: counted when the host enqueues one, not when it completes; point-to-point, AlltoAll
and CUDA-graph-captured collectives are not counted), and the ranks RAS could not reach. A rank's number is its
rank within that communicator, not the job's global rank (they agree only in the world communicator). A rank's
pid is the one it has in its own pid namespace (its container's), its host the address RAS reached it at.
One query's answer is a `RasReply`; `NcclView` is what hwtop keeps across queries, because the signal lies in
the change: counts that stop moving mean a stuck communicator, and a rank found behind in most queries is a
straggler (the same document says so).

Host names, versions and error lines here are text from the job's RAS thread: untrusted, shown through
safe_text. Kept apart from model/job.py so a monitor with no NCCL job never imports it."""

from __future__ import annotations

from typing import Literal

from hwtop.model.record import Record

# ncclResult_t values (nccl.h): the names NCCL's own text output and ncclGetErrorString use.
NCCL_RESULTS: dict[int, str] = {
    0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
    4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
}
IN_PROGRESS = 7  # init_state while a communicator initialises (ras.rst, "init_state")


def result_name(code: int) -> str:
    return NCCL_RESULTS.get(code, f"ncclResult {code}")


class RasRank(Record, frozen=True):
    """One rank of a communicator as one query saw it. A missing rank (`missing`) has no status or counts:
    RAS could not reach its process (`unresponsive`), or has given up on it (`dead`, after 60 s)."""

    rank: int
    host: str
    pid: int | None = None
    cuda_dev: int | None = None
    nvml_dev: int | None = None
    init_state: int = 0
    async_error: int = 0
    finalize_called: bool = False
    destroy_flag: bool = False
    abort_flag: bool = False
    counts: tuple[tuple[str, int], ...] = ()  # (operation, collectives launched): AllReduce, Broadcast, ...
    missing: bool = False
    unresponsive: bool = False
    dead: bool = False
    word: str | None = None  # the status NCCL's text names for it (NOCOMM, UNKNOWN, INIT, ...), where it does
    name: str | None = None  # this node's hostname, where `host` is its address (the join says so; RAS never)

    def count(self, op: str) -> int | None:
        return next((value for name, value in self.counts if name == op), None)

    @property
    def state(self) -> str:
        """In NCCL's words (client_support.cc's status names), with hwtop's for a missing rank."""
        if self.dead:
            return "DEAD"
        if self.missing:
            return "UNRESPONSIVE" if self.unresponsive else "NOCOMM"
        if self.word in ("NOCOMM", "UNKNOWN"):  # its process answered without this communicator (2.24: UNKNOWN)
            return self.word
        if self.abort_flag:
            return "ABORT"
        if self.finalize_called or self.destroy_flag:
            return "FINALIZE"
        if self.init_state == 0:
            return "RUNNING"
        return "INIT" if self.init_state == IN_PROGRESS else "ERROR"


class CountGroup(Record, frozen=True):
    """A line of the text format's counts: `ranks` ranks have launched `value` collectives of `op` (or have the
    status `op` = "status:WORD"). Past 10 ranks, or a quarter of the communicator, NCCL names no rank of the
    group (rasCountIsOutlier): the group's count is all that is known of them."""

    op: str
    value: int
    ranks: int
    named: int = 0  # of them, how many the answer names rank by rank


class RasComm(Record, frozen=True):
    """A communicator: its hash (NCCL's debug output prints the same) and, in JSON, its secondary hash (the
    first rank's host and pid hashes: the hash alone is not unique), its size and the ranks the reply lists.
    The JSON format lists every rank; the text format only the outliers, and `rest_counts` holds what the
    others have launched (empty for JSON), `groups` every count line, `missing_count` how many ranks NCCL says
    it has no data from (it names them only up to 10)."""

    hash: str
    size: int
    ranks: tuple[RasRank, ...]
    rest_counts: tuple[tuple[str, int], ...] = ()
    status: str | None = None  # the text format's summary column (RUNNING, INIT, FINALIZE, ...)
    errors: str | None = None  # ... and its Errors column (OK, MISMATCH, INCOMPLETE, ...)
    secondary: str = ""  # JSON's secondary_hash ("0x5d1f:0x9e37"); the text format prints none
    groups: tuple[CountGroup, ...] = ()
    missing_count: int = 0

    @property
    def key(self) -> tuple[str, str]:
        """What tells two communicators apart across answers: (hash, secondary hash)."""
        return (self.hash, self.secondary)

    def unnamed_behind(self, op: str, most: int) -> int:
        """Ranks the text format counts below `most` collectives of `op` without naming them."""
        return sum(g.ranks - g.named for g in self.groups if g.op == op and g.value < most)

    def initialising(self) -> int:
        """Ranks still initialising: named with init_state 7, or counted under status INIT by the text format."""
        named = sum(1 for r in self.ranks if not r.missing and r.init_state == IN_PROGRESS)
        counted = sum(g.ranks - g.named for g in self.groups if g.op == "status:INIT")
        return named + counted + (self.size if self.status == "INIT" and self.size and not self.groups else 0)

    def ops(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for rank in self.ranks:
            for name, _ in rank.counts:
                seen.setdefault(name)
        for name, _ in self.rest_counts:
            seen.setdefault(name)
        return tuple(seen)

    def maxima(self) -> dict[str, int]:
        """The most collectives of each operation any rank has launched, in one pass."""
        top: dict[str, int] = dict(self.rest_counts)
        for rank in self.ranks:
            if not rank.missing:
                for name, value in rank.counts:
                    if value > top.get(name, -1):
                        top[name] = value
        return top

    def most(self, op: str) -> int | None:
        """The most collectives of `op` any rank has launched."""
        values = [v for r in self.ranks if not r.missing for v in [r.count(op)] if v is not None]
        values += [v for name, v in self.rest_counts if name == op]
        return max(values, default=None)


class RasProcess(Record, frozen=True):
    """A process the text format names in its INCOMPLETE or DEAD section."""

    pid: int
    host: str
    gpus: str  # as NCCL prints them: "1" or "0,1 (NVML 2,3)"
    dead: bool


class RasReply(Record, frozen=True):
    """One STATUS answer, parsed. `notes`: what in the answer is NCCL's own bug, said rather than believed (a
    2.28.7/2.28.9 JSON repaired, a zeroed communicator entry, a text answer garbled by a walk past its data)."""

    format: Literal["json", "text"]
    comms: tuple[RasComm, ...]
    nccl_version: str | None = None
    processes: tuple[RasProcess, ...] = ()  # text: unreachable and dead processes
    timeouts: int = 0
    collection_s: float | None = None
    size_bytes: int = 0
    processes_missing: int = 0  # text: "Missing communicator data from N job processes"
    processes_dead: int = 0  # text: "N job processes are considered dead"
    notes: tuple[str, ...] = ()


class RasEvent(Record, frozen=True):
    """An event a MONITOR connection pushed (NCCL >= 2.29): a process joined the job (PEER_NEW) or was declared
    dead (PEER_DEAD), with its host, pid (its own namespace's) and GPUs where NCCL knows them."""

    event: str
    host: str
    pid: int | None
    gpus: tuple[int, ...] = ()
    at: str = ""  # NCCL's local timestamp, as printed


class NcclComm(Record, frozen=True):
    """A communicator across queries. `same_since`: the time of the first query whose counts equal the latest's
    (so `queried_at - same_since` is how long nothing was launched); `behind`: per rank, in how many of the last
    `window` queries it had launched fewer collectives of some kind than the most advanced rank."""

    comm: RasComm
    same_since: float
    queried_at: float
    queries: int  # queries that saw this communicator
    window: int
    behind: tuple[tuple[int, int], ...] = ()  # (rank, queries behind), ranks behind at least once
    missing_since: tuple[tuple[int, float], ...] = ()  # (rank, first query that found it missing)

    def missing_from(self, rank: int) -> float | None:
        return next((t for r, t in self.missing_since if r == rank), None)


class NcclView(Record, frozen=True):
    """What hwtop knows of a job from NCCL RAS: where it asks, its latest answer per communicator and what went
    wrong asking (one line each, newest last)."""

    address: str
    source: str  # how the address was chosen: "NCCL_RAS_ADDR of pid N", "the default", "--nccl-ras"
    comms: tuple[NcclComm, ...] = ()
    queries: int = 0  # answered
    queried_at: float | None = None  # wall time of the latest answer
    format: str | None = None
    nccl_version: str | None = None
    processes: tuple[RasProcess, ...] = ()
    errors: tuple[str, ...] = ()
    holding: str | None = None  # why hwtop does not ask now (a communicator initialises)
    reply_bytes: int = 0
    policy: str | None = None  # when hwtop sends STATUS to this job, and why (its NCCL version's known bugs)
    version_source: str | None = None  # how the version was learned: "libnccl.so.2.27.5 mapped by pid N", ...
    main_key: tuple[str, str] | None = None  # the communicator judged as the job's: the one whose counts move
    foreign: str | None = None  # the answer was another job's (none of its ranks is this job's): not used
    events: tuple[RasEvent, ...] = ()  # MONITOR's recent events (NCCL >= 2.29), newest last
    notes: tuple[str, ...] = ()  # the latest answer's NCCL bugs, said (RasReply.notes)
    polled: bool | None = None  # STATUS every interval (True) or only once the job stops (False): `policy`

    @property
    def main(self) -> NcclComm | None:
        """The communicator judged as the job's (`main_key`: the one whose counts move with the job's steps, not
        an idle world group of a tensor/pipeline-parallel job), else the largest."""
        if self.main_key is not None:
            for comm in self.comms:
                if comm.comm.key == self.main_key:
                    return comm
        return max(self.comms, key=lambda c: (c.comm.size, -self.comms.index(c)), default=None)
