"""One verdict per rank of a job, computed once from every signal (advice/ranks.py `judge`) and read as it is by
doctor, the job view, the exporter (`hwtop_job_rank_state`) and the fleet: the same state, the same words, the same
rank. A state is what the rank is doing, not whom to blame: in a hang the rank that never launched the collective
is `before-collective` and `blamed`; the ranks that launched it and wait are `inside-collective`, held by it."""

from __future__ import annotations

from typing import Literal

from hwtop.model.record import Record

RankState = Literal["running", "slow", "before-collective", "inside-collective", "dead", "unknown"]
# worst first: the order a table sorts by after the blamed ranks, and the exporter's label values
STATES: tuple[RankState, ...] = ("dead", "before-collective", "inside-collective", "slow", "unknown", "running")
# the state in a few words, as a table's STATE column and a legend say it
SHORT: dict[RankState, str] = {"running": "running", "slow": "slow", "before-collective": "never launched",
                               "inside-collective": "not finished", "dead": "dead", "unknown": "unknown"}


class GpuFault(Record, frozen=True):
    """A fault of the GPU a rank owns: an Xid, uncorrectable ECC errors, a lost GPU (`severe`: it stops work), or
    clocks throttled by heat or power (it slows work). `at`: when it was first seen, where known."""

    gpu: int
    what: str
    severe: bool
    at: float | None = None


class Verdict(Record, frozen=True):
    """One rank's verdict. `words` finish the sentence "rank N (pid, host, GPU) …" and are the same everywhere;
    `agree` and `disagree` are the signals for and against it, in words with their figures."""

    rank: int
    host: str  # untrusted text (a remote label): render through safe_text
    state: RankState
    words: str
    pid: int | None = None
    gpu: int | None = None
    blamed: bool = False  # the cause a finding names; ranks it holds back are not blamed
    collective: str | None = None  # "all_reduce #26 (default_pg)": the collective it never launched or never finished
    since: float | None = None  # wall-clock time its state began, where known
    site: str | None = None  # where in its code (`file:line function`)
    held_by: tuple[int, ...] = ()  # the ranks it waits for
    by: str = ""  # the signal its state rests on: flight-recorder, nccl, stacks, still-stack, progress, ""
    agree: tuple[str, ...] = ()
    disagree: tuple[str, ...] = ()
    faults: tuple[GpuFault, ...] = ()

    @property
    def who(self) -> str:
        """`rank 5 (pid 4055 on node-3, GPU 1)`: as a user finds it on a cluster."""
        parts = [f"pid {self.pid} on {self.host}" if self.pid is not None else f"on {self.host}"]
        if self.gpu is not None:
            parts.append(f"GPU {self.gpu}")
        return f"rank {self.rank} ({', '.join(parts)})"

    @property
    def sentence(self) -> str:
        return f"{self.who} {self.words}"


class Verdicts(Record, frozen=True):
    """Every rank's verdict (rank order) and, where the figures cannot judge a job, why in one line."""

    ranks: tuple[Verdict, ...] = ()
    message: str | None = None

    def of(self, rank: int, host: str | None = None) -> Verdict | None:
        return next((v for v in self.ranks if v.rank == rank and (host is None or v.host == host)), None)

    @property
    def blamed(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.ranks if v.blamed)
